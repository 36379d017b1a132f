//! The agent's HTTP face: `/metrics` for Prometheus, `/healthz` and
//! `/readyz` for kubelet's probes, `/api/v1/usage` (per-series totals as
//! JSON) for `kubenpuctl top`, `/api/v1/allocations` (the allocation
//! join) for `kubenpuctl allocations`, `/api/v1/policy` (the rules in
//! force and their verdicts) for `kubenpuctl policy`, and
//! `/api/v1/placement` (the placement in force and what would fix each
//! container's) for `kubenpuctl placement`, and `/api/v1/energy` (each
//! device's joules and their division among pods) for `kubenpuctl
//! energy`.
//!
//! The server owns no state: each request asks the agent's loop for a
//! fresh [`Snapshot`], so what is served is read from the kernel at
//! request time and the loop stays the only owner of the maps.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use kubenpu_ebpf::grant;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::{
    attribution::Owner,
    energy::Share,
    metrics::{self, Format, Snapshot},
    placement::advice,
    policy::{self, rules},
};

/// A request for a snapshot, answered by the agent's loop.
pub type Query = oneshot::Sender<Snapshot>;

/// How long a request waits for the loop before answering 503.
const LOOP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
struct Shared {
    queries: mpsc::Sender<Query>,
    ready: Arc<AtomicBool>,
}

/// Who used which device, in each row of `/api/v1/usage`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Holder {
    /// The pod's namespace; empty outside pods.
    pub namespace: String,
    /// The pod; empty outside pods.
    pub pod: String,
    /// The container; empty outside pods.
    pub container: String,
    /// The device's stable name.
    pub device: String,
    /// The vendor.
    pub vendor: String,
}

impl Holder {
    fn new(owner: Owner, device: &str, vendor: &str) -> Self {
        Self {
            namespace: owner.namespace,
            pod: owner.pod,
            container: owner.container,
            device: device.to_owned(),
            vendor: vendor.to_owned(),
        }
    }
}

/// One series in `/api/v1/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    /// Who, on which device.
    #[serde(flatten)]
    pub holder: Holder,
    /// submit, alloc or wait.
    pub kind: String,
    /// Calls so far.
    pub calls: u64,
    /// Of which failed (absent from agents before 0.2).
    #[serde(default)]
    pub failed: u64,
    /// Of which waits that found the device busy (absent from older agents).
    #[serde(default)]
    pub busy: u64,
    /// Of which waits that timed out (absent from older agents).
    #[serde(default)]
    pub timed_out: u64,
    /// Seconds spent inside them.
    #[serde(default)]
    pub seconds: f64,
    /// Bytes they allocated.
    #[serde(default)]
    pub bytes: u64,
}

/// Busy time of an engine class in `/api/v1/usage` (with `--fdinfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRow {
    /// Who, on which device.
    #[serde(flatten)]
    pub holder: Holder,
    /// The engine class as the driver names it.
    pub engine: String,
    /// Seconds it was busy for the holder's clients.
    pub seconds: f64,
}

/// Device memory in `/api/v1/usage` (with `--fdinfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRow {
    /// Who, on which device.
    #[serde(flatten)]
    pub holder: Holder,
    /// The region as the driver names it.
    pub region: String,
    /// total, shared, resident, active or purgeable.
    pub state: String,
    /// Bytes the holder's clients hold.
    pub bytes: u64,
}

/// The body of `/api/v1/usage`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UsageReport {
    /// Every series of ioctl counts.
    pub series: Vec<UsageRow>,
    /// Engine busy time, where drivers publish it (absent from agents
    /// before 0.2, and without `--fdinfo`).
    #[serde(default)]
    pub engines: Vec<EngineRow>,
    /// Device memory, likewise.
    #[serde(default)]
    pub memory: Vec<MemoryRow>,
}

