//! What `kubenpuctl` prints: the device and plugin tables, as aligned text
//! for people and as JSON for scripts.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc};

use serde::Serialize;

use kubenpu::{
    catalog::kind_of_code,
    device_table::DeviceTable,
    discovery::{DevNum, Subsystem},
    plugins::{Plugin, Source},
    probe::{Counter, Reading},
    server::{self, Holder},
};

/// How a report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns, for people.
    Table,
    /// JSON, for scripts.
    Json,
}

impl Format {
    /// `--json` or not.
    pub fn json_if(json: bool) -> Self {
        if json { Format::Json } else { Format::Table }
    }
}

/// One device as JSON.
#[derive(Serialize)]
struct DeviceRow<'a> {
    driver: &'a str,
    pci_id: Option<String>,
    address: &'a str,
    nodes: Vec<DevNum>,
    vendor: Option<&'a str>,
    product: Option<&'a str>,
    numa_node: Option<u32>,
    subsystem: Subsystem,
}

fn device_rows(table: &DeviceTable) -> Vec<DeviceRow<'_>> {
    table
        .entries
        .iter()
        .map(|e| DeviceRow {
            driver: &e.device.driver,
            pci_id: e.device.pci.as_ref().map(|p| p.id_string()),
            address: &e.device.name,
            nodes: e.device.nodes.iter().map(|n| n.dev).collect(),
            vendor: e.vendor.as_ref().map(|v| v.name()),
            product: e.product.as_deref(),
            numa_node: e.device.numa_node,
            subsystem: e.device.subsystem,
        })
        .collect()
}

/// `kubenpuctl devices`: `DRIVER PCI-ID ADDRESS NODES VENDOR`, `-` where a
/// value is absent; or the rows as JSON.
pub fn devices(table: &DeviceTable, format: Format) -> String {
    if format == Format::Json {
        return json(&device_rows(table));
    }
    let rows = device_rows(table).into_iter().map(|r| {
        let nodes: Vec<String> = r.nodes.iter().map(ToString::to_string).collect();
        vec![
            r.driver.to_owned(),
            r.pci_id.unwrap_or_else(|| "-".into()),
            r.address.to_owned(),
            nodes.join(","),
            r.vendor.unwrap_or("-").to_owned(),
        ]
    });
    aligned(&["DRIVER", "PCI-ID", "ADDRESS", "NODES", "VENDOR"], rows)
}

/// One ioctl entry as JSON.
#[derive(Serialize)]
struct IoctlRow<'a> {
    nr: u8,
    name: &'a str,
    kind: &'static str,
    /// Where an alloc's size is, e.g. `size@24:8 after`; absent if none.
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<String>,
}

/// A declared size in one line: `FIELD@OFFSET:WIDTH before|after`, then
/// `when FIELD@OFFSET:WIDTH=VALUE` for a multiplexed ioctl.
/// `name@offset:width`.
fn field_text(f: &kubenpu_sdk::FieldSpec) -> String {
    format!("{}@{}:{}", f.name, f.offset, f.width)
}

fn size_text(size: &kubenpu_sdk::SizeSpec) -> String {
    let read = match size.read {
        kubenpu_sdk::Phase::Before => "before",
        kubenpu_sdk::Phase::After => "after",
    };
    let mut text = format!("{} {read}", field_text(&size.field));
    if let Some((selector, value)) = &size.when {
        let _ = write!(text, " when {}={value}", field_text(selector));
    }
    text
}

/// One plugin as JSON.
#[derive(Serialize)]
struct PluginRow<'a> {
    name: &'a str,
    version: &'a str,
    source: String,
    sha256: Option<&'a str>,
    drivers: &'a [String],
    ioctls: Vec<IoctlRow<'a>>,
    /// Engine classes the metrics rename, kernel name to shown name.
    engine_names: BTreeMap<&'a str, &'a str>,
    /// Memory regions likewise.
    region_names: BTreeMap<&'a str, &'a str>,
    /// Device plugins' resources handing out its devices, to the form of
    /// their IDs.
    device_plugins: BTreeMap<&'a str, &'static str>,
    /// DRA drivers likewise.
    dra_drivers: BTreeMap<&'a str, &'static str>,
    /// Its character devices outside DRM, each with its table.
    char_devices: Vec<CharDeviceRow<'a>>,
    /// Where its devices report their energy, the sensors best first.
    energy: Option<String>,
}

