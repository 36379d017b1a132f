//! Counts as operators read them: the kernel's per-cgroup counters joined
//! with attribution, per series.
//!
//! The kernel map is the only store of counts. A cgroup that is gone keeps
//! its counters there, so its series keeps its final value, across agent
//! restarts too. Two rules bound what stays:
//!
//! - the gone cgroups of one owner are merged into the earliest of them,
//!   so a container that restarts a thousand times leaves one set of
//!   counters behind, and its series stays monotonic;
//! - an owner with no live cgroup is dropped once `grace` has passed since
//!   its last cgroup went, so a scrape sees its final value, and the
//!   metric's cardinality stays bounded on a busy node.

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use kubenpu_ebpf::{CountValue, DURATION_BUCKETS, DurationKey};

use crate::{
    attribution::{Attributor, Named, Owner, resolver::Ask},
    catalog::{Catalog, DeviceKind, Series},
    device_table::DeviceTable,
    probe::Counter,
};

/// One duration histogram: calls per log2 bucket of nanoseconds (bucket
/// `b` holds calls of `[2^b, 2^(b+1))` ns), and their total time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durations {
    /// Calls per bucket.
    pub buckets: [u64; DURATION_BUCKETS as usize],
    /// Nanoseconds inside the calls of this device and kind.
    pub sum_ns: u64,
}

impl Default for Durations {
    fn default() -> Self {
        Self {
            buckets: [0; DURATION_BUCKETS as usize],
            sum_ns: 0,
        }
    }
}

/// Attribution, labels and totals, owned by the agent's loop.
#[derive(Debug)]
pub struct Usage {
    /// Who owns each counted cgroup.
    pub attributor: Attributor,
    catalog: Catalog,
    grace: Duration,
    outside_pods: bool,
}

/// What a sweep asks of the kernel maps and the runtime.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Questions for the container runtime.
    pub asks: Vec<Ask>,
    /// Gone cgroups to merge, `(from, into)`: `from`'s counters move onto
    /// `into`'s, then `from` is forgotten.
    pub merges: Vec<(u64, u64)>,
    /// Gone cgroups whose grace period is over: their counters and
    /// records go.
    pub expired: Vec<u64>,
}

impl Usage {
    /// Usage over `attributor`; series of owners that are gone are kept
    /// for `grace`; `outside_pods` says whether processes outside pods are
    /// counted (with empty pod labels).
    pub fn new(attributor: Attributor, grace: Duration, outside_pods: bool) -> Self {
        Self {
            attributor,
            catalog: Catalog::default(),
            grace,
            outside_pods,
        }
    }

    /// Takes in the labels of the devices `table` counts on.
    pub fn learn(&mut self, table: &DeviceTable) {
        self.catalog.learn(table);
    }

    /// Takes note of the cgroups in `counters` (a restart finds keys no
    /// note announced), with the paths the kernel recorded (`recorded`),
    /// retries unplaced ones, notes which are gone at `now`
    /// (CLOCK_BOOTTIME), and says which gone cgroups to merge and which
    /// have expired.
    pub fn sweep(
        &mut self,
        counters: &[Counter],
        recorded: impl Fn(u64) -> Option<PathBuf>,
        seen: Instant,
        now: Duration,
    ) -> Sweep {
        let mut asks: Vec<Ask> = counters
            .iter()
            .filter_map(|c| {
                let id = c.key.cgroup_id;
                self.attributor.note(id, seen, || recorded(id))
            })
            .collect();
        asks.extend(self.attributor.retry());
        self.attributor.mark_gone(now);
        let mut by_owner: HashMap<Owner, Vec<Named>> = HashMap::new();
        for named in self.attributor.named() {
            by_owner.entry(named.owner.clone()).or_default().push(named);
        }
        let mut sweep = Sweep {
            asks,
            ..Sweep::default()
        };
        for cgroups in by_owner.into_values() {
            let mut gone: Vec<(Duration, u64)> = cgroups
                .iter()
                .filter_map(|c| Some((c.gone_at?, c.id)))
                .collect();
            gone.sort();
            let live = gone.len() < cgroups.len();
            match gone.last() {
                Some(&(last, _)) if !live && now.saturating_sub(last) > self.grace => {
                    sweep.expired.extend(gone.iter().map(|&(_, id)| id));
                }
                _ => {
                    if let Some((&(_, into), rest)) = gone.split_first() {
                        sweep
                            .merges
                            .extend(rest.iter().map(|&(_, from)| (from, into)));
                    }
                }
            }
        }
        sweep
    }