impl UsageReport {
    /// The report of `snapshot`.
    fn of(snapshot: Snapshot) -> Self {
        let series = snapshot
            .ioctls
            .into_iter()
            .map(|(series, totals)| UsageRow {
                holder: Holder::new(series.owner, &series.device, &series.vendor),
                kind: series.kind.as_str().to_owned(),
                calls: totals.calls,
                failed: totals.failed,
                busy: totals.busy,
                timed_out: totals.timed_out,
                seconds: totals.ns as f64 / 1e9,
                bytes: totals.bytes,
            })
            .collect();
        let fdinfo = snapshot.fdinfo.unwrap_or_default();
        let engines = fdinfo
            .engines
            .into_iter()
            .map(|(s, seconds)| EngineRow {
                holder: Holder::new(s.owner, &s.device.device, &s.device.vendor),
                engine: s.engine,
                seconds,
            })
            .collect();
        let memory = fdinfo
            .memory
            .into_iter()
            .map(|(s, bytes)| MemoryRow {
                holder: Holder::new(s.owner, &s.device.device, &s.device.vendor),
                region: s.region,
                state: s.state.name().to_owned(),
                bytes,
            })
            .collect();
        Self {
            series,
            engines,
            memory,
        }
    }
}

/// One device kubelet allocated to a running container, in
/// `/api/v1/allocations`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AllocationRow {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container.
    pub container: String,
    /// The device's stable name.
    pub device: String,
    /// The extended resource, or the DRA driver.
    pub resource: String,
    /// `device_plugin` or `dra`.
    pub source: String,
    /// No counted call by the container on the device since it started.
    pub idle: bool,
    /// The container's counted calls on the device so far.
    pub calls: u64,
    /// Of which made from a CPU of another NUMA node than the device's.
    pub remote: u64,
    /// How many of the container's CPUs are on the device's NUMA node,
    /// where both are known (absent from agents before 0.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_fit: Option<NumaFitRow>,
}

/// A holder's CPUs against its device's NUMA node, in
/// `/api/v1/allocations`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NumaFitRow {
    /// Its CPUs on the device's node.
    pub local_cpus: u32,
    /// All its CPUs.
    pub cpus: u32,
    /// Where they were read: `cpu_ids` (kubelet's exclusive CPUs) or
    /// `cpuset` (its cgroup's).
    pub from: String,
}

/// Calls on a device not allocated to the caller, in
/// `/api/v1/allocations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnallocatedRow {
    /// Who, on which device.
    #[serde(flatten)]
    pub holder: Holder,
    /// submit, alloc or wait.
    pub kind: String,
    /// Calls since the container was classified.
    pub calls: u64,
}

/// The body of `/api/v1/allocations`: the allocation join, as the
/// `kubenpu_allocation*` and `kubenpu_unallocated_ioctl_total` series
/// show it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AllocationsReport {
    /// Whether the agent runs the join (not with `--no-allocation`).
    pub joining: bool,
    /// Whether kubelet answered the last call.
    pub up: bool,
    /// Whether kubelet's last `List` is recent; rows are shown only then.
    pub fresh: bool,
    /// When kubelet last answered a `List`, as Unix time in seconds.
    pub last_sync: Option<f64>,
    /// Allocated devices of running containers.
    pub allocated: Vec<AllocationRow>,
    /// Calls on devices not allocated to the caller.
    pub unallocated: Vec<UnallocatedRow>,
    /// Allocated IDs no vendor plugin's rule resolves, per resource.
    pub unmapped: BTreeMap<String, u64>,
}

impl AllocationsReport {
    /// The report of `snapshot`.
    fn of(snapshot: Snapshot) -> Self {
        let Some(view) = snapshot.allocation else {
            return Self::default();
        };
        let mut used: BTreeMap<(&Owner, &str), (u64, u64)> = BTreeMap::new();
        for (series, totals) in &snapshot.ioctls {
            let sum = used.entry((&series.owner, &series.device)).or_default();
            sum.0 += totals.calls;
            sum.1 += totals.remote;
        }
        let allocated = view
            .holders
            .into_iter()
            .map(|h| {
                let (calls, remote) = used
                    .get(&(&h.owner, &*h.device))
                    .copied()
                    .unwrap_or_default();
                AllocationRow {
                    namespace: h.owner.namespace,
                    pod: h.owner.pod,
                    container: h.owner.container,
                    device: h.device.to_string(),
                    resource: h.resource,
                    source: h.source.as_str().to_owned(),
                    idle: h.idle,
                    calls,
                    remote,
                    numa_fit: h.fit.map(|fit| NumaFitRow {
                        local_cpus: fit.local,
                        cpus: fit.total,
                        from: fit.cpus.as_str().to_owned(),
                    }),
                }
            })
            .collect();
        let unallocated = view
            .unallocated
            .into_iter()
            .map(|(series, calls)| UnallocatedRow {
                holder: Holder::new(series.owner, &series.device, &series.vendor),
                kind: series.kind.as_str().to_owned(),
                calls,
            })
            .collect();
        Self {
            joining: true,
            up: view.up,
            fresh: view.fresh,
            last_sync: view.last_sync.map(|at| at.as_secs_f64()),
            allocated,
            unallocated,
            unmapped: view.unmapped,
        }
    }
}

