//! The counters map as a scrape finds it, for the map read benchmarks
//! (criterion's on this machine, `map_read_scaling` in the VM): made from
//! the embedded object's own definition (16,384 keys, the agent's
//! default), with `keys` keys of pods' cgroups on four devices, three
//! ioctls each.

use aya::maps::{HashMap, Map, MapData};
use kubenpu::program::OBJECT;
use kubenpu_ebpf::{CountKey, CountValue, map};

/// The counters map with `keys` keys. Exits with one line if the map
/// cannot be made (not root).
pub fn counters_with(keys: usize) -> Map {
    let object = aya_obj::Object::parse(OBJECT).expect("the embedded object parses");
    let definition = object.maps[map::COUNTS].clone();
    let data = MapData::create(definition, map::COUNTS, None).unwrap_or_else(|e| {
        eprintln!("map_read: cannot create the counters map: {e} (run it as root)");
        std::process::exit(1)
    });
    let mut map = Map::HashMap(data);
    let mut counts: HashMap<&mut MapData, CountKey, CountValue> =
        HashMap::try_from(&mut map).expect("a hash map");
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
            remote: i as u64 % 2,
            busy: i as u64 % 3,
            timed_out: 0,
        };
        counts.insert(key, value, 0).expect("room for the key");
    }
    map
}
