//! What the kernel side of one scrape of `/metrics` costs the agent: the
//! agent's own reader fetching the per-CPU counters map in batches and
//! summing each key's values, at 100, 1 000 and 10 000 keys, in a map made from the
//! embedded object's own definition (16 384 keys, the agent's default).
//!
//! Only the map is created, no program is loaded, so this runs on any
//! kernel that creates BPF maps, this machine's included. It needs
//! CAP_BPF: run it as root. The cost grows with the number of possible
//! CPUs (each key holds one u64 per CPU); BENCHMARKS.md names the count.

use aya::{
    maps::{Map, MapData, PerCpuHashMap, PerCpuValues},
    util::nr_cpus,
};
use criterion::{BenchmarkId, Criterion, criterion_main};
use kubenpu::{probe::sum_counts, program::OBJECT};
use kubenpu_ebpf::{CountKey, CountValue, map};

/// The counters map with `keys` keys: pods' cgroups on four devices,
/// three ioctls each.
fn counts_with(keys: usize) -> Map {
    let object = aya_obj::Object::parse(OBJECT).expect("the embedded object parses");
    let definition = object.maps[map::COUNTS].clone();
    let data = MapData::create(definition, map::COUNTS, None).unwrap_or_else(|e| {
        eprintln!("map_read: cannot create the counters map: {e} (run it as root)");
        std::process::exit(1)
    });
    let mut map = Map::PerCpuHashMap(data);
    let mut counts: PerCpuHashMap<&mut MapData, CountKey, CountValue> =
        PerCpuHashMap::try_from(&mut map).expect("a per-CPU hash");
    let cpus = nr_cpus().expect("the possible CPUs");
    for i in 0..keys {
        let key = CountKey {
            cgroup_id: 10_000 + (i / 12) as u64,
            dev: (226 << 20) | (128 + (i / 3 % 4) as u32),
            nr: 0x40 + (i % 3) as u32,
        };
        let value = CountValue {
            calls: i as u64 + 1,
            failed: 1,
            ns: 35_000 * (i as u64 + 1),
            bytes: 4096,
        };
        let values = PerCpuValues::try_from(vec![value; cpus]).expect("one per CPU");
        counts.insert(key, values, 0).expect("room for the key");
    }
    map
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("map_read");
    for keys in [100, 1_000, 10_000] {
        let counts = counts_with(keys);
        let read = sum_counts(&counts).expect("the map reads back");
        assert_eq!(read.len(), keys, "keys are distinct");
        group.bench_with_input(BenchmarkId::new("counts", keys), &counts, |b, counts| {
            b.iter(|| sum_counts(counts))
        });
    }
    group.finish();
}

/// criterion's generated group, private (it has no doc comment).
mod group {
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
