//! Filling the program's DEVICES and IOCTLS maps from the device table.
//! Updates are differential and ordered so a call is never misjudged in
//! between: new ioctl entries first, then devices, then removals. Counters
//! are never touched.

use std::collections::BTreeMap;

use aya::{
    Ebpf,
    maps::{HashMap, MapData},
};
use kubenpu_ebpf::{
    DeviceEntry, IoctlEntry, IoctlKey, MAX_DEVICE_NODES, NO_NUMA_NODE, kind, map, size, vendor_slot,
};
use kubenpu_sdk::{Kind, Phase, TableEntry};

use super::ProbeError;
use crate::device_table::DeviceTable;

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

fn kind_code(kind: Kind) -> u32 {
    match kind {
        Kind::Submit => kind::SUBMIT,
        Kind::Alloc => kind::ALLOC,
        Kind::Wait => kind::WAIT,
    }
}

/// What the program needs of a table entry: its kind and, for an alloc
/// that declares one, where its size is.
fn kernel_entry(entry: &TableEntry) -> IoctlEntry {
    let mut out = IoctlEntry {
        kind: kind_code(entry.kind),
        ..IoctlEntry::default()
    };
    if let Some(declared) = &entry.size {
        out.size_offset = declared.field.offset;
        out.size_width = declared.field.width;
        out.size_phase = match declared.read {
            Phase::Before => size::BEFORE,
            Phase::After => size::AFTER,
        };
        if let Some((field, value)) = &declared.when {
            out.when_offset = field.offset;
            out.when_width = field.width;
            out.when_value = *value;
        }
    }
    out
}

/// DEVICES' content: kernel dev_t -> vendor slot and NUMA node.
type DeviceSlots = BTreeMap<u32, DeviceEntry>;
/// IOCTLS' content: (vendor slot, nr) -> entry.
type IoctlKinds = BTreeMap<(u32, u32), IoctlEntry>;

/// What the maps should hold for `table`, and how many device nodes are
/// left out because DEVICES is full. Vendor slots are distinct: the
/// plugin host admits no two vendors whose names share one.
fn desired(table: &DeviceTable) -> (DeviceSlots, IoctlKinds, usize) {
    let ioctls = table
        .vendors
        .plugins
        .iter()
        .flat_map(|plugin| {
            let slot = vendor_slot(plugin.name());
            plugin
                .description
                .ioctls
                .iter()
                .map(move |entry| ((slot, u32::from(entry.nr)), kernel_entry(entry)))
        })
        .collect();
    let mut devices: DeviceSlots = table
        .claimed()
        .flat_map(|(device, vendor)| {
            let entry = DeviceEntry {
                vendor_slot: vendor_slot(vendor.name()),
                numa_node: device.numa_node.unwrap_or(NO_NUMA_NODE),
            };
            device
                .nodes
                .iter()
                .map(move |n| (n.dev.kernel_dev_t(), entry))
        })
        .collect();
    let mut left_out = 0;
    while devices.len() > MAX_DEVICE_NODES as usize {
        devices.pop_last();
        left_out += 1;
    }
    (devices, ioctls, left_out)
}

/// Makes DEVICES and IOCTLS hold exactly what `table` calls for, as far
/// as they can: device nodes beyond DEVICES' capacity are left out, and
/// that is an error once everything else is in place.
pub fn upload(ebpf: &mut Ebpf, table: &DeviceTable) -> Result<(), ProbeError> {
    let (devices, ioctls, left_out) = desired(table);
    {
        let mut map = hash_map::<IoctlKey, IoctlEntry>(ebpf, map::IOCTLS)?;
        for (&(vendor_slot, nr), entry) in &ioctls {
            map.insert(IoctlKey { vendor_slot, nr }, entry, 0)
                .map_err(other)?;
        }
    }
    {
        let mut map = hash_map::<u32, DeviceEntry>(ebpf, map::DEVICES)?;
        for (&dev, &entry) in &devices {
            map.insert(dev, entry, 0).map_err(other)?;
        }
        let stale: Vec<u32> = map
            .keys()
            .filter_map(Result::ok)
            .filter(|d| !devices.contains_key(d))
            .collect();
        for dev in stale {
            map.remove(&dev).map_err(other)?;
        }
    }
    let mut map = hash_map::<IoctlKey, IoctlEntry>(ebpf, map::IOCTLS)?;
    let stale: Vec<IoctlKey> = map
        .keys()
        .filter_map(Result::ok)
        .filter(|k| !ioctls.contains_key(&(k.vendor_slot, k.nr)))
        .collect();
    for key in stale {
        map.remove(&key).map_err(other)?;
    }
    if left_out > 0 {
        return Err(other(format!(
            "{left_out} device node(s) are not counted: the kernel's device table holds {MAX_DEVICE_NODES}"
        )));
    }
    Ok(())
}

fn hash_map<'a, K: aya::Pod, V: aya::Pod>(
    ebpf: &'a mut Ebpf,
    name: &str,
) -> Result<HashMap<&'a mut MapData, K, V>, ProbeError> {
    let map = ebpf
        .map_mut(name)
        .ok_or_else(|| other(format!("no {name} map")))?;
    HashMap::try_from(map).map_err(other)
}

#[cfg(test)]
mod tests {
    use kubenpu_ebpf::vendor_slot;

    #[test]
    fn slots_are_stable_and_distinct_for_the_built_in_vendors() {
        assert_eq!(vendor_slot("i915"), vendor_slot("i915"));
        let names = [
            "amdgpu",
            "amdxdna",
            "ethosu",
            "etnaviv",
            "habanalabs",
            "i915",
            "ivpu",
            "msm",
            "panfrost",
            "panthor",
            "qaic",
            "rocket",
            "v3d",
            "vgem",
            "virtio_gpu",
            "xe",
        ];
        let mut slots: Vec<u32> = names.iter().map(|n| vendor_slot(n)).collect();
        slots.sort();
        slots.dedup();
        assert_eq!(slots.len(), names.len());
    }
}
