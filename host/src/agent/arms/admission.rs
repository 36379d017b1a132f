//! The admission's arm: containers `kubenpu-oci-hook` holds at their
//! creation, named at once and answered once their rule is written, or
//! once it is known none will be.

use std::{path::Path, time::Instant};

use tokio::sync::mpsc;
use tracing::{info, warn};

use super::{Arm, next};
use crate::{
    admission::{self, Admissions, Held},
    agent::Agent,
    config::AgentConfig,
    policy::PolicyMode,
};

/// Containers arriving on the admission socket; none where it is not
/// served.
pub(in crate::agent) struct Arrivals {
    held: Option<mpsc::UnboundedReceiver<Held>>,
}

impl Arrivals {
    /// Serves the admission socket wherever something may ask for the
    /// checks (the node's mode, or a policy file's namespaces, now or
    /// later), for cgroups under `cgroup_root`, and gives the agent what
    /// it holds.
    pub(in crate::agent) fn start(
        config: &AgentConfig,
        cgroup_root: &Path,
        agent: &mut Agent,
    ) -> Self {
        let asked = config.policy != PolicyMode::Off || config.policy_file.is_some();
        if agent.policy.is_none() || !asked {
            return Self { held: None };
        }
        let held = serve(config, cgroup_root).map(|(admissions, held)| {
            agent.admissions = Some(admissions);
            held
        });
        Self { held }
    }
}

/// Serves `kubenpu-oci-hook` on the admission socket; without it (one
/// line says why), containers are ruled at their first open.
fn serve(
    config: &AgentConfig,
    cgroup_root: &Path,
) -> Option<(Admissions, mpsc::UnboundedReceiver<Held>)> {
    match admission::server::bind(&config.admission_socket) {
        Ok(listener) => {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(admission::server::serve(
                listener,
                cgroup_root.to_owned(),
                tx,
            ));
            info!(
                "admission: containers kubenpu-oci-hook holds are ruled before they start (socket {})",
                config.admission_socket.display()
            );
            Some((Admissions::new(config.admission_wait), rx))
        }
        Err(e) => {
            warn!(
                "{e:#}; containers are ruled at their first open of an accelerator, after that call"
            );
            None
        }
    }
}

impl Arm for Arrivals {
    type Event = Held;

    async fn next(&mut self) -> Held {
        next(&mut self.held).await
    }

    fn take(&mut self, held: Held, agent: &mut Agent) {
        agent.admit(held);
    }
}

impl Agent {
    /// Holds a container the runtime is creating: its cgroup is named at
    /// once, through CRI, and [`Agent::settle`] answers once its rule is
    /// written, or once it is known none will be.
    fn admit(&mut self, held: Held) {
        let now = Instant::now();
        let path = held.path.clone();
        if let Some(ask) = self
            .usage
            .attributor
            .note(held.cgroup_id, now, || Some(path))
        {
            let _ = self.asks.send(ask);
        }
        self.save_names();
        if let Some(admissions) = &mut self.admissions {
            admissions.hold(held, now);
        }
        self.settle();
    }

    /// Answers for the held containers whose standing is known, and for
    /// those held longer than `--admission-wait`.
    pub(in crate::agent) fn settle(&mut self) {
        let (Some(admissions), Some(policy)) = (&mut self.admissions, &self.policy) else {
            return;
        };
        let (usage, allocation) = (&self.usage, self.allocation.as_ref());
        admissions.settle(Instant::now(), |id, since| {
            policy.standing(id, since, usage, allocation)
        });
    }
}