/// One character device of a plugin as JSON.
#[derive(Serialize)]
struct CharDeviceRow<'a> {
    driver: &'a str,
    /// Where its nodes are: `class dma_heap`, `misc device udmabuf`,
    /// `major nvidia`.
    nodes: String,
    /// The kernel function hooked.
    entry: &'a str,
    /// The bits of a command that pick its entry.
    key: &'static str,
    commands: Vec<CommandRow<'a>>,
}

/// One command of a character device's table as JSON.
#[derive(Serialize)]
struct CommandRow<'a> {
    cmd: u32,
    name: &'a str,
    kind: &'static str,
    size: Option<String>,
    /// For a classified command: `field@offset:width in v1,v2,...`.
    only_when: Option<String>,
}

/// `kernel=shown, ...`.
fn renames_text(renames: &BTreeMap<&str, &str>) -> String {
    let pairs: Vec<String> = renames.iter().map(|(k, s)| format!("{k}={s}")).collect();
    pairs.join(", ")
}

fn plugin_row(plugin: &Plugin) -> PluginRow<'_> {
    let d = &plugin.description;
    PluginRow {
        name: &d.name,
        version: &d.version,
        source: plugin.source.to_string(),
        sha256: match &plugin.source {
            Source::Builtin => None,
            Source::File { sha256, .. } => Some(sha256),
        },
        drivers: &d.drivers,
        ioctls: d
            .ioctls
            .iter()
            .map(|i| IoctlRow {
                nr: i.nr,
                name: &i.name,
                kind: i.kind.as_str(),
                size: i.size.as_ref().map(size_text),
            })
            .collect(),
        engine_names: pairs(&d.usage_names.engines),
        region_names: pairs(&d.usage_names.regions),
        device_plugins: id_forms(&d.allocators.device_plugins),
        dra_drivers: id_forms(&d.allocators.dra_drivers),
        char_devices: d
            .char_devices
            .iter()
            .map(|device| CharDeviceRow {
                driver: &device.driver,
                nodes: device.nodes.to_string(),
                entry: &device.entry,
                key: device.key.as_str(),
                commands: device
                    .commands
                    .iter()
                    .map(|c| CommandRow {
                        cmd: c.cmd,
                        name: &c.name,
                        kind: c.kind.as_str(),
                        size: c.size.as_ref().map(size_text),
                        only_when: c.only_when.as_ref().map(|(field, values)| {
                            let values: Vec<String> =
                                values.iter().map(|v| format!("{v:#x}")).collect();
                            format!("{} in {}", field_text(field), values.join(","))
                        }),
                    })
                    .collect(),
            })
            .collect(),
        energy: energy_text(&d.energy),
    }
}

/// `hwmon xe: energy1_input (card), energy2_input (pkg); idle 30 W until
/// measured`: where a vendor's devices report their energy, none if
/// nowhere.
fn energy_text(energy: &kubenpu_sdk::EnergySpec) -> Option<String> {
    use kubenpu_sdk::SensorSpec;
    if energy.sensors.is_empty() {
        return None;
    }
    let attribute = |what: &str, a: &kubenpu_sdk::AttributeSpec| match &a.label {
        Some(label) => format!("{what} {} ({label})", a.file),
        None => format!("{what} {}", a.file),
    };
    let sensors: Vec<String> = energy
        .sensors
        .iter()
        .map(|sensor| match sensor {
            SensorSpec::EnergyCounter(a) => attribute("counter", a),
            SensorSpec::Power(a) => attribute("power", a),
            SensorSpec::Metrics(m) => format!(
                "counter {} {}.{} at byte {} in 2^-{} J{}",
                m.file,
                m.format_revision,
                m.content_revision,
                m.offset,
                m.unit_shift,
                if m.wraps_at_32_bits {
                    ", may wrap at 32 bits"
                } else {
                    ""
                }
            ),
        })
        .collect();
    let mut text = String::new();
    let hwmon = energy
        .sensors
        .iter()
        .any(|s| !matches!(s, SensorSpec::Metrics(_)));
    match &energy.hwmon_names[..] {
        [] if hwmon => text.push_str("any hwmon of the device: "),
        [] => {}
        names => {
            let _ = write!(text, "hwmon {}: ", names.join("|"));
        }
    }
    let _ = write!(
        text,
        "{}; idle {} W until measured",
        sensors.join(", then "),
        f64::from(energy.idle_milliwatts) / 1000.0
    );
    Some(text)
}

