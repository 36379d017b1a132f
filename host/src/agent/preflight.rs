//! What the flags and the kernel must offer, checked before anything is
//! loaded, so that each gap is one line with its remedy.

use std::path::{Path, PathBuf};

use crate::{attribution::mount, config::AgentConfig, policy::PolicyMode};

/// CAP_SYS_ADMIN, CAP_PERFMON and CAP_BPF as bits of the capability sets.
const CAP_SYS_ADMIN: u64 = 1 << 21;
const CAP_PERFMON: u64 = 1 << 38;
const CAP_BPF: u64 = 1 << 39;

/// Checks the flags that only make sense together, then the kernel.
/// Returns the cgroup2 hierarchy's root.
pub(super) fn check(config: &AgentConfig) -> anyhow::Result<PathBuf> {
    if config.policy != PolicyMode::Off && config.policy_lease < 2 * config.rescan_interval {
        anyhow::bail!(
            "--policy-lease {:?} is shorter than twice --rescan-interval {:?}: each rescan renews it, so the checks would lapse between two",
            config.policy_lease,
            config.rescan_interval
        );
    }
    let cgroup_root = kernel(config.cgroup_root.as_deref())?;
    if config.fdinfo && !config.proc_root.join("stat").is_file() {
        anyhow::bail!(
            "--proc-root {} is not a proc filesystem (it has no stat file): give the node's /proc for --fdinfo to read",
            config.proc_root.display()
        );
    }
    Ok(cgroup_root)
}

/// What the kernel must offer: the capabilities to load and attach, BTF,
/// and cgroup v2 (at `cgroup_root` if given). Returns the hierarchy's root.
fn kernel(cgroup_root: Option<&Path>) -> anyhow::Result<PathBuf> {
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
