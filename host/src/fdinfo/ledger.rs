//! Per-cgroup totals from successive scans: engine busy time, which only
//! grows, and the device memory the clients hold now.
//!
//! A client is counted once however many fds and processes hold it
//! (fork, passed fds): by its device and `drm-client-id`, under the cgroup
//! of the lowest pid holding it. Its busy time is credited as it grows
//! between scans, so a client that closes keeps what it was credited and
//! values that step back (the specification allows it) add nothing until
//! they pass the highest seen. The clients of the first scan were open
//! before the agent started (a restarted agent's predecessor credited their
//! past): their first reading is only a baseline.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use super::{
    parse::MemoryState,
    scan::{DeviceLabels, Sighting},
};

/// Busy time of one engine class on one device, by one cgroup.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BusyKey {
    /// The cgroup holding the clients.
    pub cgroup: u64,
    /// The device.
    pub device: DeviceLabels,
    /// The engine class as the driver names it.
    pub engine: String,
}

/// Memory in one region and state of one device, held by one cgroup.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemoryKey {
    /// The cgroup holding the clients.
    pub cgroup: u64,
    /// The device.
    pub device: DeviceLabels,
    /// The region as the driver names it.
    pub region: String,
    /// Which of the specification's states.
    pub state: MemoryState,
}

/// A client's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ClientKey {
    /// Its device and the id the kernel gave it: unique per driver, so
    /// per device.
    Id(DeviceLabels, u64),
    /// A file that reports usage without a client id: on its own.
    File(DeviceLabels, u32, u32),
}

/// What is remembered of a client between scans.
#[derive(Debug, Clone, Default)]
struct Seen {
    /// The highest busy nanoseconds seen per class.
    engine_ns: BTreeMap<String, u64>,
    /// The highest busy and elapsed cycles seen per class (xe).
    cycles: BTreeMap<String, (u64, u64)>,
    /// When it was last read (CLOCK_BOOTTIME).
    at: Duration,
}

/// The totals per cgroup.
#[derive(Debug, Default)]
pub struct Ledger {
    clients: HashMap<ClientKey, Seen>,
    busy: BTreeMap<BusyKey, f64>,
    /// The busy seconds the last scan credited, per cgroup and device
    /// (zero for idle clients): what the energy meter divides by.
    credited: BTreeMap<(u64, DeviceLabels), f64>,
    memory: BTreeMap<MemoryKey, u64>,
    /// Whether a scan was taken: until then, every client predates the
    /// agent.
    scanned: bool,
}

impl Ledger {
    /// Takes in one scan's sightings, read at `now` (CLOCK_BOOTTIME).
    /// Clients not seen any more are closed: their busy time stays
    /// credited, their memory is no longer held.
    pub fn take(&mut self, mut sightings: Vec<Sighting>, now: Duration) {
        sightings.sort_by_key(|s| (s.pid, s.fd));
        let predate_the_agent = !std::mem::replace(&mut self.scanned, true);
        let mut open: HashMap<ClientKey, Seen> = HashMap::new();
        self.memory.clear();
        self.credited.clear();
        for sighting in sightings {
            if !sighting.stats.has_usage() {
                continue;
            }
            let key = match sighting.stats.client_id {
                Some(id) => ClientKey::Id(sighting.device.clone(), id),
                None => ClientKey::File(sighting.device.clone(), sighting.pid, sighting.fd),
            };
            if open.contains_key(&key) {
                continue; // the same client, through another fd
            }
            let seen = self.clients.remove(&key);
            open.insert(key, self.credit(&sighting, seen, predate_the_agent, now));
            for ((region, state), bytes) in &sighting.stats.memory {
                let key = MemoryKey {
                    cgroup: sighting.cgroup,
                    device: sighting.device.clone(),
                    region: region.clone(),
                    state: *state,
                };
                *self.memory.entry(key).or_default() += bytes;
            }
        }
        self.clients = open;
    }

