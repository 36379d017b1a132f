//! Reading what the programs counted. Counts are per-CPU in the kernel and
//! summed here, so the in-kernel increment never contends across CPUs.

use std::{borrow::Borrow, os::fd::AsFd as _, path::Path};

use aya::{
    Ebpf,
    maps::{Map, MapData, PerCpuArray, PerCpuHashMap, RingBuf},
};
use kubenpu_ebpf::{CountKey, CountValue, DurationKey, Loss, map};

use super::{ProbeError, syscall};

/// One counter: calls by one cgroup, on one device node, of one ioctl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Who, where, what.
    pub key: CountKey,
    /// How many calls (exactly), how many failed, their time and bytes.
    pub value: CountValue,
}

/// Losses per reason label.
pub type Losses = Vec<(&'static str, u64)>;

/// Everything the programs keep, read at once.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Every counter, in key order.
    pub counters: Vec<Counter>,
    /// Calls not counted (and new-key notes dropped), per reason.
    pub losses: Losses,
    /// Measurements of counted calls that are missing, per reason.
    pub unmeasured: Losses,
    /// Calls per device node, kind and log2 duration bucket.
    pub durations: Vec<(DurationKey, u64)>,
}

/// The reason label of calls the kernel ran no program for because it was
/// already running on that CPU: the program's `recursion_misses`.
pub const RECURSION: &str = "recursion";

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

/// Everything in the maps pinned under `pin_dir`, without loading
/// anything: what a running (or stopped) agent's programs counted.
pub fn pinned(pin_dir: &Path) -> Result<Reading, ProbeError> {
    let dir = super::pins::maps_dir(pin_dir);
    let open = |name: &str| {
        MapData::from_pin(dir.join(name)).map_err(|e| {
            other(format!(
                "cannot open {}: {e} (is the agent running, and are you root?)",
                dir.join(name).display()
            ))
        })
    };
    let counters = sum_counts(&Map::PerCpuHashMap(open(map::COUNTS)?))?;
    let durations = sum_durations(&Map::PerCpuHashMap(open(map::DURATIONS)?))?;
    let losses = PerCpuArray::try_from(Map::PerCpuArray(open(map::LOSSES)?)).map_err(other)?;
    reading(counters, durations, losses, pin_dir)
}

/// A [`Reading`] of what was read, with the losses taken now.
fn reading<T: Borrow<MapData>>(
    counters: Vec<Counter>,
    durations: Vec<(DurationKey, u64)>,
    losses: PerCpuArray<T, u64>,
    pin_dir: &Path,
) -> Result<Reading, ProbeError> {
    let (unmeasured, losses) = all_losses(losses, pin_dir)?
        .into_iter()
        .partition(|(reason, _)| {
            Loss::ALL
                .iter()
                .any(|l| l.name() == *reason && l.of_measurement())
        });
    Ok(Reading {
        counters,
        losses,
        unmeasured,
        durations,
    })
}

/// Every key of the counters map with its per-CPU values summed, in key
/// order: what a scrape reads from the kernel.
pub fn sum_counts(counts: &Map) -> Result<Vec<Counter>, ProbeError> {
    let mut all: Vec<Counter> = summed(counts)?
        .into_iter()
        .map(|(key, value)| Counter { key, value })
        .collect();
    all.sort_by_key(|c| c.key);
    Ok(all)
}

/// Every bucket of the duration histogram, its calls summed over the
/// CPUs, in key order.
pub fn sum_durations(durations: &Map) -> Result<Vec<(DurationKey, u64)>, ProbeError> {
    let mut all = summed(durations)?;
    all.sort_by_key(|(key, _)| *key);
    Ok(all)
}

/// Every key of a per-CPU hash with its values summed. Batched where the
/// kernel allows it; key by key where it does not, or where a batch
/// failed (a bucket's lock timing out, or a map of another shape, which
/// aya's typed map then names), so the scrape still answers.
fn summed<K: aya::Pod, V: syscall::PerCpuValue>(map: &Map) -> Result<Vec<(K, V)>, ProbeError> {
    let Map::PerCpuHashMap(data) = map else {
        return Err(other("not a per-CPU hash"));
    };
    match syscall::summed_per_cpu(data.fd().as_fd()) {
        Ok(Some(batched)) => Ok(batched),
        Ok(None) | Err(_) => key_by_key(&PerCpuHashMap::try_from(map).map_err(other)?),
    }
}

