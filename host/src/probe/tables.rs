//! Filling the program's DEVICES and IOCTLS maps from the device table.
//! Updates are differential and ordered so a call is never misjudged in
//! between: new ioctl entries first, then devices, then removals. Counters
//! are never touched.

use std::collections::BTreeMap;

use aya::{
    Ebpf,
    maps::{HashMap, MapData},
};
use kubenpu_ebpf::{IoctlKey, kind, map};
use kubenpu_sdk::Kind;

use super::ProbeError;
use crate::device_table::DeviceTable;

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

/// A vendor's slot: a hash of its name, so it is the same in every agent
/// that ever uploads it and needs no bookkeeping across restarts.
pub fn vendor_slot(name: &str) -> u32 {
    // FNV-1a.
    name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn kind_code(kind: Kind) -> u32 {
    match kind {
        Kind::Submit => kind::SUBMIT,
        Kind::Alloc => kind::ALLOC,
        Kind::Wait => kind::WAIT,
    }
}

/// DEVICES' content: kernel dev_t -> vendor slot.
type DeviceSlots = BTreeMap<u32, u32>;
/// IOCTLS' content: (vendor slot, nr) -> kind.
type IoctlKinds = BTreeMap<(u32, u32), u32>;

/// What the maps should hold for `table`.
fn desired(table: &DeviceTable) -> Result<(DeviceSlots, IoctlKinds), ProbeError> {
    let mut slots: BTreeMap<u32, &str> = BTreeMap::new();
    let mut ioctls = BTreeMap::new();
    for plugin in &table.vendors.plugins {
        let slot = vendor_slot(plugin.name());
        if let Some(other) = slots.insert(slot, plugin.name()) {
            return Err(ProbeError::Other(format!(
                "vendors {other} and {} hash to one slot: rename one",
                plugin.name()
            )));
        }
        for entry in &plugin.description.ioctls {
            ioctls.insert((slot, u32::from(entry.nr)), kind_code(entry.kind));
        }
    }
    let devices = table
        .claimed()
        .flat_map(|(device, vendor)| {
            device
                .nodes
                .iter()
                .map(|n| (n.dev.kernel_dev_t(), vendor_slot(vendor.name())))
        })
        .collect();
    Ok((devices, ioctls))
}

/// Makes DEVICES and IOCTLS hold exactly what `table` calls for.
pub fn upload(ebpf: &mut Ebpf, table: &DeviceTable) -> Result<(), ProbeError> {
    let (devices, ioctls) = desired(table)?;
    {
        let mut map = hash_map::<IoctlKey, u32>(ebpf, map::IOCTLS)?;
        for (&(vendor_slot, nr), &kind) in &ioctls {
            map.insert(IoctlKey { vendor_slot, nr }, kind, 0)
                .map_err(other)?;
        }
    }
    {
        let mut map = hash_map::<u32, u32>(ebpf, map::DEVICES)?;
        for (&dev, &slot) in &devices {
            map.insert(dev, slot, 0).map_err(other)?;
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
    let mut map = hash_map::<IoctlKey, u32>(ebpf, map::IOCTLS)?;
    let stale: Vec<IoctlKey> = map
        .keys()
        .filter_map(Result::ok)
        .filter(|k| !ioctls.contains_key(&(k.vendor_slot, k.nr)))
        .collect();
    for key in stale {
        map.remove(&key).map_err(other)?;
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
    use super::vendor_slot;

    #[test]
    fn slots_are_stable_and_distinct_for_the_built_in_vendors() {
        assert_eq!(vendor_slot("i915"), vendor_slot("i915"));
        let names = [
            "amdgpu",
            "habanalabs",
            "i915",
            "ivpu",
            "qaic",
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
