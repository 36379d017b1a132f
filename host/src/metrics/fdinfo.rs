//! The fdinfo reader's families (`--fdinfo`): engine busy time and device
//! memory per pod, and what the reader costs.

use prometheus_client::{
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

use crate::{
    attribution::Owner,
    fdinfo::{DeviceLabels, FdinfoView},
};

/// The labels of a per-pod series: the pod's and the device's, then `own`.
fn labels<'a>(
    owner: &'a Owner,
    device: &'a DeviceLabels,
    own: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut labels = vec![
        ("pod", owner.pod.as_str()),
        ("namespace", owner.namespace.as_str()),
        ("container", owner.container.as_str()),
        ("device", &device.device),
        ("vendor", &device.vendor),
    ];
    labels.extend_from_slice(own);
    labels
}

/// Encodes `view`'s families.
pub fn encode(view: &FdinfoView, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "kubenpu_engine_busy_seconds",
        "Time the device's engine class was busy for the pod's DRM clients, from fdinfo (drivers that publish it), divided by the class's engine count.",
        None,
        MetricType::Counter,
    )?;
    for (s, seconds) in &view.engines {
        let labels = labels(&s.owner, &s.device, &[("engine", &s.engine)]);
        ConstCounter::new(*seconds).encode(family.encode_family(&labels)?)?;
    }

    let mut family = encoder.encode_descriptor(
        "kubenpu_device_memory_bytes",
        "Device memory the pod's DRM clients hold, from fdinfo (drivers that publish it), by region and state (total, shared, resident, active, purgeable).",
        None,
        MetricType::Gauge,
    )?;
    for (s, bytes) in &view.memory {
        let own = [("region", s.region.as_str()), ("state", s.state.name())];
        let labels = labels(&s.owner, &s.device, &own);
        ConstGauge::new(*bytes).encode(family.encode_family(&labels)?)?;
    }

    ConstGauge::new(view.last_scan.as_secs_f64()).encode(encoder.encode_descriptor(
        "kubenpu_fdinfo_scrape_seconds",
        "How long the fdinfo reader's last visit of the counted pods' processes took.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstGauge::new(view.denied as i64).encode(encoder.encode_descriptor(
        "kubenpu_fdinfo_denied_processes",
        "Processes of counted pods whose open files the fdinfo reader's last visit might not read (another user's, without CAP_SYS_PTRACE): their DRM clients are not measured.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstCounter::new(view.files_read).encode(encoder.encode_descriptor(
        "kubenpu_fdinfo_files_read",
        "fdinfo files the reader read (one per fd open on a claimed device, per visit).",
        None,
        MetricType::Counter,
    )?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{
        attribution::Owner,
        fdinfo::{DeviceLabels, EngineSeries, FdinfoView, MemorySeries, MemoryState},
        metrics::{Format, Snapshot, render},
    };

    #[test]
    fn the_readers_families_have_the_pod_labels_and_their_own() {
        let owner = Owner {
            namespace: "ml".into(),
            pod: "train".into(),
            container: "main".into(),
        };
        let device = DeviceLabels {
            device: "0000:03:00.0".into(),
            vendor: "xe".into(),
        };
        let view = FdinfoView {
            engines: [(
                EngineSeries {
                    owner: owner.clone(),
                    device: device.clone(),
                    engine: "rcs".into(),
                },
                1.5,
            )]
            .into(),
            memory: [(
                MemorySeries {
                    owner,
                    device,
                    region: "vram0".into(),
                    state: MemoryState::Resident,
                },
                4096,
            )]
            .into(),
            last_scan: Duration::from_millis(3),
            files_read: 7,
            denied: 2,
        };
        let snapshot = Snapshot {
            fdinfo: Some(view),
            ..Snapshot::default()
        };
        let text = render(snapshot, Format::Text);
        for line in [
            r#"kubenpu_engine_busy_seconds_total{pod="train",namespace="ml",container="main",device="0000:03:00.0",vendor="xe",engine="rcs"} 1.5"#,
            r#"kubenpu_device_memory_bytes{pod="train",namespace="ml",container="main",device="0000:03:00.0",vendor="xe",region="vram0",state="resident"} 4096"#,
            "kubenpu_fdinfo_scrape_seconds 0.003",
            "kubenpu_fdinfo_files_read_total 7",
            "kubenpu_fdinfo_denied_processes 2",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        // Without --fdinfo, none of its families.
        let text = render(Snapshot::default(), Format::Text);
        assert!(
            !text.contains("fdinfo") && !text.contains("engine_busy"),
            "{text}"
        );
    }
}
