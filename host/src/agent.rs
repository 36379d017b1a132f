//! The agent's life: check the kernel, build the device table, load and
//! attach the probe, then keep the kernel's tables in step with devices and
//! plugins until SIGTERM. The program stays attached and counting when the
//! agent stops; the next agent adopts it.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{
    signal::unix,
    sync::{mpsc, oneshot},
    time,
};
use tracing::{debug, info, warn};

use crate::{
    admission::{self, Admissions, Held},
    allocation::{self, Allocation, reader::Report as AllocationReport},
    attribution::{
        Attributor, Named,
        cri::Cri,
        index::CgroupIndex,
        mount, record as owner_record,
        resolver::{self, Ask, Report},
    },
    clock,
    config::AgentConfig,
    device_table::DeviceTable,
    discovery::{self, Roots},
    faults::Faults,
    fdinfo,
    metrics::{DeviceInfo, PluginInfo, Snapshot},
    plugins::{PluginHost, Vendors, Watcher},
    policy::{self, Policy, rules::Step},
    probe::{self, Probe},
    server,
    startup::Phases,
    usage::Usage,
};

/// The least time between two walks of the cgroup hierarchy: cgroups
/// created faster than this are named a walk later.
const MIN_WALK_INTERVAL: Duration = Duration::from_millis(500);

/// How often an absent container runtime is tried again.
const CRI_RETRY: Duration = Duration::from_secs(2);

