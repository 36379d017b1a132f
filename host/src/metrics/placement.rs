//! Placement's series: the mode in force, sched_ext's state and whose
//! scheduler runs, what the agent's scheduler decided, and its stops.

use prometheus_client::{
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

use crate::placement::{Mode, PlacementView};

/// Encodes `view`.
pub fn encode(
    view: &PlacementView,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "kubenpu_placement_mode",
        "1 for the placement mode in force on this node (off, hints or sched-ext), 0 for the others; asked is the mode the agent was asked for, which falls back to hints where the kernel has no sched_ext, another scheduler is in force, or the agent's scheduler stopped.",
        None,
        MetricType::Gauge,
    )?;
    for mode in Mode::ALL {
        let labels = [("mode", mode.as_str()), ("asked", view.asked.as_str())];
        ConstGauge::new(i64::from(mode == view.mode)).encode(family.encode_family(&labels)?)?;
    }
    let labels = [("state", view.sched_ext.as_str()), ("ops", &view.ops)];
    ConstGauge::new(1).encode(
        encoder
            .encode_descriptor(
                "kubenpu_placement_sched_ext_info",
                "sched_ext on this node's kernel: state absent (not built in), disabled (no BPF scheduler), or the kernel's enabled, enabling or disabling; ops names the scheduler in force (kubenpu for the agent's).",
                None,
                MetricType::Gauge,
            )?
            .encode_family(&labels)?,
    )?;
    let mut family = encoder.encode_descriptor(
        "kubenpu_placement_decisions",
        "What the agent's scheduler did with threads that called an accelerator recently: woken_near (woken on an idle CPU of the device's node), woken_elsewhere (no such CPU was idle: woken where the fair rule put them), queued_near (queued on the device's node), queued_elsewhere (a CPU elsewhere was idle, or they may not run on the device's node).",
        None,
        MetricType::Counter,
    )?;
    let counters = &view.counters;
    for (decision, count) in [
        ("woken_near", counters.placed),
        ("woken_elsewhere", counters.fell_back),
        ("queued_near", counters.queued_near),
        ("queued_elsewhere", counters.queued_away),
    ] {
        ConstCounter::new(count).encode(family.encode_family(&[("decision", decision)])?)?;
    }
    let mut family = encoder.encode_descriptor(
        "kubenpu_placement_cgroup_faults",
        "cgroups whose cpu.weight the agent's scheduler could not honour, by fault: untracked (its table of 16384 was full: their tasks are weighed by nice alone, as if in the root cgroup), miscounted (a cgroup went with runnable weight still counted in it, which skewed its siblings' shares while it lasted). Both should stay 0.",
        None,
        MetricType::Counter,
    )?;
    for (fault, count) in [
        ("untracked", counters.untracked_cgroups),
        ("miscounted", counters.miscounted_cgroups),
    ] {
        ConstCounter::new(count).encode(family.encode_family(&[("fault", fault)])?)?;
    }
    let mut family = encoder.encode_descriptor(
        "kubenpu_placement_scheduler_exits",
        "Stops of the agent's scheduler that the kernel made, by kind (error, error_stall, error_bpf, sysrq, unregistered_kernel, ...): after one, every task is on the kernel's scheduler and placement stays on hints until the agent restarts.",
        None,
        MetricType::Counter,
    )?;
    for (kind, stops) in &view.exits {
        ConstCounter::new(*stops).encode(family.encode_family(&[("kind", *kind)])?)?;
    }
    Ok(())
}