fn id_forms(allocators: &[(String, kubenpu_sdk::Ids)]) -> BTreeMap<&str, &'static str> {
    allocators
        .iter()
        .map(|(name, ids)| (name.as_str(), ids.as_str()))
        .collect()
}

fn pairs(renames: &[(String, String)]) -> BTreeMap<&str, &str> {
    renames
        .iter()
        .map(|(kernel, shown)| (kernel.as_str(), shown.as_str()))
        .collect()
}

/// `kubenpuctl plugins`: one line per ioctl entry under each vendor, and
/// the engines and regions it renames; or the plugins as JSON.
pub fn plugins(plugins: &[Arc<Plugin>], format: Format) -> String {
    if format == Format::Json {
        return json(&plugins.iter().map(|p| plugin_row(p)).collect::<Vec<_>>());
    }
    let mut out = String::new();
    for plugin in plugins {
        let row = plugin_row(plugin);
        let _ = write!(out, "{} {} ({}", row.name, row.version, row.source);
        if let Some(sha) = row.sha256 {
            let _ = write!(out, ", sha256 {sha}");
        }
        let _ = writeln!(out, ") drivers: {}", row.drivers.join(", "));
        for (what, renames) in [
            ("engines", &row.engine_names),
            ("regions", &row.region_names),
            ("device plugins", &row.device_plugins),
            ("DRA drivers", &row.dra_drivers),
        ] {
            if !renames.is_empty() {
                let _ = writeln!(out, "  {what}: {}", renames_text(renames));
            }
        }
        if let Some(energy) = &row.energy {
            let _ = writeln!(out, "  energy: {energy}");
        }
        let rows = row.ioctls.iter().map(|i| {
            vec![
                format!("  {:#04x}", i.nr),
                i.kind.to_owned(),
                i.name.to_owned(),
                i.size.clone().unwrap_or_else(|| "-".into()),
            ]
        });
        if !row.ioctls.is_empty() {
            out.push_str(&aligned(&["  NR", "KIND", "IOCTL", "SIZE"], rows));
        }
        for device in &row.char_devices {
            let _ = writeln!(
                out,
                "  character device {}: {}, entry {}, keyed on the {}",
                device.driver,
                device.nodes,
                device.entry,
                device.key.replace('-', " ")
            );
            let classified = device.commands.iter().any(|c| c.only_when.is_some());
            let rows = device.commands.iter().map(|c| {
                let mut row = vec![
                    format!("    {:#010x}", c.cmd),
                    c.kind.to_owned(),
                    c.name.to_owned(),
                    c.size.clone().unwrap_or_else(|| "-".into()),
                ];
                if classified {
                    row.push(c.only_when.clone().unwrap_or_else(|| "-".into()));
                }
                row
            });
            let headings: &[&str] = if classified {
                &["    CMD", "KIND", "COMMAND", "SIZE", "ONLY WHEN"]
            } else {
                &["    CMD", "KIND", "COMMAND", "SIZE"]
            };
            out.push_str(&aligned(headings, rows));
        }
    }
    out
}

/// One counter as JSON.
#[derive(Serialize)]
struct CounterRow {
    cgroup_id: u64,
    device: DevNum,
    nr: u32,
    calls: u64,
    failed: u64,
    busy: u64,
    timed_out: u64,
    ns: u64,
    bytes: u64,
    remote: u64,
}

fn counter_rows(counters: &[Counter]) -> Vec<CounterRow> {
    counters
        .iter()
        .map(|c| CounterRow {
            cgroup_id: c.key.cgroup_id,
            device: DevNum::from_kernel_dev_t(c.key.dev),
            nr: c.key.nr,
            calls: c.value.calls,
            failed: c.value.failed,
            busy: c.value.busy,
            timed_out: c.value.timed_out,
            ns: c.value.ns,
            bytes: c.value.bytes,
            remote: c.value.remote,
        })
        .collect()
}

