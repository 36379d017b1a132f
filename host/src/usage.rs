//! Counts as operators read them: the kernel's per-cgroup counters joined
//! with attribution, per series, with gone cgroups folded away.

use std::{
    collections::{BTreeMap, HashSet},
    time::Instant,
};

use crate::{
    attribution::{
        Attributor,
        ledger::{Catalog, Ledger, Series},
        resolver::Ask,
    },
    device_table::DeviceTable,
    probe::Counter,
};

/// Attribution, labels and totals, owned by the agent's loop.
#[derive(Debug)]
pub struct Usage {
    /// Who owns each counted cgroup.
    pub attributor: Attributor,
    catalog: Catalog,
    ledger: Ledger,
    outside_pods: bool,
}

/// What a sweep found.
#[derive(Debug, Default)]
pub struct Sweep {
    /// Questions for the container runtime.
    pub asks: Vec<Ask>,
    /// Cgroups that are gone: nothing can count for them any more, so
    /// their counters can be taken out of the kernel map and folded.
    pub gone: HashSet<u64>,
}

impl Usage {
    /// Usage over `attributor`; `outside_pods` says whether processes
    /// outside pods are counted (with empty pod labels).
    pub fn new(attributor: Attributor, ledger: Ledger, outside_pods: bool) -> Self {
        Self {
            attributor,
            catalog: Catalog::default(),
            ledger,
            outside_pods,
        }
    }

    /// Takes in the labels of the devices `table` counts on.
    pub fn learn(&mut self, table: &DeviceTable) {
        self.catalog.learn(table);
    }

    /// Takes note of the cgroups in `counters` (after an agent restart the
    /// map has keys no note announced), retries unplaced ones, and says
    /// which cgroups are gone. Their counters are to be taken out of the
    /// kernel map only now, after that was decided, and given to
    /// [`Usage::fold`]: a reading from before could miss their last calls.
    pub fn sweep(&mut self, counters: &[Counter], now: Instant) -> Sweep {
        let mut asks: Vec<Ask> = counters
            .iter()
            .filter_map(|c| self.attributor.note(c.key.cgroup_id, now))
            .collect();
        asks.extend(self.attributor.retry());
        let gone: HashSet<u64> = self.attributor.gone().into_iter().collect();
        // Expires idle series even when nobody scrapes.
        self.totals(counters, now);
        Sweep { asks, gone }
    }

    /// Folds the final counters `taken` out of the kernel map into the
    /// ledger, and forgets the cgroups in `done`, all of whose counters
    /// were taken.
    pub fn fold(&mut self, taken: &[Counter], done: &[u64], now: Instant) {
        for counter in taken {
            if let Some(series) = self.series(counter) {
                self.ledger.retire(series, counter.calls, now);
            }
        }
        self.attributor.forget(done);
    }

    /// Every series' total now, from the live `counters`. Cgroups still
    /// waiting for a name are left out until they have one.
    pub fn totals(&mut self, counters: &[Counter], now: Instant) -> BTreeMap<Series, u64> {
        let live: Vec<(Series, u64)> = counters
            .iter()
            .filter_map(|c| Some((self.series(c)?, c.calls)))
            .collect();
        self.ledger.totals(live, now)
    }

    fn series(&self, counter: &Counter) -> Option<Series> {
        let owner = self.attributor.owner(counter.key.cgroup_id)?;
        if owner.is_outside_pods() && !self.outside_pods {
            return None;
        }
        self.catalog.series(owner, counter.key.dev, counter.key.nr)
    }
}
