//! Allocation against use: which devices kubelet gave each container,
//! joined with the calls each container makes.
//!
//! The [`reader`] task lists kubelet's PodResources ([`podresources`]),
//! keeps the pods the runtime runs, and looks DRA claims up in the CDI
//! specs ([`cdi`]), as a [`listing`]; the agent's loop [`resolve`]s each
//! listing against the device table with the rules the vendor plugins
//! declare, and the [`join`] says which holders are idle and which calls
//! went to devices nobody allocated to the caller.
//!
//! Never on a guess: a container is classified only from what kubelet
//! said of its pod within [`STALE_AFTER_INTERVALS`] intervals (by `List`,
//! or by `Get` for a pod just named), for a pod the runtime runs under
//! that name with one UID, and with every ID resolved. Allocations are
//! fixed for a container's life, so the classification holds for its
//! cgroup's life. While kubelet's word is stale or failing, nothing new
//! is classified and the allocation rows are withheld; the per-pod and
//! device series never depend on the join.

pub mod cdi;
pub mod join;
pub mod listing;
pub mod numa;
pub mod podresources;
pub mod reader;
pub mod resolve;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::mpsc;
use tracing::{info, warn};

use self::{
    join::{Classified, Holder},
    numa::Topology,
    reader::{Listing, PodName, Report},
    resolve::Resolved,
};
use crate::{
    attribution::Owner, catalog::Series, device_table::DeviceTable, probe::Counter, usage::Usage,
};

/// A listing older than this many intervals is stale.
pub const STALE_AFTER_INTERVALS: u32 = 3;

/// The join's state, owned by the agent's loop.
#[derive(Debug)]
pub struct Allocation {
    socket: PathBuf,
    stale_after: Duration,
    wants: mpsc::UnboundedSender<PodName>,
    listing: Option<Arc<Listing>>,
    resolved: Resolved,
    classified: Classified,
    /// The node of each CPU, for the holders' NUMA fit.
    topology: Topology,
    /// Pods asked for since the last listing.
    wanted: HashSet<(String, String)>,
    /// Pods a `Get` found kubelet does not list, and when it answered,
    /// since the last listing.
    unlisted: HashMap<(String, String), Instant>,
    /// Whether the last call answered.
    up: bool,
    /// Failed calls per reason.
    errors: BTreeMap<&'static str, u64>,
    /// The reason of the failure logged last: each outage is logged once
    /// per reason, however its messages vary (a socket that is not gRPC
    /// fails with another transport error each time).
    logged: Option<&'static str>,
    /// Invalid CDI specs already logged.
    logged_cdi: HashSet<(PathBuf, String)>,
    /// Resources with unmapped IDs already logged.
    logged_unmapped: HashSet<String>,
}

/// What a scrape shows of the join.
#[derive(Debug, Clone, Default)]
pub struct AllocationView {
    /// Allocated devices of running containers that kubelet described
    /// recently, with idleness.
    pub holders: Vec<Holder>,
    /// Calls on devices not allocated to the caller, per series.
    pub unallocated: BTreeMap<Series, u64>,
    /// Whether the last call to kubelet answered.
    pub up: bool,
    /// Whether the last `List` is recent.
    pub fresh: bool,
    /// When kubelet last answered a `List`, as Unix time.
    pub last_sync: Option<Duration>,
    /// Failed calls per reason.
    pub errors: BTreeMap<&'static str, u64>,
    /// IDs no rule resolved, per resource.
    pub unmapped: BTreeMap<String, u64>,
    /// CDI specs that could not be read.
    pub invalid_cdi_specs: usize,
}

impl Allocation {
    /// Starts the reader; its reports are for [`Allocation::take`].
    /// `topology` places the holders' CPUs on NUMA nodes.
    pub fn start(
        settings: reader::Settings,
        topology: Topology,
    ) -> (Self, mpsc::UnboundedReceiver<Report>) {
        let socket = settings.socket.clone();
        let stale_after = settings.interval * STALE_AFTER_INTERVALS;
        let (wants, reports) = reader::spawn(settings);
        let allocation = Allocation {
            socket,
            stale_after,
            wants,
            listing: None,
            resolved: Resolved::default(),
            classified: Classified::new(),
            topology,
            wanted: HashSet::new(),
            unlisted: HashMap::new(),
            up: false,
            errors: BTreeMap::new(),
            logged: None,
            logged_cdi: HashSet::new(),
            logged_unmapped: HashSet::new(),
        };
        (allocation, reports)
    }

