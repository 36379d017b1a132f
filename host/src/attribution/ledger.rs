//! The totals behind `kubenpu_ioctl_total`: live counts from the kernel,
//! plus the final counts of cgroups that are gone, per series.
//!
//! A gone cgroup's counts are folded into its series here and its map
//! entries deleted, so the kernel map only holds live cgroups. A series
//! with no live cgroup is kept for a grace period after it was last live
//! (so a scrape sees its final value), then dropped, which bounds both the
//! agent's memory and the metric's cardinality on a busy node.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::{Duration, Instant},
};

use kubenpu_sdk::Kind;

use super::Owner;
use crate::device_table::DeviceTable;

/// The labels of one `kubenpu_ioctl_total` series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Series {
    /// Who called.
    pub owner: Owner,
    /// The device's stable name (PCI address or sysfs path).
    pub device: Arc<str>,
    /// The vendor whose table counted it.
    pub vendor: Arc<str>,
    /// What the calls do.
    pub kind: Kind,
}

/// What a kernel (device number, ioctl number) pair means. Devices that
/// leave the table are remembered, so counts made on them before they
/// went keep their labels.
#[derive(Debug, Default)]
pub struct Catalog {
    devices: HashMap<u32, DeviceLabels>,
}

#[derive(Debug)]
struct DeviceLabels {
    device: Arc<str>,
    vendor: Arc<str>,
    kinds: HashMap<u32, Kind>,
}

impl Catalog {
    /// Takes in the devices `table` counts on.
    pub fn learn(&mut self, table: &DeviceTable) {
        for (device, vendor) in table.claimed() {
            let name: Arc<str> = device.name.as_str().into();
            let vendor_name: Arc<str> = vendor.name().into();
            let kinds: HashMap<u32, Kind> = vendor
                .description
                .ioctls
                .iter()
                .map(|entry| (u32::from(entry.nr), entry.kind))
                .collect();
            for node in &device.nodes {
                self.devices.insert(
                    node.dev.kernel_dev_t(),
                    DeviceLabels {
                        device: name.clone(),
                        vendor: vendor_name.clone(),
                        kinds: kinds.clone(),
                    },
                );
            }
        }
    }

    /// The series of a call by `owner` of ioctl `nr` on device node `dev`
    /// (kernel dev_t), if `dev` was ever counted on.
    pub fn series(&self, owner: &Owner, dev: u32, nr: u32) -> Option<Series> {
        let labels = self.devices.get(&dev)?;
        Some(Series {
            owner: owner.clone(),
            device: labels.device.clone(),
            vendor: labels.vendor.clone(),
            kind: *labels.kinds.get(&nr)?,
        })
    }
}

/// Per-series totals that outlive cgroups.
#[derive(Debug)]
pub struct Ledger {
    grace: Duration,
    series: HashMap<Series, Tally>,
}

#[derive(Debug)]
struct Tally {
    /// Final counts of gone cgroups.
    retired: u64,
    /// When a live cgroup last counted in it, or one was retired.
    last_live: Instant,
}

impl Ledger {
    /// An empty ledger that drops idle series `grace` after they were last
    /// live.
    pub fn new(grace: Duration) -> Self {
        Self {
            grace,
            series: HashMap::new(),
        }
    }

    /// Folds the final `calls` of a gone cgroup into `series`.
    pub fn retire(&mut self, series: Series, calls: u64, now: Instant) {
        let tally = self.series.entry(series).or_insert(Tally {
            retired: 0,
            last_live: now,
        });
        tally.retired += calls;
        tally.last_live = now;
    }

    /// Every series' total: `live` counts (per series, possibly several
    /// entries each) plus what was retired. Series idle for longer than the
    /// grace period are dropped first.
    pub fn totals(
        &mut self,
        live: impl IntoIterator<Item = (Series, u64)>,
        now: Instant,
    ) -> BTreeMap<Series, u64> {
        let mut totals = BTreeMap::new();
        for (series, calls) in live {
            *totals.entry(series.clone()).or_insert(0) += calls;
            self.series
                .entry(series)
                .or_insert(Tally {
                    retired: 0,
                    last_live: now,
                })
                .last_live = now;
        }
        let grace = self.grace;
        self.series
            .retain(|_, tally| now.saturating_duration_since(tally.last_live) <= grace);
        for (series, tally) in &self.series {
            if tally.retired > 0 {
                *totals.entry(series.clone()).or_insert(0) += tally.retired;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(pod: &str) -> Series {
        Series {
            owner: Owner {
                namespace: "default".into(),
                pod: pod.into(),
                container: "main".into(),
            },
            device: "0000:00:02.0".into(),
            vendor: "i915".into(),
            kind: Kind::Submit,
        }
    }

    #[test]
    fn retired_counts_keep_the_series_monotonic() {
        let start = Instant::now();
        let mut ledger = Ledger::new(Duration::from_secs(60));
        let a = series("a");
        // Two cgroups of one container (a restart) count in one series.
        assert_eq!(
            ledger.totals([(a.clone(), 5), (a.clone(), 7)], start)[&a],
            12
        );
        // The first is gone: its 5 move from live to retired.
        ledger.retire(a.clone(), 5, start);
        assert_eq!(ledger.totals([(a.clone(), 9)], start)[&a], 14);
        // The second is gone too.
        ledger.retire(a.clone(), 9, start);
        assert_eq!(ledger.totals([], start)[&a], 14);
    }

    #[test]
    fn idle_series_are_dropped_after_the_grace_period() {
        let start = Instant::now();
        let grace = Duration::from_secs(60);
        let mut ledger = Ledger::new(grace);
        let (gone, busy) = (series("gone"), series("busy"));
        ledger.retire(gone.clone(), 3, start);
        let at_grace = ledger.totals([(busy.clone(), 1)], start + grace);
        assert_eq!(at_grace.get(&gone), Some(&3), "kept for the grace period");
        let after = ledger.totals([(busy.clone(), 2)], start + grace + Duration::from_secs(1));
        assert_eq!(after.get(&gone), None);
        assert_eq!(after.get(&busy), Some(&2));
        assert_eq!(ledger.series.len(), 1);

        // A series whose cgroups all vanished without a fold also goes.
        let later = start + 3 * grace;
        assert!(ledger.totals([], later).is_empty());
        assert!(ledger.series.is_empty());
    }
}
