//! Admission: every container of a pod kubelet listed is ruled before its
//! process runs, so that its very first call is checked.
//!
//! The agent otherwise learns of a container at its first open of an
//! accelerator, or its first counted call, and that one call would pass
//! unchecked. Here the container runtime tells it sooner, and waits:
//! `kubenpu-oci-hook`, an OCI `createRuntime` hook, runs while the
//! runtime creates the container, after its cgroup exists and before its
//! process is started. It sends the container's id and cgroup on the
//! admission socket ([`server`]) and waits for the answer ([`wire`]).
//! The agent names the cgroup through CRI, asks kubelet for the pod's
//! allocation where it does not have it, writes the container's own
//! rule, and only then answers: the runtime starts the process under its
//! rule.
//!
//! Why a hook: the rule must exist before the process runs, and only the
//! runtime knows when that is. Learning of a container from CRI's list
//! or event stream, between its creation and its start, races with a
//! start kubelet makes at once. NRI (containerd 1.7+, CRI-O) calls its
//! plugins synchronously too, but needs a ttrpc plugin and is absent
//! from containerd 1.6, where the old NRI is a different interface. An
//! OCI hook works with every runtime that runs runc or crun, as long
//! as the node gives it: containerd through its base runtime spec,
//! CRI-O through its hooks directory. Its limit is that step, which is
//! the node administrator's; without it, the first call is not checked.
//!
//! Never on a guess, and never in the way: the agent answers at once for
//! what it will not rule (a process outside pods, a namespace that is
//! off, a pod kubelet does not list), and gives up after `--admission-wait`;
//! the hook lets the container start on any answer, on no answer within
//! its own timeout, and when no agent listens. Such a container is ruled
//! as before, at its first open. [`Admissions`] counts each outcome.

pub mod server;
pub mod wire;

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use tracing::debug;

pub use self::server::Held;
use self::wire::Answer;

/// Where the agent listens and the hook asks, unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/kubenpu/admission.sock";

/// Where a held container stands with the policy now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its rule is in the kernel, in this mode.
    Ruled(&'static str),
    /// It will not be ruled at its creation, for this reason.
    Unruled(String),
    /// Not known yet: the runtime or kubelet has still to answer.
    Undecided,
}

/// The outcomes counted, as `kubenpu_policy_admissions_total` labels them.
const OUTCOMES: [&str; 3] = ["ruled", "unruled", "expired"];

/// The containers the runtime holds at their creation until the agent
/// answers, owned by the agent's loop.
#[derive(Debug)]
pub struct Admissions {
    /// How long the agent holds a container before it gives up.
    wait: Duration,
    held: Vec<(Held, Instant)>,
    /// Answers given, per outcome.
    outcomes: BTreeMap<&'static str, u64>,
}

impl Admissions {
    /// Holds each container at most `wait`.
    pub fn new(wait: Duration) -> Self {
        Self {
            wait,
            held: Vec::new(),
            outcomes: OUTCOMES.iter().map(|&o| (o, 0)).collect(),
        }
    }

    /// Holds a container that arrived `now`, until [`Admissions::settle`]
    /// answers for it.
    pub fn hold(&mut self, held: Held, now: Instant) {
        self.held.push((held, now));
    }

    /// Answers for every held container whose `standing` (of its cgroup,
    /// given when it arrived) is known, and for those held longer than
    /// the wait.
    pub fn settle(&mut self, now: Instant, standing: impl Fn(u64, Instant) -> Standing) {
        let mut kept = Vec::with_capacity(self.held.len());
        for (held, arrived) in self.held.drain(..) {
            let (outcome, answer) = match standing(held.cgroup_id, arrived) {
                Standing::Ruled(mode) => ("ruled", Answer::Ruled { mode: mode.into() }),
                Standing::Unruled(why) => ("unruled", Answer::Unruled { why }),
                Standing::Undecided if now.duration_since(arrived) >= self.wait => {
                    let why = format!("not ruled within --admission-wait {:?}", self.wait);
                    ("expired", Answer::Unruled { why })
                }
                Standing::Undecided => {
                    kept.push((held, arrived));
                    continue;
                }
            };
            debug!(
                "admission: container {} ({}): {answer:?} after {:?}",
                held.arrival.container,
                held.path.display(),
                now.duration_since(arrived)
            );
            *self.outcomes.entry(outcome).or_default() += 1;
            // A hook that gave up is gone: its container starts anyway.
            let _ = held.answer.send(answer);
        }
        self.held = kept;
    }

    /// Answers given so far, per outcome.
    pub fn outcomes(&self) -> &BTreeMap<&'static str, u64> {
        &self.outcomes
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    fn held(cgroup_id: u64) -> (Held, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let held = Held {
            arrival: wire::Arrival {
                container: format!("c{cgroup_id}"),
                cgroup: format!("/kubepods/c{cgroup_id}"),
            },
            cgroup_id,
            path: format!("kubepods/c{cgroup_id}").into(),
            answer: tx,
        };
        (held, rx)
    }

    #[test]
    fn each_container_is_answered_once_its_standing_is_known_or_the_wait_is_over() {
        let mut admissions = Admissions::new(Duration::from_secs(2));
        let start = Instant::now();
        let (ruled, mut ruled_rx) = held(1);
        let (outside, mut outside_rx) = held(2);
        let (slow, mut slow_rx) = held(3);
        admissions.hold(ruled, start);
        admissions.hold(outside, start);
        admissions.hold(slow, start);
        let standing = |id: u64, _: Instant| match id {
            1 => Standing::Ruled("enforce"),
            2 => Standing::Unruled("outside pods".into()),
            _ => Standing::Undecided,
        };
        admissions.settle(start + Duration::from_secs(1), standing);
        assert_eq!(
            ruled_rx.try_recv().unwrap(),
            Answer::Ruled {
                mode: "enforce".into()
            }
        );
        assert!(matches!(
            outside_rx.try_recv().unwrap(),
            Answer::Unruled { .. }
        ));
        assert!(slow_rx.try_recv().is_err());
        admissions.settle(start + Duration::from_secs(2), standing);
        let Answer::Unruled { why } = slow_rx.try_recv().unwrap() else {
            panic!("the wait ran out")
        };
        assert!(why.contains("--admission-wait"), "{why}");
        let counted: Vec<u64> = admissions.outcomes().values().copied().collect();
        assert_eq!(counted, [1, 1, 1]);
        // Each answered once: nothing is held any more.
        admissions.settle(start + Duration::from_secs(9), |_, _| {
            panic!("no container is held")
        });
    }
}
