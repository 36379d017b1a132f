//! The policy's series: the mode in force, whether BPF LSM is active,
//! and the calls its checks audited or refused.

use prometheus_client::{
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

use crate::policy::{PolicyMode, PolicyView};

/// Encodes `view`.
pub fn encode(view: &PolicyView, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "kubenpu_policy_mode",
        "1 for the policy mode in force on this node (off, audit or enforce), 0 for the others; asked is the mode the agent was asked for, which falls back to off where BPF LSM is not active or its checks cannot be attached.",
        None,
        MetricType::Gauge,
    )?;
    for mode in PolicyMode::ALL {
        let labels = [("mode", mode.as_str()), ("asked", view.asked.as_str())];
        ConstGauge::new(i64::from(mode == view.mode)).encode(family.encode_family(&labels)?)?;
    }
    ConstGauge::new(i64::from(view.lsm_available)).encode(encoder.encode_descriptor(
        "kubenpu_policy_lsm_available",
        "1 if BPF LSM is active on this node's kernel (bpf in /sys/kernel/security/lsm), else 0: the policy can only be off.",
        None,
        MetricType::Gauge,
    )?)?;
    if let Some(valid) = view.file_valid {
        ConstGauge::new(i64::from(valid)).encode(encoder.encode_descriptor(
            "kubenpu_policy_file_valid",
            "1 if the policy file's last reading was good (or there is no file: no rules), 0 if it was refused; the rules read before it stay in force.",
            None,
            MetricType::Gauge,
        )?)?;
    }
    ConstGauge::new(view.ruled as i64).encode(encoder.encode_descriptor(
        "kubenpu_policy_ruled_cgroups",
        "Cgroups the kernel's policy rules hold: containers the allocation join classified. Others are never refused.",
        None,
        MetricType::Gauge,
    )?)?;
    let mut family = encoder.encode_descriptor(
        "kubenpu_policy_refusals",
        "Calls the policy's rules do not allow, by pod, container, device, kind (other: the open, and ioctls the vendor's table does not list), hook (open, ioctl, ioctl_compat) and rule (allocated-only, deny-device, deny-kind); action audited (under audit: let through) or refused (under enforce: EPERM).",
        None,
        MetricType::Counter,
    )?;
    for (verdict, calls) in &view.refusals {
        let labels = [
            ("pod", verdict.owner.pod.as_str()),
            ("namespace", &verdict.owner.namespace),
            ("container", &verdict.owner.container),
            ("device", &verdict.device),
            ("vendor", &verdict.vendor),
            ("kind", verdict.kind),
            ("hook", verdict.hook),
            ("rule", verdict.rule),
            ("action", verdict.action),
        ];
        ConstCounter::new(*calls).encode(family.encode_family(&labels)?)?;
    }
    ConstCounter::new(view.lost).encode(encoder.encode_descriptor(
        "kubenpu_policy_verdicts_lost",
        "Audited or refused calls the kernel could not count (its verdicts map was full); each was still audited or refused.",
        None,
        MetricType::Counter,
    )?)?;
    if let Some(admissions) = &view.admissions {
        let mut family = encoder.encode_descriptor(
            "kubenpu_policy_admissions",
            "Containers kubenpu-oci-hook held at their creation, by outcome: ruled (its rule was in the kernel before its process started), unruled (the agent rules no such container: outside pods, a namespace that is off, a pod kubelet does not describe) or expired (not ruled within --admission-wait: it started unruled, and is ruled at its first open).",
            None,
            MetricType::Counter,
        )?;
        for (outcome, containers) in admissions {
            ConstCounter::new(*containers)
                .encode(family.encode_family(&[("outcome", *outcome)])?)?;
        }
    }
    Ok(())
}
