//! The Prometheus exposition: what operators see.
//!
//! The agent's loop takes a [`Snapshot`] of everything it knows at scrape
//! time (counts read from the kernel's per-CPU maps and folded per pod, the
//! device table, losses) and [`render`] encodes it, in OpenMetrics or the
//! classic text format as the scraper asks.

mod process;

use std::collections::BTreeMap;

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
    registry::Registry,
};

use crate::{catalog::Series, device_table::DeviceTable, plugins::Source, probe::Losses};

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Calls per series, folded per pod.
    pub ioctls: BTreeMap<Series, u64>,
    /// One row per discovered device.
    pub devices: Vec<DeviceInfo>,
    /// One row per vendor in force.
    pub plugins: Vec<PluginInfo>,
    /// Calls not counted, per reason.
    pub losses: Losses,
    /// Walks of the cgroup hierarchy so far.
    pub index_rebuilds: u64,
    /// The hook in use.
    pub hook: &'static str,
    /// Whether the container runtime answered last time it was asked.
    pub cri_up: bool,
    /// Errors the agent's loop met and went on from, per stage.
    pub errors: BTreeMap<&'static str, u64>,
}

/// A `kubenpu_device_info` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's stable name.
    pub device: String,
    /// The vendor claiming it; empty if none.
    pub vendor: String,
    /// The kernel driver.
    pub driver: String,
    /// `vvvv:dddd`, empty for non-PCI devices.
    pub pci_id: String,
    /// The NUMA node, empty if unknown.
    pub numa_node: String,
    /// The Kubernetes node.
    pub node: String,
}

/// A `kubenpu_plugin_info` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The vendor's name.
    pub vendor: String,
    /// The plugin's version.
    pub version: String,
    /// `built-in` or `file`.
    pub source: &'static str,
    /// SHA-256 of the file; empty for built-ins.
    pub sha256: String,
}

impl DeviceInfo {
    /// The rows of `table`, on Kubernetes node `node`.
    pub fn rows(table: &DeviceTable, node: &str) -> Vec<Self> {
        table
            .entries
            .iter()
            .map(|entry| DeviceInfo {
                device: entry.device.name.clone(),
                vendor: entry
                    .vendor
                    .as_ref()
                    .map(|v| v.name().to_owned())
                    .unwrap_or_default(),
                driver: entry.device.driver.clone(),
                pci_id: entry
                    .device
                    .pci
                    .as_ref()
                    .map(|p| p.id_string())
                    .unwrap_or_default(),
                numa_node: entry
                    .device
                    .numa_node
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
                node: node.to_owned(),
            })
            .collect()
    }
}

impl PluginInfo {
    /// The rows of the vendors in `table`.
    pub fn rows(table: &DeviceTable) -> Vec<Self> {
        table
            .vendors
            .plugins
            .iter()
            .map(|plugin| {
                let (source, sha256) = match &plugin.source {
                    Source::Builtin => ("built-in", String::new()),
                    Source::File { sha256, .. } => ("file", sha256.clone()),
                };
                PluginInfo {
                    vendor: plugin.name().to_owned(),
                    version: plugin.description.version.clone(),
                    source,
                    sha256,
                }
            })
            .collect()
    }
}

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0, when the scraper accepts it.
    OpenMetrics,
    /// The classic Prometheus text format 0.0.4.
    Text,
}

impl Format {
    /// The format an `Accept` header asks for.
    pub fn negotiate(accept: &str) -> Self {
        if accept.contains("application/openmetrics-text") {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The exposition of `snapshot` in `format`.
pub fn render(snapshot: Snapshot, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(snapshot));
    registry.register_collector(Box::new(process::Process));
    let mut out = String::new();
    let encoded = match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry),
    };
    encoded.expect("writing to a String cannot fail");
    out
}

