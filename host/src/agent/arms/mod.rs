//! The agent's loop: one arm per capability, each behind [`Arm`]: what
//! it waits for, and what the agent does when that comes. The loop waits
//! on every arm at once and hands each event to its own arm; a new
//! capability is a new file here and one line in [`run`].
//!
//! Each arm's handler runs to its end before the loop waits again, so an
//! arm never sees the agent's state half-changed by another.

mod admission;
mod allocation;
mod energy;
mod fdinfo;
mod names;
mod placement;
mod plugins;
mod policy;
mod rescan;
mod scrape;

use std::time::Duration;

use tokio::{signal::unix, sync::mpsc, time};

use super::Agent;

pub(super) use admission::Arrivals;
pub(super) use allocation::Listings;
pub(super) use fdinfo::Scans;
pub(super) use names::Names;
pub(super) use placement::SchedulerWatch;
pub(super) use plugins::{Plugins, report_rejections};
pub(super) use policy::PolicyFile;
pub(super) use rescan::Rescan;
pub(super) use scrape::Scrapes;

/// One capability's part in the loop.
pub(super) trait Arm {
    /// What the arm waits for.
    type Event;

    /// Waits for the arm's next event; never ready while the arm has
    /// nothing to wait for.
    async fn next(&mut self) -> Self::Event;

    /// Acts on `event`: the agent's state changes, and the kernel's maps
    /// with it.
    fn take(&mut self, event: Self::Event, agent: &mut Agent);
}

/// Every arm, and the signals that end the loop.
pub(super) struct Arms {
    pub names: Names,
    pub listings: Listings,
    pub policy_file: PolicyFile,
    pub arrivals: Arrivals,
    pub scrapes: Scrapes,
    pub rescan: Rescan,
    pub scans: Scans,
    pub plugins: Plugins,
    pub scheduler: SchedulerWatch,
    /// Registered before the agent says it is ready, so a SIGTERM sent
    /// on that line is never the default action's.
    pub terminate: unix::Signal,
    pub interrupt: unix::Signal,
}

/// Runs the loop until SIGTERM or SIGINT.
pub(super) async fn run(agent: &mut Agent, arms: &mut Arms) {
    loop {
        tokio::select! {
            _ = arms.terminate.recv() => break,
            _ = arms.interrupt.recv() => break,
            event = arms.names.next() => arms.names.take(event, agent),
            event = arms.listings.next() => arms.listings.take(event, agent),
            event = arms.policy_file.next() => arms.policy_file.take(event, agent),
            event = arms.arrivals.next() => arms.arrivals.take(event, agent),
            event = arms.scrapes.next() => arms.scrapes.take(event, agent),
            event = arms.rescan.next() => arms.rescan.take(event, agent),
            event = arms.scans.next() => arms.scans.take(event, agent),
            event = arms.plugins.next() => arms.plugins.take(event, agent),
            event = arms.scheduler.next(), if agent.placement.scheduling() => {
                arms.scheduler.take(event, agent);
            }
        }
    }
}

/// A timer every `period` whose missed ticks are delayed, not bunched: a
/// loop busy for a while does not then run an arm back to back.
fn timer(period: Duration) -> time::Interval {
    let mut timer = time::interval(period);
    timer.set_missed_tick_behavior(time::MissedTickBehavior::Delay);
    timer
}

/// The next message of an optional source; never, without one.
async fn next<T>(source: &mut Option<mpsc::UnboundedReceiver<T>>) -> T {
    match source {
        Some(source) => match source.recv().await {
            Some(message) => message,
            // Its sender is gone: nothing more will come.
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}