/// Runs the agent until SIGTERM or SIGINT.
pub async fn run(config: AgentConfig) -> anyhow::Result<()> {
    if config.cleanup {
        probe::cleanup(&config.pin_path)?;
        info!(
            "removed {} (programs and policy checks detached, counts gone)",
            config.pin_path.display()
        );
        return Ok(());
    }
    if config.policy != policy::PolicyMode::Off && config.policy_lease < 2 * config.rescan_interval
    {
        anyhow::bail!(
            "--policy-lease {:?} is shorter than twice --rescan-interval {:?}: each rescan renews it, so the checks would lapse between two",
            config.policy_lease,
            config.rescan_interval
        );
    }
    let cgroup_root = preflight(config.cgroup_root.as_deref())?;
    if config.fdinfo && !config.proc_root.join("stat").is_file() {
        anyhow::bail!(
            "--proc-root {} is not a proc filesystem (it has no stat file): give the node's /proc for --fdinfo to read",
            config.proc_root.display()
        );
    }
    // Bound first, so a taken port is reported before anything is loaded;
    // /healthz answers while the rest starts.
    let listener = server::bind(config.listen).await?;
    let ready = Arc::new(AtomicBool::new(false));
    let (query_tx, mut queries) = mpsc::channel(16);
    let (stop_server, server_stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(listener, query_tx, ready.clone(), async {
        let _ = server_stopped.await;
    }));

    let roots = Roots {
        sysfs: config.sysfs_root.clone(),
        dev: config.dev_root.clone(),
        proc: config.proc_root.clone(),
    };
    let started = Instant::now();
    let mut phases = Phases::default();
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

    let mut policy = Policy::new(
        config.policy,
        policy::lsm::active(&config.sysfs_root),
        config.policy_lease,
    );
    // Read before the checks are attached: it may ask for them.
    let (mut policy_files, _policy_watch) = match &config.policy_file {
        Some(path) => policy.follow_file(path).unzip(),
        None => (None, None),
    };
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
    info!("cgroups: {}", cgroup_root.display());
    let (asks, mut reports) = resolver::spawn(
        Cri::new(config.cri_socket.clone(), config.cri_timeout),
        CRI_RETRY,
    );
    let table = phases.time("devices", || {
        let found = discovery::discover(&roots, &vendors.char_claims());
        DeviceTable::build(found.devices, vendors)
    });
    let mut agent = Agent {
        usage: Usage::new(
            Attributor::new(CgroupIndex::new(&cgroup_root, MIN_WALK_INTERVAL)),
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
        allocation: None,
        policy: (!config.no_allocation).then_some(policy),
        admissions: None,
        absent_char_devices: Vec::new(),
    };
    phases.time("restore and tables", || {
        agent.restore();
        agent.adopt_rules();
        agent.reinstall();
    });
    let mut allocation_reports = if config.no_allocation {
        info!("allocation join off (--no-allocation)");
        None
    } else {
        let topology = allocation::numa::Topology::read(&config.sysfs_root);
        let (allocation, reports) = Allocation::start(config.allocation(), topology);
        agent.allocation = Some(allocation);
        Some(reports)
    };
    // Served wherever something may ask for the checks: the node's mode,
    // or a policy file's namespaces, now or later.
    let mut arrivals = if agent.policy.is_some()
        && (config.policy != policy::PolicyMode::Off || config.policy_file.is_some())
    {
        start_admission(&config, &cgroup_root).map(|(admissions, arrivals)| {
            agent.admissions = Some(admissions);
            arrivals
        })
    } else {
        None
    };

    let (vendor_tx, mut vendor_rx) = mpsc::unbounded_channel();
    let _watcher = if config.plugins_dir.is_dir() {
        Some(Watcher::spawn(host, move |update| {
            let _ = vendor_tx.send(update);
        })?)
    } else {
        info!(
            "plugins directory {} does not exist: built-in vendors only (create it to add plugins)",
            config.plugins_dir.display()
        );
        None
    };

    let mut terminate = unix::signal(unix::SignalKind::terminate())?;
    let mut interrupt = unix::signal(unix::SignalKind::interrupt())?;
    let mut rescan = time::interval(config.rescan_interval);
    let mut drain = time::interval(config.drain_interval);
    let mut fdinfo_tick = time::interval(config.fdinfo_interval);
    for timer in [&mut rescan, &mut drain, &mut fdinfo_tick] {
        timer.set_missed_tick_behavior(time::MissedTickBehavior::Delay);
    }
    // Devices found by a rescan, and whether one is under way.
    let (found_tx, mut found_rx) = mpsc::channel(1);
    let mut scanning = false;
    // The fdinfo reader's scans, run on a blocking thread one at a time.
    let (scanned_tx, mut scanned_rx) = mpsc::channel(1);
    let mut reading_fdinfo = false;
    ready.store(true, Ordering::Release);
    let took = started.elapsed();
    info!(
        "ready: counting on {} device(s), serving /metrics on {}, in {:.2} s ({phases}, the rest {:.2} s)",
        agent.table.claimed().count(),
        config.listen,
        took.as_secs_f64(),
        took.saturating_sub(phases.total()).as_secs_f64()
    );
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = drain.tick() => {
                agent.drain();
                agent.settle();
            }
            Some(report) = reports.recv() => agent.report(report),
            Some(report) = next(&mut allocation_reports) => agent.take_allocation(report),
            Some(reading) = next(&mut policy_files) => agent.take_policy_file(reading),
            Some(held) = next(&mut arrivals) => agent.admit(held),
            Some(query) = queries.recv() => {
                // Unanswered, the request gets 503; the error is counted.
                if let Some(snapshot) = agent.snapshot() {
                    let _ = query.send(snapshot);
                }
            }
            _ = rescan.tick() => {
                agent.sweep();
                agent.reattach_if_drm_reloaded();
                // sysfs is read on a blocking thread; the loop goes on
                // answering meanwhile and takes the result below.
                if !scanning {
                    scanning = true;
                    let (roots, found) = (roots.clone(), found_tx.clone());
                    let claims = agent.table.vendors.char_claims();
                    tokio::task::spawn_blocking(move || {
                        let _ = found.blocking_send(discovery::discover(&roots, &claims).devices);
                    });
                }
            }
            _ = fdinfo_tick.tick(), if agent.fdinfo.is_some() && !reading_fdinfo => {
                reading_fdinfo = true;
                agent.read_fdinfo(scanned_tx.clone());
            }
            Some((scan, took)) = scanned_rx.recv() => {
                reading_fdinfo = false;
                if let Some(reader) = &mut agent.fdinfo {
                    reader.take(scan, took, clock::boottime());
                }
            }
            Some(devices) = found_rx.recv() => {
                scanning = false;
                if devices != agent.devices() {
                    agent.table = DeviceTable::build(devices, agent.table.vendors.clone());
                    agent.reinstall();
                }
            }
            Some(update) = vendor_rx.recv() => match update {
                Ok(update) => agent.take_vendors(update, &roots),
                Err(e) => warn!("cannot read the plugins directory: {e}"),
            },
        }
    }
    ready.store(false, Ordering::Release);
    if agent.admissions.is_some() {
        // Hooks find no agent at once, and let their containers start.
        let _ = std::fs::remove_file(&config.admission_socket);
    }
    let _ = stop_server.send(());
    drop(queries);
    let _ = time::timeout(Duration::from_secs(5), server).await;
    info!(
        "stopping; the program stays attached and counting, pinned at {}",
        config.pin_path.display()
    );
    Ok(())
}