/// A per-CPU hash read with aya's iteration: two `bpf(2)` calls per key.
fn key_by_key<K: aya::Pod, V: syscall::PerCpuValue>(
    map: &PerCpuHashMap<&MapData, K, V>,
) -> Result<Vec<(K, V)>, ProbeError> {
    map.iter()
        .map(|entry| {
            entry.map(|(key, per_cpu)| {
                let mut sum = V::default();
                for value in per_cpu.iter() {
                    sum.accumulate(value);
                }
                (key, sum)
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(other)
}

/// Every loss: the program's own, by reason, and the runs the kernel
/// skipped, from the pinned program's miss counter.
fn all_losses<T: Borrow<MapData>>(
    losses: PerCpuArray<T, u64>,
    pin_dir: &Path,
) -> Result<Losses, ProbeError> {
    let mut all = Loss::ALL
        .iter()
        .map(|&reason| {
            let per_cpu = losses.get(&(reason as u32), 0).map_err(other)?;
            Ok((reason.name(), per_cpu.iter().sum()))
        })
        .collect::<Result<Losses, ProbeError>>()?;
    let program = super::pins::program_path(pin_dir, super::syscall::Side::Entry);
    let misses = syscall::open_pinned(&program)
        .and_then(|fd| syscall::program_stats(fd.as_fd()))
        .map_err(|e| other(format!("cannot read {}: {e}", program.display())))?
        .recursion_misses;
    all.push((RECURSION, misses));
    Ok(all)
}

/// Everything in the loaded programs' maps, whose entry program is pinned
/// under `pin_dir`.
pub fn live(ebpf: &Ebpf, pin_dir: &Path) -> Result<Reading, ProbeError> {
    let map = |name: &str| {
        ebpf.map(name)
            .ok_or_else(|| other(format!("no {name} map")))
    };
    let counters = sum_counts(map(map::COUNTS)?)?;
    let durations = sum_durations(map(map::DURATIONS)?)?;
    let losses = PerCpuArray::try_from(map(map::LOSSES)?).map_err(other)?;
    reading(counters, durations, losses, pin_dir)
}

/// The counters map's fd and every counter of cgroup `id`.
fn counters_of(ebpf: &Ebpf, id: u64) -> Result<(&MapData, Vec<Counter>), ProbeError> {
    match ebpf.map(map::COUNTS) {
        Some(map @ Map::PerCpuHashMap(data)) => {
            let mine = sum_counts(map)?
                .into_iter()
                .filter(|c| c.key.cgroup_id == id)
                .collect();
            Ok((data, mine))
        }
        _ => Err(other("no per-CPU hash COUNTS map")),
    }
}

/// Moves every counter of gone cgroup `from` onto the same device and
/// ioctl of gone cgroup `into`. Each is taken out in one step, then added:
/// nothing counts for either any more, so the sum is exact.
pub fn merge_cgroup(ebpf: &Ebpf, from: u64, into: u64) -> Result<(), ProbeError> {
    let (data, counters) = counters_of(ebpf, from)?;
    let fd = data.fd().as_fd();
    for counter in counters {
        if let Some(value) =
            syscall::take_per_cpu::<_, CountValue>(fd, &counter.key).map_err(other)?
        {
            let key = CountKey {
                cgroup_id: into,
                ..counter.key
            };
            syscall::add_per_cpu(fd, &key, value).map_err(other)?;
        }
    }
    Ok(())
}

/// Deletes every counter of gone cgroup `id`.
pub fn remove_cgroup(ebpf: &Ebpf, id: u64) -> Result<(), ProbeError> {
    let (data, counters) = counters_of(ebpf, id)?;
    for counter in counters {
        syscall::take_per_cpu::<_, CountValue>(data.fd().as_fd(), &counter.key).map_err(other)?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    //! These create BPF maps: they need root (CAP_BPF), as CI runs them.

    use aya::{
        maps::{PerCpuValues, hash_map::PerCpuHashMap},
        util::nr_cpus,
    };

    use super::*;

    const KEYS: u64 = 5000;

    /// The program's counters map, from its own definition (16,384 keys,
    /// so hash buckets hold several), with `KEYS` keys; key `i` holds
    /// `value(i, cpu)` on each CPU.
    fn counters_map() -> Map {
        let object = aya_obj::Object::parse(crate::program::OBJECT).unwrap();
        let data = MapData::create(object.maps[map::COUNTS].clone(), map::COUNTS, None)
            .expect("creating a BPF map needs root (CAP_BPF)");
        let mut map = Map::PerCpuHashMap(data);
        let mut counts: PerCpuHashMap<&mut MapData, CountKey, CountValue> =
            PerCpuHashMap::try_from(&mut map).unwrap();
        let cpus = nr_cpus().unwrap() as u64;
        for i in 0..KEYS {
            let per_cpu = (0..cpus).map(|cpu| value(i, cpu)).collect::<Vec<_>>();
            let values = PerCpuValues::try_from(per_cpu).unwrap();
            counts.insert(key(i), values, 0).unwrap();
        }
        map
    }

    fn value(i: u64, cpu: u64) -> CountValue {
        CountValue {
            calls: 10 * i + cpu,
            failed: i + cpu,
            ns: 1000 * i + cpu,
            bytes: 4096 * i,
        }
    }

    fn key(i: u64) -> CountKey {
        CountKey {
            cgroup_id: 1000 + i / 7,
            dev: (226 << 20) | (i % 7) as u32,
            nr: 0x40,
        }
    }

    /// The map's fd, to call the batched read directly.
    fn fd(map: &Map) -> std::os::fd::BorrowedFd<'_> {
        let Map::PerCpuHashMap(data) = map else {
            unreachable!("counters_map makes a per-CPU hash")
        };
        data.fd().as_fd()
    }

    fn expected() -> Vec<Counter> {
        let cpus = nr_cpus().unwrap() as u64;
        let mut all: Vec<Counter> = (0..KEYS)
            .map(|i| {
                let cpu_sum = cpus * (cpus - 1) / 2;
                Counter {
                    key: key(i),
                    value: CountValue {
                        calls: cpus * 10 * i + cpu_sum,
                        failed: cpus * i + cpu_sum,
                        ns: cpus * 1000 * i + cpu_sum,
                        bytes: cpus * 4096 * i,
                    },
                }
            })
            .collect();
        all.sort_by_key(|c| c.key);
        all
    }

    #[test]
    fn batched_and_key_by_key_reads_agree_on_every_counter() {
        let map = counters_map();
        let batched = syscall::summed_per_cpu::<CountKey, CountValue>(fd(&map))
            .unwrap()
            .expect("this kernel reads maps in batches, so sum_counts does too");
        assert_eq!(batched.len(), KEYS as usize);
        assert_eq!(sum_counts(&map).unwrap(), expected());
        let mut one_by_one: Vec<Counter> =
            key_by_key::<CountKey, CountValue>(&PerCpuHashMap::try_from(&map).unwrap())
                .unwrap()
                .into_iter()
                .map(|(key, value)| Counter { key, value })
                .collect();
        one_by_one.sort_by_key(|c| c.key);
        assert_eq!(one_by_one, expected());
    }

    #[test]
    fn a_bucket_larger_than_the_room_asked_for_is_read_with_more_room() {
        let map = counters_map();
        // Room for one key: the first bucket holding two fails with ENOSPC.
        let mut read: Vec<Counter> = syscall::summed_per_cpu_with_room(fd(&map), 1)
            .unwrap()
            .expect("this kernel reads maps in batches")
            .into_iter()
            .map(|(key, value)| Counter { key, value })
            .collect();
        read.sort_by_key(|c| c.key);
        assert_eq!(read, expected());
    }

    #[test]
    fn a_batch_into_keys_of_another_size_is_refused() {
        let map = counters_map();
        let refused = syscall::summed_per_cpu::<u64, CountValue>(fd(&map))
            .expect_err("the counters map's keys are 16 bytes, not 8");
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::InvalidInput,
            "{refused}"
        );
        assert!(
            refused.to_string().contains("key 16 bytes, value 32 bytes"),
            "{refused}"
        );
    }
}
