//! The calls of a record by device and ioctl number, with how the agent's
//! tables count them.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context as _, Result};
use serde::Deserialize;

use crate::{Ending, Record};

/// The bits of a request that pick a DRM ioctl's table entry (its
/// number), as the agent keys DRM nodes.
const DRM_COMMAND_MASK: u32 = 0xff;

/// Which vendor's table counts each device's calls, and what each table
/// lists.
#[derive(Debug, Default)]
pub struct Tables {
    /// `MAJOR:MINOR` of each DRM node, and its device's vendor.
    vendors: HashMap<String, String>,
    /// Per vendor, the listed numbers: (name, kind).
    entries: HashMap<String, HashMap<u32, (String, String)>>,
}

#[derive(Deserialize)]
struct Device {
    nodes: Vec<String>,
    vendor: Option<String>,
    subsystem: String,
}

#[derive(Deserialize)]
struct Plugin {
    name: String,
    ioctls: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    nr: u32,
    name: String,
    kind: String,
}

impl Tables {
    /// The tables from `kubenpuctl devices --json` and `kubenpuctl plugins
    /// --json`.
    pub fn from_json(devices: &str, plugins: &str) -> Result<Self> {
        let devices: Vec<Device> =
            serde_json::from_str(devices).context("not the JSON of kubenpuctl devices --json")?;
        let plugins: Vec<Plugin> =
            serde_json::from_str(plugins).context("not the JSON of kubenpuctl plugins --json")?;
        let vendors = devices
            .into_iter()
            .filter(|d| d.subsystem == "drm")
            .filter_map(|d| Some((d.nodes, d.vendor?)))
            .flat_map(|(nodes, vendor)| nodes.into_iter().map(move |n| (n, vendor.clone())))
            .collect();
        let entries = plugins
            .into_iter()
            .map(|p| {
                let listed = p.ioctls.into_iter().map(|e| (e.nr, (e.name, e.kind)));
                (p.name, listed.collect())
            })
            .collect();
        Ok(Self { vendors, entries })
    }

    /// The number a call's `request` on `device` is keyed by, and its
    /// table entry, (name, kind), if its device is a DRM node whose
    /// vendor's table lists it. Other nodes' requests stay whole.
    fn entry(&self, device: &str, request: u32) -> (u32, Option<&(String, String)>) {
        match self.vendors.get(device) {
            Some(vendor) => {
                let nr = request & DRM_COMMAND_MASK;
                (nr, self.entries.get(vendor).and_then(|t| t.get(&nr)))
            }
            None => (request, None),
        }
    }
}

/// The calls of one number on one device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// `MAJOR:MINOR`.
    pub device: String,
    /// The node the calls were made on (the first one seen).
    pub node: String,
    /// The ioctl number on a DRM node, else the whole request.
    pub nr: u32,
    /// The table's name and kind for it, if a table counts it.
    pub counted: Option<(String, String)>,
    /// Calls, each once however often a signal restarted it.
    pub calls: u64,
    /// Of which errors, but for a wait's busy and timed-out ones.
    pub failed: u64,
    /// Waits that returned EBUSY or EAGAIN.
    pub busy: u64,
    /// Waits that returned ETIME or ETIMEDOUT.
    pub timed_out: u64,
    /// Calls the record ends inside.
    pub unfinished: u64,
}

/// The calls of `record` by (device, number), in that order.
pub fn tally(record: &Record, tables: &Tables) -> Vec<Row> {
    let mut rows: BTreeMap<(String, u32), Row> = BTreeMap::new();
    for call in &record.calls {
        let (nr, entry) = tables.entry(&call.device, call.request);
        let row = rows
            .entry((call.device.clone(), nr))
            .or_insert_with(|| Row {
                device: call.device.clone(),
                node: call.node.clone(),
                nr,
                counted: entry.cloned(),
                ..Row::default()
            });
        row.calls += 1;
        let wait = entry.is_some_and(|(_, kind)| kind == "wait");
        match &call.ending {
            Ending::Done => {}
            Ending::Unfinished => row.unfinished += 1,
            Ending::Error(e) if wait && matches!(e.as_str(), "EBUSY" | "EAGAIN") => row.busy += 1,
            Ending::Error(e) if wait && matches!(e.as_str(), "ETIME" | "ETIMEDOUT") => {
                row.timed_out += 1
            }
            Ending::Error(_) => row.failed += 1,
        }
    }
    rows.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const DEVICES: &str = r#"[{"nodes": ["226:0", "226:128"], "vendor": "virtio_gpu", "subsystem": "drm"},
        {"nodes": ["250:0"], "vendor": "dma_heap", "subsystem": "char"}]"#;
    const PLUGINS: &str = r#"[{"name": "virtio_gpu", "ioctls": [
        {"nr": 66, "name": "DRM_IOCTL_VIRTGPU_EXECBUFFER", "kind": "submit"},
        {"nr": 72, "name": "DRM_IOCTL_VIRTGPU_WAIT", "kind": "wait"}]}]"#;

    #[test]
    fn calls_are_counted_by_the_devices_table_and_a_waits_busy_is_not_a_failure() {
        let record = parse(
            "1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc0286442, 0x1) = 0\n\
             1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc0286442, 0x1) = -1 ENOENT (No such file or directory)\n\
             1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x1) = -1 EBUSY (Device or resource busy)\n\
             1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x1) = -1 ETIMEDOUT (Connection timed out)\n\
             1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x1) = -1 EINVAL (Invalid argument)\n\
             1 ioctl(3</dev/dri/card0<char 226:0>>, 0xc01864b0, 0x1) = -1 EBUSY (Device or resource busy)\n\
             2 ioctl(4</dev/dri/renderD128<char 226:128>>, 0xc0286442, 0x1) = 0\n\
             2 ioctl(5</dev/dma_heap/system<char 250:0>>, 0xc0184800, 0x1) = 0\n",
        )
        .unwrap();
        let rows = tally(&record, &Tables::from_json(DEVICES, PLUGINS).unwrap());
        let seen: Vec<_> = rows
            .iter()
            .map(|r| {
                let kind = r.counted.as_ref().map(|(_, kind)| kind.as_str());
                (
                    r.device.as_str(),
                    r.nr,
                    kind,
                    r.calls,
                    r.failed,
                    r.busy,
                    r.timed_out,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("226:0", 0x42, Some("submit"), 2, 1, 0, 0),
                ("226:0", 0x48, Some("wait"), 3, 1, 1, 1),
                // A page flip: no table lists it, and its EBUSY is an error.
                ("226:0", 0xb0, None, 1, 1, 0, 0),
                ("226:128", 0x42, Some("submit"), 1, 0, 0, 0),
                // Not a DRM node: the whole request, unclassified.
                ("250:0", 0xc018_4800, None, 1, 0, 0, 0),
            ]
        );
    }

    #[test]
    fn tables_that_are_not_kubenpuctls_json_are_refused() {
        let e = Tables::from_json("{}", PLUGINS).unwrap_err();
        assert!(e.to_string().contains("kubenpuctl devices --json"), "{e}");
    }
}