/// What the agent's loop owns.
struct Agent {
    probe: Probe,
    usage: Usage,
    /// The devices and vendors in force.
    table: DeviceTable,
    /// Questions for the container runtime.
    asks: mpsc::UnboundedSender<Ask>,
    /// The Kubernetes node, for `kubenpu_device_info`.
    node: String,
    cri_up: bool,
    /// Errors met after start-up, which the agent goes on from.
    faults: Faults,
    /// The fdinfo reader, with `--fdinfo`.
    fdinfo: Option<fdinfo::Reader>,
    /// The allocation join, unless `--no-allocation`.
    allocation: Option<Allocation>,
    /// The policy, which rules what the join classified; none without it.
    policy: Option<Policy>,
    /// Containers the runtime holds at their creation until they are
    /// ruled; none where the admission socket is not served.
    admissions: Option<Admissions>,
    /// The claimed character devices without nodes here, as last logged.
    absent_char_devices: Vec<String>,
}

impl Agent {
    /// Puts the vendors of a changed plugins directory in force. Devices
    /// are found anew only where the character devices claimed changed.
    fn take_vendors(&mut self, update: Vendors, roots: &Roots) {
        report_rejections(&update, &self.table.vendors);
        if summary(&update) != summary(&self.table.vendors) {
            info!("vendors: {}", summary(&update));
        }
        let claims = update.char_claims();
        let devices = if claims == self.table.vendors.char_claims() {
            self.devices()
        } else {
            discovery::discover(roots, &claims).devices
        };
        self.table = DeviceTable::build(devices, update);
        self.reinstall();
    }

    /// The discovered devices.
    fn devices(&self) -> Vec<discovery::Device> {
        self.table
            .entries
            .iter()
            .map(|e| e.device.clone())
            .collect()
    }

    /// Uploads the device table and logs what is counted.
    fn install(&mut self) -> anyhow::Result<()> {
        for problem in &self.table.problems {
            warn!("{problem}");
        }
        // Grants for new device nodes first, so that a node the kernel
        // checks is never without the grants of the containers given it;
        // the grants of nodes no longer claimed go once the kernel no
        // longer checks them.
        self.enforce_upto(Step::Widen);
        self.probe.upload(&self.table)?;
        self.link_entries();
        self.usage.learn(&self.table);
        if let Some(allocation) = &mut self.allocation {
            allocation.resolve(&self.table, &self.usage);
        }
        self.enforce();
        let claimed: Vec<String> = self
            .table
            .claimed()
            .map(|(device, vendor)| format!("{} ({})", device.name, vendor.name()))
            .collect();
        if claimed.is_empty() {
            info!("no accelerator found: idle, watching for devices and plugins");
        } else {
            info!("counting on {}", claimed.join(", "));
        }
        Ok(())
    }

