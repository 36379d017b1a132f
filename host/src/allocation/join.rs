//! The join itself: what kubelet allocated against what each container
//! calls. Functions of the resolved allocations, the kernel's counters and
//! attribution, so the rules can be read and tested here; the one thing
//! they read from the node is a calling container's cpuset ([`numa`]).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use super::{
    numa::{self, Fit, Topology},
    resolve::{ContainerKey, Grant, Resolved, Source},
};
use crate::{attribution::Owner, catalog::Series, probe::Counter, usage::Usage};

/// One allocated (container, device, resource) and whether the container
/// has called on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holder {
    /// The container.
    pub owner: Owner,
    /// The device's stable name.
    pub device: Arc<str>,
    /// The resource or DRA driver it came through.
    pub resource: String,
    /// Device plugin or DRA.
    pub source: Source,
    /// No counted call on the device by the container since it started.
    pub idle: bool,
    /// How many of the container's CPUs are on the device's NUMA node,
    /// where both are known.
    pub fit: Option<Fit>,
}

/// The allocated devices of running containers that kubelet described
/// within `fresh`, each with whether it is idle (no counted call by a
/// live cgroup of that container, by pod UID and container name, on that
/// device) and where its CPUs are against the device's node (`topology`).
pub fn holders(
    resolved: &Resolved,
    fresh: Duration,
    counters: &[Counter],
    usage: &Usage,
    topology: &Topology,
) -> Vec<Holder> {
    let mut called: HashSet<(String, &str, Arc<str>)> = HashSet::new();
    for counter in counters.iter().filter(|c| c.value.calls > 0) {
        let id = counter.key.cgroup_id;
        let (Some(uid), Some(series)) = (usage.attributor.live_pod_uid(id), usage.series(counter))
        else {
            continue;
        };
        let Some(owner) = usage.attributor.owner(id) else {
            continue;
        };
        called.insert((uid, owner.container.as_str(), series.device));
    }
    let dirs = live_containers(usage);
    let mut holders: Vec<Holder> = resolved
        .containers
        .iter()
        .filter(|(_, granted)| granted.seen_at.elapsed() <= fresh)
        .flat_map(|(key @ (uid, container), granted)| {
            let called = &called;
            let cpus = numa::cpus_of(&granted.cpu_ids, dirs.get(key));
            granted.grants.iter().map(move |grant| Holder {
                owner: granted.owner.clone(),
                device: grant.device.clone(),
                resource: grant.resource.clone(),
                source: grant.source,
                idle: !called.contains(&(uid.clone(), container.as_str(), grant.device.clone())),
                fit: cpus
                    .as_ref()
                    .zip(grant.numa_node)
                    .and_then(|((cpus, source), node)| topology.fit(cpus, *source, node)),
            })
        })
        .collect();
    holders.sort();
    holders
}

/// The containers each device is allocated to, of the running containers
/// kubelet described within `fresh`, each once: who holds it, without
/// whether they use it or where their CPUs are (no counters, no file).
pub fn holding(resolved: &Resolved, fresh: Duration) -> BTreeMap<Arc<str>, Vec<Owner>> {
    let mut holding: BTreeMap<Arc<str>, BTreeSet<&Owner>> = BTreeMap::new();
    for granted in resolved.containers.values() {
        if granted.seen_at.elapsed() <= fresh {
            for grant in &granted.grants {
                holding
                    .entry(grant.device.clone())
                    .or_default()
                    .insert(&granted.owner);
            }
        }
    }
    holding
        .into_iter()
        .map(|(device, owners)| (device, owners.into_iter().cloned().collect()))
        .collect()
}

/// The cgroup directory of each live container the agent has named (one
/// that made counted calls), by pod UID and container name.
fn live_containers(usage: &Usage) -> HashMap<ContainerKey, PathBuf> {
    usage
        .attributor
        .live()
        .into_iter()
        .filter_map(|(id, dir)| {
            let uid = usage.attributor.live_pod_uid(id)?;
            let owner = usage.attributor.owner(id)?;
            Some(((uid, owner.container.clone()), dir))
        })
        .collect()
}

/// The devices each classified cgroup was given: a cgroup is classified
/// once, from what kubelet said of its pod (by UID) and container within
/// the freshness bound, with every ID resolved; kubelet never changes a
/// running container's devices, so the classification holds for the
/// cgroup's life.
pub type Classified = HashMap<u64, Arc<BTreeSet<Arc<str>>>>;

/// Classifies the live, named cgroups not classified yet whose
/// containers kubelet described within `fresh`.
pub fn classify(classified: &mut Classified, resolved: &Resolved, fresh: Duration, usage: &Usage) {
    for named in usage.attributor.named() {
        if named.gone_at.is_some() || classified.contains_key(&named.id) {
            continue;
        }
        let Some(uid) = usage.attributor.live_pod_uid(named.id) else {
            continue;
        };
        let key = (uid, named.owner.container.clone());
        let Some(granted) = resolved.containers.get(&key) else {
            continue;
        };
        if granted.complete && granted.seen_at.elapsed() <= fresh {
            let devices = granted.grants.iter().map(|g: &Grant| g.device.clone());
            classified.insert(named.id, Arc::new(devices.collect()));
        }
    }
}

/// Calls on devices that were not allocated to the calling container, per
/// series, from the classified cgroups only; devices `open` to every
/// container (no allocator hands them out) excepted.
pub fn unallocated(
    classified: &Classified,
    open: &BTreeSet<Arc<str>>,
    counters: &[Counter],
    usage: &Usage,
) -> BTreeMap<Series, u64> {
    let mut calls = BTreeMap::new();
    for counter in counters {
        let Some(devices) = classified.get(&counter.key.cgroup_id) else {
            continue;
        };
        let Some(series) = usage.series(counter) else {
            continue;
        };
        if !devices.contains(&series.device) && !open.contains(&series.device) {
            *calls.entry(series).or_default() += counter.value.calls;
        }
    }
    calls
}
