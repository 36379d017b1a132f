//! The placement arm: while the agent's sched_ext scheduler is loaded,
//! it checks every second that the kernel still runs it, so that a stop
//! (an error, a stall past the watchdog) is logged with the kernel's
//! reason and placement goes on as hints.

use std::time::Duration;

use tokio::time;

use super::{Arm, timer};
use crate::agent::Agent;

/// How often the scheduler is checked: the kernel's sysfs, read twice.
const PERIOD: Duration = Duration::from_secs(1);

/// The checks' timer.
pub(in crate::agent) struct SchedulerWatch {
    tick: time::Interval,
}

impl SchedulerWatch {
    pub(in crate::agent) fn new() -> Self {
        Self {
            tick: timer(PERIOD),
        }
    }
}

impl Arm for SchedulerWatch {
    /// `true`: the agent's scheduler is loaded, and a check is due.
    type Event = bool;

    async fn next(&mut self) -> bool {
        self.tick.tick().await;
        true
    }

    fn take(&mut self, _due: bool, agent: &mut Agent) {
        agent.placement.watch();
    }
}
