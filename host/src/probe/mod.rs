//! The kernel side, from the agent's seat: load the program built from
//! `host-ebpf` with the running kernel's struct offsets, attach it to
//! `drm_ioctl` with the best hook the kernel allows, keep its maps and link
//! pinned so counts survive restarts, fill its device and ioctl tables, and
//! read its counters.

mod btf;
mod counter;
mod dump;
mod hook;
mod inflight;
mod kfunc;
mod lease;
mod names;
mod owners;
mod pins;
mod policy;
mod read;
mod relocate;
pub mod struct_ops;
mod syscall;
mod tables;
mod unpreempted;

use std::path::{Path, PathBuf};

use aya::{Ebpf, EbpfLoader};
use dump::Dumps;
use kubenpu_ebpf::{global, map};

pub use btf::{Btf, BtfError};
pub use counter::Counter;
pub use hook::{
    Hook, HookChoice, link_kprobe_multi, link_kprobe_session, load_kprobe_multi,
    load_kprobe_session, load_on_module,
};
pub use pins::maps_dir;
pub use policy::{Rules, Verdicts, link_lsm, load_lsm};
pub use read::{Losses, RECURSION, Reading, pinned as read_pinned, sum_counts};
pub use syscall::Side;

use crate::{program::OBJECT, startup::Phases};

/// Removes everything pinned under `pin_dir`: the policy's checks first,
/// waiting until the kernel has detached them, then the hook and every
/// map (the program stops and its counts are gone). For uninstalling.
pub fn cleanup(pin_dir: &Path) -> Result<(), ProbeError> {
    if policy::pinned(pin_dir) {
        policy::detach(pin_dir)?;
    }
    pins::cleanup(pin_dir)
        .map_err(|e| ProbeError::Other(format!("cannot remove {}: {e}", pin_dir.display())))
}

/// Where the kernel's own BTF is.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// What loading needs to know.
#[derive(Debug, Clone)]
pub struct Config {
    /// The bpffs directory the maps and link are pinned under.
    pub pin_dir: PathBuf,
    /// Which hook to use.
    pub hook: HookChoice,
    /// Capacity of the counters map (distinct cgroup × device × ioctl).
    pub max_counters: u32,
    /// Print the verifier's full log when a program is rejected.
    pub debug: bool,
    /// Attach the policy's BPF LSM checks; without, unpin any and clear
    /// their rules.
    pub policy: bool,
}

/// Why the probe could not be set up, each with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// No usable BTF.
    #[error("{0}")]
    Btf(#[from] BtfError),
    /// A struct member the program needs is missing from BTF.
    #[error("kernel BTF lacks what the program reads: {0}")]
    Layout(String),
    /// The kernel refused for lack of privilege.
    #[error(
        "the kernel refused to load BPF programs ({0}): the agent needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): run it as root or grant them"
    )]
    Permission(String),
    /// The pin directory cannot be made: bpffs is not mounted there.
    #[error(
        "cannot create {path}: {error} (is bpffs mounted at /sys/fs/bpf? `mount -t bpf bpf /sys/fs/bpf`)"
    )]
    PinDir {
        /// The pin directory.
        path: String,
        /// What failed.
        error: String,
    },
    /// Pinning or unpinning an object failed.
    #[error("cannot pin {path}: {error}")]
    Pin {
        /// The pin directory.
        path: String,
        /// What failed.
        error: String,
    },
    /// No hook could be attached.
    #[error("cannot attach to drm_ioctl: {0} (is DRM loaded, with BTF or kprobes?)")]
    Attach(String),
    /// No hook could be attached, and a privilege was what stopped one.
    #[error(
        "cannot attach to drm_ioctl: {0}: fentry on a drm module, and kprobes where kernel.perf_event_paranoid > 2, need CAP_SYS_ADMIN besides CAP_BPF and CAP_PERFMON (kprobe-session and kprobe-multi do not, on kernels with fprobe): grant it or run as root"
    )]
    AttachDenied(String),
    /// The kernel has no such LSM hook: no BPF LSM, or an older kernel.
    #[error("vmlinux BTF has no LSM hook {0} (CONFIG_BPF_LSM=y is needed)")]
    NoLsmHook(String),
    /// Anything else the kernel or aya reported.
    #[error("{0}")]
    Other(String),
}