    /// Every series' totals now, from the kernel's `counters`. Cgroups
    /// still waiting for a name are left out until they have one.
    pub fn totals(&self, counters: &[Counter]) -> BTreeMap<Series, CountValue> {
        let mut totals: BTreeMap<Series, CountValue> = BTreeMap::new();
        for counter in counters {
            if let Some(series) = self.series(counter) {
                totals.entry(series).or_default().accumulate(&counter.value);
            }
        }
        totals
    }

    /// The duration histograms per device and kind, from the kernel's
    /// `buckets`; each one's sum is the time of every counter of its
    /// device and kind, whoever called.
    pub fn durations(
        &self,
        buckets: &[(DurationKey, u64)],
        counters: &[Counter],
    ) -> BTreeMap<DeviceKind, Durations> {
        let mut histograms: BTreeMap<DeviceKind, Durations> = BTreeMap::new();
        for (key, calls) in buckets {
            if let Some(labels) = self.catalog.device_kind(key.dev, u32::from(key.kind)) {
                let bucket = usize::from(key.bucket).min(DURATION_BUCKETS as usize - 1);
                histograms.entry(labels).or_default().buckets[bucket] += calls;
            }
        }
        for counter in counters {
            let labels = self
                .catalog
                .device_kind_of_nr(counter.key.dev, counter.key.nr);
            if let Some(histogram) = labels.and_then(|l| histograms.get_mut(&l)) {
                histogram.sum_ns += counter.value.ns;
            }
        }
        histograms
    }

    /// The series `counter` adds to: `None` until its cgroup is named.
    pub fn series(&self, counter: &Counter) -> Option<Series> {
        let owner = self.owner(counter.key.cgroup_id)?;
        self.catalog.series(owner, counter.key.dev, counter.key.nr)
    }

    /// The device and vendor of device node `dev` (kernel dev_t), if it
    /// was ever counted on.
    pub fn device(&self, dev: u32) -> Option<(Arc<str>, Arc<str>)> {
        self.catalog.device(dev)
    }

    /// The owner of cgroup `id` as the metrics show it: `None` until it
    /// is named, and for processes outside pods when those are left out.
    pub fn owner(&self, id: u64) -> Option<&Owner> {
        self.attributor
            .owner(id)
            .filter(|owner| self.outside_pods || !owner.is_outside_pods())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;
    use crate::attribution::index::CgroupIndex;

    fn owner(pod: &str) -> Owner {
        Owner {
            namespace: "default".into(),
            pod: pod.into(),
            container: "main".into(),
        }
    }

    fn gone(id: u64, pod: &str, at_secs: u64) -> Named {
        Named {
            id,
            owner: owner(pod),
            gone_at: Some(Duration::from_secs(at_secs)),
        }
    }

    #[test]
    fn gone_cgroups_merge_per_owner_and_expire_after_the_grace_period() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("live")).unwrap();
        let live = std::fs::metadata(root.path().join("live")).unwrap().ino();
        let mut attributor = Attributor::new(CgroupIndex::new(root.path(), Duration::ZERO));
        attributor.restore(
            [
                // A restarting container: two gone cgroups and a live one.
                gone(10, "restarts", 100),
                gone(11, "restarts", 105),
                Named {
                    id: live,
                    owner: owner("restarts"),
                    gone_at: None,
                },
                // A pod gone long ago, twice.
                gone(20, "finished", 40),
                gone(21, "finished", 50),
                // A pod gone within the grace period.
                gone(30, "recent", 180),
            ],
            Instant::now(),
        );
        let mut usage = Usage::new(attributor, Duration::from_secs(60), true);
        let sweep = usage.sweep(&[], |_| None, Instant::now(), Duration::from_secs(200));
        assert_eq!(sweep.merges, [(11, 10)]);
        let mut expired = sweep.expired.clone();
        expired.sort();
        assert_eq!(expired, [20, 21]);
        assert!(sweep.asks.is_empty());
        // The live cgroup was found in the hierarchy, not taken for gone.
        assert!(
            usage
                .attributor
                .named()
                .any(|n| n.id == live && n.gone_at.is_none())
        );
    }
}