    /// Credits a client's growth since it was last `seen` to its cgroup
    /// (all it used, for a client new since the last scan, unless it
    /// predates the agent); returns what to remember of it now.
    fn credit(
        &mut self,
        sighting: &Sighting,
        seen: Option<Seen>,
        predates_the_agent: bool,
        now: Duration,
    ) -> Seen {
        let stats = &sighting.stats;
        let mut seen = seen.unwrap_or_else(|| Seen {
            engine_ns: if predates_the_agent {
                stats.engine_ns.clone()
            } else {
                BTreeMap::new()
            },
            ..Seen::default()
        });
        let wall = now.saturating_sub(seen.at).as_secs_f64();
        // Every class the driver prints gets a series, idle ones at 0.
        for (class, &ns) in &stats.engine_ns {
            let highest = seen.engine_ns.entry(class.clone()).or_default();
            let seconds = ns.saturating_sub(*highest) as f64 / 1e9;
            *highest = ns.max(*highest);
            self.add_busy(sighting, class, seconds / stats.capacity(class) as f64);
        }
        for (class, &cycles) in &stats.cycles {
            let Some(&total) = stats.total_cycles.get(class) else {
                continue;
            };
            let capacity = stats.capacity(class) as f64;
            match seen.cycles.get_mut(class) {
                // Busy cycles over elapsed cycles is the busy share on the
                // device's own clock (up to the class's engine count).
                Some((busy, elapsed)) if total > *elapsed => {
                    let share = cycles.saturating_sub(*busy) as f64 / (total - *elapsed) as f64;
                    self.add_busy(sighting, class, share.min(capacity) * wall / capacity);
                    *busy = cycles.max(*busy);
                    *elapsed = total;
                }
                Some(_) => {}
                // The first reading is only the baseline.
                None => {
                    seen.cycles.insert(class.clone(), (cycles, total));
                    self.add_busy(sighting, class, 0.0);
                }
            }
        }
        seen.at = now;
        seen
    }

    fn add_busy(&mut self, sighting: &Sighting, engine: &str, seconds: f64) {
        let key = BusyKey {
            cgroup: sighting.cgroup,
            device: sighting.device.clone(),
            engine: engine.to_owned(),
        };
        *self.busy.entry(key).or_default() += seconds;
        *self
            .credited
            .entry((sighting.cgroup, sighting.device.clone()))
            .or_default() += seconds;
    }

    /// Moves gone cgroup `from`'s busy time onto gone cgroup `into`, as
    /// the kernel's counters are merged.
    pub fn merge(&mut self, from: u64, into: u64) {
        let moved: Vec<(BusyKey, f64)> = self
            .busy
            .extract_if(.., |key, _| key.cgroup == from)
            .collect();
        for (key, seconds) in moved {
            *self
                .busy
                .entry(BusyKey {
                    cgroup: into,
                    ..key
                })
                .or_default() += seconds;
        }
    }

    /// Forgets cgroup `id`, whose grace period is over (its memory went
    /// with its last process).
    pub fn remove(&mut self, id: u64) {
        self.busy.retain(|key, _| key.cgroup != id);
    }

    /// Busy seconds per cgroup, device and engine class.
    pub fn busy(&self) -> &BTreeMap<BusyKey, f64> {
        &self.busy
    }

    /// Busy seconds the last scan credited per cgroup and device, over
    /// every engine class; zero for clients that were idle.
    pub fn credited(&self) -> &BTreeMap<(u64, DeviceLabels), f64> {
        &self.credited
    }