    /// Takes a report of the reader, resolves a new listing against
    /// `table`, and classifies what it can.
    pub fn take(&mut self, report: Report, table: &DeviceTable, usage: &Usage) {
        match report {
            Report::Listed(listing) => {
                if self.logged.take().is_some() || self.listing.is_none() {
                    info!(
                        "allocation: kubelet at {} lists {} running container(s)",
                        self.socket.display(),
                        listing.containers.len()
                    );
                }
                for invalid in &listing.invalid_cdi {
                    if self.logged_cdi.insert(invalid.clone()) {
                        warn!(
                            "allocation: CDI spec {} left out: {} (fix or remove it; claims it defines are not resolved)",
                            invalid.0.display(),
                            invalid.1
                        );
                    }
                }
                self.up = true;
                self.wanted.clear();
                self.unlisted.clear();
                self.listing = Some(listing);
                self.resolve(table, usage);
            }
            Report::Unlisted(pod, at) => {
                self.unlisted.insert((pod.namespace, pod.name), at);
            }
            Report::Failed { reason, message } => {
                self.up = false;
                *self.errors.entry(reason).or_default() += 1;
                if self.logged != Some(reason) {
                    // A node without kubelet (or before it starts) is no
                    // fault of the agent's.
                    if reason == "absent" {
                        info!("allocation: {message}; the join starts when it appears");
                    } else {
                        warn!(
                            "allocation: {message}; allocation rows are withheld while it lasts, counting goes on"
                        );
                    }
                    self.logged = Some(reason);
                }
            }
        }
    }

    /// Resolves the listing anew, after it or the device table changed.
    pub fn resolve(&mut self, table: &DeviceTable, usage: &Usage) {
        if let Some(listing) = &self.listing {
            self.resolved = Resolved::new(&listing.containers, table);
        }
        for (resource, ids) in &self.resolved.unmapped {
            if self.logged_unmapped.insert(resource.clone()) {
                warn!(
                    "allocation: {ids} ID(s) of {resource} match no vendor's rule: their containers are not classified (a vendor plugin that maps {resource} resolves them)"
                );
            }
        }
        self.classify(usage);
    }

    /// Classifies the cgroups named since whose containers kubelet
    /// described recently.
    pub fn classify(&mut self, usage: &Usage) {
        join::classify(
            &mut self.classified,
            &self.resolved,
            self.stale_after,
            usage,
        );
    }

    /// Asks kubelet at once about the pod of a newly named container,
    /// when the listing does not have it.
    pub fn want(&mut self, owner: &Owner) {
        let Some(listing) = &self.listing else {
            return;
        };
        if owner.is_outside_pods()
            || listing
                .containers
                .iter()
                .any(|c| c.owner.namespace == owner.namespace && c.owner.pod == owner.pod)
        {
            return;
        }
        let key = (owner.namespace.clone(), owner.pod.clone());
        if self.wanted.insert(key) {
            let _ = self.wants.send(PodName {
                namespace: owner.namespace.clone(),
                name: owner.pod.clone(),
            });
        }
    }

    /// Whether kubelet has answered for `owner`'s pod since `since` (a
    /// `List`, or a `Get` that found no such pod), or cannot answer: a
    /// container it did not classify then is not classified from what
    /// kubelet says now. kubelet allocates a pod's devices at its
    /// admission, before any of its containers exists.
    pub fn spoke_since(&self, owner: &Owner, since: Instant) -> bool {
        let pod = (owner.namespace.clone(), owner.pod.clone());
        !self.up
            || self.listing.as_ref().is_some_and(|l| l.listed_at >= since)
            || self.unlisted.get(&pod).is_some_and(|&at| at >= since)
    }

    /// Follows the sweep: `from`'s counters moved onto `into`'s. The
    /// merged counters keep a classification only if both had the same.
    pub fn merged(&mut self, from: u64, into: u64) {
        if self.classified.remove(&from) != self.classified.get(&into).cloned() {
            self.classified.remove(&into);
        }
    }

    /// Forgets cgroups whose counters are gone.
    pub fn forget(&mut self, ids: &[u64]) {
        for id in ids {
            self.classified.remove(id);
        }
    }

    /// The devices each classified cgroup was given.
    pub fn classified(&self) -> &Classified {
        &self.classified
    }

    /// Whether the last `List` is recent.
    pub fn fresh(&self) -> bool {
        self.listing
            .as_ref()
            .is_some_and(|l| l.listed_at.elapsed() <= self.stale_after)
    }

    /// The containers each device is allocated to now, each once.
    pub fn holding(&self) -> BTreeMap<Arc<str>, Vec<Owner>> {
        join::holding(&self.resolved, self.stale_after)
    }

    /// The join as a scrape shows it, over the kernel's `counters`.
    pub fn view(&self, counters: &[Counter], usage: &Usage) -> AllocationView {
        AllocationView {
            holders: join::holders(
                &self.resolved,
                self.stale_after,
                counters,
                usage,
                &self.topology,
            ),
            unallocated: join::unallocated(&self.classified, &self.resolved.open, counters, usage),
            up: self.up,
            fresh: self.fresh(),
            last_sync: self.listing.as_ref().map(|l| l.listed_unix),
            errors: self.errors.clone(),
            unmapped: self.resolved.unmapped.clone(),
            invalid_cdi_specs: self.listing.as_ref().map_or(0, |l| l.invalid_cdi.len()),
        }
    }
}