/// The body of `/api/v1/policy`: the policy in force, the containers its
/// rules hold with what each may use and why, and what was audited or
/// refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PolicyReport {
    /// Whether the agent runs the policy at all (not with
    /// `--no-allocation`).
    pub present: bool,
    /// The node's mode in force: off, audit or enforce.
    pub mode: String,
    /// The mode asked for.
    pub asked: String,
    /// Whether BPF LSM is active on the kernel.
    pub lsm_available: bool,
    /// Whether the policy file's last reading was good; absent without
    /// one.
    pub file_valid: Option<bool>,
    /// The devices the checks cover; calls on any other are never
    /// refused.
    pub checked: Vec<String>,
    /// The containers the rules hold.
    pub ruled: Vec<RuledRow>,
    /// Calls audited or refused.
    pub refusals: Vec<RefusalRow>,
}

/// A container the policy's rules hold, in `/api/v1/policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuledRow {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container.
    pub container: String,
    /// audit or enforce.
    pub mode: String,
    /// The devices it has a grant on; every other is refused.
    pub grants: Vec<GrantRow>,
}

/// A ruled container's grant on one device, in `/api/v1/policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantRow {
    /// The device's stable name.
    pub device: String,
    /// What it may do there: open (and unlisted ioctls), submit, alloc,
    /// wait.
    pub allows: Vec<String>,
    /// The kinds the policy file denies it there.
    pub denies: Vec<String>,
    /// The rule that refuses what it does not allow: allocated-only,
    /// deny-device or deny-kind.
    pub rule: String,
    /// Why it has the grant: allocated, allowed by the policy file, …
    pub because: String,
}

/// Calls audited or refused, in `/api/v1/policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusalRow {
    /// Who, on which device.
    #[serde(flatten)]
    pub holder: Holder,
    /// The call's kind (other: the open, and unlisted ioctls).
    pub kind: String,
    /// open, ioctl or ioctl_compat.
    pub hook: String,
    /// allocated-only, deny-device or deny-kind.
    pub rule: String,
    /// audited or refused.
    pub action: String,
    /// How many.
    pub calls: u64,
}

impl PolicyReport {
    /// The report of `snapshot`.
    fn of(snapshot: Snapshot) -> Self {
        let Some(view) = snapshot.policy else {
            return Self::default();
        };
        let ruled = view
            .containers
            .into_iter()
            .map(|c| RuledRow {
                namespace: c.owner.namespace,
                pod: c.owner.pod,
                container: c.owner.container,
                mode: c.mode.as_str().to_owned(),
                grants: c
                    .grants
                    .into_iter()
                    .map(|g| GrantRow {
                        device: g.device.to_string(),
                        allows: strings(rules::allowed_kinds(g.value)),
                        denies: strings(rules::denied_kinds(g.value)),
                        rule: policy::rule_name(grant::rule(g.value)).to_owned(),
                        because: g.because.as_str().to_owned(),
                    })
                    .collect(),
            })
            .collect();
        let refusals = view
            .refusals
            .into_iter()
            .map(|(v, calls)| RefusalRow {
                holder: Holder::new(v.owner, &v.device, &v.vendor),
                kind: v.kind.to_owned(),
                hook: v.hook.to_owned(),
                rule: v.rule.to_owned(),
                action: v.action.to_owned(),
                calls,
            })
            .collect();
        Self {
            present: true,
            mode: view.mode.as_str().to_owned(),
            asked: view.asked.as_str().to_owned(),
            lsm_available: view.lsm_available,
            file_valid: view.file_valid,
            checked: view.checked.iter().map(|d| d.to_string()).collect(),
            ruled,
            refusals,
        }
    }
}