impl ProbeError {
    /// The message without the kind's prefix, for joining several.
    fn reason(&self) -> String {
        match self {
            ProbeError::Attach(reason)
            | ProbeError::Other(reason)
            | ProbeError::Layout(reason)
            | ProbeError::Permission(reason) => reason.clone(),
            other => other.to_string(),
        }
    }

    /// A failure to load or attach, as `text`: a refusal for lack of
    /// privilege if `e`'s errno says so (see [`denied`]), else `other`.
    fn classify(
        e: &(dyn std::error::Error + 'static),
        stage: Stage,
        text: String,
        other: fn(String) -> Self,
    ) -> Self {
        if denied(e, stage) {
            ProbeError::Permission(text)
        } else {
            other(text)
        }
    }
}

/// Where a kernel call failed: the same errno means different things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Loading a program: EACCES is the verifier rejecting it.
    Load,
    /// Attaching it: EACCES is `perf_event_open` refused by
    /// `kernel.perf_event_paranoid`.
    Attach,
}

/// Whether `e`, or an error it wraps, is the kernel refusing for lack of a
/// capability: EPERM, or EACCES while attaching.
fn denied(e: &(dyn std::error::Error + 'static), stage: Stage) -> bool {
    matches!(
        (errno(e), stage),
        (Some(libc::EPERM), _) | (Some(libc::EACCES), Stage::Attach)
    )
}

/// The errno of the first OS error in `e`'s chain.
fn errno(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(errno) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(errno);
        }
        next = e.source();
    }
    None
}

/// The loaded program, its maps and its link.
pub struct Probe {
    ebpf: Ebpf,
    config: Config,
    hook: Hook,
    /// How the hook was chosen, for the log.
    hook_reason: String,
    /// The `drm` module's BTF id when the hook was attached: a different
    /// id later means the module was reloaded.
    drm_identity: Option<u32>,
    /// The map iterators, or why the kernel refused them (the maps are
    /// then copied with lookups).
    dumps: Result<Dumps, String>,
    /// How long the parts of [`Probe::start`] took.
    phases: Phases,
    /// The policy's checks: how they were attached, or why they could not
    /// be; `None` with the policy off.
    policy: Option<Result<String, String>>,
    /// The rules' lease, mapped, while the checks are attached.
    lease: Option<lease::Lease>,
}