/// One bucket of the duration histogram as JSON.
#[derive(Serialize)]
struct DurationRow {
    device: DevNum,
    kind: &'static str,
    /// Calls of `[2^bucket, 2^(bucket+1))` ns.
    bucket: u16,
    calls: u64,
}

/// `kubenpuctl counts`: one line per counter, then the losses; or as JSON,
/// `{"counters": [...], "losses": {reason: n}, "unmeasured": {reason: n},
/// "durations": [...]}`.
pub fn counts(reading: &Reading, format: Format) -> String {
    let counters = counter_rows(&reading.counters);
    if format == Format::Json {
        fn by_reason<'a>(losses: &[(&'a str, u64)]) -> BTreeMap<&'a str, u64> {
            losses.iter().copied().collect()
        }
        let durations: Vec<DurationRow> = reading
            .durations
            .iter()
            .map(|(key, calls)| DurationRow {
                device: DevNum::from_kernel_dev_t(key.dev),
                kind: kind_of_code(u32::from(key.kind)).map_or("?", |k| k.as_str()),
                bucket: key.bucket,
                calls: *calls,
            })
            .collect();
        return json(&serde_json::json!({
            "counters": counters,
            "losses": by_reason(&reading.losses),
            "unmeasured": by_reason(&reading.unmeasured),
            "durations": durations,
        }));
    }
    let rows = counters.into_iter().map(|r| {
        vec![
            r.cgroup_id.to_string(),
            r.device.to_string(),
            format!("{:#04x}", r.nr),
            r.calls.to_string(),
            r.failed.to_string(),
            r.busy.to_string(),
            r.timed_out.to_string(),
            format!("{:.6}", r.ns as f64 / 1e9),
            r.bytes.to_string(),
            r.remote.to_string(),
        ]
    });
    let header = [
        "CGROUP",
        "DEVICE",
        "NR",
        "CALLS",
        "FAILED",
        "BUSY",
        "TIMED OUT",
        "SECONDS",
        "BYTES",
        "REMOTE",
    ];
    let mut out = aligned(&header, rows);
    for (reason, lost) in &reading.losses {
        let _ = writeln!(out, "lost ({reason}): {lost}");
    }
    for (reason, lost) in &reading.unmeasured {
        let _ = writeln!(out, "unmeasured ({reason}): {lost}");
    }
    out
}

/// The columns of `kubenpuctl top`.
pub const TOP_HEADER: [&str; 11] = [
    "NAMESPACE",
    "POD",
    "CONTAINER",
    "DEVICE",
    "SUBMIT/s",
    "ALLOC/s",
    "WAIT/s",
    "WAIT%",
    "ALLOC-MB/s",
    "BUSY%",
    "RES-MB",
];

/// One row of `kubenpuctl top`, as rates.
#[derive(Debug, Default)]
struct Rates {
    /// Calls per second: submit, alloc, wait.
    calls: [f64; 3],
    /// Seconds waited on the device per second of wall time, as a share.
    waiting: f64,
    /// Bytes allocated per second.
    bytes: f64,
    /// The busiest engine class's share of the wall time, where the
    /// agent reads fdinfo and the driver publishes it.
    busy: Option<f64>,
    /// Resident device memory, likewise.
    resident: Option<u64>,
}

/// The growth of a counter between two readings; one that went down was
/// reset (the pod's series restarted) and counts from zero.
fn growth<T: PartialOrd + std::ops::Sub<Output = T> + Copy>(now: T, was: T) -> T {
    if now >= was { now - was } else { now }
}

