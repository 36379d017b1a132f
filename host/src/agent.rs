//! The agent's life: check the kernel, build the device table, load and
//! attach the probe, then keep the kernel's tables in step with devices and
//! plugins until SIGTERM. The program stays attached and counting when the
//! agent stops; the next agent adopts it.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tokio::{signal::unix, sync::mpsc, time};

use crate::{
    attribution::{
        Attributor,
        cri::Cri,
        index::CgroupIndex,
        ledger::Ledger,
        mount,
        resolver::{self, Report},
    },
    config::AgentConfig,
    device_table::DeviceTable,
    discovery::{self, Roots},
    plugins::{PluginHost, Vendors, Watcher},
    probe::{self, Probe},
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
        probe::cleanup(&config.pin_path)
            .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", config.pin_path.display()))?;
        log(format_args!(
            "removed {} (program detached, counts gone)",
            config.pin_path.display()
        ));
        return Ok(());
    }
    let cgroup_root = preflight(config.cgroup_root.as_deref())?;
    let roots = Roots {
        sysfs: config.sysfs_root.clone(),
        dev: config.dev_root.clone(),
    };
    let mut host = PluginHost::new(&config.plugins_dir)?;
    let mut vendors = host.scan().map_err(|e| {
        anyhow::anyhow!(
            "cannot read the plugins directory {}: {e}",
            config.plugins_dir.display()
        )
    })?;
    report_rejections(&vendors, &Vendors::default());

    let mut probe = Probe::start(probe::Config {
        pin_dir: config.pin_path.clone(),
        hook: config.hook,
        max_counters: config.max_counters,
        debug: config.debug,
    })?;
    log(format_args!(
        "hook {}: {}",
        probe.hook().as_str(),
        probe.hook_reason()
    ));
    let mut usage = Usage::new(
        Attributor::new(CgroupIndex::new(&cgroup_root, MIN_WALK_INTERVAL)),
        Ledger::new(config.series_grace),
        !config.exclude_outside_pods,
    );
    log(format_args!("cgroups: {}", cgroup_root.display()));
    let (asks, mut reports) = resolver::spawn(
        Cri::new(config.cri_socket.clone(), config.cri_timeout),
        CRI_RETRY,
    );
    let mut devices = discovery::discover(&roots).devices;
    let claimed = install(&mut probe, &mut usage, devices.clone(), vendors.clone())?;

    let (vendor_tx, mut vendor_rx) = mpsc::unbounded_channel();
    let _watcher = if config.plugins_dir.is_dir() {
        Some(Watcher::spawn(host, move |update| {
            let _ = vendor_tx.send(update);
        })?)
    } else {
        log(format_args!(
            "plugins directory {} does not exist: built-in vendors only (create it to add plugins)",
            config.plugins_dir.display()
        ));
        None
    };

    let mut terminate = unix::signal(unix::SignalKind::terminate())?;
    let mut interrupt = unix::signal(unix::SignalKind::interrupt())?;
    let mut rescan = time::interval(config.rescan_interval);
    let mut drain = time::interval(config.drain_interval);
    for timer in [&mut rescan, &mut drain] {
        timer.set_missed_tick_behavior(time::MissedTickBehavior::Delay);
    }
    log(format_args!("ready: counting on {claimed} device(s)"));
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = drain.tick() => {
                let now = Instant::now();
                for key in probe.drain_notes()? {
                    if config.debug {
                        log(format_args!("new key: cgroup {} dev {:#x} nr {:#04x}", key.cgroup_id, key.dev, key.nr));
                    }
                    if let Some(ask) = usage.attributor.note(key.cgroup_id, now) {
                        let _ = asks.send(ask);
                    }
                }
            }
            Some(report) = reports.recv() => match report {
                Report::Answer(ask, owner) => {
                    if config.debug {
                        log(format_args!("CRI: {ask:?} is {owner:?}"));
                    }
                    usage.attributor.answer(ask, owner);
                }
                Report::Down(e) => log(format_args!(
                    "{e}; counting goes on, and new containers are named when it answers"
                )),
                Report::Up(socket) => log(format_args!("CRI: {}", socket.display())),
            },
            _ = rescan.tick() => {
                let (counters, _) = probe.counts()?;
                let sweep = usage.sweep(&counters, Instant::now());
                for ask in sweep.asks {
                    let _ = asks.send(ask);
                }
                if !sweep.gone.is_empty() {
                    let removed = probe.remove_cgroups(&sweep.gone)?;
                    if config.debug {
                        log(format_args!("{} cgroup(s) gone: {removed} counter(s) folded", sweep.gone.len()));
                    }
                }
                if probe.reattach_if_drm_reloaded()? {
                    log(format_args!("hook {}: {}", probe.hook().as_str(), probe.hook_reason()));
                }
                let now = discovery::discover(&roots).devices;
                if now != devices {
                    devices = now;
                    install(&mut probe, &mut usage, devices.clone(), vendors.clone())?;
                }
            }
            Some(update) = vendor_rx.recv() => match update {
                Ok(update) => {
                    report_rejections(&update, &vendors);
                    if summary(&update) != summary(&vendors) {
                        log(format_args!("vendors: {}", summary(&update)));
                    }
                    vendors = update;
                    install(&mut probe, &mut usage, devices.clone(), vendors.clone())?;
                }
                Err(e) => log(format_args!("cannot read the plugins directory: {e}")),
            },
        }
    }
    log(format_args!(
        "stopping; the program stays attached and counting, pinned at {}",
        config.pin_path.display()
    ));
    Ok(())
}

/// Builds the device table and uploads it; logs what is counted and
/// returns how many devices are.
fn install(
    probe: &mut Probe,
    usage: &mut Usage,
    devices: Vec<discovery::Device>,
    vendors: Vendors,
) -> anyhow::Result<usize> {
    let table = DeviceTable::build(devices, vendors);
    for problem in &table.problems {
        log(format_args!("{problem}"));
    }
    probe.upload(&table)?;
    usage.learn(&table);
    let claimed: Vec<String> = table
        .claimed()
        .map(|(device, vendor)| format!("{} ({})", device.name, vendor.name()))
        .collect();
    if claimed.is_empty() {
        log(format_args!(
            "no accelerator found: idle, watching for devices and plugins"
        ));
    } else {
        log(format_args!("counting on {}", claimed.join(", ")));
    }
    Ok(claimed.len())
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
            log(format_args!("{rejection}"));
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

/// One line on stderr, prefixed with the program's name.
pub fn log(message: std::fmt::Arguments<'_>) {
    eprintln!("kubenpu-agent: {message}");
}