impl Probe {
    /// Loads (or adopts) the program and attaches it.
    pub fn start(config: Config) -> Result<Self, ProbeError> {
        let mut phases = Phases::default();
        let vmlinux = phases.time("kernel BTF", || {
            Btf::from_file(Path::new(VMLINUX_BTF), None)
        })?;
        let (f_inode, i_rdev, cgroup_names) = phases.time("kernel layout", || {
            let f_inode = vmlinux
                .member_offset("file", "f_inode")
                .map_err(ProbeError::Layout)?;
            let i_rdev = vmlinux
                .member_offset("inode", "i_rdev")
                .map_err(ProbeError::Layout)?;
            Ok::<_, ProbeError>((f_inode, i_rdev, names::Offsets::resolve(&vmlinux)))
        })?;
        let fresh_maps = pins::prepare(&config)?;
        let maps_dir = pins::maps_dir(&config.pin_dir);
        inflight::ensure(&maps_dir)?;
        let cpus = syscall::possible_cpus()
            .map_err(|e| ProbeError::Other(format!("cannot read the possible CPUs: {e}")))?;
        let possible_cpus = cpus as u32;
        let mut loader = EbpfLoader::new();
        loader
            .override_global(global::F_INODE_OFFSET, &f_inode, true)
            .override_global(global::POSSIBLE_CPUS, &possible_cpus, true)
            .override_global(global::I_RDEV_OFFSET, &i_rdev, true)
            .map_max_entries(map::COUNTS, config.max_counters)
            // Every named cgroup has at least one counter.
            .map_max_entries(map::OWNERS, config.max_counters)
            .map_max_entries(map::NAMES, config.max_counters)
            // A refused cgroup has a verdict where a counted one has a
            // counter; gone ones are folded away with their counters.
            .map_max_entries(map::VERDICTS, config.max_counters)
            .default_map_pin_directory(&maps_dir)
            // INFLIGHT, task storage, is made above: aya only adopts it.
            .allow_unsupported_maps();
        cgroup_names.set(&mut loader);
        let mut ebpf = phases
            .time("object and maps", || loader.load(OBJECT))
            .map_err(|e| ProbeError::classify(&e, Stage::Load, e.to_string(), ProbeError::Other))?;
        // Adopted maps hold this layout already: no write (each raises
        // bpf_prog_active while the workloads run).
        if fresh_maps {
            pins::write_layout(&mut ebpf, &config)?;
        }
        let attached = phases.time("hook", || {
            hook::attach(&mut ebpf, &config, &vmlinux, fresh_maps)
        })?;
        let dumps = phases
            .time("iterators", || {
                Dumps::load(&ebpf, &vmlinux, cpus, config.debug)
            })
            .map_err(|e| e.to_string());
        let (policy, lease) = if config.policy {
            phases.time("policy checks", || {
                attach_checks(&mut ebpf, &vmlinux, &config, fresh_maps)
            })
        } else {
            policy::remove_all(&mut ebpf, &config.pin_dir)?;
            (None, None)
        };
        Ok(Self {
            ebpf,
            config,
            hook: attached.hook,
            hook_reason: attached.reason,
            drm_identity: hook::drm_identity(),
            dumps,
            phases,
            policy,
            lease,
        })
    }

    /// Attaches the policy's checks (`on`), or detaches them and removes
    /// every rule, after start: where the policy file alone asks for them
    /// and that changes. [`Probe::policy_checks`] then says how it went.
    pub fn set_policy_checks(&mut self, on: bool) -> Result<(), ProbeError> {
        if on {
            let vmlinux = Btf::from_file(Path::new(VMLINUX_BTF), None)?;
            (self.policy, self.lease) =
                attach_checks(&mut self.ebpf, &vmlinux, &self.config, false);
        } else {
            policy::remove_all(&mut self.ebpf, &self.config.pin_dir)?;
            (self.policy, self.lease) = (None, None);
        }
        Ok(())
    }

    /// Lets the policy's checks refuse until `until` (CLOCK_BOOTTIME).
    pub fn renew_lease(&self, until: std::time::Duration) {
        if let Some(lease) = &self.lease {
            lease.renew(until);
        }
    }

    /// The policy's checks: how they were attached (adopted or new), or
    /// why they could not be; `None` with the policy off.
    pub fn policy_checks(&self) -> Option<Result<&str, &str>> {
        self.policy
            .as_ref()
            .map(|outcome| outcome.as_deref().map_err(String::as_str))
    }

    /// The rules in the kernel's maps.
    pub fn rules(&self) -> Result<Rules, ProbeError> {
        policy::rules(&self.ebpf)
    }

    /// Sets cgroup `id`'s policy mode, or removes its rule (`None`).
    pub fn set_rule(&mut self, id: u64, mode: Option<u32>) -> Result<(), ProbeError> {
        policy::set_mode(&mut self.ebpf, id, mode)
    }

    /// Sets what a ruled cgroup may use of a device node, or removes the
    /// grant (`None`).
    pub fn set_grant(
        &mut self,
        key: kubenpu_ebpf::GrantKey,
        mask: Option<u32>,
    ) -> Result<(), ProbeError> {
        policy::set_grant(&mut self.ebpf, key, mask)
    }

