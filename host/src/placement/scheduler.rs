//! The placement scheduler (`host-ebpf`'s `scheduler.rs`) on the node:
//! loaded with the running kernel's offsets, attached as sched_ext's
//! `sched_ext_ops`, its link pinned so that a killed agent leaves it
//! running (the kernel's watchdog still guards it), and read back: what
//! it placed, and why it last stopped.

use std::{
    fs,
    os::fd::AsFd as _,
    path::{Path, PathBuf},
    time::Duration,
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, PerCpuArray},
};
use kubenpu_ebpf::{
    SchedulerExit, map,
    placement::{CALLBACKS, OPS_NAME, counter, global, kfunc},
};

use crate::{
    probe::{self, Btf, ProbeError, struct_ops},
    program::SCHEDULER_OBJECT,
};

/// `SCX_OPS_BUILTIN_IDLE_PER_NODE`: idle CPUs tracked per node, which the
/// node-aware kfuncs need.
const BUILTIN_IDLE_PER_NODE: u64 = 0x40;

/// What the scheduler counted since it was loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wake-ups placed on an idle CPU of the device's node.
    pub placed: u64,
    /// Wake-ups with a fresh hint that went where the fair rule put them.
    pub fell_back: u64,
    /// Threads with a fresh hint queued on their device's node.
    pub queued_near: u64,
    /// Threads with a fresh hint queued on another node.
    pub queued_away: u64,
    /// cgroups it could not keep, its table full: their tasks are weighed
    /// by nice alone, as if in the root cgroup.
    pub untracked_cgroups: u64,
    /// cgroups that went with runnable weight still counted in them.
    pub miscounted_cgroups: u64,
}

impl Counters {
    /// Both, summed.
    pub fn plus(self, other: Self) -> Self {
        Self {
            placed: self.placed + other.placed,
            fell_back: self.fell_back + other.fell_back,
            queued_near: self.queued_near + other.queued_near,
            queued_away: self.queued_away + other.queued_away,
            untracked_cgroups: self.untracked_cgroups + other.untracked_cgroups,
            miscounted_cgroups: self.miscounted_cgroups + other.miscounted_cgroups,
        }
    }
}

/// The scheduler's programs, verified and loaded, not attached yet: the
/// slow part of a start (the verifier), done before an earlier agent's
/// scheduler is switched out.
pub struct Verified {
    ebpf: Ebpf,
    callbacks: Vec<struct_ops::Loaded>,
    watchdog: Duration,
    link: PathBuf,
}

impl Verified {
    /// Attaches the scheduler, and pins its link.
    pub fn attach(self, vmlinux: &Btf) -> Result<Scheduler, ProbeError> {
        let timeout_ms = u32::try_from(self.watchdog.as_millis()).unwrap_or(u32::MAX);
        let fields = [
            ("name", struct_ops::Field::Text(OPS_NAME)),
            ("flags", struct_ops::Field::U64(BUILTIN_IDLE_PER_NODE)),
            ("timeout_ms", struct_ops::Field::U32(timeout_ms)),
        ];
        let link = struct_ops::attach(vmlinux, &interface(&fields), &self.callbacks)?;
        if let Some(dir) = self.link.parent() {
            fs::create_dir_all(dir).map_err(|e| ProbeError::Pin {
                path: dir.display().to_string(),
                error: e.to_string(),
            })?;
        }
        struct_ops::pin(link.as_fd(), &self.link)?;
        Ok(Scheduler {
            ebpf: self.ebpf,
            link: self.link,
        })
    }
}

/// The scheduler as `sched_ext_ops`, with `fields` set.
fn interface<'a>(fields: &'a [(&'a str, struct_ops::Field<'a>)]) -> struct_ops::Interface<'a> {
    struct_ops::Interface {
        ops: "sched_ext_ops",
        map_name: OPS_NAME,
        callbacks: &CALLBACKS,
        kfuncs: &kfunc::ALL,
        fields,
    }
}

