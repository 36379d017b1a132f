//! The policy's arm: the policy file's readings, which may attach or
//! detach the checks; and the rules the agent writes whenever what the
//! join classified, the devices or the file change.

use tokio::sync::mpsc;

use super::{Arm, next};
use crate::{
    agent::{Agent, log_line},
    policy::{reload::Reading, rules::Step},
    watch::DirWatch,
};

/// The policy file's readings, and the watch that makes them; none
/// without `--policy-file`.
pub(in crate::agent) struct PolicyFile {
    readings: Option<mpsc::UnboundedReceiver<Reading>>,
    _watch: Option<DirWatch>,
}

impl PolicyFile {
    /// Takes the readings `follow` gives, keeping its watch alive.
    pub(in crate::agent) fn new(
        follow: Option<(mpsc::UnboundedReceiver<Reading>, Option<DirWatch>)>,
    ) -> Self {
        let (readings, watch) = follow.unzip();
        Self {
            readings,
            _watch: watch.flatten(),
        }
    }
}

impl Arm for PolicyFile {
    type Event = Reading;

    async fn next(&mut self) -> Reading {
        next(&mut self.readings).await
    }

    fn take(&mut self, reading: Reading, agent: &mut Agent) {
        agent.take_policy_file(reading);
    }
}

impl Agent {
    /// Takes a reading of the policy file, attaches or detaches the
    /// checks where its namespaces alone ask for them, and writes what it
    /// changes.
    fn take_policy_file(&mut self, reading: Reading) {
        if let Some(policy) = &mut self.policy {
            policy.take_file(reading);
            let attached = self.probe.policy_checks().is_some_and(|c| c.is_ok());
            if policy.wants_checks() != attached {
                let outcome = self.probe.set_policy_checks(!attached);
                if self.faults.check("policy", outcome, log_line).is_some() {
                    if attached {
                        policy.detached();
                    } else {
                        policy.checks(self.probe.policy_checks());
                    }
                }
            }
        }
        self.enforce();
    }

    /// Brings the kernel's policy rules in line with what the allocation
    /// join classified and the policy file, and answers for the held
    /// containers that this rules, or shows will not be ruled.
    pub(in crate::agent) fn enforce(&mut self) {
        self.enforce_upto(Step::Tighten);
        self.settle();
    }

    /// [`Agent::enforce`], with only the writes up to `upto`.
    pub(in crate::agent) fn enforce_upto(&mut self, upto: Step) {
        let (Some(policy), Some(allocation)) = (&mut self.policy, &self.allocation) else {
            return;
        };
        let state = (allocation.classified(), &self.table, &self.usage);
        let outcome = policy.sync(&mut self.probe, state, upto);
        self.faults.check("policy", outcome, log_line);
    }

    /// Takes up the policy rules a predecessor left pinned, for the
    /// cgroups restored as live.
    pub(in crate::agent) fn adopt_rules(&mut self) {
        let Some(policy) = self.policy.as_mut().filter(|p| p.wants_checks()) else {
            return;
        };
        let outcome = self.probe.rules();
        if let Some(rules) = self.faults.check("restore", outcome, log_line) {
            policy.adopt(rules, &self.usage);
        }
    }
}
