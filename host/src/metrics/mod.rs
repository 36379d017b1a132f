//! The Prometheus exposition: what operators see.
//!
//! The agent's loop takes a [`Snapshot`] of everything it knows at scrape
//! time (counts read from the kernel's maps and folded per pod, the
//! device table, losses) and [`render`] encodes it, in OpenMetrics or the
//! classic text format as the scraper asks.

mod allocation;
mod energy;
mod fdinfo;
mod placement;
mod policy;
mod process;

use std::collections::{BTreeMap, HashSet};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
    registry::Registry,
};

use kubenpu_ebpf::CountValue;
use kubenpu_sdk::Kind;

use crate::{
    allocation::AllocationView,
    catalog::{DeviceKind, Series},
    device_table::DeviceTable,
    energy::EnergyView,
    fdinfo::FdinfoView,
    placement::PlacementView,
    plugins::Source,
    policy::PolicyView,
    probe::Losses,
    usage::Durations,
};

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Calls, failures, time and bytes per series, folded per pod.
    pub ioctls: BTreeMap<Series, CountValue>,
    /// Call durations per device and kind.
    pub durations: BTreeMap<DeviceKind, Durations>,
    /// Measurements of counted calls that are missing, per reason.
    pub unmeasured: Losses,
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
    /// How the agent reads the counters: `iterators` or `lookups`.
    pub reads: &'static str,
    /// Whether the container runtime answered last time it was asked.
    pub cri_up: bool,
    /// Errors the agent's loop met and went on from, per stage.
    pub errors: BTreeMap<&'static str, u64>,
    /// Engine time and memory per pod, with `--fdinfo`.
    pub fdinfo: Option<FdinfoView>,
    /// Energy per device and pod, with `--energy`.
    pub energy: Option<EnergyView>,
    /// The allocation join, unless it is off.
    pub allocation: Option<AllocationView>,
    /// The policy, unless the allocation join is off.
    pub policy: Option<PolicyView>,
    /// Placement, unless it is off.
    pub placement: Option<PlacementView>,
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

const IOCTL_HELP: &str = "DRM/accel ioctl calls by pod, container, device and kind (submit: work handed to the device, alloc: device memory allocated, wait: waits for the device). Exact call counts, not utilization; a call the kernel restarts after a signal is one call. Empty pod labels: processes outside pods.";

/// Bucket `b` of the kernel's histogram holds calls of `[2^b, 2^(b+1))`
/// ns. The exposition's buckets start at 2^10 ns (about 1 µs; shorter
/// calls fall in the first) and end at 2^35 ns (about 34 s), then +Inf.
const FIRST_BUCKET: usize = 9;
const LAST_BUCKET: usize = 34;

/// The classic buckets of one histogram: `(upper bound in seconds, calls)`,
/// not cumulative, the last +Inf.
fn buckets(durations: &Durations) -> Vec<(f64, u64)> {
    let mut out = Vec::with_capacity(LAST_BUCKET - FIRST_BUCKET + 2);
    let mut below = 0;
    for (b, &calls) in durations.buckets.iter().enumerate() {
        if b <= FIRST_BUCKET {
            below += calls;
            if b == FIRST_BUCKET {
                out.push((upper_bound(b), below));
            }
        } else if b <= LAST_BUCKET {
            out.push((upper_bound(b), calls));
        }
    }
    let beyond = durations.buckets[LAST_BUCKET + 1..].iter().sum();
    out.push((f64::INFINITY, beyond));
    out
}

/// `2^(b+1)` ns in seconds.
fn upper_bound(bucket: usize) -> f64 {
    (1u64 << (bucket + 1)) as f64 / 1e9
}

/// The labels of a per-pod series.
fn series_labels(series: &Series) -> [(&str, &str); 6] {
    [
        ("pod", series.owner.pod.as_str()),
        ("namespace", series.owner.namespace.as_str()),
        ("container", series.owner.container.as_str()),
        ("device", &series.device),
        ("vendor", &series.vendor),
        ("kind", series.kind.as_str()),
    ]
}

