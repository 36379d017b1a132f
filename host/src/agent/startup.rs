//! The phases that lead to the `ready:` line: the server bound first (a
//! taken port is reported before anything is loaded, and `/healthz`
//! answers while the rest starts), the plugins, the policy file, the
//! probe, the devices, what a predecessor left, then the arms. Each timed
//! phase is named on the ready line.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{
    signal::unix,
    sync::{mpsc, oneshot},
    task::JoinHandle,
    time,
};
use tracing::{info, warn};

use super::{
    Agent,
    arms::{
        Arms, Arrivals, Listings, Names, Plugins, PolicyFile, Rescan, Scans, SchedulerWatch,
        Scrapes, report_rejections,
    },
    preflight,
};
use crate::{
    attribution::{Attributor, cri::Cri, index::CgroupIndex, resolver},
    config::AgentConfig,
    device_table::DeviceTable,
    discovery::{self, Roots},
    energy,
    faults::Faults,
    fdinfo,
    placement::Placement,
    plugins::{PluginHost, Vendors},
    policy::{self, Policy},
    probe::{self, Probe},
    server::{self, Query},
    startup::Phases,
    usage::Usage,
};

/// The least time between two walks of the cgroup hierarchy: cgroups
/// created faster than this are named a walk later.
const MIN_WALK_INTERVAL: Duration = Duration::from_millis(500);

/// How often an absent container runtime is tried again.
const CRI_RETRY: Duration = Duration::from_secs(2);

/// An agent ready to loop.
pub(super) struct Started {
    pub agent: Agent,
    pub arms: Arms,
    pub serving: Serving,
}

/// Starts everything, in order, and says so on one line.
pub(super) async fn start(config: &AgentConfig) -> anyhow::Result<Started> {
    let cgroup_root = preflight::check(config)?;
    let (serving, queries) = Serving::bind(config).await?;
    let started = Instant::now();
    let mut phases = Phases::default();
    let (host, vendors) = plugins(config, &mut phases)?;
    let mut policy = Policy::new(
        config.policy,
        policy::lsm::active(&config.sysfs_root),
        config.policy_lease,
    );
    // Read before the checks are attached: it may ask for them.
    let policy_file = PolicyFile::new(
        config
            .policy_file
            .as_deref()
            .and_then(|path| policy.follow_file(path)),
    );
    let probe = start_probe(config, &mut policy, &mut phases)?;
    let placement = phases.time("placement", || {
        Placement::start(
            config.placement,
            &config.sysfs_root,
            &config.pin_path,
            config.debug,
        )
    });
    info!("cgroups: {}", cgroup_root.display());
    let roots = roots(config);
    let table = phases.time("devices", || {
        let found = discovery::discover(&roots, &vendors.char_claims());
        DeviceTable::build(found.devices, vendors)
    });
    let (mut agent, reports) = agent(config, &cgroup_root, probe, table, policy, placement);
    phases.time("restore and tables", || {
        agent.restore();
        agent.adopt_rules();
        agent.reinstall();
    });
    let arms = Arms {
        listings: Listings::start(config, &mut agent),
        arrivals: Arrivals::start(config, &cgroup_root, &mut agent),
        plugins: Plugins::watch(config, host, roots.clone())?,
        names: Names::new(config.drain_interval, reports),
        policy_file,
        scrapes: Scrapes::new(queries),
        rescan: Rescan::new(config.rescan_interval, roots),
        scans: Scans::new(config.fdinfo_interval, config.fdinfo),
        scheduler: SchedulerWatch::new(),
        terminate: unix::signal(unix::SignalKind::terminate())?,
        interrupt: unix::signal(unix::SignalKind::interrupt())?,
    };
    serving.ready();
    say_ready(config, &agent, started.elapsed(), &phases);
    Ok(Started {
        agent,
        arms,
        serving,
    })
}

/// The ready line: what is counted, where it is served, and where the
/// start's time went.
fn say_ready(config: &AgentConfig, agent: &Agent, took: Duration, phases: &Phases) {
    info!(
        "ready: counting on {} device(s), serving /metrics on {}, in {:.2} s ({phases}, the rest {:.2} s)",
        agent.table.claimed().count(),
        config.listen,
        took.as_secs_f64(),
        took.saturating_sub(phases.total()).as_secs_f64()
    );
}