/// `kubenpuctl top`: per-container call rates between two readings of the
/// agent's `/api/v1/usage`, `seconds` apart, busiest first. WAIT% is the
/// share of the wall time the container's threads spent inside wait calls
/// (above 100 when several wait at once); BUSY% the busiest engine
/// class's share and RES-MB the resident device memory, from fdinfo.
pub fn top(before: &server::UsageReport, after: &server::UsageReport, seconds: f64) -> String {
    let earlier: BTreeMap<(&Holder, &str), &server::UsageRow> = before
        .series
        .iter()
        .map(|r| ((&r.holder, r.kind.as_str()), r))
        .collect();
    let mut rates: BTreeMap<&Holder, Rates> = BTreeMap::new();
    for row in &after.series {
        let key = &row.holder;
        let was = earlier.get(&(key, row.kind.as_str()));
        let calls = growth(row.calls, was.map_or(0, |w| w.calls));
        let waited = growth(row.seconds, was.map_or(0.0, |w| w.seconds));
        let bytes = growth(row.bytes, was.map_or(0, |w| w.bytes));
        let column = match row.kind.as_str() {
            "submit" => 0,
            "alloc" => 1,
            _ => 2,
        };
        let rate = rates.entry(key).or_default();
        rate.calls[column] += calls as f64 / seconds;
        if column == 2 {
            rate.waiting += waited / seconds;
        }
        rate.bytes += bytes as f64 / seconds;
    }
    let busy_before: BTreeMap<(&Holder, &str), f64> = before
        .engines
        .iter()
        .map(|r| ((&r.holder, r.engine.as_str()), r.seconds))
        .collect();
    for row in &after.engines {
        let was = busy_before.get(&(&row.holder, row.engine.as_str()));
        let share = growth(row.seconds, was.copied().unwrap_or(0.0)) / seconds;
        let rate = rates.entry(&row.holder).or_default();
        rate.busy = Some(rate.busy.map_or(share, |b| b.max(share)));
    }
    for row in after.memory.iter().filter(|r| r.state == "resident") {
        *rates
            .entry(&row.holder)
            .or_default()
            .resident
            .get_or_insert(0) += row.bytes;
    }
    let mut rows: Vec<(&Holder, Rates)> = rates.into_iter().collect();
    rows.sort_by(|a, b| {
        b.1.calls
            .iter()
            .sum::<f64>()
            .total_cmp(&a.1.calls.iter().sum::<f64>())
    });
    let cell = |text: &str| {
        if text.is_empty() {
            "-".to_owned()
        } else {
            text.to_owned()
        }
    };
    aligned(
        &TOP_HEADER,
        rows.into_iter().map(|(holder, rate)| {
            let [s, a, w] = rate.calls;
            let or_dash = |value: Option<String>| value.unwrap_or_else(|| "-".to_owned());
            vec![
                cell(&holder.namespace),
                cell(&holder.pod),
                cell(&holder.container),
                holder.device.clone(),
                format!("{s:.1}"),
                format!("{a:.1}"),
                format!("{w:.1}"),
                format!("{:.1}", rate.waiting * 100.0),
                format!("{:.2}", rate.bytes / 1e6),
                or_dash(rate.busy.map(|b| format!("{:.1}", b * 100.0))),
                or_dash(rate.resident.map(|r| format!("{:.1}", r as f64 / 1e6))),
            ]
        }),
    )
}

