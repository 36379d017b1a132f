//! Who made each call: cgroup id → cgroup path → pod and container.
//!
//! The kernel program counts per cgroup id. [`index`] turns an id into a
//! path, [`placement`] reads the pod UID and container id from the path,
//! and the container runtime ([`cri`], asked by the [`resolver`] task)
//! names the namespace, pod and container. Until the runtime answers, a
//! cgroup's counts wait under its id; nothing is dropped. [`ledger`] keeps
//! the totals of cgroups that are gone.

pub mod cri;
pub mod index;
pub mod ledger;
pub mod mount;
pub mod placement;
pub mod resolver;

use std::{
    collections::{HashMap, HashSet},
    time::Instant,
};

use serde::Serialize;

use self::{
    index::{CgroupIndex, Lookup},
    placement::Placement,
    resolver::Ask,
};

/// The pod and container a cgroup belongs to; all empty for processes
/// outside pods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Owner {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name; empty for a pod's own processes outside its
    /// containers.
    pub container: String,
}

impl Owner {
    /// Whether this is the owner of processes outside pods.
    pub fn is_outside_pods(&self) -> bool {
        self.pod.is_empty()
    }
}

/// What is known about one counted cgroup.
#[derive(Debug)]
struct Cgroup {
    /// When its id was first seen.
    seen: Instant,
    state: State,
    /// The question that names it, once placed in a pod.
    ask: Option<Ask>,
    /// Removed from the hierarchy; its counts are final.
    gone: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Its path is not known yet.
    Unplaced,
    /// Waiting for the runtime's answer to this question.
    Asking(Ask),
    /// Known.
    Owned(Owner),
}

/// The owners of the counted cgroups.
#[derive(Debug)]
pub struct Attributor {
    index: CgroupIndex,
    cgroups: HashMap<u64, Cgroup>,
    /// The runtime's answers, kept while a cgroup refers to them.
    answers: HashMap<Ask, Option<Owner>>,
}

impl Attributor {
    /// Attribution over the cgroup2 hierarchy that `index` walks.
    pub fn new(index: CgroupIndex) -> Self {
        Self {
            index,
            cgroups: HashMap::new(),
            answers: HashMap::new(),
        }
    }

    /// The id → path index.
    pub fn index(&self) -> &CgroupIndex {
        &self.index
    }

    /// Takes note of cgroup `id` (seen at `now`); returns the question for
    /// the runtime that naming it needs, if any.
    pub fn note(&mut self, id: u64, now: Instant) -> Option<Ask> {
        if self.cgroups.contains_key(&id) {
            return None;
        }
        self.cgroups.insert(
            id,
            Cgroup {
                seen: now,
                state: State::Unplaced,
                ask: None,
                gone: false,
            },
        );
        self.place(id)
    }

    /// The owner of cgroup `id`, once known.
    pub fn owner(&self, id: u64) -> Option<&Owner> {
        match &self.cgroups.get(&id)?.state {
            State::Owned(owner) => Some(owner),
            _ => None,
        }
    }

    /// Records the runtime's answer: `None` (it does not know the
    /// container) counts as outside pods.
    pub fn answer(&mut self, ask: Ask, owner: Option<Owner>) {
        let named = owner.clone().unwrap_or_default();
        for cgroup in self.cgroups.values_mut() {
            if cgroup.state == State::Asking(ask.clone()) {
                cgroup.state = State::Owned(named.clone());
            }
        }
        self.answers.insert(ask, owner);
    }

    /// Tries again to place cgroups whose path was not known; returns the
    /// questions that needs.
    pub fn retry(&mut self) -> Vec<Ask> {
        let unplaced: Vec<u64> = self
            .cgroups
            .iter()
            .filter(|(_, c)| c.state == State::Unplaced)
            .map(|(&id, _)| id)
            .collect();
        unplaced
            .into_iter()
            .filter_map(|id| self.place(id))
            .collect()
    }

    /// Cgroups removed from the hierarchy whose owner is known: their
    /// counts are final and can be folded into totals. A removed cgroup
    /// still waiting for the runtime stays until it is named.
    pub fn gone(&mut self) -> Vec<u64> {
        for (id, cgroup) in &mut self.cgroups {
            if !cgroup.gone && cgroup.state != State::Unplaced && !self.index.exists(*id) {
                cgroup.gone = true;
            }
        }
        self.cgroups
            .iter()
            .filter(|(_, c)| c.gone && matches!(c.state, State::Owned(_)))
            .map(|(&id, _)| id)
            .collect()
    }

    /// Forgets folded cgroups, and the runtime's answers no cgroup needs
    /// any more.
    pub fn forget(&mut self, ids: &[u64]) {
        for id in ids {
            self.cgroups.remove(id);
            self.index.forget(*id);
        }
        let needed: HashSet<&Ask> = self
            .cgroups
            .values()
            .filter_map(|c| c.ask.as_ref())
            .collect();
        self.answers.retain(|ask, _| needed.contains(ask));
    }

    fn place(&mut self, id: u64) -> Option<Ask> {
        let cgroup = self.cgroups.get_mut(&id)?;
        let ask = match self.index.lookup(id, cgroup.seen) {
            Lookup::Later => return None,
            Lookup::Gone => {
                // Removed before it could be placed: counted as outside
                // pods rather than lost.
                cgroup.gone = true;
                cgroup.state = State::Owned(Owner::default());
                return None;
            }
            Lookup::Path(path) => match placement::place(&path) {
                Placement::Outside => {
                    cgroup.state = State::Owned(Owner::default());
                    return None;
                }
                Placement::Container { container_id, .. } => Ask::Container(container_id),
                Placement::Pod { pod_uid } => Ask::Pod(pod_uid),
            },
        };
        cgroup.ask = Some(ask.clone());
        match self.answers.get(&ask) {
            Some(owner) => {
                cgroup.state = State::Owned(owner.clone().unwrap_or_default());
                None
            }
            None => {
                cgroup.state = State::Asking(ask.clone());
                Some(ask)
            }
        }
    }
}
