//! The agent's command line: every setting with a default that works on a
//! standard node.

use std::{path::PathBuf, time::Duration};

use clap::Parser;

use crate::{
    admission,
    allocation::{cdi, podresources, reader},
    logging::{LogFormat, LogLevel},
    placement, plugins,
    policy::PolicyMode,
    probe::HookChoice,
};

/// kubenpu-agent: counts accelerator ioctls per cgroup on this node.
#[derive(Debug, Clone, Parser)]
#[command(version, about)]
pub struct AgentConfig {
    /// Hook on drm_ioctl: auto takes the first the kernel allows of
    /// kprobe-session, kprobe-multi and kprobe (all exact) and fentry
    /// (cheap, but skips calls where kernel code is preempted, counted as
    /// recursion losses).
    #[arg(long, value_enum, default_value = "auto")]
    pub hook: HookChoice,
    /// Print the kernel verifier's full log if a program is rejected, and
    /// log at debug level (each new key the kernel notes, each CRI answer).
    #[arg(long)]
    pub debug: bool,
    /// How log lines are written: text, or JSON objects for log pipelines.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The least severe level logged (--debug implies debug).
    #[arg(long, value_enum, default_value = "info")]
    pub log_level: LogLevel,
    /// bpffs directory where the maps and link are pinned, so counts
    /// survive agent restarts.
    #[arg(long, default_value = "/sys/fs/bpf/kubenpu")]
    pub pin_path: PathBuf,
    /// Remove the pinned program and maps (and their counts), then exit.
    #[arg(long)]
    pub cleanup: bool,
    /// Directory of vendor plugins (*.wasm) that add to or replace the built-ins.
    #[arg(long, default_value = plugins::DEFAULT_DIR)]
    pub plugins_dir: PathBuf,
    /// Distinct (cgroup, device, ioctl) counters the kernel map holds;
    /// calls for keys beyond it are counted as lost (reason map_full). The
    /// policy's verdicts map holds as many (cgroup, device, check) keys.
    #[arg(long, default_value_t = 16384, value_parser = parse_max_counters)]
    pub max_counters: u32,
    /// Read sysfs from here instead of /sys.
    #[arg(long, default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// Read device nodes from here instead of /dev.
    #[arg(long, default_value = "/dev")]
    pub dev_root: PathBuf,
    /// How often to look for hot-plugged devices and a reloaded drm module.
    #[arg(long, default_value = "2s", value_parser = parse_interval)]
    pub rescan_interval: Duration,
    /// How often to drain the kernel's new-key notes.
    #[arg(long, default_value = "100ms", value_parser = parse_interval)]
    pub drain_interval: Duration,
    /// The cgroup v2 hierarchy the kernel's cgroup ids refer to; found in
    /// /proc/self/mountinfo when not given (/sys/fs/cgroup, or
    /// /sys/fs/cgroup/unified on hybrid nodes).
    #[arg(long)]
    pub cgroup_root: Option<PathBuf>,
    /// The container runtime's CRI socket; when not given, the first of
    /// the usual containerd, CRI-O, k3s and cri-dockerd sockets that exists.
    #[arg(long)]
    pub cri_socket: Option<PathBuf>,
    /// How long one CRI call may take.
    #[arg(long, default_value = "2s", value_parser = parse_interval)]
    pub cri_timeout: Duration,
    /// How long the series of a pod that is gone is still exported, so a
    /// scrape sees its final count.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub series_grace: Duration,
    /// Where /metrics, /healthz, /readyz and /api/v1/usage are served.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: std::net::SocketAddr,
    /// Also read engine time and device memory per pod from DRM fdinfo,
    /// for the drivers that publish them (i915, xe, amdgpu, msm, panfrost,
    /// panthor, v3d, etnaviv, ivpu, amdxdna). Needs the host's /proc and
    /// pid namespace, and CAP_SYS_PTRACE for other users' processes.
    #[arg(long)]
    pub fdinfo: bool,
    /// How often the fdinfo reader visits the processes of the counted
    /// cgroups.
    #[arg(long, default_value = "10s", value_parser = parse_interval, requires = "fdinfo")]
    pub fdinfo_interval: Duration,
    /// The /proc the fdinfo reader visits.
    #[arg(long, default_value = "/proc", requires = "fdinfo")]
    pub proc_root: PathBuf,
    /// Also divide each device's energy among the pods that used and held
    /// it, from the sensor its vendor's plugin names (hwmon energy or
    /// power, or amdgpu's gpu_metrics), read after each fdinfo scan. Needs
    /// --fdinfo for the engine time it divides by.
    #[arg(long, requires = "fdinfo")]
    pub energy: bool,
    /// Leave out calls by processes outside pods (by default they are
    /// counted with empty pod, namespace and container labels).
    #[arg(long)]
    pub exclude_outside_pods: bool,
    /// kubelet's PodResources socket, for the allocation join (which
    /// devices each container was given against the calls it makes).
    /// Until it exists the join waits; mount its directory, not the
    /// socket, so a kubelet restart is seen.
    #[arg(long, default_value = podresources::DEFAULT_SOCKET)]
    pub pod_resources_socket: PathBuf,
    /// Leave out the allocation join.
    #[arg(long)]
    pub no_allocation: bool,
    /// Allow or block each container's access to accelerators, with BPF
    /// LSM: off; audit (count what enforce would refuse, refuse nothing);
    /// enforce (refuse it with EPERM, and count it). The base rule is
    /// allocated-only: a container the allocation join classified may
    /// open and call only the devices kubelet allocated to it (and what
    /// --policy-file allows); processes outside pods, and containers not
    /// classified yet, are never refused.
    #[arg(
        long,
        value_enum,
        default_value = "off",
        conflicts_with = "no_allocation"
    )]
    pub policy: PolicyMode,
    /// How long the policy's checks go on refusing without an agent: each
    /// rescan renews their lease; once no agent has for this long (it was
    /// uninstalled, or cannot start), they refuse nothing. At least twice
    /// --rescan-interval.
    #[arg(long, default_value = "5m", value_parser = parse_interval)]
    pub policy_lease: Duration,
    /// The policy file (YAML or JSON): modes per namespace, and rules
    /// that allow devices besides the allocation, deny devices, or deny
    /// kinds of calls (see the README). Its directory is watched: a change
    /// is in force within a second; a file that does not parse is refused
    /// in one line and the rules before it stay. No file: no rules.
    #[arg(long, conflicts_with = "no_allocation")]
    pub policy_file: Option<PathBuf>,
    /// Where the agent answers `kubenpu-oci-hook`, which holds each
    /// container at its creation until the agent has ruled it, so the
    /// policy checks its first call (see the README). Served while the
    /// policy is audit or enforce, or a policy file is given; nothing
    /// listens otherwise, and the hook lets containers start at once.
    #[arg(long, default_value = admission::DEFAULT_SOCKET)]
    pub admission_socket: PathBuf,
    /// The longest the agent holds a container at its creation while it
    /// asks the runtime and kubelet about it; past it, the container
    /// starts unruled and is ruled at its first open.
    #[arg(long, default_value = "2s", value_parser = parse_interval)]
    pub admission_wait: Duration,
    /// How often kubelet's allocations are listed; a listing older than
    /// three intervals is stale, and nothing is classified by it.
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub allocation_interval: Duration,
    /// A directory of CDI specs, for DRA claims (repeat for several).
    #[arg(long = "cdi-dir", default_values = cdi::DEFAULT_DIRS)]
    pub cdi_dirs: Vec<PathBuf>,
    /// Placement of accelerator threads: off; hints (each thread's device
    /// node, published for `kubenpuctl placement` and other schedulers);
    /// sched-ext (hints, and a fair sched_ext scheduler that wakes each
    /// thread on an idle CPU of its device's node; where the kernel has
    /// no sched_ext or another scheduler runs, it stays on hints).
    #[arg(long, value_enum, default_value = "off")]
    pub placement: placement::Mode,
}

