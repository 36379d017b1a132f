//! Naming cgroups: the kernel's new-key notes, drained on a timer, name a
//! new cgroup at once; the CRI resolver answers who it belongs to; names
//! are recorded in the pinned OWNERS map so a restarted agent keeps them.

use std::time::{Duration, Instant};

use tokio::{sync::mpsc, time};
use tracing::{debug, info, warn};

use super::{Arm, timer};
use crate::{
    agent::{Agent, log_line},
    attribution::{Named, record as owner_record, resolver::Report},
};

/// The drain's timer and the CRI resolver's reports.
pub(in crate::agent) struct Names {
    drain: time::Interval,
    reports: mpsc::UnboundedReceiver<Report>,
}

/// A drain is due, or the resolver reported.
pub(in crate::agent) enum NamesEvent {
    Drain,
    Report(Report),
}

impl Names {
    /// Drains every `interval`, and takes `reports`.
    pub(in crate::agent) fn new(
        interval: Duration,
        reports: mpsc::UnboundedReceiver<Report>,
    ) -> Self {
        let drain = timer(interval);
        Self { drain, reports }
    }
}

impl Arm for Names {
    type Event = NamesEvent;

    async fn next(&mut self) -> NamesEvent {
        tokio::select! {
            _ = self.drain.tick() => NamesEvent::Drain,
            Some(report) = self.reports.recv() => NamesEvent::Report(report),
        }
    }

    fn take(&mut self, event: NamesEvent, agent: &mut Agent) {
        match event {
            NamesEvent::Drain => {
                agent.drain();
                agent.settle();
            }
            NamesEvent::Report(report) => agent.report(report),
        }
    }
}

impl Agent {
    /// Takes the kernel's new-key notes: a new cgroup is named at once.
    fn drain(&mut self) {
        let outcome = self.probe.drain_notes();
        let Some(keys) = self.faults.check("drain", outcome, log_line) else {
            return;
        };
        let now = Instant::now();
        for key in keys {
            debug!(
                "new key: cgroup {} dev {:#x} nr {:#04x}",
                key.cgroup_id, key.dev, key.nr
            );
            let probe = &self.probe;
            let recorded = || probe.cgroup_path(key.cgroup_id);
            if let Some(ask) = self.usage.attributor.note(key.cgroup_id, now, recorded) {
                let _ = self.asks.send(ask);
            }
        }
        self.save_names();
    }

    /// Takes a report of the CRI resolver.
    fn report(&mut self, report: Report) {
        match report {
            Report::Answer(ask, owner) => {
                debug!("CRI: {ask:?} is {owner:?}");
                if let (Some(allocation), Some(owner)) = (&mut self.allocation, &owner) {
                    allocation.want(owner);
                }
                self.usage.attributor.answer(ask, owner);
                self.save_names();
                if let Some(allocation) = &mut self.allocation {
                    allocation.classify(&self.usage);
                }
                self.enforce();
            }
            Report::Down(e) => {
                self.cri_up = false;
                warn!("{e}; counting goes on, and new containers are named when it answers");
            }
            Report::Up(socket) => {
                self.cri_up = true;
                info!("CRI: {}", socket.display());
            }
        }
    }

    /// Names the cgroups a predecessor named, from the pinned OWNERS map.
    pub(in crate::agent) fn restore(&mut self) {
        let outcome = self.probe.owners();
        let Some(records) = self.faults.check("restore", outcome, log_line) else {
            return;
        };
        let named: Vec<Named> = records
            .iter()
            .map(|(id, record)| owner_record::named(*id, record))
            .collect();
        if !named.is_empty() {
            info!(
                "restored the names of {} cgroup(s) ({} gone)",
                named.len(),
                named.iter().filter(|n| n.gone_at.is_some()).count()
            );
        }
        self.usage.attributor.restore(named, Instant::now());
    }

    /// Writes new names, and removals, to the pinned OWNERS map.
    pub(in crate::agent) fn save_names(&mut self) {
        for named in self.usage.attributor.unsaved() {
            let outcome = self
                .probe
                .save_owner(named.id, &owner_record::record(&named));
            self.faults.check("save", outcome, log_line);
        }
    }
}
