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
    ClassKey, DeviceEntry, IoctlEntry, IoctlKey, MAX_DEVICE_NODES, NO_NUMA_NODE, map, size,
};
use kubenpu_sdk::Phase;

use super::{ProbeError, unpreempted::unpreempted};
use crate::{catalog::code_of_kind, device_table::DeviceTable, plugins::Row};

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

/// What the program needs of a table row: its kind and, for an alloc
/// that declares one, where its size is.
fn kernel_entry(row: &Row<'_>) -> IoctlEntry {
    let mut out = IoctlEntry {
        kind: code_of_kind(row.kind),
        ..IoctlEntry::default()
    };
    if let Some(declared) = row.size {
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
    if let Some((field, _)) = row.only_when {
        out.only_offset = field.offset;
        out.only_width = field.width;
    }
    out
}

/// DEVICES' content: kernel dev_t -> vendor slot and NUMA node.
type DeviceSlots = BTreeMap<u32, DeviceEntry>;
/// IOCTLS' content.
type IoctlKinds = BTreeMap<IoctlKey, IoctlEntry>;
/// CLASSES' content.
type Classes = BTreeMap<ClassKey, u8>;

/// What the maps should hold.
struct Desired {
    devices: DeviceSlots,
    ioctls: IoctlKinds,
    classes: Classes,
    /// Device nodes left out because DEVICES is full.
    left_out: usize,
}

/// What the maps should hold for `table`. Table slots are distinct: the
/// plugin host admits no two tables whose names share one.
fn desired(table: &DeviceTable) -> Desired {
    let tables: Vec<_> = table
        .vendors
        .plugins
        .iter()
        .flat_map(|plugin| plugin.tables())
        .collect();
    let rows = || {
        tables
            .iter()
            .flat_map(|table| table.rows.iter().map(move |row| (table.slot, row)))
    };
    let ioctls = rows()
        .map(|(slot, row)| {
            let key = IoctlKey {
                vendor_slot: slot,
                nr: row.key,
            };
            (key, kernel_entry(row))
        })
        .collect();
    let classes = rows()
        .flat_map(|(slot, row)| {
            let values = row.only_when.map_or(&[][..], |(_, values)| values);
            values.iter().map(move |&value| {
                let key = ClassKey {
                    vendor_slot: slot,
                    nr: row.key,
                    value,
                };
                (key, 1)
            })
        })
        .collect();
    let mut devices: DeviceSlots = table
        .claimed()
        .filter_map(|(device, vendor)| {
            let table = vendor.table_for(device)?;
            let entry = DeviceEntry {
                vendor_slot: table.slot,
                numa_node: device.numa_node.unwrap_or(NO_NUMA_NODE),
                cmd_mask: table.cmd_mask,
            };
            Some(
                device
                    .nodes
                    .iter()
                    .map(move |n| (n.dev.kernel_dev_t(), entry)),
            )
        })
        .flatten()
        .collect();
    let mut left_out = 0;
    while devices.len() > MAX_DEVICE_NODES as usize {
        devices.pop_last();
        left_out += 1;
    }
    Desired {
        devices,
        ioctls,
        classes,
        left_out,
    }
}

/// What DEVICES and IOCTLS hold now, read without `bpf(2)` copies.
pub struct Current {
    /// IOCTLS' content.
    pub ioctls: IoctlKinds,
    /// DEVICES' content.
    pub devices: DeviceSlots,
}

/// Makes DEVICES and IOCTLS hold exactly what `table` calls for, as far
/// as they can: device nodes beyond DEVICES' capacity are left out, and
/// that is an error once everything else is in place. Knowing their
/// `current` content, it writes and deletes only what differs: every
/// `bpf(2)` write raises the CPU's `bpf_prog_active`, which makes the
/// kprobe hooks skip calls on that CPU if the agent is preempted inside
/// it, and a restarted agent finds the tables it would write in force.
pub fn upload(
    ebpf: &mut Ebpf,
    current: Option<Current>,
    table: &DeviceTable,
) -> Result<(), ProbeError> {
    let Desired {
        devices,
        ioctls,
        classes,
        left_out,
    } = desired(table);
    let (current_ioctls, current_devices) = match current {
        Some(Current { ioctls, devices }) => (Some(ioctls), Some(devices)),
        None => (None, None),
    };
    // New classes and entries before new devices, stale devices before
    // stale entries and classes: a counted device always finds its
    // vendor's table whole. CLASSES' values are all 1: its keys, read
    // without copying values, say what it holds.
    let current_classes: Classes = {
        let map: HashMap<_, ClassKey, u8> = hash_map(ebpf, map::CLASSES)?;
        map.keys()
            .filter_map(Result::ok)
            .map(|key| (key, 1))
            .collect()
    };
    write_missing(
        &mut hash_map(ebpf, map::CLASSES)?,
        &classes,
        Some(&current_classes),
    )?;
    write_missing(
        &mut hash_map(ebpf, map::IOCTLS)?,
        &ioctls,
        current_ioctls.as_ref(),
    )?;
    {
        let mut map = hash_map(ebpf, map::DEVICES)?;
        write_missing(&mut map, &devices, current_devices.as_ref())?;
        remove_stale(&mut map, &devices, current_devices.as_ref())?;
    }
    remove_stale(
        &mut hash_map(ebpf, map::IOCTLS)?,
        &ioctls,
        current_ioctls.as_ref(),
    )?;
    remove_stale(
        &mut hash_map(ebpf, map::CLASSES)?,
        &classes,
        Some(&current_classes),
    )?;
    if left_out > 0 {
        return Err(other(format!(
            "{left_out} device node(s) are not counted: the kernel's device table holds {MAX_DEVICE_NODES}"
        )));
    }
    Ok(())
}

/// Writes every entry of `desired` that `current` (where known) lacks or
/// holds otherwise.
fn write_missing<K: aya::Pod + Ord, V: aya::Pod + PartialEq>(
    map: &mut HashMap<&mut MapData, K, V>,
    desired: &BTreeMap<K, V>,
    current: Option<&BTreeMap<K, V>>,
) -> Result<(), ProbeError> {
    for (key, value) in desired {
        if current.and_then(|c| c.get(key)) != Some(value) {
            unpreempted(|| map.insert(key, value, 0)).map_err(other)?;
        }
    }
    Ok(())
}

/// Deletes the keys of the map (as `current` lists them, where known)
/// that `desired` lacks.
fn remove_stale<K: aya::Pod + Ord, V: aya::Pod>(
    map: &mut HashMap<&mut MapData, K, V>,
    desired: &BTreeMap<K, V>,
    current: Option<&BTreeMap<K, V>>,
) -> Result<(), ProbeError> {
    let present: Vec<K> = match current {
        Some(current) => current.keys().copied().collect(),
        None => map.keys().filter_map(Result::ok).collect(),
    };
    for key in present.into_iter().filter(|k| !desired.contains_key(k)) {
        unpreempted(|| map.remove(&key)).map_err(other)?;
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