    /// What the policy's checks audited or refused.
    pub fn verdicts(&self) -> Result<Verdicts, ProbeError> {
        match &self.dumps {
            Ok(dumps) => Ok(Verdicts {
                counts: dumps.verdicts()?,
                lost: dumps.verdicts_lost()?,
            }),
            Err(_) => policy::copied_verdicts(&self.ebpf),
        }
    }

    /// How long the parts of its start took: the kernel's BTF parsed, the
    /// object and its maps created or adopted, the hook's programs
    /// verified and attached, the iterators verified.
    pub fn start_phases(&self) -> &Phases {
        &self.phases
    }

    /// The hook in use.
    pub fn hook(&self) -> Hook {
        self.hook
    }

    /// Why this hook, in one line.
    pub fn hook_reason(&self) -> &str {
        &self.hook_reason
    }

    /// How the counters are read: `iterators`, or `lookups` where the
    /// kernel refused the iterators.
    pub fn reads(&self) -> &'static str {
        if self.dumps.is_ok() {
            "iterators"
        } else {
            "lookups"
        }
    }

    /// Why the counters are copied with `bpf(2)` lookups instead of read
    /// through the map iterators, if they are.
    pub fn iterators_refused(&self) -> Option<&str> {
        self.dumps.as_ref().err().map(String::as_str)
    }

    /// Re-attaches if the `drm` module was unloaded and loaded again since
    /// the hook was attached (a kprobe on the old module no longer fires).
    /// Returns whether it did.
    pub fn reattach_if_drm_reloaded(&mut self) -> Result<bool, ProbeError> {
        let now = hook::drm_identity();
        if now == self.drm_identity || now.is_none() {
            return Ok(false);
        }
        let vmlinux = Btf::from_file(Path::new(VMLINUX_BTF), None)?;
        let attached = hook::reattach(&mut self.ebpf, &self.config, &vmlinux, self.hook)?;
        self.hook = attached.hook;
        self.hook_reason = attached.reason;
        self.drm_identity = now;
        Ok(true)
    }

    /// Makes the kernel's device and ioctl tables equal to `table`'s,
    /// without touching any counter.
    pub fn upload(&mut self, table: &crate::device_table::DeviceTable) -> Result<(), ProbeError> {
        let current = match &self.dumps {
            Ok(dumps) => Some(tables::Current {
                ioctls: dumps.ioctls()?.into_iter().collect(),
                devices: dumps.devices()?.into_iter().collect(),
            }),
            Err(_) => None,
        };
        tables::upload(&mut self.ebpf, current, table)
    }

    /// Makes the hook run on exactly the `wanted` ioctl entries of other
    /// drivers besides `drm_ioctl` (see [`hook::entries`]). Returns what
    /// changed, for the log.
    pub fn link_entries(
        &mut self,
        wanted: &std::collections::BTreeSet<String>,
    ) -> Result<String, ProbeError> {
        hook::entries::sync(&self.config.pin_dir, self.hook, wanted)
    }

    /// What the programs have counted, measured and lost, so far.
    pub fn counts(&self) -> Result<Reading, ProbeError> {
        read::live(&self.ebpf, self.dumps.as_ref().ok(), &self.config.pin_dir)
    }

    /// The counters alone, for a sweep.
    pub fn counters(&self) -> Result<Vec<Counter>, ProbeError> {
        read::live_counters(&self.ebpf, self.dumps.as_ref().ok())
    }

    /// Every cgroup's owner as recorded in the pinned OWNERS map.
    pub fn owners(&self) -> Result<Vec<(u64, kubenpu_ebpf::OwnerRecord)>, ProbeError> {
        match &self.dumps {
            Ok(dumps) => dumps.owners(),
            Err(_) => owners::all(&self.ebpf),
        }
    }

    /// Records cgroup `id`'s owner.
    pub fn save_owner(
        &mut self,
        id: u64,
        record: &kubenpu_ebpf::OwnerRecord,
    ) -> Result<(), ProbeError> {
        owners::save(&mut self.ebpf, id, record)
    }

    /// Moves the counters and verdicts of gone cgroup `from` into those of
    /// gone cgroup `into` (same owner), then forgets `from`'s record: one
    /// retired cgroup per owner stays in the maps, however often it
    /// restarts.
    pub fn merge_cgroup(&mut self, from: u64, into: u64) -> Result<(), ProbeError> {
        read::merge_cgroup(&self.ebpf, self.dumps.as_ref().ok(), from, into)?;
        policy::fold_verdicts(&self.ebpf, &self.verdicts()?.counts, from, Some(into))?;
        names::forget(&mut self.ebpf, from)?;
        owners::remove(&mut self.ebpf, from)
    }

    /// The path of cgroup `id` below the cgroup2 root, from the kernfs
    /// names the program recorded when it counted its first call; `None`
    /// if it recorded none (a kernel whose BTF lacks the offsets).
    pub fn cgroup_path(&self, id: u64) -> Option<PathBuf> {
        names::path(&self.ebpf, id)
    }

    /// Deletes the counters, verdicts and record of gone cgroup `id`, whose
    /// grace period is over.
    pub fn remove_cgroup(&mut self, id: u64) -> Result<(), ProbeError> {
        read::remove_cgroup(&self.ebpf, self.dumps.as_ref().ok(), id)?;
        policy::fold_verdicts(&self.ebpf, &self.verdicts()?.counts, id, None)?;
        names::forget(&mut self.ebpf, id)?;
        owners::remove(&mut self.ebpf, id)
    }

    /// New keys the program noted since the last drain.
    pub fn drain_notes(&mut self) -> Result<Vec<kubenpu_ebpf::CountKey>, ProbeError> {
        read::drain_notes(&mut self.ebpf)
    }
}