const IOCTL_HELP: &str = "DRM/accel ioctl calls by pod, container, device and kind (submit: work handed to the device, alloc: device memory allocated, wait: waits for the device). Exact call counts, not utilization. Empty pod labels: processes outside pods.";

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family =
            encoder.encode_descriptor("kubenpu_ioctl", IOCTL_HELP, None, MetricType::Counter)?;
        for (series, calls) in &self.ioctls {
            let labels = [
                ("pod", series.owner.pod.as_str()),
                ("namespace", series.owner.namespace.as_str()),
                ("container", series.owner.container.as_str()),
                ("device", &series.device),
                ("vendor", &series.vendor),
                ("kind", series.kind.as_str()),
            ];
            ConstCounter::new(*calls).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "kubenpu_device",
            "One row per DRM/accel device on the node; device is the PCI address, or a stable sysfs name for non-PCI devices; vendor is empty when no plugin claims it.",
            None,
            MetricType::Info,
        )?;
        for d in &self.devices {
            let labels = [
                ("device", d.device.as_str()),
                ("vendor", &d.vendor),
                ("driver", &d.driver),
                ("pci_id", &d.pci_id),
                ("numa_node", &d.numa_node),
                ("node", &d.node),
            ];
            family.encode_info(&labels)?;
        }

        let mut family = encoder.encode_descriptor(
            "kubenpu_events_dropped",
            "Calls on counted devices that could not be counted, by reason: map_full (more distinct cgroup/device/ioctl keys than --max-counters), recursion (runs the kernel skipped because the program was already running on that CPU: fentry on a kernel that preempts kernel code) or ringbuf_full (new-key notes; the call was counted, only naming its pod waits).",
            None,
            MetricType::Counter,
        )?;
        for (reason, lost) in &self.losses {
            ConstCounter::new(*lost).encode(family.encode_family(&[("reason", *reason)])?)?;
        }

        ConstCounter::new(self.index_rebuilds).encode(encoder.encode_descriptor(
            "kubenpu_cgroup_index_rebuilds",
            "Walks of the cgroup hierarchy to name cgroup ids (one per burst of new cgroups, rate-limited).",
            None,
            MetricType::Counter,
        )?)?;

        let mut family = encoder.encode_descriptor(
            "kubenpu_plugin",
            "Vendor plugins in force: source built-in or file (with the file's sha256).",
            None,
            MetricType::Info,
        )?;
        for p in &self.plugins {
            let labels = [
                ("vendor", p.vendor.as_str()),
                ("version", &p.version),
                ("source", p.source),
                ("sha256", &p.sha256),
            ];
            family.encode_info(&labels)?;
        }

        encoder
            .encode_descriptor(
                "kubenpu_hook",
                "The kernel hook the program is attached with: kprobe-multi, kprobe, fentry or fentry-module.",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("hook", self.hook)])?;

        encoder
            .encode_descriptor(
                "kubenpu_build",
                "The agent's version.",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;

        ConstGauge::new(i64::from(self.cri_up)).encode(encoder.encode_descriptor(
            "kubenpu_cri_up",
            "1 if the container runtime answered last time it was asked; while 0, new containers are counted under their cgroup and named when it answers.",
            None,
            MetricType::Gauge,
        )?)?;

        let mut family = encoder.encode_descriptor(
            "kubenpu_agent_errors",
            "Errors the agent met after start-up and went on from, by stage (drain, scrape, sweep, save, restore, reattach, install); each is logged once and retried.",
            None,
            MetricType::Counter,
        )?;
        for (stage, errors) in &self.errors {
            ConstCounter::new(*errors).encode(family.encode_family(&[("stage", *stage)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubenpu_sdk::Kind;

    use super::*;
    use crate::attribution::Owner;

    fn snapshot() -> Snapshot {
        let series = |pod: &str, kind| Series {
            owner: Owner {
                namespace: if pod.is_empty() { "" } else { "default" }.into(),
                pod: pod.into(),
                container: if pod.is_empty() { "" } else { "main" }.into(),
            },
            device: Arc::from("0000:00:02.0"),
            vendor: Arc::from("i915"),
            kind,
        };
        Snapshot {
            ioctls: [
                (series("web", Kind::Submit), 5),
                (series("", Kind::Wait), 2),
            ]
            .into(),
            devices: vec![DeviceInfo {
                device: "0000:00:02.0".into(),
                vendor: "i915".into(),
                driver: "i915".into(),
                pci_id: "8086:5917".into(),
                numa_node: "0".into(),
                node: "node-1".into(),
            }],
            losses: vec![("map_full", 1), ("ringbuf_full", 0)],
            index_rebuilds: 3,
            hook: "kprobe-multi",
            cri_up: true,
            errors: [("sweep", 2)].into(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn the_classic_format_has_the_specs_names_and_labels() {
        let text = render(snapshot(), Format::Text);
        for line in [
            "# TYPE kubenpu_ioctl_total counter",
            r#"kubenpu_ioctl_total{pod="web",namespace="default",container="main",device="0000:00:02.0",vendor="i915",kind="submit"} 5"#,
            r#"kubenpu_ioctl_total{pod="",namespace="",container="",device="0000:00:02.0",vendor="i915",kind="wait"} 2"#,
            r#"kubenpu_device_info{device="0000:00:02.0",vendor="i915",driver="i915",pci_id="8086:5917",numa_node="0",node="node-1"} 1"#,
            r#"kubenpu_events_dropped_total{reason="map_full"} 1"#,
            "kubenpu_cgroup_index_rebuilds_total 3",
            r#"kubenpu_hook_info{hook="kprobe-multi"} 1"#,
            "kubenpu_cri_up 1",
            r#"kubenpu_agent_errors_total{stage="sweep"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn openmetrics_is_negotiated_and_terminated() {
        let format =
            Format::negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
        assert_eq!(format, Format::OpenMetrics);
        assert_eq!(Format::negotiate("*/*"), Format::Text);
        let text = render(snapshot(), format);
        assert!(text.contains("# TYPE kubenpu_ioctl counter\n"), "{text}");
        assert!(text.contains("# TYPE kubenpu_device info\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