    /// Bytes per cgroup, device, region and state, as of the last scan.
    pub fn memory(&self) -> &BTreeMap<MemoryKey, u64> {
        &self.memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdinfo::parse::{ClientStats, parse};

    fn sighting(cgroup: u64, pid: u32, fd: u32, device: &str, stats: ClientStats) -> Sighting {
        Sighting {
            cgroup,
            pid,
            fd,
            device: DeviceLabels {
                device: device.into(),
                vendor: "i915".into(),
            },
            stats,
        }
    }

    fn busy(ledger: &Ledger, cgroup: u64, engine: &str) -> f64 {
        ledger
            .busy()
            .iter()
            .filter(|(k, _)| k.cgroup == cgroup && k.engine == engine)
            .map(|(_, s)| s)
            .sum()
    }

    /// A ledger that has taken its first scan: clients seen from now on
    /// opened while the agent ran.
    fn running() -> Ledger {
        let mut ledger = Ledger::default();
        ledger.take(vec![], Duration::ZERO);
        ledger
    }

    #[test]
    fn busy_time_only_grows_and_survives_the_client() {
        let mut ledger = running();
        let at = |ns: u64| parse(&format!("drm-client-id:\t7\ndrm-engine-render:\t{ns} ns\n"));
        let secs = Duration::from_secs;
        ledger.take(vec![sighting(1, 10, 3, "gpu", at(2_000_000_000))], secs(1));
        assert_eq!(busy(&ledger, 1, "render"), 2.0);
        // Steps back, then passes the highest seen: only the excess counts.
        ledger.take(vec![sighting(1, 10, 3, "gpu", at(1_500_000_000))], secs(2));
        assert_eq!(busy(&ledger, 1, "render"), 2.0);
        ledger.take(vec![sighting(1, 10, 3, "gpu", at(2_500_000_000))], secs(3));
        assert_eq!(busy(&ledger, 1, "render"), 2.5);
        // Closed: what it was credited stays.
        ledger.take(vec![], secs(4));
        assert_eq!(busy(&ledger, 1, "render"), 2.5);
    }

    #[test]
    fn a_client_held_twice_counts_once_under_the_lowest_pid() {
        let mut ledger = running();
        let stats =
            parse("drm-client-id:\t9\ndrm-engine-gfx:\t1000000000 ns\ndrm-resident-vram:\t4 KiB\n");
        ledger.take(
            vec![
                sighting(2, 20, 5, "gpu", stats.clone()),
                sighting(1, 11, 4, "gpu", stats.clone()),
                sighting(1, 11, 6, "gpu", stats.clone()),
                // The same id on another device is another client.
                sighting(1, 11, 7, "other", stats),
            ],
            Duration::from_secs(1),
        );
        assert_eq!(busy(&ledger, 1, "gfx"), 2.0);
        assert_eq!(busy(&ledger, 2, "gfx"), 0.0);
        let held: u64 = ledger.memory().values().sum();
        assert_eq!(held, 2 * 4096);
    }

    #[test]
    fn clients_open_before_the_agent_are_credited_only_what_they_use_after() {
        // A restarted agent's first scan: its predecessor credited (and
        // Prometheus saw) these clients' past.
        let mut ledger = Ledger::default();
        let at = |ns: u64| parse(&format!("drm-client-id:\t7\ndrm-engine-render:\t{ns} ns\n"));
        let secs = Duration::from_secs;
        ledger.take(vec![sighting(1, 10, 3, "gpu", at(90_000_000_000))], secs(1));
        assert_eq!(
            busy(&ledger, 1, "render"),
            0.0,
            "the first reading is a baseline"
        );
        assert_eq!(
            ledger.busy().len(),
            1,
            "its series exists from the first scan"
        );
        ledger.take(
            vec![
                sighting(1, 10, 3, "gpu", at(91_500_000_000)),
                // Opened since the first scan: all it used was used since.
                sighting(
                    2,
                    20,
                    3,
                    "gpu",
                    parse("drm-client-id:\t8\ndrm-engine-render:\t2000000000 ns\n"),
                ),
            ],
            secs(2),
        );
        assert_eq!(busy(&ledger, 1, "render"), 1.5);
        assert_eq!(busy(&ledger, 2, "render"), 2.0);
    }

    #[test]
    fn cycles_become_seconds_of_the_wall_time_between_scans() {
        let mut ledger = running();
        let at = |busy: u64, total: u64| {
            parse(&format!(
                "drm-client-id:\t3\ndrm-cycles-vcs:\t{busy}\ndrm-total-cycles-vcs:\t{total}\ndrm-engine-capacity-vcs:\t2\n"
            ))
        };
        ledger.take(
            vec![sighting(1, 10, 3, "gpu", at(100, 1000))],
            Duration::from_secs(10),
        );
        assert_eq!(
            busy(&ledger, 1, "vcs"),
            0.0,
            "the first reading is a baseline"
        );
        // 1.5 of 2 engines busy over 4 s: 3 engine-seconds, 1.5 s of the class.
        ledger.take(
            vec![sighting(1, 10, 3, "gpu", at(1600, 2000))],
            Duration::from_secs(14),
        );
        assert_eq!(busy(&ledger, 1, "vcs"), 3.0);
    }

    #[test]
    fn merged_cgroups_keep_their_time_and_removed_ones_go() {
        let mut ledger = running();
        let stats = parse("drm-client-id:\t1\ndrm-engine-copy:\t1000000000 ns\n");
        ledger.take(
            vec![
                sighting(1, 10, 3, "gpu", stats.clone()),
                sighting(
                    2,
                    20,
                    3,
                    "gpu",
                    parse("drm-client-id:\t2\ndrm-engine-copy:\t3000000000 ns\n"),
                ),
                sighting(
                    3,
                    30,
                    3,
                    "gpu",
                    parse("drm-client-id:\t5\ndrm-engine-copy:\t1 ns\n"),
                ),
            ],
            Duration::from_secs(1),
        );
        ledger.merge(2, 1);
        ledger.remove(3);
        assert_eq!(busy(&ledger, 1, "copy"), 4.0);
        assert!(ledger.busy().keys().all(|k| k.cgroup == 1));
    }
}
