//! The energy meter's families (`--energy`): each device's joules, their
//! division among pods, and the idle power the division uses.

use prometheus_client::{
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

use crate::energy::EnergyView;

/// Encodes `view`'s families.
pub fn encode(view: &EnergyView, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "kubenpu_device_energy_joules",
        "The device's energy since the agent started reading it: source=\"energy\" from the hwmon or firmware counter, source=\"power\" from power integrated between reads (an estimate, at the fdinfo interval).",
        None,
        MetricType::Counter,
    )?;
    for device in &view.devices {
        let labels = [
            ("device", &*device.device.device),
            ("vendor", &*device.device.vendor),
            ("source", device.source),
        ];
        ConstCounter::new(device.joules).encode(family.encode_family(&labels)?)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_energy_joules",
        "The device's energy charged to the pod: kind=\"active\", the energy above idle power, by the pod's engine time (or counted call time, for drivers without engine time in fdinfo, or evenly among the holders, for vendors that count no submit); kind=\"idle\", idle power shared evenly by the pods holding the device. Empty pod labels: idle energy nobody held, and active energy of processes outside pods or not named yet. Over a device, the pods' joules add up to kubenpu_device_energy_joules_total.",
        None,
        MetricType::Counter,
    )?;
    for (series, joules) in &view.shares {
        let labels = [
            ("pod", series.owner.pod.as_str()),
            ("namespace", series.owner.namespace.as_str()),
            ("container", series.owner.container.as_str()),
            ("device", &*series.device.device),
            ("vendor", &*series.device.vendor),
            ("kind", series.share.as_str()),
        ];
        ConstCounter::new(*joules).encode(family.encode_family(&labels)?)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_device_idle_watts",
        "The idle power the division uses: method=\"measured\", the lowest of the device's power over the last ten intervals nobody used it; method=\"plugin\", the vendor plugin's figure, until then. rule says how the active energy is divided: engine_time, call_time or even (among the holders).",
        None,
        MetricType::Gauge,
    )?;
    for device in &view.devices {
        let method = if device.idle_measured {
            "measured"
        } else {
            "plugin"
        };
        let labels = [
            ("device", &*device.device.device),
            ("vendor", &*device.device.vendor),
            ("method", method),
            ("rule", device.rule.as_str()),
        ];
        ConstGauge::new(device.idle_watts).encode(family.encode_family(&labels)?)?;
    }

    ConstCounter::new(view.failed_reads).encode(encoder.encode_descriptor(
        "kubenpu_energy_failed_reads",
        "Reads of a device's energy sensor that failed; each device's failure is logged once until it reads again.",
        None,
        MetricType::Counter,
    )?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{
        attribution::Owner,
        energy::{DeviceEnergy, EnergySeries, EnergyView, Rule, Share},
        fdinfo::DeviceLabels,
        metrics::{Format, Snapshot, render},
    };

    #[test]
    fn the_meters_families_have_the_device_and_pod_labels() {
        let device = DeviceLabels {
            device: "0000:03:00.0".into(),
            vendor: "xe".into(),
        };
        let owner = Owner {
            namespace: "ml".into(),
            pod: "train".into(),
            container: "main".into(),
        };
        let view = EnergyView {
            devices: vec![DeviceEnergy {
                device: device.clone(),
                source: "energy",
                joules: 1000.0,
                idle_watts: 20.0,
                idle_measured: false,
                rule: Rule::EngineTime,
            }],
            shares: [
                (
                    EnergySeries {
                        owner,
                        device: device.clone(),
                        share: Share::Active,
                    },
                    800.0,
                ),
                (
                    EnergySeries {
                        owner: Owner::default(),
                        device,
                        share: Share::Idle,
                    },
                    200.0,
                ),
            ]
            .into(),
            failed_reads: 3,
        };
        let snapshot = Snapshot {
            energy: Some(view),
            ..Snapshot::default()
        };
        let text = render(snapshot, Format::Text);
        for line in [
            r#"kubenpu_device_energy_joules_total{device="0000:03:00.0",vendor="xe",source="energy"} 1000.0"#,
            r#"kubenpu_energy_joules_total{pod="train",namespace="ml",container="main",device="0000:03:00.0",vendor="xe",kind="active"} 800.0"#,
            r#"kubenpu_energy_joules_total{pod="",namespace="",container="",device="0000:03:00.0",vendor="xe",kind="idle"} 200.0"#,
            r#"kubenpu_device_idle_watts{device="0000:03:00.0",vendor="xe",method="plugin",rule="engine_time"} 20.0"#,
            "kubenpu_energy_failed_reads_total 3",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        // Without --energy, none of its families.
        let text = render(Snapshot::default(), Format::Text);
        assert!(!text.contains("energy"), "{text}");
    }
}
