//! The scrape's arm: `/metrics` and the API ask the loop, which alone
//! reads the kernel's maps, for everything they show.

use tokio::sync::mpsc;

use super::Arm;
use crate::placement::Mode;
use crate::{
    agent::{Agent, log_line},
    metrics::{DeviceInfo, PluginInfo, Snapshot},
    server::Query,
};

/// Questions from the HTTP server.
pub(in crate::agent) struct Scrapes {
    queries: mpsc::Receiver<Query>,
}

impl Scrapes {
    /// Answers `queries`.
    pub(in crate::agent) fn new(queries: mpsc::Receiver<Query>) -> Self {
        Self { queries }
    }
}

impl Arm for Scrapes {
    type Event = Query;

    async fn next(&mut self) -> Query {
        match self.queries.recv().await {
            Some(query) => query,
            None => std::future::pending().await,
        }
    }

    fn take(&mut self, query: Query, agent: &mut Agent) {
        // Unanswered, the request gets 503; the error is counted.
        if let Some(snapshot) = agent.snapshot() {
            let _ = query.send(snapshot);
        }
    }
}

impl Agent {
    /// Everything a scrape shows, read now; `None` if the kernel's maps
    /// could not be read (counted as a scrape error).
    fn snapshot(&mut self) -> Option<Snapshot> {
        let outcome = self.probe.counts();
        let reading = self.faults.check("scrape", outcome, log_line)?;
        Some(Snapshot {
            ioctls: self.usage.totals(&reading.counters),
            durations: self.usage.durations(&reading.durations, &reading.counters),
            unmeasured: reading.unmeasured,
            devices: DeviceInfo::rows(&self.table, &self.node),
            plugins: PluginInfo::rows(&self.table),
            losses: reading.losses,
            index_rebuilds: self.usage.attributor.index().rebuilds(),
            hook: self.probe.hook().as_str(),
            reads: self.probe.reads(),
            cri_up: self.cri_up,
            errors: self.faults.counts(),
            fdinfo: self
                .fdinfo
                .as_ref()
                .map(|reader| reader.view(|id| self.usage.owner(id))),
            energy: self.energy.as_ref().map(|meter| meter.view()),
            allocation: self
                .allocation
                .as_ref()
                .map(|allocation| allocation.view(&reading.counters, &self.usage)),
            policy: self.policy.as_ref().map(|policy| {
                // Read with the checks off too: what they refused before
                // they were detached stays counted.
                let verdicts = self.faults.check("scrape", self.probe.verdicts(), log_line);
                let mut view = policy.view(verdicts, &self.usage, &self.table);
                view.admissions = self.admissions.as_ref().map(|a| a.outcomes().clone());
                view
            }),
            placement: (self.placement.asked != Mode::Off).then(|| self.placement.view()),
        })
    }
}