    /// Hooks the ioctl entries of the claimed character devices' drivers,
    /// and says which claimed character devices have no nodes here, when
    /// that changes.
    fn link_entries(&mut self) {
        let wanted = self.table.char_entries();
        let outcome = self.probe.link_entries(&wanted);
        if let Some(changes) = self.faults.check("entries", outcome, log_line)
            && !changes.is_empty()
        {
            info!("character devices: {changes}");
        }
        let absent = self.table.absent_char_devices();
        if !absent.is_empty() && absent != self.absent_char_devices {
            info!(
                "no nodes of the character devices {}: not counted until they appear",
                absent.join(", ")
            );
        }
        self.absent_char_devices = absent;
    }

    /// [`Agent::install`] after start-up: an error is counted and logged,
    /// and the previous tables stay in force in the kernel.
    fn reinstall(&mut self) {
        let outcome = self.install();
        self.faults.check("install", outcome, log_line);
    }

    /// Re-attaches if the `drm` module was reloaded.
    fn reattach_if_drm_reloaded(&mut self) {
        let outcome = self.probe.reattach_if_drm_reloaded();
        if self.faults.check("reattach", outcome, log_line) == Some(true) {
            info!(
                "hook {}: {}",
                self.probe.hook().as_str(),
                self.probe.hook_reason()
            );
        }
    }