/// `kubenpuctl allocations`: whether kubelet's word is fresh, the devices
/// allocated to running containers (`idle` or `used`, the container's
/// calls on each and how many came from another NUMA node, and how many of
/// its CPUs are on the device's node), and the calls
/// on devices not allocated to the caller; or the report as JSON. `now`
/// is Unix time in seconds.
pub fn allocations(report: &server::AllocationsReport, now: f64, format: Format) -> String {
    if format == Format::Json {
        return json(report);
    }
    if !report.joining {
        return "the agent does not join allocations (it runs with --no-allocation)\n".into();
    }
    let last = match report.last_sync {
        Some(at) => format!("{:.0} s ago", (now - at).max(0.0)),
        None => "never".into(),
    };
    let mut out = if report.fresh {
        format!("kubelet's allocations: last listed {last}\n")
    } else {
        format!(
            "kubelet's allocations are stale (last listed: {last}; kubelet {}): rows withheld; see kubenpu_allocation_errors_total and the agent's log\n",
            if report.up {
                "answers"
            } else {
                "does not answer"
            }
        )
    };
    let allocated = report.allocated.iter().map(|r| {
        vec![
            r.namespace.clone(),
            r.pod.clone(),
            r.container.clone(),
            r.device.clone(),
            r.resource.clone(),
            r.source.clone(),
            if r.idle { "idle" } else { "used" }.to_owned(),
            r.calls.to_string(),
            r.remote.to_string(),
            r.numa_fit.as_ref().map_or("-".into(), |f| {
                format!("{}/{} {}", f.local_cpus, f.cpus, f.from)
            }),
        ]
    });
    out.push_str(&aligned(
        &[
            "NAMESPACE",
            "POD",
            "CONTAINER",
            "DEVICE",
            "RESOURCE",
            "SOURCE",
            "STATE",
            "CALLS",
            "REMOTE",
            "LOCAL-CPUS",
        ],
        allocated,
    ));
    if !report.unallocated.is_empty() {
        out.push_str("\ncalls on devices not allocated to the caller:\n");
        let unallocated = report.unallocated.iter().map(|r| {
            [
                holder_cells(&r.holder),
                vec![r.kind.clone(), r.calls.to_string()],
            ]
            .concat()
        });
        out.push_str(&aligned(
            &["NAMESPACE", "POD", "CONTAINER", "DEVICE", "KIND", "CALLS"],
            unallocated,
        ));
    }
    for (resource, ids) in &report.unmapped {
        let _ = writeln!(
            out,
            "{resource}: {ids} allocated ID(s) no vendor plugin resolves; their containers are not classified"
        );
    }
    out
}

/// A holder's namespace, pod, container and device, as table cells.
pub fn holder_cells(holder: &Holder) -> Vec<String> {
    vec![
        holder.namespace.clone(),
        holder.pod.clone(),
        holder.container.clone(),
        holder.device.clone(),
    ]
}

/// Pretty JSON, one trailing newline.
pub fn json<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("report rows serialize");
    text.push('\n');
    text
}

