//! Engine time and device memory per pod, from DRM fdinfo (`--fdinfo`).
//!
//! Drivers that keep per-client statistics print them in
//! `/proc/<pid>/fdinfo/<fd>` for each open DRM file. The reader visits
//! only the processes of the cgroups the kernel program saw using a
//! claimed device, finds their fds open on claimed nodes, and folds what
//! those report per cgroup (and so per pod). It never replaces the ioctl
//! counts: many drivers (virtio-gpu, vgem, qaic, habanalabs, rocket,
//! ethosu) print nothing there.
//!
//! [`scan`] does the file I/O, on a blocking thread; [`Reader`] keeps the
//! totals in the agent's loop.

mod ledger;
mod parse;
mod scan;

use std::{
    collections::{BTreeMap, HashSet},
    ops::AddAssign,
    path::{Path, PathBuf},
    time::Duration,
};

use tracing::warn;

use ledger::Ledger;
pub use parse::{ClientStats, MemoryState};
pub use scan::{DeviceLabels, Scan, Sighting, Targets, scan};

use crate::attribution::Owner;

/// Busy time of one engine class, per pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EngineSeries {
    /// Who holds the clients.
    pub owner: Owner,
    /// The device.
    pub device: DeviceLabels,
    /// The engine class as the driver names it.
    pub engine: String,
}

/// Memory of one region and state, per pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemorySeries {
    /// Who holds the clients.
    pub owner: Owner,
    /// The device.
    pub device: DeviceLabels,
    /// The region as the driver names it.
    pub region: String,
    /// Which of the specification's states.
    pub state: MemoryState,
}

/// What a scrape shows of the reader.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FdinfoView {
    /// Busy seconds per pod, device and engine class.
    pub engines: BTreeMap<EngineSeries, f64>,
    /// Bytes per pod, device, region and state.
    pub memory: BTreeMap<MemorySeries, u64>,
    /// How long the last scan took.
    pub last_scan: Duration,
    /// fdinfo files read since the agent started.
    pub files_read: u64,
    /// Processes whose open files the last scan might not read.
    pub denied: usize,
}

/// The reader's state in the agent's loop.
#[derive(Debug)]
pub struct Reader {
    proc_root: PathBuf,
    ledger: Ledger,
    last_scan: Duration,
    files_read: u64,
    /// Processes the last scan might not read.
    denied: usize,
    /// Cgroups the last scan found populated yet listing no process.
    hiding: HashSet<u64>,
    said_denied: bool,
    said_foreign: bool,
}

impl Reader {
    /// A reader of the `/proc` at `proc_root`.
    pub fn new(proc_root: PathBuf) -> Self {
        Self {
            proc_root,
            ledger: Ledger::default(),
            last_scan: Duration::ZERO,
            files_read: 0,
            denied: 0,
            hiding: HashSet::new(),
            said_denied: false,
            said_foreign: false,
        }
    }

    /// The `/proc` it reads.
    pub fn proc_root(&self) -> &Path {
        &self.proc_root
    }

    /// Takes a scan that took `took` and ended at `now` (CLOCK_BOOTTIME).
    /// What keeps it from reading is said once, not at every scan nor for
    /// every process: the denied count stays in the metrics.
    pub fn take(&mut self, scan: Scan, took: Duration, now: Duration) {
        self.last_scan = took;
        self.files_read += scan.files_read;
        self.denied = scan.denied.len();
        if let (Some(pid), false) = (scan.denied.first(), self.said_denied) {
            self.said_denied = true;
            let others = match self.denied - 1 {
                0 => String::new(),
                n => format!(" and {n} other(s)"),
            };
            warn!(
                "fdinfo: may not read the open files of process {pid}{others} (another user's): grant CAP_SYS_PTRACE to measure their DRM clients (kubenpu_fdinfo_denied_processes counts them)"
            );
        }
        // A cgroup can look populated and empty for a moment while its
        // last process exits; twice running, its processes are hidden.
        let hiding: HashSet<u64> = scan.hiding.into_iter().collect();
        let hidden = hiding.intersection(&self.hiding).next().is_some();
        self.hiding = hiding;
        if (scan.foreign || hidden) && !self.said_foreign {
            self.said_foreign = true;
            warn!(
                "fdinfo: cgroup.procs shows processes outside this agent's pid namespace: run it in the host's (hostPID) to measure their DRM clients"
            );
        }
        self.ledger.take(scan.sightings, now);
    }

    /// The engine seconds the last scan credited, per container (by
    /// `owner`; empty labels for cgroups it does not name) and device.
    pub fn credited<'a>(
        &'a self,
        owner: impl Fn(u64) -> Option<&'a Owner> + 'a,
    ) -> impl Iterator<Item = (Owner, DeviceLabels, f64)> + 'a {
        self.ledger
            .credited()
            .iter()
            .map(move |((cgroup, device), seconds)| {
                let owner = owner(*cgroup).cloned().unwrap_or_default();
                (owner, device.clone(), *seconds)
            })
    }

    /// Moves gone cgroup `from`'s totals onto `into`, as the counters are.
    pub fn merge(&mut self, from: u64, into: u64) {
        self.ledger.merge(from, into);
    }

    /// Forgets cgroup `id`, whose grace period is over.
    pub fn remove(&mut self, id: u64) {
        self.ledger.remove(id);
    }

    /// The totals per pod; cgroups `owner` does not name are left out.
    pub fn view<'a>(&self, owner: impl Fn(u64) -> Option<&'a Owner>) -> FdinfoView {
        FdinfoView {
            engines: fold(self.ledger.busy(), |key| {
                Some(EngineSeries {
                    owner: owner(key.cgroup)?.clone(),
                    device: key.device.clone(),
                    engine: key.engine.clone(),
                })
            }),
            memory: fold(self.ledger.memory(), |key| {
                Some(MemorySeries {
                    owner: owner(key.cgroup)?.clone(),
                    device: key.device.clone(),
                    region: key.region.clone(),
                    state: key.state,
                })
            }),
            last_scan: self.last_scan,
            files_read: self.files_read,
            denied: self.denied,
        }
    }
}

/// Sums per-cgroup `totals` into the series `series` gives each key
/// (`None` leaves it out): a container's gone cgroups, and those nested in
/// it, become its one series.
fn fold<K, S: Ord, N: Copy + Default + AddAssign>(
    totals: &BTreeMap<K, N>,
    series: impl Fn(&K) -> Option<S>,
) -> BTreeMap<S, N> {
    let mut folded = BTreeMap::new();
    for (key, &total) in totals {
        if let Some(series) = series(key) {
            *folded.entry(series).or_default() += total;
        }
    }
    folded
}