    /// Scans the counted cgroups' DRM clients on a blocking thread; the
    /// scan and its duration arrive on `done`.
    fn read_fdinfo(&self, done: mpsc::Sender<(fdinfo::Scan, Duration)>) {
        let Some(reader) = &self.fdinfo else {
            return;
        };
        let mut targets = fdinfo::Targets {
            cgroups: self.usage.attributor.live(),
            ..fdinfo::Targets::default()
        };
        for (device, vendor) in self.table.claimed() {
            let labels = fdinfo::DeviceLabels {
                device: device.name.as_str().into(),
                vendor: vendor.name().into(),
            };
            let names = &vendor.description.usage_names;
            targets.names.insert(labels.vendor.clone(), names.clone());
            for node in &device.nodes {
                targets.devices.insert(node.dev, labels.clone());
            }
        }
        let proc_root = reader.proc_root().to_owned();
        tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let scan = fdinfo::scan(&proc_root, &targets);
            let _ = done.blocking_send((scan, start.elapsed()));
        });
    }

    /// Takes the kernel's new-key notes: a new cgroup is named at once.
    fn drain(&mut self) {
        let outcome = self.probe.drain_notes();
        let Some(keys) = self.faults.check("drain", outcome, log_line) else {
            return;
        };
        let now = Instant::now();
        for key in keys {
            debug!(
                "new key: cgroup {} dev {:#x} nr {:#04x}",
                key.cgroup_id, key.dev, key.nr
            );
            let probe = &self.probe;
            let recorded = || probe.cgroup_path(key.cgroup_id);
            if let Some(ask) = self.usage.attributor.note(key.cgroup_id, now, recorded) {
                let _ = self.asks.send(ask);
            }
        }
        self.save_names();
    }

    /// Takes a report of the CRI resolver.
    fn report(&mut self, report: Report) {
        match report {
            Report::Answer(ask, owner) => {
                debug!("CRI: {ask:?} is {owner:?}");
                if let (Some(allocation), Some(owner)) = (&mut self.allocation, &owner) {
                    allocation.want(owner);
                }
                self.usage.attributor.answer(ask, owner);
                self.save_names();
                if let Some(allocation) = &mut self.allocation {
                    allocation.classify(&self.usage);
                }
                self.enforce();
            }
            Report::Down(e) => {
                self.cri_up = false;
                warn!("{e}; counting goes on, and new containers are named when it answers");
            }
            Report::Up(socket) => {
                self.cri_up = true;
                info!("CRI: {}", socket.display());
            }
        }
    }

    /// Takes a report of the allocation reader.
    fn take_allocation(&mut self, report: AllocationReport) {
        if let Some(allocation) = &mut self.allocation {
            allocation.take(report, &self.table, &self.usage);
        }
        self.enforce();
    }

    /// Takes a reading of the policy file, attaches or detaches the
    /// checks where its namespaces alone ask for them, and writes what it
    /// changes.
    fn take_policy_file(&mut self, reading: policy::reload::Reading) {
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
    fn enforce(&mut self) {
        self.enforce_upto(Step::Tighten);
        self.settle();
    }

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
    fn settle(&mut self) {
        let (Some(admissions), Some(policy)) = (&mut self.admissions, &self.policy) else {
            return;
        };
        let (usage, allocation) = (&self.usage, self.allocation.as_ref());
        admissions.settle(Instant::now(), |id, since| {
            policy.standing(id, since, usage, allocation)
        });
    }

    /// [`Agent::enforce`], with only the writes up to `upto`.
    fn enforce_upto(&mut self, upto: Step) {
        let (Some(policy), Some(allocation)) = (&mut self.policy, &self.allocation) else {
            return;
        };
        let state = (allocation.classified(), &self.table, &self.usage);
        let outcome = policy.sync(&mut self.probe, state, upto);
        self.faults.check("policy", outcome, log_line);
    }

    /// Takes up the policy rules a predecessor left pinned, for the
    /// cgroups restored as live.
    fn adopt_rules(&mut self) {
        let Some(policy) = self.policy.as_mut().filter(|p| p.wants_checks()) else {
            return;
        };
        let outcome = self.probe.rules();
        if let Some(rules) = self.faults.check("restore", outcome, log_line) {
            policy.adopt(rules, &self.usage);
        }
    }

    /// Names the cgroups a predecessor named, from the pinned OWNERS map.
    fn restore(&mut self) {
        let outcome = self.probe.owners();
        let Some(records) = self.faults.check("restore", outcome, log_line) else {
            return;
        };
        let named: Vec<Named> = records
            .iter()
            .map(|(id, record)| owner_record::named(*id, record))
            .collect();
        if !named.is_empty() {
            info!(
                "restored the names of {} cgroup(s) ({} gone)",
                named.len(),
                named.iter().filter(|n| n.gone_at.is_some()).count()
            );
        }
        self.usage.attributor.restore(named, Instant::now());
    }

    /// Writes new names, and removals, to the pinned OWNERS map.
    fn save_names(&mut self) {
        for named in self.usage.attributor.unsaved() {
            let outcome = self
                .probe
                .save_owner(named.id, &owner_record::record(&named));
            self.faults.check("save", outcome, log_line);
        }
    }

    /// Notes the cgroups that are gone, merges the counters of an owner's
    /// gone cgroups into one, and removes those whose grace is over.
    fn sweep(&mut self) {
        let outcome = self.probe.counters();
        let Some(counters) = self.faults.check("sweep", outcome, log_line) else {
            return;
        };
        let probe = &self.probe;
        let sweep = self.usage.sweep(
            &counters,
            |id| probe.cgroup_path(id),
            Instant::now(),
            clock::boottime(),
        );
        for ask in sweep.asks {
            let _ = self.asks.send(ask);
        }
        self.save_names();
        let mut done = Vec::new();
        for &(from, into) in &sweep.merges {
            let outcome = self.probe.merge_cgroup(from, into);
            if self.faults.check("sweep", outcome, log_line).is_some() {
                done.push(from);
                if let Some(reader) = &mut self.fdinfo {
                    reader.merge(from, into);
                }
                if let Some(allocation) = &mut self.allocation {
                    allocation.merged(from, into);
                }
            }
        }
        for &id in &sweep.expired {
            let outcome = self.probe.remove_cgroup(id);
            if self.faults.check("sweep", outcome, log_line).is_some() {
                done.push(id);
                if let Some(reader) = &mut self.fdinfo {
                    reader.remove(id);
                }
            }
        }
        if !done.is_empty() {
            debug!(
                "{} gone cgroup(s) merged, {} expired",
                sweep.merges.len(),
                sweep.expired.len()
            );
        }
        self.usage.attributor.forget(&done);
        if let Some(allocation) = &mut self.allocation {
            allocation.forget(&done);
            allocation.classify(&self.usage);
        }
        self.enforce();
    }

    /// Everything a scrape shows, read now; `None` if the kernel's maps
    /// could not be read (counted as a scrape error).
    fn snapshot(&mut self) -> Option<Snapshot> {
        let outcome = self.probe.counts();
        let reading = self.faults.check("scrape", outcome, log_line)?;
        Some(Snapshot {
            ioctls: self.usage.totals(&reading.counters),
            durations: self.usage.durations(&reading.durations, &reading.counters),
            unmeasured: reading.unmeasured,
            devices: DeviceInfo::rows(&self.table, &self.node),
            plugins: PluginInfo::rows(&self.table),
            losses: reading.losses,
            index_rebuilds: self.usage.attributor.index().rebuilds(),
            hook: self.probe.hook().as_str(),
            reads: self.probe.reads(),
            cri_up: self.cri_up,
            errors: self.faults.counts(),
            fdinfo: self
                .fdinfo
                .as_ref()
                .map(|reader| reader.view(|id| self.usage.owner(id))),
            allocation: self
                .allocation
                .as_ref()
                .map(|allocation| allocation.view(&reading.counters, &self.usage)),
            policy: self.policy.as_ref().map(|policy| {
                // Read with the checks off too: what they refused before
                // they were detached stays counted.
                let verdicts = self.faults.check("scrape", self.probe.verdicts(), log_line);
                let mut view = policy.view(verdicts, &self.usage, &self.table);
                view.admissions = self.admissions.as_ref().map(|a| a.outcomes().clone());
                view
            }),
        })
    }
}

