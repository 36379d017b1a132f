//! `kubenpuctl energy`: each device's energy as a running agent measures
//! it, with how it is read and divided, and each container's joules.

use std::fmt::Write as _;

use kubenpu::server::EnergyReport;

use crate::report::{Format, aligned, json};

/// One line per device and its method, then one row per container and
/// device.
pub fn table(report: &EnergyReport, format: Format) -> String {
    if format == Format::Json {
        return json(report);
    }
    if !report.present {
        return "energy: off (run the agent with --fdinfo --energy; Helm: energy.enabled)\n".into();
    }
    if report.devices.is_empty() {
        return "energy: no device read yet: none of the claimed devices has a sensor its plugin names, or the first reading is still to come\n".into();
    }
    let mut out = String::new();
    for d in &report.devices {
        let source = match d.source.as_str() {
            "power" => "power integrated between readings (an estimate)",
            _ => "its energy counter",
        };
        let rule = match d.rule.as_str() {
            "engine_time" => "engine time (fdinfo)",
            _ => "counted submit and wait time",
        };
        let idle = match d.idle_method.as_str() {
            "measured" => "measured",
            _ => "the plugin's figure, until measured",
        };
        writeln!(
            out,
            "{} ({}): {:.1} J from {source}; active energy by {rule}; idle {:.1} W ({idle})",
            d.device, d.vendor, d.joules, d.idle_watts
        )
        .unwrap();
    }
    if report.failed_reads > 0 {
        writeln!(out, "failed sensor reads: {}", report.failed_reads).unwrap();
    }
    let name = |s: &str| {
        if s.is_empty() {
            "-".to_owned()
        } else {
            s.to_owned()
        }
    };
    let rows = report.containers.iter().map(|row| {
        vec![
            name(&row.namespace),
            name(&row.pod),
            name(&row.container),
            row.device.clone(),
            format!("{:.1}", row.active_joules),
            format!("{:.1}", row.idle_joules),
            format!("{:.1}", row.active_joules + row.idle_joules),
        ]
    });
    out.push_str(&aligned(
        &[
            "NAMESPACE",
            "POD",
            "CONTAINER",
            "DEVICE",
            "ACTIVE-J",
            "IDLE-J",
            "TOTAL-J",
        ],
        rows,
    ));
    out
}

#[cfg(test)]
mod tests {
    use kubenpu::server::{EnergyDeviceRow, EnergyRow};

    use super::*;

    #[test]
    fn each_device_says_how_it_is_measured_and_each_container_its_joules() {
        let report = EnergyReport {
            present: true,
            devices: vec![EnergyDeviceRow {
                device: "0000:03:00.0".into(),
                vendor: "amdgpu".into(),
                source: "power".into(),
                joules: 1000.0,
                idle_watts: 15.0,
                idle_method: "measured".into(),
                rule: "engine_time".into(),
            }],
            containers: vec![
                EnergyRow {
                    namespace: String::new(),
                    pod: String::new(),
                    container: String::new(),
                    device: "0000:03:00.0".into(),
                    active_joules: 0.0,
                    idle_joules: 100.0,
                },
                EnergyRow {
                    namespace: "ml".into(),
                    pod: "train".into(),
                    container: "main".into(),
                    device: "0000:03:00.0".into(),
                    active_joules: 850.0,
                    idle_joules: 50.0,
                },
            ],
            failed_reads: 0,
        };
        let text = table(&report, Format::Table);
        assert!(text.starts_with("0000:03:00.0 (amdgpu): 1000.0 J from power integrated between readings (an estimate); active energy by engine time (fdinfo); idle 15.0 W (measured)\n"), "{text}");
        assert!(
            text.contains("ml         train  main       0000:03:00.0  850.0     50.0    900.0"),
            "{text}"
        );
        assert!(
            text.contains("-          -      -          0000:03:00.0  0.0       100.0   100.0"),
            "{text}"
        );
        let off = table(&EnergyReport::default(), Format::Table);
        assert!(off.contains("--energy"), "{off}");
    }
}