/// Left-aligned columns separated by two spaces.
pub fn aligned(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = std::iter::once(header.iter().map(|h| h.to_string()).collect())
        .chain(rows)
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubenpu::server::{EngineRow, MemoryRow, UsageReport, UsageRow};

    fn allocations_report(fresh: bool) -> server::AllocationsReport {
        let allocated = |pod: &str, device: &str, calls: u64| server::AllocationRow {
            namespace: "ml".into(),
            pod: pod.into(),
            container: "main".into(),
            device: device.into(),
            resource: "amd.com/gpu".into(),
            source: "device_plugin".into(),
            idle: calls == 0,
            calls,
            remote: calls / 4,
            numa_fit: (calls > 0).then(|| server::NumaFitRow {
                local_cpus: 0,
                cpus: 4,
                from: "cpu_ids".into(),
            }),
        };
        server::AllocationsReport {
            joining: true,
            up: fresh,
            fresh,
            last_sync: Some(1000.0),
            allocated: vec![
                allocated("train-0", "0000:03:00.0", 0),
                allocated("infer-0", "0000:04:00.0", 1200),
            ],
            unallocated: vec![server::UnallocatedRow {
                holder: holder("snoop"),
                kind: "submit".into(),
                calls: 40,
            }],
            unmapped: [("habana.ai/gaudi".to_owned(), 2)].into(),
        }
    }

    #[test]
    fn allocations_show_idle_holders_and_unallocated_callers() {
        let text = allocations(&allocations_report(true), 1012.4, Format::Table);
        assert_eq!(
            text,
            "kubelet's allocations: last listed 12 s ago
NAMESPACE  POD      CONTAINER  DEVICE        RESOURCE     SOURCE         STATE  CALLS  REMOTE  LOCAL-CPUS
ml         train-0  main       0000:03:00.0  amd.com/gpu  device_plugin  idle   0      0       -
ml         infer-0  main       0000:04:00.0  amd.com/gpu  device_plugin  used   1200   300     0/4 cpu_ids

calls on devices not allocated to the caller:
NAMESPACE  POD    CONTAINER  DEVICE        KIND    CALLS
ml         snoop  main       0000:03:00.0  submit  40
habana.ai/gaudi: 2 allocated ID(s) no vendor plugin resolves; their containers are not classified
"
        );
    }

    #[test]
    fn stale_allocations_and_the_join_off_say_so() {
        let report = server::AllocationsReport {
            allocated: Vec::new(),
            unallocated: Vec::new(),
            unmapped: BTreeMap::new(),
            ..allocations_report(false)
        };
        let text = allocations(&report, 1100.0, Format::Table);
        assert!(
            text.starts_with("kubelet's allocations are stale (last listed: 100 s ago; kubelet does not answer): rows withheld"),
            "{text}"
        );
        let off = allocations(&server::AllocationsReport::default(), 0.0, Format::Table);
        assert_eq!(
            off,
            "the agent does not join allocations (it runs with --no-allocation)\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(&allocations(&allocations_report(true), 0.0, Format::Json))
                .unwrap();
        assert_eq!(json["allocated"][0]["idle"], true);
        assert_eq!(json["unallocated"][0]["pod"], "snoop");
    }

    fn holder(pod: &str) -> Holder {
        Holder {
            namespace: if pod.is_empty() { "" } else { "ml" }.into(),
            pod: pod.into(),
            container: if pod.is_empty() { "" } else { "main" }.into(),
            device: "0000:03:00.0".into(),
            vendor: "amdgpu".into(),
        }
    }

    fn row(pod: &str, kind: &str, calls: u64) -> UsageRow {
        UsageRow {
            holder: holder(pod),
            kind: kind.into(),
            calls,
            failed: 0,
            busy: 0,
            timed_out: 0,
            seconds: 0.0,
            bytes: 0,
        }
    }

    fn engine(pod: &str, engine: &str, seconds: f64) -> EngineRow {
        EngineRow {
            holder: holder(pod),
            engine: engine.into(),
            seconds,
        }
    }

    fn memory(pod: &str, region: &str, state: &str, bytes: u64) -> MemoryRow {
        MemoryRow {
            holder: holder(pod),
            region: region.into(),
            state: state.into(),
            bytes,
        }
    }

    /// A row with time and bytes too.
    fn measured(pod: &str, kind: &str, calls: u64, seconds: f64, bytes: u64) -> UsageRow {
        UsageRow {
            seconds,
            bytes,
            ..row(pod, kind, calls)
        }
    }

    #[test]
    fn top_shows_rates_per_container_busiest_first() {
        let before = UsageReport {
            series: vec![
                row("a", "submit", 100),
                row("b", "wait", 10),
                row("", "alloc", 4),
            ],
            engines: vec![engine("a", "gfx", 10.0), engine("a", "dma", 1.0)],
            ..UsageReport::default()
        };
        let after = UsageReport {
            series: vec![
                row("a", "submit", 300),
                // 20 allocations of 4 MB in 2 s.
                measured("a", "alloc", 20, 0.01, 80_000_000),
                // reset: counts from zero; 1.5 s of the 2 waited.
                measured("b", "wait", 4, 1.5, 0),
                row("", "alloc", 4),
            ],
            // gfx busy 1.2 s of the 2, dma 0.5 s: the busiest shows.
            engines: vec![engine("a", "gfx", 11.2), engine("a", "dma", 1.5)],
            memory: vec![
                memory("a", "vram", "resident", 3_000_000),
                memory("a", "gtt", "resident", 500_000),
                memory("a", "vram", "total", 9_000_000),
            ],
        };
        let text = top(&before, &after, 2.0);
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines,
            vec![
                TOP_HEADER.to_vec(),
                vec![
                    "ml",
                    "a",
                    "main",
                    "0000:03:00.0",
                    "100.0",
                    "10.0",
                    "0.0",
                    "0.0",
                    "40.00",
                    "60.0",
                    "3.5"
                ],
                vec![
                    "ml",
                    "b",
                    "main",
                    "0000:03:00.0",
                    "0.0",
                    "0.0",
                    "2.0",
                    "75.0",
                    "0.00",
                    "-",
                    "-"
                ],
                vec![
                    "-",
                    "-",
                    "-",
                    "0000:03:00.0",
                    "0.0",
                    "0.0",
                    "0.0",
                    "0.0",
                    "0.00",
                    "-",
                    "-"
                ],
            ]
        );
    }
}
