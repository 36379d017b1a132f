//! Reading what the programs counted. A counter is one value per key in
//! the kernel, so a scrape copies the same bytes on a node of 2 CPUs or
//! 256; the duration histogram and the losses stay per CPU (their keys are
//! per device, not per pod, so few) and are summed here.

use std::{os::fd::AsFd as _, path::Path};

use aya::{
    Ebpf,
    maps::{HashMap, Map, MapData, PerCpuArray, PerCpuHashMap, RingBuf},
};
use kubenpu_ebpf::{CountKey, CountValue, DurationKey, Loss, map};

use super::{ProbeError, counter::Counter, dump::Dumps, syscall};

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
    let counters = sum_counts(&Map::HashMap(open(map::COUNTS)?))?;
    let durations = sum_durations(&Map::PerCpuHashMap(open(map::DURATIONS)?))?;
    let losses = copied_losses(&Map::PerCpuArray(open(map::LOSSES)?))?;
    reading(counters, durations, losses, pin_dir)
}

/// A [`Reading`] of what was read; `losses` are the program's own, by
/// reason index, and the kernel's skips are taken now.
fn reading(
    counters: Vec<Counter>,
    durations: Vec<(DurationKey, u64)>,
    losses: Vec<(u32, u64)>,
    pin_dir: &Path,
) -> Result<Reading, ProbeError> {
    let (unmeasured, losses) =
        all_losses(&losses, pin_dir)?
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

/// The program's losses copied out of the LOSSES array, summed over the
/// CPUs, by reason index.
fn copied_losses(losses: &Map) -> Result<Vec<(u32, u64)>, ProbeError> {
    let losses: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(losses).map_err(other)?;
    Loss::ALL
        .iter()
        .map(|&reason| {
            let per_cpu = losses.get(&(reason as u32), 0).map_err(other)?;
            Ok((reason as u32, per_cpu.iter().sum()))
        })
        .collect()
}

/// Every key of the counters map with its value, in key order: what a
/// scrape reads from the kernel.
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

/// Every key of a counter map (a hash, or a per-CPU hash whose values are
/// summed). Batched where the kernel allows it; key by key where it does
/// not, or where a batch failed (a bucket's lock timing out, or a map of
/// another shape, which aya's typed map then names), so the scrape still
/// answers.
fn summed<K: aya::Pod, V: syscall::CounterValue>(map: &Map) -> Result<Vec<(K, V)>, ProbeError> {
    let (Map::HashMap(data) | Map::PerCpuHashMap(data)) = map else {
        return Err(other("not a hash map of counters"));
    };
    match syscall::summed_counters(data.fd().as_fd()) {
        Ok(Some(batched)) => Ok(batched),
        Ok(None) | Err(_) => key_by_key(map),
    }
}

/// A counter map read with aya's iteration: two `bpf(2)` calls per key.
fn key_by_key<K: aya::Pod, V: syscall::CounterValue>(map: &Map) -> Result<Vec<(K, V)>, ProbeError> {
    if let Map::HashMap(_) = map {
        let shared: HashMap<&MapData, K, V> = HashMap::try_from(map).map_err(other)?;
        return shared.iter().collect::<Result<_, _>>().map_err(other);
    }
    let per_cpu: PerCpuHashMap<&MapData, K, V> = PerCpuHashMap::try_from(map).map_err(other)?;
    per_cpu
        .iter()
        .map(|entry| {
            entry.map(|(key, values)| {
                let mut sum = V::default();
                for value in values.iter() {
                    sum.accumulate(value);
                }
                (key, sum)
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(other)
}

/// Every loss by reason label: the program's own (`losses`, by reason
/// index), and the runs the kernel skipped, from the pinned program's
/// miss counter.
fn all_losses(losses: &[(u32, u64)], pin_dir: &Path) -> Result<Losses, ProbeError> {
    let mut all: Losses = Loss::ALL
        .iter()
        .map(|&reason| {
            let count = losses
                .iter()
                .find(|(index, _)| *index == reason as u32)
                .map_or(0, |(_, count)| *count);
            (reason.name(), count)
        })
        .collect();
    let program = super::pins::program_path(pin_dir, super::syscall::Side::Entry);
    let misses = syscall::open_pinned(&program)
        .and_then(|fd| syscall::program_stats(fd.as_fd()))
        .map_err(|e| other(format!("cannot read {}: {e}", program.display())))?
        .recursion_misses;
    all.push((RECURSION, misses));
    Ok(all)
}

/// Everything in the loaded programs' maps, whose entry program is pinned
/// under `pin_dir`: through the iterators where they loaded, else copied
/// with lookups.
pub fn live(ebpf: &Ebpf, dumps: Option<&Dumps>, pin_dir: &Path) -> Result<Reading, ProbeError> {
    if let Some(dumps) = dumps {
        return reading(
            dumps.counters()?,
            dumps.durations()?,
            dumps.losses()?,
            pin_dir,
        );
    }
    let counters = sum_counts(live_map(ebpf, map::COUNTS)?)?;
    let durations = sum_durations(live_map(ebpf, map::DURATIONS)?)?;
    let losses = copied_losses(live_map(ebpf, map::LOSSES)?)?;
    reading(counters, durations, losses, pin_dir)
}

/// The counters alone, for a sweep.
pub fn live_counters(ebpf: &Ebpf, dumps: Option<&Dumps>) -> Result<Vec<Counter>, ProbeError> {
    match dumps {
        Some(dumps) => dumps.counters(),
        None => sum_counts(live_map(ebpf, map::COUNTS)?),
    }
}

fn live_map<'a>(ebpf: &'a Ebpf, name: &str) -> Result<&'a Map, ProbeError> {
    ebpf.map(name)
        .ok_or_else(|| other(format!("no {name} map")))
}

/// The counters map's fd and every counter of cgroup `id`.
fn counters_of<'a>(
    ebpf: &'a Ebpf,
    dumps: Option<&Dumps>,
    id: u64,
) -> Result<(&'a MapData, Vec<Counter>), ProbeError> {
    let Map::HashMap(data) = live_map(ebpf, map::COUNTS)? else {
        return Err(other("no hash map COUNTS"));
    };
    let mine = live_counters(ebpf, dumps)?
        .into_iter()
        .filter(|c| c.key.cgroup_id == id)
        .collect();
    Ok((data, mine))
}

/// Moves every counter of gone cgroup `from` onto the same device and
/// ioctl of gone cgroup `into`. Each is taken out in one step, then added:
/// nothing counts for either any more, so the sum is exact.
pub fn merge_cgroup(
    ebpf: &Ebpf,
    dumps: Option<&Dumps>,
    from: u64,
    into: u64,
) -> Result<(), ProbeError> {
    let (data, counters) = counters_of(ebpf, dumps, from)?;
    let fd = data.fd().as_fd();
    for counter in counters {
        if let Some(value) =
            syscall::take_counter::<_, CountValue>(fd, &counter.key).map_err(other)?
        {
            let key = CountKey {
                cgroup_id: into,
                ..counter.key
            };
            syscall::add_counter(fd, &key, value).map_err(other)?;
        }
    }
    Ok(())
}

/// Deletes every counter of gone cgroup `id`.
pub fn remove_cgroup(ebpf: &Ebpf, dumps: Option<&Dumps>, id: u64) -> Result<(), ProbeError> {
    let (data, counters) = counters_of(ebpf, dumps, id)?;
    for counter in counters {
        syscall::take_counter::<_, CountValue>(data.fd().as_fd(), &counter.key).map_err(other)?;
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
        maps::{HashMap, PerCpuValues, hash_map::PerCpuHashMap},
        util::nr_cpus,
    };

    use super::*;

    const KEYS: u64 = 5000;

    /// The object's map `name`, from its own definition (16,384 keys for
    /// the counters, so hash buckets hold several).
    fn object_map(name: &str) -> MapData {
        let object = aya_obj::Object::parse(crate::program::OBJECT).unwrap();
        MapData::create(object.maps[name].clone(), name, None)
            .expect("creating a BPF map needs root (CAP_BPF)")
    }

    /// The program's counters map with `KEYS` keys; key `i` holds
    /// `value(i)`.
    fn counters_map() -> Map {
        let mut map = Map::HashMap(object_map(map::COUNTS));
        let mut counts: HashMap<&mut MapData, CountKey, CountValue> =
            HashMap::try_from(&mut map).unwrap();
        for i in 0..KEYS {
            counts.insert(key(i), value(i), 0).unwrap();
        }
        map
    }

    fn value(i: u64) -> CountValue {
        CountValue {
            calls: 10 * i + 1,
            failed: i,
            ns: 1000 * i + 7,
            bytes: 4096 * i,
            remote: i / 3,
            busy: i / 4,
            timed_out: i / 5,
        }
    }

    fn key(i: u64) -> CountKey {
        CountKey {
            cgroup_id: 1000 + i / 7,
            dev: (226 << 20) | (i % 7) as u32,
            nr: 0x40,
        }
    }

    /// A counter map's fd, to call the batched read directly.
    fn fd(map: &Map) -> std::os::fd::BorrowedFd<'_> {
        let (Map::HashMap(data) | Map::PerCpuHashMap(data)) = map else {
            unreachable!("the tests make hash maps")
        };
        data.fd().as_fd()
    }

    fn expected() -> Vec<Counter> {
        let mut all: Vec<Counter> = (0..KEYS)
            .map(|i| Counter {
                key: key(i),
                value: value(i),
            })
            .collect();
        all.sort_by_key(|c| c.key);
        all
    }

    #[test]
    fn batched_and_key_by_key_reads_agree_on_every_counter() {
        let map = counters_map();
        let batched = syscall::summed_counters::<CountKey, CountValue>(fd(&map))
            .unwrap()
            .expect("this kernel reads maps in batches, so sum_counts does too");
        assert_eq!(batched.len(), KEYS as usize);
        assert_eq!(sum_counts(&map).unwrap(), expected());
        let mut one_by_one: Vec<Counter> = key_by_key::<CountKey, CountValue>(&map)
            .unwrap()
            .into_iter()
            .map(|(key, value)| Counter { key, value })
            .collect();
        one_by_one.sort_by_key(|c| c.key);
        assert_eq!(one_by_one, expected());
    }

    #[test]
    fn a_per_cpu_histogram_is_summed_over_the_cpus_batched_or_key_by_key() {
        let mut map = Map::PerCpuHashMap(object_map(map::DURATIONS));
        let cpus = nr_cpus().unwrap() as u64;
        let bucket = |i: u64| DurationKey {
            dev: 226 << 20,
            kind: 1,
            bucket: i as u16,
        };
        {
            let mut durations: PerCpuHashMap<&mut MapData, DurationKey, u64> =
                PerCpuHashMap::try_from(&mut map).unwrap();
            for i in 0..64 {
                let per_cpu = (0..cpus).map(|cpu| 100 * i + cpu).collect::<Vec<_>>();
                let values = PerCpuValues::try_from(per_cpu).unwrap();
                durations.insert(bucket(i), values, 0).unwrap();
            }
        }
        let expected: Vec<(DurationKey, u64)> = (0..64)
            .map(|i| (bucket(i), cpus * 100 * i + cpus * (cpus - 1) / 2))
            .collect();
        assert_eq!(sum_durations(&map).unwrap(), expected);
        let mut one_by_one = key_by_key::<DurationKey, u64>(&map).unwrap();
        one_by_one.sort_by_key(|(key, _)| *key);
        assert_eq!(one_by_one, expected);
    }

    #[test]
    fn a_bucket_larger_than_the_room_asked_for_is_read_with_more_room() {
        let map = counters_map();
        // Room for one key: the first bucket holding two fails with ENOSPC.
        let mut read: Vec<Counter> = syscall::summed_counters_with_room(fd(&map), 1)
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
        let refused = syscall::summed_counters::<u64, CountValue>(fd(&map))
            .expect_err("the counters map's keys are 16 bytes, not 8");
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::InvalidInput,
            "{refused}"
        );
        assert!(
            refused.to_string().contains("key 16 bytes, value 56 bytes"),
            "{refused}"
        );
    }

    #[test]
    fn a_gone_cgroups_counters_are_taken_once_and_added_onto_another() {
        let map = counters_map();
        let (from, into) = (key(0), key(7));
        let taken = syscall::take_counter::<_, CountValue>(fd(&map), &from).unwrap();
        assert_eq!(taken, Some(value(0)));
        assert_eq!(
            syscall::take_counter::<_, CountValue>(fd(&map), &from).unwrap(),
            None
        );
        syscall::add_counter(fd(&map), &into, value(0)).unwrap();
        let read = sum_counts(&map).unwrap();
        let merged = read.iter().find(|c| c.key == into).unwrap().value;
        let mut sum = value(7);
        sum.accumulate(&value(0));
        assert_eq!(merged, sum);
        assert!(read.iter().all(|c| c.key != from));
    }
}
