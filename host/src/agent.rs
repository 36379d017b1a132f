//! The agent's life: check the kernel, build the device table, load and
//! attach the probe, then keep the kernel's tables in step with devices and
//! plugins until SIGTERM. The program stays attached and counting when the
//! agent stops; the next agent adopts it.

use std::path::Path;

use tokio::{signal::unix, sync::mpsc, time};

use crate::{
    config::AgentConfig,
    device_table::DeviceTable,
    discovery::{self, Roots},
    plugins::{PluginHost, Vendors, Watcher},
    probe::{self, Probe},
};

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
    preflight()?;
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
    let mut devices = discovery::discover(&roots).devices;
    let claimed = install(&mut probe, devices.clone(), vendors.clone())?;

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
                for key in probe.drain_notes()? {
                    if config.debug {
                        log(format_args!("new key: cgroup {} dev {:#x} nr {:#04x}", key.cgroup_id, key.dev, key.nr));
                    }
                }
            }
            _ = rescan.tick() => {
                if probe.reattach_if_drm_reloaded()? {
                    log(format_args!("hook {}: {}", probe.hook().as_str(), probe.hook_reason()));
                }
                let now = discovery::discover(&roots).devices;
                if now != devices {
                    devices = now;
                    install(&mut probe, devices.clone(), vendors.clone())?;
                }
            }
            Some(update) = vendor_rx.recv() => match update {
                Ok(update) => {
                    report_rejections(&update, &vendors);
                    if summary(&update) != summary(&vendors) {
                        log(format_args!("vendors: {}", summary(&update)));
                    }
                    vendors = update;
                    install(&mut probe, devices.clone(), vendors.clone())?;
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
    devices: Vec<discovery::Device>,
    vendors: Vendors,
) -> anyhow::Result<usize> {
    let table = DeviceTable::build(devices, vendors);
    for problem in &table.problems {
        log(format_args!("{problem}"));
    }
    probe.upload(&table)?;
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
/// gap is one line with its remedy.
fn preflight() -> anyhow::Result<()> {
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
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if !mounts.lines().any(|l| {
        l.split(" - ")
            .nth(1)
            .is_some_and(|fs| fs.starts_with("cgroup2 "))
    }) {
        anyhow::bail!(
            "cgroup v2 is not mounted: per-pod counts need the unified hierarchy (mount -t cgroup2 none /sys/fs/cgroup)"
        );
    }
    Ok(())
}

/// One line on stderr, prefixed with the program's name.
pub fn log(message: std::fmt::Arguments<'_>) {
    eprintln!("kubenpu-agent: {message}");
}