impl AgentConfig {
    /// The allocation reader's settings, from these flags.
    pub fn allocation(&self) -> reader::Settings {
        reader::Settings {
            socket: self.pod_resources_socket.clone(),
            interval: self.allocation_interval,
            timeout: self.cri_timeout,
            cri_socket: self.cri_socket.clone(),
            cdi_dirs: self.cdi_dirs.clone(),
            dev_root: self.dev_root.clone(),
        }
    }
}

/// The most counters the kernel map may be asked to hold. The hash is
/// preallocated, and the names map beside it holds a cgroup's path per
/// counted cgroup.
pub const MAX_COUNTERS: u32 = 1 << 20;

/// Kernel memory the counters map preallocates per key: the hash
/// element's header, the 16-byte key and the value (56 bytes).
const BYTES_PER_KEY: u64 = 64 + size_of::<kubenpu_ebpf::CountValue>() as u64;

/// `--max-counters`: at least 1, at most [`MAX_COUNTERS`].
fn parse_max_counters(text: &str) -> Result<u32, String> {
    let keys: u64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of counters"))?;
    if keys == 0 {
        return Err("the map must hold at least 1 counter".into());
    }
    if keys > u64::from(MAX_COUNTERS) {
        let bytes = keys.saturating_mul(BYTES_PER_KEY);
        return Err(format!(
            "{keys} counters would preallocate about {} MiB of kernel memory; at most {MAX_COUNTERS} are allowed",
            bytes >> 20
        ));
    }
    Ok(keys as u32)
}