/// Every byte offset the scheduler reads the kernel's structs at, by its
/// global's name, from the running kernel's BTF.
fn kernel_offsets(vmlinux: &Btf) -> Result<[(&'static str, u32); 16], ProbeError> {
    let at = |name, member| {
        vmlinux
            .member_offset(name, member)
            .map_err(ProbeError::Layout)
    };
    let scx = at("task_struct", "scx")?;
    let css_cgroup = at("cgroup_subsys_state", "cgroup")?;
    Ok([
        (global::TASK_CPUS_PTR_OFFSET, at("task_struct", "cpus_ptr")?),
        (
            global::TASK_DSQ_VTIME_OFFSET,
            scx + at("sched_ext_entity", "dsq_vtime")?,
        ),
        (
            global::TASK_SLICE_OFFSET,
            scx + at("sched_ext_entity", "slice")?,
        ),
        (
            global::TASK_WEIGHT_OFFSET,
            scx + at("sched_ext_entity", "weight")?,
        ),
        (global::EXIT_KIND_OFFSET, at("scx_exit_info", "kind")?),
        (global::EXIT_CODE_OFFSET, at("scx_exit_info", "exit_code")?),
        (global::EXIT_REASON_OFFSET, at("scx_exit_info", "reason")?),
        (global::EXIT_MSG_OFFSET, at("scx_exit_info", "msg")?),
        (
            global::TASK_GROUP_OFFSET,
            at("task_struct", "sched_task_group")?,
        ),
        (
            global::TASK_GROUP_CGROUP_OFFSET,
            at("task_group", "css")? + css_cgroup,
        ),
        (global::CGROUP_KN_OFFSET, at("cgroup", "kn")?),
        (global::KERNFS_NODE_ID_OFFSET, at("kernfs_node", "id")?),
        (global::CGROUP_LEVEL_OFFSET, at("cgroup", "level")?),
        (
            global::CGROUP_PARENT_CSS_OFFSET,
            at("cgroup", "self")? + at("cgroup_subsys_state", "parent")?,
        ),
        (global::CSS_CGROUP_OFFSET, css_cgroup),
        (
            global::INIT_ARGS_WEIGHT_OFFSET,
            at("scx_cgroup_init_args", "weight")?,
        ),
    ])
}

/// The scheduler, attached.
pub struct Scheduler {
    ebpf: Ebpf,
    link: PathBuf,
}

impl Scheduler {
    /// Where the scheduler's link is pinned under the agent's pin
    /// directory.
    pub fn link_path(pin_dir: &Path) -> PathBuf {
        pin_dir.join("placement").join("scheduler")
    }

    /// Loads the scheduler's programs through the verifier, without
    /// attaching them, with `watchdog` as the longest a runnable task may
    /// wait before the kernel reverts every task to its own scheduler,
    /// and `hint_fresh` as how long after a thread's last counted call
    /// its hint places it. The counting program's maps must be pinned
    /// already: the scheduler reads its threads' records.
    pub fn load(
        pin_dir: &Path,
        vmlinux: &Btf,
        watchdog: Duration,
        hint_fresh: Duration,
        debug: bool,
    ) -> Result<Verified, ProbeError> {
        let fresh_ns = u64::try_from(hint_fresh.as_nanos()).unwrap_or(u64::MAX);
        let offsets = kernel_offsets(vmlinux)?;
        let mut loader = EbpfLoader::new();
        for (name, offset) in &offsets {
            loader.override_global(name, offset, true);
        }
        let ebpf = loader
            .override_global(global::HINT_FRESH_NS, &fresh_ns, true)
            // INFLIGHT, the counting program's: adopted by name.
            .default_map_pin_directory(probe::maps_dir(pin_dir))
            .allow_unsupported_maps()
            .load(SCHEDULER_OBJECT)
            .map_err(|e| ProbeError::Other(format!("cannot load the placement scheduler: {e}")))?;
        let callbacks = struct_ops::load(&ebpf, SCHEDULER_OBJECT, vmlinux, &interface(&[]), debug)?;
        Ok(Verified {
            ebpf,
            callbacks,
            watchdog,
            link: Self::link_path(pin_dir),
        })
    }

    /// What it counted, summed over CPUs.
    pub fn counters(&self) -> Counters {
        let sum = |index| {
            self.ebpf
                .map(map::PLACEMENT)
                .and_then(|map| PerCpuArray::<_, u64>::try_from(map).ok())
                .and_then(|array| array.get(&index, 0).ok())
                .map_or(0, |values| values.iter().sum())
        };
        Counters {
            placed: sum(counter::PLACED),
            fell_back: sum(counter::FELL_BACK),
            queued_near: sum(counter::QUEUED_NEAR),
            queued_away: sum(counter::QUEUED_AWAY),
            untracked_cgroups: sum(counter::UNTRACKED_CGROUPS),
            miscounted_cgroups: sum(counter::MISCOUNTED_CGROUPS),
        }
    }

    /// Why it last stopped, if it has.
    pub fn exit(&self) -> Option<SchedulerExit> {
        let array = Array::<_, SchedulerExit>::try_from(self.ebpf.map(map::EXITS)?).ok()?;
        array.get(&0, 0).ok().filter(|exit| exit.exits > 0)
    }

    /// Detaches it: every task goes back to the kernel's scheduler.
    pub fn stop(self) -> Result<(), ProbeError> {
        unpin(&self.link)
    }
}

/// `SCX_OPS_SWITCH_PARTIAL`: only tasks whose policy is `SCHED_EXT` run
/// on the scheduler, in a class below the kernel's fair class.
const SWITCH_PARTIAL: u64 = 1 << 3;

/// Attaches a sched_ext scheduler named `name` with no callbacks of its
/// own (sched_ext's defaults: one global queue), for every task or, if
/// `partial`, only for tasks of policy `SCHED_EXT`. For tests and
/// benchmarks, as someone else's scheduler or as a yardstick; it runs
/// until the returned link closes.
pub fn load_defaults(name: &str, partial: bool) -> Result<std::os::fd::OwnedFd, ProbeError> {
    let vmlinux = Btf::from_file(Path::new(probe::VMLINUX_BTF), None)?;
    let flags = if partial { SWITCH_PARTIAL } else { 0 };
    let interface = struct_ops::Interface {
        ops: "sched_ext_ops",
        map_name: name,
        callbacks: &[],
        kfuncs: &[],
        fields: &[
            ("name", struct_ops::Field::Text(name)),
            ("flags", struct_ops::Field::U64(flags)),
        ],
    };
    struct_ops::attach(&vmlinux, &interface, &[])
}

/// Removes the pinned link at `path`, if any: once no fd holds it, the
/// kernel detaches the scheduler.
pub fn unpin(path: &Path) -> Result<(), ProbeError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ProbeError::Pin {
            path: path.display().to_string(),
            error: e.to_string(),
        }),
        _ => Ok(()),
    }
}
