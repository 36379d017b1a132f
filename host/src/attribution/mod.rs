//! Who made each call: cgroup id → cgroup path → pod and container.
//!
//! The kernel program counts per cgroup id. [`index`] turns an id into a
//! path, [`placement`] reads the pod UID and container id from the path,
//! and the container runtime ([`cri`], asked by the [`resolver`] task)
//! names the namespace, pod and container. Until the runtime answers, a
//! cgroup's counts wait under its id; nothing is dropped.
//!
//! Every name given is also written to the kernel's pinned OWNERS map (by
//! the agent, from [`Attributor::unsaved`]), with the time the cgroup was
//! found gone, and [`Attributor::restore`] reads it back at start: a
//! restarted agent names what its predecessor named, even cgroups whose
//! pods the runtime no longer knows.

pub mod cri;
pub mod index;
pub mod mount;
pub mod placement;
pub mod record;
pub mod resolver;

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    time::{Duration, Instant},
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
    /// When it was found removed from the hierarchy (CLOCK_BOOTTIME):
    /// its counts are final.
    gone_at: Option<Duration>,
    /// Its owner or removal is not in the OWNERS map yet.
    unsaved: bool,
}

/// A named cgroup as the OWNERS map keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The cgroup's id.
    pub id: u64,
    /// Who it belongs to.
    pub owner: Owner,
    /// When it was found removed (CLOCK_BOOTTIME), if it was.
    pub gone_at: Option<Duration>,
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

    /// Takes note of cgroup `id` (seen at `now`), whose path below the
    /// root the kernel may have recorded (`recorded` looks it up, only for
    /// a cgroup not noted before: the look-up is a `bpf(2)` copy); returns
    /// the question for the runtime that naming it needs, if any. A
    /// recorded path places the cgroup even if it is gone already; without
    /// one, the hierarchy is walked.
    pub fn note(
        &mut self,
        id: u64,
        now: Instant,
        recorded: impl FnOnce() -> Option<PathBuf>,
    ) -> Option<Ask> {
        if self.cgroups.contains_key(&id) {
            return None;
        }
        if let Some(path) = recorded() {
            self.index.learn(id, path);
        }
        self.cgroups.insert(
            id,
            Cgroup {
                seen: now,
                state: State::Unplaced,
                ask: None,
                gone_at: None,
                unsaved: false,
            },
        );
        self.place(id)
    }

    /// Takes in what the OWNERS map recorded (at start-up): those cgroups
    /// are named, gone or not, without asking anyone again.
    pub fn restore(&mut self, named: impl IntoIterator<Item = Named>, now: Instant) {
        for Named { id, owner, gone_at } in named {
            self.cgroups.insert(
                id,
                Cgroup {
                    seen: now,
                    state: State::Owned(owner),
                    ask: None,
                    gone_at,
                    unsaved: false,
                },
            );
        }
    }

    /// Named cgroups whose name or removal is not saved yet; they count as
    /// saved from now on.
    pub fn unsaved(&mut self) -> Vec<Named> {
        let mut named = Vec::new();
        for (&id, cgroup) in &mut self.cgroups {
            if let (true, State::Owned(owner)) = (cgroup.unsaved, &cgroup.state) {
                named.push(Named {
                    id,
                    owner: owner.clone(),
                    gone_at: cgroup.gone_at,
                });
                cgroup.unsaved = false;
            }
        }
        named
    }

    /// Every named cgroup, for grouping by owner.
    pub fn named(&self) -> impl Iterator<Item = Named> + '_ {
        self.cgroups.iter().filter_map(|(&id, c)| match &c.state {
            State::Owned(owner) => Some(Named {
                id,
                owner: owner.clone(),
                gone_at: c.gone_at,
            }),
            _ => None,
        })
    }

    /// The directories of the counted cgroups not known to be gone, where
    /// their place is known.
    pub fn live(&self) -> Vec<(u64, PathBuf)> {
        self.cgroups
            .iter()
            .filter(|(_, c)| c.gone_at.is_none())
            .filter_map(|(&id, _)| Some((id, self.index.root().join(self.index.path(id)?))))
            .collect()
    }

    /// The pod UID of cgroup `id` while it lives, read from its path (a
    /// cgroup restored from the OWNERS map gets its path from the next
    /// walk): names are reused, UIDs are not.
    pub fn live_pod_uid(&self, id: u64) -> Option<String> {
        if self.cgroups.get(&id)?.gone_at.is_some() {
            return None;
        }
        match placement::place(self.index.path(id)?) {
            Placement::Container { pod_uid, .. } | Placement::Pod { pod_uid } => Some(pod_uid),
            Placement::Outside => None,
        }
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
                cgroup.unsaved = true;
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

    /// Notes the time `now` (CLOCK_BOOTTIME) on placed cgroups that are
    /// no longer in the hierarchy: their counts are final. A cgroup named
    /// by a predecessor has no known path yet: a walk (rate-limited)
    /// decides.
    pub fn mark_gone(&mut self, now: Duration) {
        for (&id, cgroup) in &mut self.cgroups {
            if cgroup.gone_at.is_some() || cgroup.state == State::Unplaced {
                continue;
            }
            let gone = match self.index.lookup(id, cgroup.seen) {
                Lookup::Path(_) => !self.index.exists(id),
                Lookup::Gone => true,
                Lookup::Later => false,
            };
            if gone {
                cgroup.gone_at = Some(now);
                cgroup.unsaved = true;
            }
        }
    }

    /// Forgets cgroups whose counters went, and the runtime's answers no
    /// cgroup needs any more.
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
            // Neither recorded by the kernel nor found by a walk.
            Lookup::Later => return None,
            Lookup::Gone => {
                // Removed before it could be placed: counted as outside
                // pods rather than lost.
                cgroup.gone_at = Some(crate::clock::boottime());
                cgroup.state = State::Owned(Owner::default());
                cgroup.unsaved = true;
                return None;
            }
            Lookup::Path(path) => match placement::place(&path) {
                Placement::Outside => {
                    cgroup.state = State::Owned(Owner::default());
                    cgroup.unsaved = true;
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
                cgroup.unsaved = true;
                None
            }
            None => {
                cgroup.state = State::Asking(ask.clone());
                Some(ask)
            }
        }
    }
}