/// Serves `kubenpu-oci-hook` on the admission socket, for cgroups under
/// `cgroup_root`; without it (one line says why), containers are ruled
/// at their first open.
fn start_admission(
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

/// The next report of an optional reader; never, without one.
async fn next<T>(reports: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match reports {
        Some(reports) => reports.recv().await,
        None => std::future::pending().await,
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

/// The vendors in force, one line: `name version (source)`, ...
fn summary(vendors: &Vendors) -> String {
    let names: Vec<String> = vendors
        .plugins
        .iter()
        .map(|p| format!("{} {} ({})", p.name(), p.description.version, p.source))
        .collect();
    names.join(", ")
}

/// Logs rejections that are new since `before`.
fn report_rejections(now: &Vendors, before: &Vendors) {
    for rejection in &now.rejected {
        if !before.rejected.contains(rejection) {
            warn!("{rejection}");
        }
    }
}

/// CAP_SYS_ADMIN, CAP_PERFMON and CAP_BPF as bits of the capability sets.
const CAP_SYS_ADMIN: u64 = 1 << 21;
const CAP_PERFMON: u64 = 1 << 38;
const CAP_BPF: u64 = 1 << 39;

/// What the kernel must offer, checked before anything is loaded so each
/// gap is one line with its remedy. Returns the cgroup2 hierarchy's root.
fn preflight(cgroup_root: Option<&Path>) -> anyhow::Result<PathBuf> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let has = |caps: u64| effective & caps == caps;
    if !has(CAP_BPF | CAP_PERFMON) && !has(CAP_SYS_ADMIN) {
        anyhow::bail!(
            "needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load and attach its program: run it as root or grant them"
        );
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        anyhow::bail!(
            "no kernel BTF at /sys/kernel/btf/vmlinux: the kernel needs CONFIG_DEBUG_INFO_BTF=y"
        );
    }
    if let Some(root) = cgroup_root {
        if !root.join("cgroup.procs").exists() {
            anyhow::bail!(
                "--cgroup-root {} is not a cgroup v2 hierarchy (no cgroup.procs in it)",
                root.display()
            );
        }
        return Ok(root.to_owned());
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mount::cgroup2_mount(&mounts).ok_or_else(|| {
        anyhow::anyhow!(
            "cgroup v2 is not mounted: per-pod counts need the unified hierarchy (mount -t cgroup2 none /sys/fs/cgroup), or give its mount point with --cgroup-root"
        )
    })
}

/// A warning already formatted (for [`Faults`]).
fn log_line(line: String) {
    warn!("{line}");
}