/// `250ms`, `2s`, `1m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 250ms, 2s or 1m");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let too_long = || format!("{text:?} is too long a duration");
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(
            number.checked_mul(60).ok_or_else(too_long)?,
        )),
        _ => Err(bad()),
    }
}

/// A duration that paces a loop or bounds a wait: above zero.
fn parse_interval(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        Duration::ZERO => Err(format!(
            "{text:?} is zero: give a duration above 0, such as 250ms"
        )),
        duration => Ok(duration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_only() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("2").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("2h").is_err());
    }

    #[test]
    fn bad_flags_are_one_line_errors() {
        let error = AgentConfig::try_parse_from(["kubenpu-agent", "--hook", "uprobe"]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("invalid value 'uprobe' for '--hook"),
            "{error}"
        );
        let error =
            AgentConfig::try_parse_from(["kubenpu-agent", "--max-counters", "0"]).unwrap_err();
        assert!(error.to_string().contains("--max-counters"), "{error}");
    }

    fn error(args: &[&str]) -> String {
        let mut argv = vec!["kubenpu-agent"];
        argv.extend(args);
        AgentConfig::try_parse_from(argv).unwrap_err().to_string()
    }

    #[test]
    fn zero_and_overflowing_durations_are_refused() {
        for flag in [
            "--drain-interval",
            "--rescan-interval",
            "--cri-timeout",
            "--fdinfo-interval",
            "--admission-wait",
        ] {
            let text = error(&[flag, "0ms"]);
            assert!(text.contains("is zero: give a duration above 0"), "{text}");
        }
        let text = error(&["--series-grace", "999999999999999999m"]);
        assert!(text.contains("too long a duration"), "{text}");
        assert!(AgentConfig::try_parse_from(["kubenpu-agent", "--series-grace", "0s"]).is_ok());
    }

    #[test]
    fn the_readers_settings_need_the_reader() {
        for args in [["--fdinfo-interval", "5s"], ["--proc-root", "/host/proc"]] {
            let text = error(&args);
            assert!(text.contains("--fdinfo"), "{text}");
        }
        // The energy meter divides by the reader's engine time.
        let text = error(&["--energy"]);
        assert!(text.contains("--fdinfo"), "{text}");
        assert!(AgentConfig::try_parse_from(["kubenpu-agent", "--fdinfo", "--energy"]).is_ok());
        let config =
            AgentConfig::try_parse_from(["kubenpu-agent", "--fdinfo", "--fdinfo-interval", "5s"]);
        assert_eq!(config.unwrap().fdinfo_interval, Duration::from_secs(5));
    }

    #[test]
    fn a_huge_counter_map_is_refused_with_its_kernel_memory() {
        let text = error(&["--max-counters", "4294967295"]);
        assert!(
            text.contains("would preallocate about") && text.contains("MiB of kernel memory"),
            "{text}"
        );
        assert!(text.contains("at most 1048576 are allowed"), "{text}");
        let limit = MAX_COUNTERS.to_string();
        let config = AgentConfig::try_parse_from(["kubenpu-agent", "--max-counters", &limit]);
        assert_eq!(config.unwrap().max_counters, MAX_COUNTERS);
    }
}