impl Snapshot {
    /// One counter family over the per-pod series, valued by `value`
    /// (`None` leaves a series out).
    fn encode_per_pod<N: prometheus_client::encoding::EncodeCounterValue>(
        &self,
        encoder: &mut DescriptorEncoder,
        (name, help): (&str, &str),
        value: impl Fn(&Series, &CountValue) -> Option<N>,
    ) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (series, totals) in &self.ioctls {
            if let Some(v) = value(series, totals) {
                ConstCounter::new(v).encode(family.encode_family(&series_labels(series))?)?;
            }
        }
        Ok(())
    }

    /// The waits that returned without the device being done, by
    /// `reason`: `busy` (a no-block wait, a poll: -EBUSY or -EAGAIN) and
    /// `timed_out` (-ETIME or -ETIMEDOUT). Only wait series have them.
    fn encode_not_ready(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "kubenpu_ioctl_not_ready",
            "Counted waits that returned before the device was done, by pod, container, device and reason: busy (a no-block wait, or poll, found it busy: -EBUSY, -EAGAIN) or timed_out (-ETIME, -ETIMEDOUT); not errors, and not in kubenpu_ioctl_failed_total.",
            None,
            MetricType::Counter,
        )?;
        for (series, totals) in self.ioctls.iter().filter(|(s, _)| s.kind == Kind::Wait) {
            let [pod, namespace, container, device, vendor, kind] = series_labels(series);
            for (reason, n) in [("busy", totals.busy), ("timed_out", totals.timed_out)] {
                let labels = [
                    pod,
                    namespace,
                    container,
                    device,
                    vendor,
                    kind,
                    ("reason", reason),
                ];
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.encode_per_pod(&mut encoder, ("kubenpu_ioctl", IOCTL_HELP), |_, v| {
            Some(v.calls)
        })?;
        self.encode_per_pod(
            &mut encoder,
            (
                "kubenpu_ioctl_failed",
                "Counted calls that returned an error (bad handle, no memory, -EINTR, ...), by pod, container, device and kind; a wait that found the device busy or timed out is in kubenpu_ioctl_not_ready_total instead; a call the kernel restarts after a signal fails only if its last run does.",
            ),
            |_, v| Some(v.failed),
        )?;
        self.encode_not_ready(&mut encoder)?;
        self.encode_per_pod(
            &mut encoder,
            (
                "kubenpu_ioctl_seconds",
                "Time spent inside the counted calls, by pod, container, device and kind: for waits, the time blocked on the device.",
            ),
            |_, v| Some(v.ns as f64 / 1e9),
        )?;
        self.encode_per_pod(
            &mut encoder,
            (
                "kubenpu_alloc_bytes",
                "Bytes allocated by the successful alloc calls whose vendor declares where the size is, by pod, container, device and kind.",
            ),
            |series, v| (series.kind == Kind::Alloc).then_some(v.bytes),
        )?;
        let on_a_numa_node: HashSet<&str> = self
            .devices
            .iter()
            .filter(|d| !d.numa_node.is_empty())
            .map(|d| d.device.as_str())
            .collect();
        self.encode_per_pod(
            &mut encoder,
            (
                "kubenpu_remote_numa_ioctl",
                "Counted calls made from a CPU of another NUMA node than the device's, by pod, container, device and kind; only for devices whose NUMA node the machine names.",
            ),
            |series, v| on_a_numa_node.contains(&*series.device).then_some(v.remote),
        )?;

        let mut family = encoder.encode_descriptor(
            "kubenpu_ioctl_duration_seconds",
            "Durations of the counted calls, by device and kind (no pod label), from log2 buckets kept in the kernel.",
            None,
            MetricType::Histogram,
        )?;
        for (labels, durations) in &self.durations {
            let labels = [
                ("device", &*labels.device),
                ("vendor", &*labels.vendor),
                ("kind", labels.kind.as_str()),
            ];
            let buckets = buckets(durations);
            let count = buckets.iter().map(|(_, n)| n).sum();
            family
                .encode_family(&labels)?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    durations.sum_ns as f64 / 1e9,
                    count,
                    &buckets,
                    None,
                )?;
        }

        let mut family = encoder.encode_descriptor(
            "kubenpu_measurements_dropped",
            "Counted calls whose measurement is missing, by reason: unmeasured (the kernel skipped the exit program, or too many threads were inside calls at once: result, time and bytes missing), histogram_full (duration not in the histogram), size_unread (bytes of a successful allocation unreadable).",
            None,
            MetricType::Counter,
        )?;
        for (reason, lost) in &self.unmeasured {
            ConstCounter::new(*lost).encode(family.encode_family(&[("reason", *reason)])?)?;
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
            "Calls on counted devices that could not be counted, by reason: map_full (more distinct cgroup/device/ioctl keys than --max-counters), recursion (runs the kernel skipped because the program was already running on that CPU: fentry on a kernel that preempts kernel code), unclassified (a classified command whose field could not be read from the caller's memory) or ringbuf_full (new-key notes; the call was counted, only naming its pod waits).",
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
                "The kernel hook the program is attached with (kprobe-session, kprobe-multi, kprobe, fentry or fentry-module), and how scrapes and sweeps read the counters: iterators (BPF map iterators, which make kprobe hooks skip no call), or lookups (bpf(2) copies, where the kernel lacks map iterators: a call made on a CPU while the agent copies is skipped by kprobe hooks and counted as a recursion loss).",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("hook", self.hook), ("reads", self.reads)])?;

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
        if let Some(view) = &self.fdinfo {
            fdinfo::encode(view, &mut encoder)?;
        }
        if let Some(view) = &self.energy {
            energy::encode(view, &mut encoder)?;
        }
        if let Some(view) = &self.allocation {
            allocation::encode(view, &mut encoder)?;
        }
        if let Some(view) = &self.policy {
            policy::encode(view, &mut encoder)?;
        }
        if let Some(view) = &self.placement {
            placement::encode(view, &mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        let value = |calls, failed, ns, bytes| CountValue {
            calls,
            failed,
            ns,
            bytes,
            remote: calls / 2,
            busy: calls / 2,
            timed_out: calls / 3,
        };
        let mut buckets = [0; kubenpu_ebpf::DURATION_BUCKETS as usize];
        // Two calls under 1 µs, one of 20 ms (bucket 24: 2^24 ns = 16.8 ms).
        buckets[3] = 2;
        buckets[24] = 1;
        Snapshot {
            ioctls: [
                (series("web", Kind::Submit), value(5, 1, 1_500_000_000, 0)),
                (series("web", Kind::Alloc), value(3, 0, 1000, 12288)),
                (series("", Kind::Wait), value(2, 2, 40_000_000, 0)),
            ]
            .into(),
            durations: [(
                DeviceKind {
                    device: Arc::from("0000:00:02.0"),
                    vendor: Arc::from("i915"),
                    kind: Kind::Wait,
                },
                Durations {
                    buckets,
                    sum_ns: 20_000_600,
                },
            )]
            .into(),
            unmeasured: vec![("unmeasured", 4)],
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
            reads: "iterators",
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
            r#"kubenpu_ioctl_failed_total{pod="web",namespace="default",container="main",device="0000:00:02.0",vendor="i915",kind="submit"} 1"#,
            r#"kubenpu_ioctl_seconds_total{pod="web",namespace="default",container="main",device="0000:00:02.0",vendor="i915",kind="submit"} 1.5"#,
            r#"kubenpu_ioctl_seconds_total{pod="",namespace="",container="",device="0000:00:02.0",vendor="i915",kind="wait"} 0.04"#,
            r#"kubenpu_alloc_bytes_total{pod="web",namespace="default",container="main",device="0000:00:02.0",vendor="i915",kind="alloc"} 12288"#,
            r#"kubenpu_remote_numa_ioctl_total{pod="web",namespace="default",container="main",device="0000:00:02.0",vendor="i915",kind="submit"} 2"#,
            r#"kubenpu_remote_numa_ioctl_total{pod="",namespace="",container="",device="0000:00:02.0",vendor="i915",kind="wait"} 1"#,
            r#"kubenpu_ioctl_not_ready_total{pod="",namespace="",container="",device="0000:00:02.0",vendor="i915",kind="wait",reason="busy"} 1"#,
            r#"kubenpu_ioctl_not_ready_total{pod="",namespace="",container="",device="0000:00:02.0",vendor="i915",kind="wait",reason="timed_out"} 0"#,
            "# TYPE kubenpu_ioctl_duration_seconds histogram",
            r#"kubenpu_ioctl_duration_seconds_bucket{device="0000:00:02.0",vendor="i915",kind="wait",le="1.024e-06"} 2"#,
            r#"kubenpu_ioctl_duration_seconds_bucket{device="0000:00:02.0",vendor="i915",kind="wait",le="0.016777216"} 2"#,
            r#"kubenpu_ioctl_duration_seconds_bucket{device="0000:00:02.0",vendor="i915",kind="wait",le="0.033554432"} 3"#,
            r#"kubenpu_ioctl_duration_seconds_bucket{device="0000:00:02.0",vendor="i915",kind="wait",le="+Inf"} 3"#,
            r#"kubenpu_ioctl_duration_seconds_count{device="0000:00:02.0",vendor="i915",kind="wait"} 3"#,
            r#"kubenpu_ioctl_duration_seconds_sum{device="0000:00:02.0",vendor="i915",kind="wait"} 0.0200006"#,
            r#"kubenpu_measurements_dropped_total{reason="unmeasured"} 4"#,
            r#"kubenpu_device_info{device="0000:00:02.0",vendor="i915",driver="i915",pci_id="8086:5917",numa_node="0",node="node-1"} 1"#,
            r#"kubenpu_events_dropped_total{reason="map_full"} 1"#,
            "kubenpu_cgroup_index_rebuilds_total 3",
            r#"kubenpu_hook_info{hook="kprobe-multi",reads="iterators"} 1"#,
            "kubenpu_cri_up 1",
            r#"kubenpu_agent_errors_total{stage="sweep"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("# EOF"));
        // Bytes only for allocs; busy and timed-out only for waits.
        assert_eq!(
            text.matches("kubenpu_alloc_bytes_total{").count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.matches("kubenpu_ioctl_not_ready_total{").count(),
            2,
            "{text}"
        );
    }

    #[test]
    fn only_a_waits_busy_and_timed_out_errors_are_not_failures() {
        use kubenpu_ebpf::{ending, kind};
        let (ebusy, eagain, etime, etimedout) = (
            -i64::from(libc::EBUSY),
            -i64::from(libc::EAGAIN),
            -i64::from(libc::ETIME),
            -i64::from(libc::ETIMEDOUT),
        );
        for (kind, ret, ended) in [
            (kind::WAIT, 0, ending::DONE),
            (kind::WAIT, 1, ending::DONE),
            (kind::WAIT, ebusy, ending::BUSY),
            (kind::WAIT, eagain, ending::BUSY),
            (kind::WAIT, etime, ending::TIMED_OUT),
            (kind::WAIT, etimedout, ending::TIMED_OUT),
            (kind::WAIT, -i64::from(libc::ENOENT), ending::FAILED),
            (kind::WAIT, -i64::from(libc::EINTR), ending::FAILED),
            (kind::SUBMIT, ebusy, ending::FAILED),
            (kind::SUBMIT, etime, ending::FAILED),
            (kind::ALLOC, eagain, ending::FAILED),
            (kind::ALLOC, 7, ending::DONE),
        ] {
            assert_eq!(ending::of(kind, ret), ended, "kind {kind}, {ret}");
        }
    }

    #[test]
    fn the_allocation_join_has_its_own_series_beside_the_per_pod_ones() {
        use crate::allocation::{
            AllocationView,
            join::Holder,
            numa::{CpuSource, Fit},
            resolve::Source,
        };
        let holder = |container: &str, idle| Holder {
            owner: Owner {
                namespace: "ml".into(),
                pod: "train".into(),
                container: container.into(),
            },
            device: Arc::from("0000:03:00.0"),
            resource: "gpu.intel.com/i915".into(),
            source: Source::DevicePlugin,
            idle,
            // The sidecar's CPUs are unknown: it made no call.
            fit: (!idle).then_some(Fit {
                local: 1,
                total: 4,
                cpus: CpuSource::Cpuset,
            }),
        };
        let unallocated_series = Series {
            owner: Owner {
                namespace: "ml".into(),
                pod: "debug".into(),
                container: "main".into(),
            },
            device: Arc::from("0000:03:00.0"),
            vendor: Arc::from("i915"),
            kind: Kind::Submit,
        };
        let with_join = Snapshot {
            allocation: Some(AllocationView {
                holders: vec![holder("main", false), holder("sidecar", true)],
                unallocated: [(unallocated_series, 7)].into(),
                up: false,
                fresh: true,
                last_sync: Some(std::time::Duration::from_secs(1_700_000_000)),
                errors: [("rate_limited", 2)].into(),
                unmapped: [("squat.ai/gpu".to_string(), 3)].into(),
                invalid_cdi_specs: 1,
            }),
            ..snapshot()
        };
        let text = render(with_join, Format::Text);
        for line in [
            r#"kubenpu_allocation_info{pod="train",namespace="ml",container="main",device="0000:03:00.0",resource="gpu.intel.com/i915",source="device_plugin"} 1"#,
            r#"kubenpu_allocation_idle{pod="train",namespace="ml",container="main",device="0000:03:00.0",resource="gpu.intel.com/i915"} 0"#,
            r#"kubenpu_allocation_idle{pod="train",namespace="ml",container="sidecar",device="0000:03:00.0",resource="gpu.intel.com/i915"} 1"#,
            r#"kubenpu_unallocated_ioctl_total{pod="debug",namespace="ml",container="main",device="0000:03:00.0",vendor="i915",kind="submit"} 7"#,
            r#"kubenpu_allocation_numa_local_cpus_ratio{pod="train",namespace="ml",container="main",device="0000:03:00.0",resource="gpu.intel.com/i915",cpus="cpuset"} 0.25"#,
            "kubenpu_allocation_up 0",
            "kubenpu_allocation_fresh 1",
            "kubenpu_allocation_last_sync_timestamp_seconds 1700000000.0",
            r#"kubenpu_allocation_errors_total{reason="rate_limited"} 2"#,
            r#"kubenpu_allocation_unmapped_ids{resource="squat.ai/gpu"} 3"#,
            "kubenpu_allocation_invalid_cdi_specs 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        // The per-pod series are the same with or without the join.
        let without = render(snapshot(), Format::Text);
        let per_pod = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("kubenpu_ioctl_total{"))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(per_pod(&text), per_pod(&without));
        assert!(!without.contains("kubenpu_allocation"));
        assert_eq!(
            text.matches("kubenpu_allocation_numa_local_cpus_ratio{")
                .count(),
            1,
            "only holders whose CPUs are known"
        );
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