/// Where devices are looked for.
fn roots(config: &AgentConfig) -> Roots {
    Roots {
        sysfs: config.sysfs_root.clone(),
        dev: config.dev_root.clone(),
        proc: config.proc_root.clone(),
    }
}

/// The agent's state, with the CRI resolver started: the resolver's
/// reports are the names arm's to take.
fn agent(
    config: &AgentConfig,
    cgroup_root: &Path,
    probe: Probe,
    table: DeviceTable,
    policy: Policy,
    placement: Placement,
) -> (Agent, mpsc::UnboundedReceiver<resolver::Report>) {
    let (asks, reports) = resolver::spawn(
        Cri::new(config.cri_socket.clone(), config.cri_timeout),
        CRI_RETRY,
    );
    let agent = Agent {
        usage: Usage::new(
            Attributor::new(CgroupIndex::new(cgroup_root, MIN_WALK_INTERVAL)),
            config.series_grace,
            !config.exclude_outside_pods,
        ),
        table,
        node: node_name(),
        probe,
        asks,
        cri_up: false,
        faults: Faults::default(),
        fdinfo: config
            .fdinfo
            .then(|| fdinfo::Reader::new(config.proc_root.clone())),
        energy: config
            .energy
            .then(|| energy::Meter::new(config.sysfs_root.clone(), config.series_grace)),
        allocation: None,
        policy: (!config.no_allocation).then_some(policy),
        admissions: None,
        placement,
        absent_char_devices: Vec::new(),
    };
    (agent, reports)
}

/// The built-in plugins, then the plugins directory's.
fn plugins(config: &AgentConfig, phases: &mut Phases) -> anyhow::Result<(PluginHost, Vendors)> {
    let mut host = phases.time("built-in plugins", || PluginHost::new(&config.plugins_dir))?;
    let vendors = phases
        .time("plugins directory", || host.scan())
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot read the plugins directory {}: {e}",
                config.plugins_dir.display()
            )
        })?;
    report_rejections(&vendors, &Vendors::default());
    Ok((host, vendors))
}

/// Loads and attaches the probe, with the policy's checks where it wants
/// them, and says which hook and how the maps are read.
fn start_probe(
    config: &AgentConfig,
    policy: &mut Policy,
    phases: &mut Phases,
) -> anyhow::Result<Probe> {
    let probe = Probe::start(probe::Config {
        pin_dir: config.pin_path.clone(),
        hook: config.hook,
        max_counters: config.max_counters,
        debug: config.debug,
        policy: policy.wants_checks(),
    })?;
    phases.append(probe.start_phases());
    policy.checks(probe.policy_checks());
    info!("hook {}: {}", probe.hook().as_str(), probe.hook_reason());
    if let Some(why) = probe.iterators_refused() {
        warn!(
            "the counters are copied with bpf(2) lookups, not read through map iterators ({why}): calls made on a CPU while the agent copies are skipped by kprobe hooks, counted as recursion losses"
        );
    }
    Ok(probe)
}

/// The HTTP server: `/healthz` from the start, ready once the agent is.
pub(super) struct Serving {
    ready: Arc<AtomicBool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Serving {
    /// Binds `--listen` and serves; scrapes come as queries.
    async fn bind(config: &AgentConfig) -> anyhow::Result<(Self, mpsc::Receiver<Query>)> {
        let listener = server::bind(config.listen).await?;
        let ready = Arc::new(AtomicBool::new(false));
        let (query_tx, queries) = mpsc::channel(16);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server::serve(listener, query_tx, ready.clone(), async {
            let _ = stopped.await;
        }));
        Ok((Self { ready, stop, task }, queries))
    }

    fn ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// `/readyz` fails from now on.
    pub(super) fn unready(&self) {
        self.ready.store(false, Ordering::Release);
    }

    /// Stops, giving the requests in flight 5 s to finish.
    pub(super) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// The Kubernetes node's name: `NODE_NAME` (set from the downward API),
/// else the hostname.
fn node_name() -> String {
    std::env::var("NODE_NAME")
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_default()
}