/// The body of `/api/v1/placement`: the mode in force, what the agent's
/// scheduler did, and each allocated container's placement on each of
/// its devices, with what would fix it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlacementReport {
    /// Whether placement is on at all (not `--placement off`).
    pub present: bool,
    /// `--placement`.
    pub asked: String,
    /// The mode in force.
    pub mode: String,
    /// sched_ext's state on the node: `absent`, `disabled`, `enabled`, ...
    pub sched_ext: String,
    /// The scheduler in force, if any.
    pub ops: String,
    /// What the agent's scheduler did, by decision.
    pub decisions: BTreeMap<String, u64>,
    /// The kernel's stops of the agent's scheduler, by kind.
    pub exits: BTreeMap<String, u64>,
    /// One row per container and allocated device (the allocation join).
    pub containers: Vec<PlacementRow>,
}

/// A container's placement against one of its devices, in
/// `/api/v1/placement`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementRow {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container.
    pub container: String,
    /// The device.
    pub device: String,
    /// The device's NUMA node, if the machine names one.
    pub device_node: Option<u32>,
    /// Its counted calls on the device.
    pub calls: u64,
    /// Those made from a CPU of another node.
    pub remote: u64,
    /// Its CPUs against the device's node, where known.
    pub numa_fit: Option<NumaFitRow>,
    /// What would fix it, or why nothing needs to.
    pub advice: String,
}

impl PlacementReport {
    /// The report of `snapshot`.
    fn of(snapshot: Snapshot) -> Self {
        let Some(view) = snapshot.placement.clone() else {
            return Self::default();
        };
        let node_of = |device: &str| {
            snapshot
                .devices
                .iter()
                .find(|d| d.device == device)
                .and_then(|d| Some((d.numa_node.parse::<u32>().ok()?, d.vendor.as_str())))
        };
        let elsewhere = |vendor: &str, node: u32| -> Vec<String> {
            snapshot
                .devices
                .iter()
                .filter(|d| {
                    d.vendor == vendor && d.numa_node.parse::<u32>().is_ok_and(|n| n != node)
                })
                .map(|d| d.device.clone())
                .collect()
        };
        let containers = AllocationsReport::of(snapshot.clone())
            .allocated
            .into_iter()
            .map(|row| {
                let found = node_of(&row.device);
                let usage = advice::Use {
                    calls: row.calls,
                    remote: row.remote,
                    device_node: found.map(|(node, _)| node),
                    cpus: row.numa_fit.as_ref().map(|fit| (fit.local_cpus, fit.cpus)),
                };
                let others = found
                    .map(|(node, vendor)| elsewhere(vendor, node))
                    .unwrap_or_default();
                PlacementRow {
                    advice: advice::advise(usage, view.mode, &others),
                    device_node: usage.device_node,
                    namespace: row.namespace,
                    pod: row.pod,
                    container: row.container,
                    device: row.device,
                    calls: row.calls,
                    remote: row.remote,
                    numa_fit: row.numa_fit,
                }
            })
            .collect();
        let counters = view.counters;
        Self {
            present: true,
            asked: view.asked.as_str().to_owned(),
            mode: view.mode.as_str().to_owned(),
            sched_ext: view.sched_ext,
            ops: view.ops,
            decisions: [
                ("woken_near", counters.placed),
                ("woken_elsewhere", counters.fell_back),
                ("queued_near", counters.queued_near),
                ("queued_elsewhere", counters.queued_away),
            ]
            .into_iter()
            .map(|(decision, count)| (decision.to_owned(), count))
            .collect(),
            exits: view
                .exits
                .into_iter()
                .map(|(kind, stops)| (kind.to_owned(), stops))
                .collect(),
            containers,
        }
    }
}

/// The body of `/api/v1/energy`: each device's energy and how it is
/// measured and divided, and each container's share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyReport {
    /// Whether the agent meters energy at all (`--energy`).
    pub present: bool,
    /// One row per device read.
    pub devices: Vec<EnergyDeviceRow>,
    /// One row per container and device charged.
    pub containers: Vec<EnergyRow>,
    /// Sensor reads that failed.
    pub failed_reads: u64,
}

/// One device in `/api/v1/energy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyDeviceRow {
    /// The device.
    pub device: String,
    /// Its vendor.
    pub vendor: String,
    /// `energy` (a counter) or `power` (integrated).
    pub source: String,
    /// Its joules since the agent started reading it.
    pub joules: f64,
    /// The idle power in use.
    pub idle_watts: f64,
    /// `measured` or `plugin`.
    pub idle_method: String,
    /// How its active energy is divided: `engine_time` or `call_time`.
    pub rule: String,
}