/// Attaches the policy's checks, adopting a predecessor's on the same
/// maps (`fresh_maps` false), with the lease mapped; or says why not, and
/// then leaves no check, of a predecessor's nor one pinned before the
/// failure, to go on refusing while the policy says it is off.
fn attach_checks(
    ebpf: &mut Ebpf,
    vmlinux: &Btf,
    config: &Config,
    fresh_maps: bool,
) -> (Option<Result<String, String>>, Option<lease::Lease>) {
    let attached = lease::Lease::map(ebpf).and_then(|lease| {
        policy::attach(ebpf, vmlinux, &config.pin_dir, fresh_maps, config.debug)
            .map(|how| (how, lease))
    });
    match attached {
        Ok((how, lease)) => (Some(Ok(how)), Some(lease)),
        Err(e) => {
            let why = match policy::remove_all(ebpf, &config.pin_dir) {
                Ok(()) => e.to_string(),
                Err(left) => format!("{e}, and what was pinned stays: {left}"),
            };
            (Some(Err(why)), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::{Stage, denied};

    /// An error wrapping `source`, as aya's errors wrap the kernel's.
    #[derive(Debug, thiserror::Error)]
    #[error("the call failed")]
    struct Wrapper(#[source] io::Error);

    #[test]
    fn only_the_kernels_privilege_refusals_count_as_denied() {
        let errno = |n| Wrapper(io::Error::from_raw_os_error(n));
        assert!(denied(&errno(libc::EPERM), Stage::Load));
        assert!(denied(&errno(libc::EPERM), Stage::Attach));
        // perf_event_open under perf_event_paranoid > 2.
        assert!(denied(&errno(libc::EACCES), Stage::Attach));
        // The verifier rejecting a program.
        assert!(!denied(&errno(libc::EACCES), Stage::Load));
        assert!(!denied(&errno(libc::EOPNOTSUPP), Stage::Attach));
        assert!(!denied(
            &Wrapper(io::Error::other("no errno")),
            Stage::Attach
        ));
    }
}
