//! What `kubenpuctl` prints: the device and plugin tables, as aligned text
//! for people and as JSON for scripts.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc};

use serde::Serialize;

use kubenpu::{
    device_table::DeviceTable,
    discovery::{DevNum, Subsystem},
    plugins::{Plugin, Source},
    probe::Counter,
    server,
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
            })
            .collect(),
    }
}

/// `kubenpuctl plugins`: one line per ioctl entry under each vendor; or
/// the plugins as JSON.
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
        let rows = row.ioctls.iter().map(|i| {
            vec![
                format!("  {:#04x}", i.nr),
                i.kind.to_owned(),
                i.name.to_owned(),
            ]
        });
        out.push_str(&aligned(&["  NR", "KIND", "IOCTL"], rows));
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
}

fn counter_rows(counters: &[Counter]) -> Vec<CounterRow> {
    counters
        .iter()
        .map(|c| CounterRow {
            cgroup_id: c.key.cgroup_id,
            device: DevNum::from_kernel_dev_t(c.key.dev),
            nr: c.key.nr,
            calls: c.calls,
        })
        .collect()
}

/// `kubenpuctl counts`: one line per counter, then the losses; or as JSON,
/// `{"counters": [...], "losses": {reason: n}}`.
pub fn counts(counters: &[Counter], losses: &[(&str, u64)], format: Format) -> String {
    if format == Format::Json {
        let losses: std::collections::BTreeMap<&str, u64> = losses.iter().copied().collect();
        return json(&serde_json::json!({ "counters": counter_rows(counters), "losses": losses }));
    }
    let rows = counter_rows(counters).into_iter().map(|r| {
        vec![
            r.cgroup_id.to_string(),
            r.device.to_string(),
            format!("{:#04x}", r.nr),
            r.calls.to_string(),
        ]
    });
    let mut out = aligned(&["CGROUP", "DEVICE", "NR", "CALLS"], rows);
    for (reason, lost) in losses {
        let _ = writeln!(out, "lost ({reason}): {lost}");
    }
    out
}

/// The columns of `kubenpuctl top`.
pub const TOP_HEADER: [&str; 7] = [
    "NAMESPACE",
    "POD",
    "CONTAINER",
    "DEVICE",
    "SUBMIT/s",
    "ALLOC/s",
    "WAIT/s",
];

/// `kubenpuctl top`: per-container call rates between two readings of the
/// agent's `/api/v1/usage`, `seconds` apart, busiest first.
pub fn top(before: &server::UsageReport, after: &server::UsageReport, seconds: f64) -> String {
    type Key<'a> = (&'a str, &'a str, &'a str, &'a str);
    let earlier: BTreeMap<(Key<'_>, &str), u64> = before
        .series
        .iter()
        .map(|r| ((row_key(r), r.kind.as_str()), r.calls))
        .collect();
    let mut rates: BTreeMap<Key<'_>, [f64; 3]> = BTreeMap::new();
    for row in &after.series {
        let key = row_key(row);
        // A counter that went down was reset (the pod's series restarted).
        let was = earlier.get(&(key, row.kind.as_str())).copied().unwrap_or(0);
        let delta = if row.calls >= was {
            row.calls - was
        } else {
            row.calls
        };
        let column = match row.kind.as_str() {
            "submit" => 0,
            "alloc" => 1,
            _ => 2,
        };
        rates.entry(key).or_default()[column] += delta as f64 / seconds;
    }
    let mut rows: Vec<(Key<'_>, [f64; 3])> = rates.into_iter().collect();
    rows.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()));
    let cell = |text: &str| {
        if text.is_empty() {
            "-".to_owned()
        } else {
            text.to_owned()
        }
    };
    aligned(
        &TOP_HEADER,
        rows.into_iter()
            .map(|((namespace, pod, container, device), [s, a, w])| {
                vec![
                    cell(namespace),
                    cell(pod),
                    cell(container),
                    device.to_owned(),
                    format!("{s:.1}"),
                    format!("{a:.1}"),
                    format!("{w:.1}"),
                ]
            }),
    )
}

fn row_key(row: &server::UsageRow) -> (&str, &str, &str, &str) {
    (&row.namespace, &row.pod, &row.container, &row.device)
}

fn json<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("report rows serialize");
    text.push('\n');
    text
}

/// Left-aligned columns separated by two spaces.
fn aligned(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
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
    use kubenpu::server::{UsageReport, UsageRow};

    fn row(pod: &str, kind: &str, calls: u64) -> UsageRow {
        UsageRow {
            namespace: if pod.is_empty() { "" } else { "ml" }.into(),
            pod: pod.into(),
            container: if pod.is_empty() { "" } else { "main" }.into(),
            device: "0000:03:00.0".into(),
            vendor: "amdgpu".into(),
            kind: kind.into(),
            calls,
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
        };
        let after = UsageReport {
            series: vec![
                row("a", "submit", 300),
                row("a", "alloc", 20),
                row("b", "wait", 4), // reset: counts from zero
                row("", "alloc", 4),
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
                vec!["ml", "a", "main", "0000:03:00.0", "100.0", "10.0", "0.0"],
                vec!["ml", "b", "main", "0000:03:00.0", "0.0", "0.0", "2.0"],
                vec!["-", "-", "-", "0000:03:00.0", "0.0", "0.0", "0.0"],
            ]
        );
    }
}
