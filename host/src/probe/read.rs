//! Reading what the program counted. Counts are per-CPU in the kernel and
//! summed here, so the in-kernel increment never contends across CPUs.

use std::{borrow::Borrow, path::Path};

use aya::{
    Ebpf,
    maps::{Map, MapData, PerCpuArray, PerCpuHashMap, RingBuf},
};
use kubenpu_ebpf::{CountKey, Loss, map};

use super::ProbeError;

/// One counter: calls by one cgroup, on one device node, of one ioctl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Who, where, what.
    pub key: CountKey,
    /// How many calls, exactly.
    pub calls: u64,
}

/// Calls not counted, per reason label.
pub type Losses = Vec<(&'static str, u64)>;

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

/// Counters and losses from the maps pinned under `pin_dir`, without
/// loading anything: what a running (or stopped) agent's program counted.
pub fn pinned(pin_dir: &Path) -> Result<(Vec<Counter>, Losses), ProbeError> {
    let dir = super::pins::maps_dir(pin_dir);
    let open = |name: &str| {
        MapData::from_pin(dir.join(name)).map_err(|e| {
            other(format!(
                "cannot open {}: {e} (is the agent running, and are you root?)",
                dir.join(name).display()
            ))
        })
    };
    let counts = sum_counts(
        &PerCpuHashMap::try_from(Map::PerCpuHashMap(open(map::COUNTS)?)).map_err(other)?,
    )?;
    let losses =
        sum_losses(PerCpuArray::try_from(Map::PerCpuArray(open(map::LOSSES)?)).map_err(other)?)?;
    Ok((counts, losses))
}

/// Every key of the counters map with its per-CPU values summed, in key
/// order: what a scrape reads from the kernel.
pub fn sum_counts<T: Borrow<MapData>>(
    counts: &PerCpuHashMap<T, CountKey, u64>,
) -> Result<Vec<Counter>, ProbeError> {
    let mut all = counts
        .iter()
        .map(|entry| {
            entry.map(|(key, per_cpu)| Counter {
                key,
                calls: per_cpu.iter().sum(),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(other)?;
    all.sort_by_key(|c| c.key);
    Ok(all)
}

fn sum_losses<T: Borrow<MapData>>(
    losses: PerCpuArray<T, u64>,
) -> Result<Vec<(&'static str, u64)>, ProbeError> {
    Loss::ALL
        .iter()
        .map(|&reason| {
            let per_cpu = losses.get(&(reason as u32), 0).map_err(other)?;
            Ok((reason.name(), per_cpu.iter().sum()))
        })
        .collect()
}

/// Counters and losses in the loaded program's maps.
pub fn live(ebpf: &Ebpf) -> Result<(Vec<Counter>, Losses), ProbeError> {
    let map = |name: &str| {
        ebpf.map(name)
            .ok_or_else(|| other(format!("no {name} map")))
    };
    let counts = sum_counts(&PerCpuHashMap::try_from(map(map::COUNTS)?).map_err(other)?)?;
    let losses = sum_losses(PerCpuArray::try_from(map(map::LOSSES)?).map_err(other)?)?;
    Ok((counts, losses))
}

/// Deletes the counters of `cgroups` (gone, their counts folded into
/// totals), so the map holds live cgroups only. Returns how many went.
pub fn remove_cgroups(
    ebpf: &mut Ebpf,
    cgroups: &std::collections::HashSet<u64>,
) -> Result<usize, ProbeError> {
    let map = ebpf
        .map_mut(map::COUNTS)
        .ok_or_else(|| other("no COUNTS map"))?;
    let mut counts: PerCpuHashMap<&mut MapData, CountKey, u64> =
        PerCpuHashMap::try_from(map).map_err(other)?;
    let doomed: Vec<CountKey> = counts
        .keys()
        .filter_map(Result::ok)
        .filter(|key| cgroups.contains(&key.cgroup_id))
        .collect();
    for key in &doomed {
        counts.remove(key).map_err(other)?;
    }
    Ok(doomed.len())
}

/// The new-key notes waiting in the ring buffer.
pub fn drain_notes(ebpf: &mut Ebpf) -> Result<Vec<CountKey>, ProbeError> {
    let map = ebpf
        .map_mut(map::NOTES)
        .ok_or_else(|| other("no NOTES map"))?;
    let mut notes: RingBuf<&mut MapData> = RingBuf::try_from(map).map_err(other)?;
    let mut keys = Vec::new();
    while let Some(item) = notes.next() {
        if item.len() >= size_of::<CountKey>() {
            // SAFETY: the program writes whole CountKeys; read unaligned.
            keys.push(unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<CountKey>()) });
        }
    }
    Ok(keys)
}
