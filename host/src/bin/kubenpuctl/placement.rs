//! `kubenpuctl placement`: the placement a running agent keeps in force,
//! what its scheduler did, and per allocated container and device how
//! many calls came from another NUMA node, where its CPUs are, and what
//! would fix it.

use std::fmt::Write as _;

use kubenpu::server::PlacementReport;

use crate::report::{Format, aligned, json};

/// The headline, then one row per container and device.
pub fn table(report: &PlacementReport, format: Format) -> String {
    if format == Format::Json {
        return json(report);
    }
    if !report.present {
        return "placement: off (the agent runs with --placement off; hints or sched-ext turn it on)\n"
            .into();
    }
    let mut out = format!("placement: {} (asked {})", report.mode, report.asked);
    match (report.sched_ext.as_str(), report.ops.as_str()) {
        ("absent", _) => out.push_str("; this kernel has no sched_ext"),
        (state, "") => write!(out, "; sched_ext {state}").unwrap(),
        (state, ops) => write!(out, "; sched_ext {state}, scheduler {ops}").unwrap(),
    }
    out.push('\n');
    if report.decisions.values().any(|&n| n > 0) {
        let decisions: Vec<String> = report
            .decisions
            .iter()
            .map(|(decision, n)| format!("{decision} {n}"))
            .collect();
        writeln!(out, "scheduler: {}", decisions.join(", ")).unwrap();
    }
    for (kind, stops) in &report.exits {
        writeln!(
            out,
            "the kernel stopped the scheduler ({kind}) {stops} time(s)"
        )
        .unwrap();
    }
    if report.containers.is_empty() {
        out.push_str(
            "no allocated containers: the rows come from the allocation join (kubelet's PodResources)\n",
        );
        return out;
    }
    let rows = report.containers.iter().map(|row| {
        let share = if row.calls == 0 {
            "-".to_owned()
        } else {
            format!("{:.0}%", row.remote as f64 * 100.0 / row.calls as f64)
        };
        let cpus = row.numa_fit.as_ref().map_or("-".to_owned(), |fit| {
            format!("{}/{} {}", fit.local_cpus, fit.cpus, fit.from)
        });
        vec![
            row.namespace.clone(),
            row.pod.clone(),
            row.container.clone(),
            row.device.clone(),
            row.device_node.map_or("-".to_owned(), |n| n.to_string()),
            row.calls.to_string(),
            share,
            cpus,
            row.advice.clone(),
        ]
    });
    out.push_str(&aligned(
        &[
            "NAMESPACE",
            "POD",
            "CONTAINER",
            "DEVICE",
            "NODE",
            "CALLS",
            "REMOTE",
            "CPUS-ON-NODE",
            "ADVICE",
        ],
        rows,
    ));
    out
}
