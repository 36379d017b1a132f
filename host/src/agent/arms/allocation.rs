//! The allocation join's arm: what kubelet allocated, as the reader
//! lists it, joined to the named cgroups, then ruled by the policy.

use tokio::sync::mpsc;
use tracing::info;

use super::{Arm, next};
use crate::{
    agent::Agent,
    allocation::{Allocation, numa::Topology, reader::Report},
    config::AgentConfig,
};

/// The allocation reader's reports; none with `--no-allocation`.
pub(in crate::agent) struct Listings {
    reports: Option<mpsc::UnboundedReceiver<Report>>,
}

impl Listings {
    /// Starts the allocation reader, unless `--no-allocation`, and gives
    /// the agent the join.
    pub(in crate::agent) fn start(config: &AgentConfig, agent: &mut Agent) -> Self {
        if config.no_allocation {
            info!("allocation join off (--no-allocation)");
            return Self { reports: None };
        }
        let topology = Topology::read(&config.sysfs_root);
        let (allocation, reports) = Allocation::start(config.allocation(), topology);
        agent.allocation = Some(allocation);
        Self {
            reports: Some(reports),
        }
    }
}

impl Arm for Listings {
    type Event = Report;

    async fn next(&mut self) -> Report {
        next(&mut self.reports).await
    }

    fn take(&mut self, report: Report, agent: &mut Agent) {
        if let Some(allocation) = &mut agent.allocation {
            allocation.take(report, &agent.table, &agent.usage);
        }
        agent.enforce();
    }
}
