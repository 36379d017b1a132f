//! The allocation join's series: what kubelet allocated, which holders
//! are idle, calls on devices not allocated to the caller, and the
//! reader's health.

use prometheus_client::{
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

use super::series_labels;
use crate::allocation::{AllocationView, join::Holder};

/// Encodes `view`.
pub fn encode(
    view: &AllocationView,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "kubenpu_allocation",
        "One row per device kubelet allocated to a running container (source device_plugin or dra; resource is the extended resource or the DRA driver), while what kubelet said of the pod is within three allocation intervals.",
        None,
        MetricType::Info,
    )?;
    for h in &view.holders {
        let mut labels = holder_labels(h).to_vec();
        labels.push(("source", h.source.as_str()));
        family.encode_info(&labels)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_allocation_idle",
        "1 if the container has made no counted call on the device allocated to it since it started, else 0; one per kubenpu_allocation_info row.",
        None,
        MetricType::Gauge,
    )?;
    for h in &view.holders {
        ConstGauge::new(i64::from(h.idle)).encode(family.encode_family(&holder_labels(h))?)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_allocation_numa_local_cpus_ratio",
        "The share of the container's CPUs that are on the NUMA node of the device allocated to it: 0 means every call and DMA it starts crosses nodes. Its CPUs are its exclusive ones (cpus=\"cpu_ids\", kubelet's CPU manager) or else its cgroup's cpuset.cpus.effective (cpus=\"cpuset\", known once it has made a counted call). The device's node is its sysfs numa_node, else the one node its device plugin lists it on; absent for devices with neither.",
        None,
        MetricType::Gauge,
    )?;
    for h in &view.holders {
        let Some(fit) = h.fit else { continue };
        let mut labels = holder_labels(h).to_vec();
        labels.push(("cpus", fit.cpus.as_str()));
        ConstGauge::new(f64::from(fit.local) / f64::from(fit.total))
            .encode(family.encode_family(&labels)?)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_unallocated_ioctl",
        "Counted calls on a device that was not allocated to the calling container (privileged pods, hostPath device mounts, passed file descriptors), by pod, container, device and kind. A container is classified once, from what kubelet said of its pod within three allocation intervals with every ID resolved; its series then counts all its calls on such devices, exactly.",
        None,
        MetricType::Counter,
    )?;
    for (series, calls) in &view.unallocated {
        ConstCounter::new(*calls).encode(family.encode_family(&series_labels(series))?)?;
    }

    ConstGauge::new(i64::from(view.up)).encode(encoder.encode_descriptor(
        "kubenpu_allocation_up",
        "1 if kubelet's PodResources API answered the last call.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstGauge::new(i64::from(view.fresh)).encode(encoder.encode_descriptor(
        "kubenpu_allocation_fresh",
        "1 while kubelet's last List of pod resources is within three allocation intervals; containers are classified, and allocation rows shown, only from what kubelet said within that time.",
        None,
        MetricType::Gauge,
    )?)?;
    if let Some(at) = view.last_sync {
        ConstGauge::new(at.as_secs_f64()).encode(encoder.encode_descriptor(
            "kubenpu_allocation_last_sync_timestamp_seconds",
            "When kubelet last answered a List of pod resources, as Unix time.",
            None,
            MetricType::Gauge,
        )?)?;
    }
    let mut family = encoder.encode_descriptor(
        "kubenpu_allocation_errors",
        "Failed calls of the allocation reader, by reason: absent (no socket), unavailable (no gRPC answer), rate_limited (kubelet's 100 calls/s), unimplemented (Get, then List is used), runtime (the container runtime could not say which pods run).",
        None,
        MetricType::Counter,
    )?;
    for (reason, errors) in &view.errors {
        ConstCounter::new(*errors).encode(family.encode_family(&[("reason", *reason)])?)?;
    }
    let mut family = encoder.encode_descriptor(
        "kubenpu_allocation_unmapped_ids",
        "Allocated IDs no vendor plugin's rule resolves to a device, by resource (or DRA driver); their containers are not classified.",
        None,
        MetricType::Gauge,
    )?;
    for (resource, ids) in &view.unmapped {
        ConstGauge::new(*ids as i64)
            .encode(family.encode_family(&[("resource", resource.as_str())])?)?;
    }
    ConstGauge::new(view.invalid_cdi_specs as i64).encode(encoder.encode_descriptor(
        "kubenpu_allocation_invalid_cdi_specs",
        "CDI spec files that could not be read (each logged once); the claims they define are not resolved.",
        None,
        MetricType::Gauge,
    )?)?;
    Ok(())
}

/// The labels every per-holder family starts with.
fn holder_labels(h: &Holder) -> [(&'static str, &str); 5] {
    [
        ("pod", h.owner.pod.as_str()),
        ("namespace", &h.owner.namespace),
        ("container", &h.owner.container),
        ("device", &h.device),
        ("resource", &h.resource),
    ]
}
