//! The rescan's arm: on a timer, gone cgroups are swept, a reloaded
//! `drm` module is attached to again, and devices are looked for on a
//! blocking thread (sysfs can be slow; the loop goes on answering), one
//! scan at a time; what it finds is put in force when it differs.

use std::time::{Duration, Instant};

use tokio::{sync::mpsc, time};
use tracing::{debug, info};

use super::{Arm, timer};
use crate::{
    agent::{Agent, log_line},
    clock,
    discovery::{self, Device, Roots},
};

/// The rescan's timer and the devices its scans found.
pub(in crate::agent) struct Rescan {
    tick: time::Interval,
    roots: Roots,
    found_tx: mpsc::Sender<Vec<Device>>,
    found: mpsc::Receiver<Vec<Device>>,
    /// A device scan is under way.
    scanning: bool,
}

/// A rescan is due, or a device scan is done.
pub(in crate::agent) enum RescanEvent {
    Due,
    Found(Vec<Device>),
}

impl Rescan {
    /// Rescans every `interval`, looking for devices under `roots`.
    pub(in crate::agent) fn new(interval: Duration, roots: Roots) -> Self {
        let tick = timer(interval);
        let (found_tx, found) = mpsc::channel(1);
        Self {
            tick,
            roots,
            found_tx,
            found,
            scanning: false,
        }
    }

    /// Looks for devices on a blocking thread, unless a scan is under way.
    fn scan(&mut self, agent: &Agent) {
        if self.scanning {
            return;
        }
        self.scanning = true;
        let (roots, found) = (self.roots.clone(), self.found_tx.clone());
        let claims = agent.table.vendors.char_claims();
        tokio::task::spawn_blocking(move || {
            let _ = found.blocking_send(discovery::discover(&roots, &claims).devices);
        });
    }
}

impl Arm for Rescan {
    type Event = RescanEvent;

    async fn next(&mut self) -> RescanEvent {
        tokio::select! {
            _ = self.tick.tick() => RescanEvent::Due,
            Some(devices) = self.found.recv() => RescanEvent::Found(devices),
        }
    }

    fn take(&mut self, event: RescanEvent, agent: &mut Agent) {
        match event {
            RescanEvent::Due => {
                agent.sweep();
                agent.reattach_if_drm_reloaded();
                self.scan(agent);
            }
            RescanEvent::Found(devices) => {
                self.scanning = false;
                agent.take_devices(devices);
            }
        }
    }
}

impl Agent {
    /// Re-attaches if the `drm` module was reloaded.
    fn reattach_if_drm_reloaded(&mut self) {
        let outcome = self.probe.reattach_if_drm_reloaded();
        if self.faults.check("reattach", outcome, log_line) == Some(true) {
            info!(
                "hook {}: {}",
                self.probe.hook().as_str(),
                self.probe.hook_reason()
            );
        }
    }

    /// Notes the cgroups that are gone, merges the counters of an owner's
    /// gone cgroups into one, and removes those whose grace is over.
    fn sweep(&mut self) {
        let outcome = self.probe.counters();
        let Some(counters) = self.faults.check("sweep", outcome, log_line) else {
            return;
        };
        let probe = &self.probe;
        let sweep = self.usage.sweep(
            &counters,
            |id| probe.cgroup_path(id),
            Instant::now(),
            clock::boottime(),
        );
        for ask in sweep.asks {
            let _ = self.asks.send(ask);
        }
        self.save_names();
        let mut done: Vec<u64> = sweep
            .merges
            .iter()
            .filter(|&&(from, into)| self.merge_gone(from, into))
            .map(|&(from, _)| from)
            .collect();
        done.extend(
            sweep
                .expired
                .iter()
                .copied()
                .filter(|&id| self.remove_gone(id)),
        );
        if !done.is_empty() {
            debug!(
                "{} gone cgroup(s) merged, {} expired",
                sweep.merges.len(),
                sweep.expired.len()
            );
        }
        self.usage.attributor.forget(&done);
        if let Some(allocation) = &mut self.allocation {
            allocation.forget(&done);
            allocation.classify(&self.usage);
        }
        self.enforce();
    }

    /// Merges gone cgroup `from` into `into` (same owner) everywhere it
    /// is counted; whether the kernel's maps took it.
    fn merge_gone(&mut self, from: u64, into: u64) -> bool {
        let outcome = self.probe.merge_cgroup(from, into);
        if self.faults.check("sweep", outcome, log_line).is_none() {
            return false;
        }
        if let Some(reader) = &mut self.fdinfo {
            reader.merge(from, into);
        }
        if let Some(meter) = &mut self.energy {
            meter.merge(from, into);
        }
        if let Some(allocation) = &mut self.allocation {
            allocation.merged(from, into);
        }
        true
    }

    /// Removes gone cgroup `id`, whose grace is over, everywhere it is
    /// counted; whether the kernel's maps let it go.
    fn remove_gone(&mut self, id: u64) -> bool {
        let outcome = self.probe.remove_cgroup(id);
        if self.faults.check("sweep", outcome, log_line).is_none() {
            return false;
        }
        if let Some(reader) = &mut self.fdinfo {
            reader.remove(id);
        }
        if let Some(meter) = &mut self.energy {
            meter.remove(id);
        }
        true
    }
}