/// One container's energy on one device in `/api/v1/energy`; empty pod
/// names for the idle energy of a device nobody holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyRow {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container.
    pub container: String,
    /// The device.
    pub device: String,
    /// Joules above idle power, by its use.
    pub active_joules: f64,
    /// Its share of the idle power, as a holder.
    pub idle_joules: f64,
}

impl EnergyReport {
    /// The report of `snapshot`.
    fn of(snapshot: Snapshot) -> Self {
        let Some(view) = snapshot.energy else {
            return Self::default();
        };
        let devices = view
            .devices
            .iter()
            .map(|d| EnergyDeviceRow {
                device: d.device.device.to_string(),
                vendor: d.device.vendor.to_string(),
                source: d.source.to_owned(),
                joules: d.joules,
                idle_watts: d.idle_watts,
                idle_method: if d.idle_measured {
                    "measured"
                } else {
                    "plugin"
                }
                .to_owned(),
                rule: d.rule.as_str().to_owned(),
            })
            .collect();
        let mut containers: BTreeMap<(Owner, String), (f64, f64)> = BTreeMap::new();
        for (series, joules) in &view.shares {
            let key = (series.owner.clone(), series.device.device.to_string());
            let row = containers.entry(key).or_default();
            match series.share {
                Share::Active => row.0 += joules,
                Share::Idle => row.1 += joules,
            }
        }
        Self {
            present: true,
            devices,
            containers: containers
                .into_iter()
                .map(
                    |((owner, device), (active_joules, idle_joules))| EnergyRow {
                        namespace: owner.namespace,
                        pod: owner.pod,
                        container: owner.container,
                        device,
                        active_joules,
                        idle_joules,
                    },
                )
                .collect(),
            failed_reads: view.failed_reads,
        }
    }
}

fn strings(names: Vec<&str>) -> Vec<String> {
    names.into_iter().map(str::to_owned).collect()
}

/// Binds `addr`, with the fix in the error.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        anyhow::anyhow!("cannot listen on {addr}: {e} (choose another address with --listen)")
    })
}

/// Serves until `shutdown` resolves, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    queries: mpsc::Sender<Query>,
    ready: Arc<AtomicBool>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics_page))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/api/v1/usage", get(usage))
        .route("/api/v1/allocations", get(allocations))
        .route("/api/v1/policy", get(policy))
        .route("/api/v1/placement", get(placement))
        .route("/api/v1/energy", get(energy))
        .with_state(Shared { queries, ready });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn snapshot(shared: &Shared) -> Result<Snapshot, Response> {
    let unavailable =
        || (StatusCode::SERVICE_UNAVAILABLE, "the agent is not ready\n").into_response();
    let (tx, rx) = oneshot::channel();
    shared.queries.send(tx).await.map_err(|_| unavailable())?;
    match tokio::time::timeout(LOOP_TIMEOUT, rx).await {
        Ok(Ok(snapshot)) => Ok(snapshot),
        _ => Err(unavailable()),
    }
}

async fn metrics_page(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let format = Format::negotiate(accept);
    match snapshot(&shared).await {
        Ok(snapshot) => (
            [(header::CONTENT_TYPE, format.content_type())],
            metrics::render(snapshot, format),
        )
            .into_response(),
        Err(response) => response,
    }
}

async fn readyz(State(shared): State<Shared>) -> Response {
    if shared.ready.load(Ordering::Acquire) {
        "ready\n".into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "starting: program not attached or device table not built yet\n",
        )
            .into_response()
    }
}

async fn usage(State(shared): State<Shared>) -> Response {
    report(&shared, UsageReport::of).await
}

async fn allocations(State(shared): State<Shared>) -> Response {
    report(&shared, AllocationsReport::of).await
}

async fn policy(State(shared): State<Shared>) -> Response {
    report(&shared, PolicyReport::of).await
}

async fn placement(State(shared): State<Shared>) -> Response {
    report(&shared, PlacementReport::of).await
}

async fn energy(State(shared): State<Shared>) -> Response {
    report(&shared, EnergyReport::of).await
}

/// A fresh snapshot, as JSON in the shape `of` gives it.
async fn report<T: Serialize>(shared: &Shared, of: fn(Snapshot) -> T) -> Response {
    match snapshot(shared).await {
        Ok(snapshot) => Json(of(snapshot)).into_response(),
        Err(response) => response,
    }
}
