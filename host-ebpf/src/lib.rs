//! Types shared by KubeNPU's kernel program and its agent.
//!
//! Every key and value that crosses the BPF map boundary is defined here,
//! once, as `#[repr(C)]` without padding, so the kernel side and the host
//! side cannot drift. The crate is `no_std` so the kernel program can use
//! it; the agent enables the `user` feature for aya's `Pod` impls.
#![no_std]

/// Bumped whenever a map's key, value or meaning changes: an agent finding
/// pinned maps of another layout replaces them instead of adopting them.
pub const LAYOUT_VERSION: u32 = 9;

/// The kernel function every DRM and accel driver routes ioctls through.
/// Drivers outside DRM have their own entries, which the vendor plugins
/// name; the same programs run on them.
pub const HOOKED_FUNCTION: &str = "drm_ioctl";

/// The bits of a DRM ioctl command that pick its table entry: the number,
/// which `drm_ioctl` dispatches on whatever the command's size.
pub const DRM_COMMAND_MASK: u32 = 0xff;

/// Program names in the object, per hook.
pub mod program {
    /// fentry on `drm_ioctl` (typed arguments, direct loads).
    pub const FENTRY: &str = "kubenpu_fentry";
    /// kprobe on `drm_ioctl` (arguments from registers, probe reads).
    pub const KPROBE: &str = "kubenpu_kprobe";
    /// fexit on `drm_ioctl`: the exit side of [`FENTRY`].
    pub const FEXIT: &str = "kubenpu_fexit";
    /// Return probe on `drm_ioctl`: the exit side of [`KPROBE`] (as a
    /// kretprobe, or a kprobe.multi return link).
    pub const KRETPROBE: &str = "kubenpu_kretprobe";
    /// A kprobe session on `drm_ioctl` (Linux 6.10): entry and return in
    /// one program, whose return side runs only for the calls its entry
    /// kept.
    pub const SESSION: &str = "kubenpu_session";
    /// Iterator over [`COUNTS`](super::map::COUNTS): each key and value.
    pub const DUMP_COUNTS: &str = "kubenpu_dump_counts";
    /// Iterator over [`DURATIONS`](super::map::DURATIONS): each key and
    /// its per-CPU values.
    pub const DUMP_DURATIONS: &str = "kubenpu_dump_durations";
    /// Iterator over [`LOSSES`](super::map::LOSSES): each reason and its
    /// per-CPU values.
    pub const DUMP_LOSSES: &str = "kubenpu_dump_losses";
    /// Iterator over [`IOCTLS`](super::map::IOCTLS).
    pub const DUMP_IOCTLS: &str = "kubenpu_dump_ioctls";
    /// Iterator over [`DEVICES`](super::map::DEVICES).
    pub const DUMP_DEVICES: &str = "kubenpu_dump_devices";
    /// Iterator over [`OWNERS`](super::map::OWNERS).
    pub const DUMP_OWNERS: &str = "kubenpu_dump_owners";
    /// Iterator over [`VERDICTS`](super::map::VERDICTS).
    pub const DUMP_VERDICTS: &str = "kubenpu_dump_verdicts";
    /// Iterator over [`VERDICTS_LOST`](super::map::VERDICTS_LOST).
    pub const DUMP_VERDICTS_LOST: &str = "kubenpu_dump_verdicts_lost";
    /// BPF LSM on `file_open`: the policy's check as a device node opens.
    pub const POLICY_OPEN: &str = "kubenpu_policy_open";
    /// BPF LSM on `file_ioctl`: the policy's check at each ioctl.
    pub const POLICY_IOCTL: &str = "kubenpu_policy_ioctl";
    /// BPF LSM on `file_ioctl_compat` (Linux 6.8): the same for 32-bit
    /// callers, which `file_ioctl` does not see there.
    pub const POLICY_IOCTL_COMPAT: &str = "kubenpu_policy_ioctl_compat";
}

/// The helper number the session program calls for the kfunc
/// `bpf_session_is_return(ctx)`. No helper has it, so the program cannot
/// load until the agent's loader rewrites each such call into a call of
/// the kfunc, by its BTF id in vmlinux: aya 0.14 cannot relocate kfunc
/// calls, and rustc emits no `.ksyms` for extern functions.
pub const SESSION_IS_RETURN_CALL: i32 = 0x4b4e_5055;

/// The placement scheduler (sched_ext), a second object: its callbacks,
/// the kfuncs they call, and what it counts. The agent loads it itself,
/// as `struct sched_ext_ops` in a struct_ops map: aya 0.14 has no
/// struct_ops.
pub mod placement {
    /// The scheduler's name, which `/sys/kernel/sched_ext/root/ops` shows
    /// while it is in force.
    pub const OPS_NAME: &str = "kubenpu";

    /// Each callback: its member of `struct sched_ext_ops`, its program,
    /// and whether it may sleep (the kernel lets a few callbacks sleep,
    /// and `init` must, to create the queues).
    pub const CALLBACKS: [(&str, &str, bool); 13] = [
        ("select_cpu", "kubenpu_select_cpu", false),
        ("enqueue", "kubenpu_enqueue", false),
        ("dispatch", "kubenpu_dispatch", false),
        ("runnable", "kubenpu_runnable", false),
        ("running", "kubenpu_running", false),
        ("stopping", "kubenpu_stopping", false),
        ("quiescent", "kubenpu_quiescent", false),
        ("enable", "kubenpu_enable", false),
        ("cgroup_init", "kubenpu_cgroup_init", false),
        ("cgroup_exit", "kubenpu_cgroup_exit", false),
        ("cgroup_set_weight", "kubenpu_cgroup_set_weight", false),
        ("init", "kubenpu_init", true),
        ("exit", "kubenpu_exit", false),
    ];

    /// The helper numbers the callbacks call for sched_ext's kfuncs, which
    /// the loader rewrites into the kfuncs' calls (see
    /// [`SESSION_IS_RETURN_CALL`](super::SESSION_IS_RETURN_CALL)).
    pub mod kfunc {
        /// `scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle)`.
        pub const SELECT_CPU_DFL: i32 = 0x4b4e_5100;
        /// `scx_bpf_pick_idle_cpu_node(cpus_allowed, node, flags)`.
        pub const PICK_IDLE_CPU_NODE: i32 = 0x4b4e_5101;
        /// `scx_bpf_dsq_insert(p, dsq_id, slice, enq_flags)`.
        pub const DSQ_INSERT: i32 = 0x4b4e_5102;
        /// `scx_bpf_dsq_insert_vtime(p, dsq_id, slice, vtime, enq_flags)`.
        pub const DSQ_INSERT_VTIME: i32 = 0x4b4e_5103;
        /// `scx_bpf_dsq_move_to_local(dsq_id)`.
        pub const DSQ_MOVE_TO_LOCAL: i32 = 0x4b4e_5104;
        /// `scx_bpf_create_dsq(dsq_id, node)`.
        pub const CREATE_DSQ: i32 = 0x4b4e_5105;
        /// `scx_bpf_cpu_node(cpu)`.
        pub const CPU_NODE: i32 = 0x4b4e_5106;
        /// `scx_bpf_nr_node_ids()`.
        pub const NR_NODE_IDS: i32 = 0x4b4e_5107;
        /// `scx_bpf_task_cpu(p)`.
        pub const TASK_CPU: i32 = 0x4b4e_5108;
        /// `scx_bpf_kick_cpu(cpu, flags)`.
        pub const KICK_CPU: i32 = 0x4b4e_5109;
        /// `scx_bpf_task_set_dsq_vtime(p, vtime)`.
        pub const TASK_SET_DSQ_VTIME: i32 = 0x4b4e_510a;
        /// `scx_bpf_pick_any_cpu_node(cpus_allowed, node, flags)`.
        pub const PICK_ANY_CPU_NODE: i32 = 0x4b4e_510b;
        /// `scx_bpf_dsq_nr_queued(dsq_id)`.
        pub const DSQ_NR_QUEUED: i32 = 0x4b4e_510c;
        /// `scx_bpf_task_set_slice(p, slice)`.
        pub const TASK_SET_SLICE: i32 = 0x4b4e_510d;
        /// Every placeholder with its kfunc's name in vmlinux.
        pub const ALL: [(i32, &str); 14] = [
            (SELECT_CPU_DFL, "scx_bpf_select_cpu_dfl"),
            (PICK_IDLE_CPU_NODE, "scx_bpf_pick_idle_cpu_node"),
            (DSQ_INSERT, "scx_bpf_dsq_insert"),
            (DSQ_INSERT_VTIME, "scx_bpf_dsq_insert_vtime"),
            (DSQ_MOVE_TO_LOCAL, "scx_bpf_dsq_move_to_local"),
            (CREATE_DSQ, "scx_bpf_create_dsq"),
            (CPU_NODE, "scx_bpf_cpu_node"),
            (NR_NODE_IDS, "scx_bpf_nr_node_ids"),
            (TASK_CPU, "scx_bpf_task_cpu"),
            (KICK_CPU, "scx_bpf_kick_cpu"),
            (TASK_SET_DSQ_VTIME, "scx_bpf_task_set_dsq_vtime"),
            (PICK_ANY_CPU_NODE, "scx_bpf_pick_any_cpu_node"),
            (DSQ_NR_QUEUED, "scx_bpf_dsq_nr_queued"),
            (TASK_SET_SLICE, "scx_bpf_task_set_slice"),
        ];
    }

    /// Indexes of the scheduler's per-CPU counters ([`map::PLACEMENT`](super::map::PLACEMENT)).
    pub mod counter {
        /// Wake-ups of a thread with a fresh hint placed on an idle CPU of
        /// its device's node.
        pub const PLACED: u32 = 0;
        /// Wake-ups of a thread with a fresh hint that found no idle CPU
        /// it may use on its device's node, and went where the fair rule
        /// put it.
        pub const FELL_BACK: u32 = 1;
        /// Threads with a fresh hint queued on their device's node.
        pub const QUEUED_NEAR: u32 = 2;
        /// Threads with a fresh hint queued elsewhere: a CPU of another
        /// node was idle for them, or they may use no CPU of their
        /// device's node.
        pub const QUEUED_AWAY: u32 = 3;
        /// cgroups the scheduler could not keep (its table was full):
        /// their tasks are weighed by nice alone, as if in the root cgroup.
        pub const UNTRACKED_CGROUPS: u32 = 4;
        /// cgroups that went with runnable weight still counted in them:
        /// a miscount, which skewed their siblings' shares while it
        /// lasted. Should stay 0.
        pub const MISCOUNTED_CGROUPS: u32 = 5;
        /// How many counters there are.
        pub const COUNT: u32 = 6;
    }

    /// Read-only globals the agent sets from the running kernel's BTF.
    pub mod global {
        /// Byte offset of `cpus_ptr` in `struct task_struct`.
        pub const TASK_CPUS_PTR_OFFSET: &str = "TASK_CPUS_PTR_OFFSET";
        /// Byte offset of `scx.dsq_vtime` in `struct task_struct`.
        pub const TASK_DSQ_VTIME_OFFSET: &str = "TASK_DSQ_VTIME_OFFSET";
        /// Byte offset of `scx.slice` in `struct task_struct`.
        pub const TASK_SLICE_OFFSET: &str = "TASK_SLICE_OFFSET";
        /// Byte offset of `scx.weight` in `struct task_struct`.
        pub const TASK_WEIGHT_OFFSET: &str = "TASK_WEIGHT_OFFSET";
        /// Byte offset of `kind` in `struct scx_exit_info`.
        pub const EXIT_KIND_OFFSET: &str = "EXIT_KIND_OFFSET";
        /// Byte offset of `exit_code` in `struct scx_exit_info`.
        pub const EXIT_CODE_OFFSET: &str = "EXIT_CODE_OFFSET";
        /// Byte offset of `reason` in `struct scx_exit_info`.
        pub const EXIT_REASON_OFFSET: &str = "EXIT_REASON_OFFSET";
        /// Byte offset of `msg` in `struct scx_exit_info`.
        pub const EXIT_MSG_OFFSET: &str = "EXIT_MSG_OFFSET";
        /// Nanoseconds after a thread's last counted call during which
        /// its hint places it.
        pub const HINT_FRESH_NS: &str = "HINT_FRESH_NS";
        /// Byte offset of `sched_task_group` in `struct task_struct`.
        pub const TASK_GROUP_OFFSET: &str = "TASK_GROUP_OFFSET";
        /// Byte offset of `css.cgroup` in `struct task_group`.
        pub const TASK_GROUP_CGROUP_OFFSET: &str = "TASK_GROUP_CGROUP_OFFSET";
        /// Byte offset of `kn` in `struct cgroup`.
        pub const CGROUP_KN_OFFSET: &str = "CGROUP_KN_OFFSET";
        /// Byte offset of `id` in `struct kernfs_node`.
        pub const KERNFS_NODE_ID_OFFSET: &str = "KERNFS_NODE_ID_OFFSET";
        /// Byte offset of `level` in `struct cgroup`.
        pub const CGROUP_LEVEL_OFFSET: &str = "CGROUP_LEVEL_OFFSET";
        /// Byte offset of `self.parent` in `struct cgroup`.
        pub const CGROUP_PARENT_CSS_OFFSET: &str = "CGROUP_PARENT_CSS_OFFSET";
        /// Byte offset of `cgroup` in `struct cgroup_subsys_state`.
        pub const CSS_CGROUP_OFFSET: &str = "CSS_CGROUP_OFFSET";
        /// Byte offset of `weight` in `struct scx_cgroup_init_args`.
        pub const INIT_ARGS_WEIGHT_OFFSET: &str = "INIT_ARGS_WEIGHT_OFFSET";
    }
}

/// Why the placement scheduler last stopped, as the kernel told its
/// `exit` callback (`struct scx_exit_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedulerExit {
    /// `enum scx_exit_kind`: 64 and up an unregistration, 1024 and up an
    /// error.
    pub kind: u32,
    /// How many times the scheduler has stopped since it was loaded.
    pub exits: u32,
    /// The exit code a scheduler or the kernel gave.
    pub code: i64,
    /// The kernel's one-line reason, NUL-terminated.
    pub reason: [u8; 128],
    /// The detail, such as the error's message, NUL-terminated.
    pub message: [u8; 256],
}

/// Map names in the object.
pub mod map {
    /// `u32` kernel dev_t (`MAJOR << 20 | MINOR`) ->
    /// [`DeviceEntry`](super::DeviceEntry): the vendor and NUMA node.
    pub const DEVICES: &str = "DEVICES";
    /// [`IoctlKey`](super::IoctlKey) -> [`IoctlEntry`](super::IoctlEntry).
    pub const IOCTLS: &str = "IOCTLS";
    /// [`ClassKey`](super::ClassKey) -> `u8` 1: the values of classified
    /// entries' fields that make their calls count.
    pub const CLASSES: &str = "CLASSES";
    /// [`CountKey`](super::CountKey) -> [`CountValue`](super::CountValue),
    /// one value for all CPUs, added to atomically.
    pub const COUNTS: &str = "COUNTS";
    /// Task-local storage of [`Inflight`](super::Inflight): the counted
    /// call each thread is inside, from the entry program to the exit
    /// one. Created by the agent (the kernel needs BTF for it), kept in
    /// the thread, freed with it.
    pub const INFLIGHT: &str = "INFLIGHT";
    /// [`DurationKey`](super::DurationKey) -> per-CPU `u64` calls: the
    /// log2 histogram of call durations per device node and kind.
    pub const DURATIONS: &str = "DURATIONS";
    /// Ring buffer of [`CountKey`](super::CountKey): one note per new key.
    pub const NOTES: &str = "NOTES";
    /// Per-CPU `u64` per [`Loss`](super::Loss) reason.
    pub const LOSSES: &str = "LOSSES";
    /// One [`Layout`](super::Layout): what the pinned maps were made by.
    pub const LAYOUT: &str = "LAYOUT";
    /// `u64` cgroup id -> [`OwnerRecord`](super::OwnerRecord), written by
    /// the agent: who each counted cgroup belongs to.
    pub const OWNERS: &str = "OWNERS";
    /// `u64` cgroup id -> [`CgroupPath`](super::CgroupPath), written by the
    /// program when it counts a cgroup's first call: its kernfs names.
    pub const NAMES: &str = "NAMES";
    /// `u64` cgroup id -> `u32` [`mode`](super::mode), written by the
    /// agent: the cgroups the policy rules. The policy programs never
    /// refuse a cgroup that is not in it.
    pub const RULES: &str = "RULES";
    /// [`GrantKey`](super::GrantKey) -> `u32` mask of the
    /// [`grant`](super::grant) bits the cgroup may use on the device node.
    pub const GRANTS: &str = "GRANTS";
    /// [`VerdictKey`](super::VerdictKey) -> `u64`: the calls the policy
    /// audited or refused.
    pub const VERDICTS: &str = "VERDICTS";
    /// One per-CPU `u64`: verdicts that could not be counted (VERDICTS
    /// full). The calls were still audited or refused.
    pub const VERDICTS_LOST: &str = "VERDICTS_LOST";
    /// One `u64`, memory-mapped and written by the agent (no `bpf(2)`
    /// call): the CLOCK_BOOTTIME nanoseconds until which the rules are in
    /// force. Past it, as when no agent has run for the lease's length
    /// (after an uninstall), the checks refuse and count nothing.
    pub const LEASE: &str = "LEASE";
    /// The placement scheduler's per-CPU `u64` counters, by
    /// [`placement::counter`](super::placement::counter).
    pub const PLACEMENT: &str = "PLACEMENT";
    /// One [`SchedulerExit`](super::SchedulerExit): why the placement
    /// scheduler last stopped.
    pub const EXITS: &str = "EXITS";
}

/// Read-only globals the agent sets before loading, resolved from the
/// running kernel's BTF (Rust eBPF has no CO-RE field relocations).
pub mod global {
    /// Byte offset of `f_inode` in `struct file`.
    pub const F_INODE_OFFSET: &str = "F_INODE_OFFSET";
    /// Byte offset of `i_rdev` in `struct inode`.
    pub const I_RDEV_OFFSET: &str = "I_RDEV_OFFSET";
    /// 1 if the cgroup offsets below are set: the program then records the
    /// kernfs names of each cgroup it counts.
    pub const CGROUP_NAMES: &str = "CGROUP_NAMES";
    /// Byte offset of `cgroups` in `struct task_struct`.
    pub const TASK_CGROUPS_OFFSET: &str = "TASK_CGROUPS_OFFSET";
    /// Byte offset of `dfl_cgrp` in `struct css_set`.
    pub const CSS_SET_DFL_CGRP_OFFSET: &str = "CSS_SET_DFL_CGRP_OFFSET";
    /// Byte offset of `kn` in `struct cgroup`.
    pub const CGROUP_KN_OFFSET: &str = "CGROUP_KN_OFFSET";
    /// Byte offset of `name` in `struct kernfs_node`.
    pub const KN_NAME_OFFSET: &str = "KN_NAME_OFFSET";
    /// Byte offset of the parent link in `struct kernfs_node` (`parent`,
    /// `__parent` since Linux 6.15).
    pub const KN_PARENT_OFFSET: &str = "KN_PARENT_OFFSET";
    /// The number of possible CPUs: the iterators' per-CPU value size.
    pub const POSSIBLE_CPUS: &str = "POSSIBLE_CPUS";
}

/// Vendors the IOCTLS map holds whole tables for (256 numbers each).
pub const MAX_VENDORS: u32 = 64;
/// Accelerator device nodes the DEVICES map holds.
pub const MAX_DEVICE_NODES: u32 = 1024;

/// A vendor's slot in the IOCTLS map: a hash of its name (FNV-1a), so it
/// is the same in every agent that ever uploads it and needs no
/// bookkeeping across restarts. Two vendors whose names collide cannot
/// both be in force.
pub const fn vendor_slot(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash = 0x811c_9dc5_u32;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}

/// The counted kinds, as stored in the IOCTLS map.
pub mod kind {
    /// Not in the vendor's table: an ioctl that is not counted, or (for
    /// the policy) the open itself.
    pub const OTHER: u32 = 0;
    /// Hands work to the device.
    pub const SUBMIT: u32 = 1;
    /// Allocates device memory.
    pub const ALLOC: u32 = 2;
    /// Waits for the device.
    pub const WAIT: u32 = 3;
}

/// How the program reads the size an alloc ioctl allocates from its
/// argument (the user memory `drm_ioctl`'s `arg` points at).
pub mod size {
    /// Read the size when the call enters (an input field, which the call
    /// may overwrite with its output, as amdgpu's GEM_CREATE does).
    pub const BEFORE: u8 = 0;
    /// Read it when the call returns (the size the kernel reports back,
    /// as in `MODE_CREATE_DUMB`).
    pub const AFTER: u8 = 1;
}

/// The policy's modes, as stored in the RULES map.
pub mod mode {
    /// Count what the rules would refuse; refuse nothing.
    pub const AUDIT: u32 = 1;
    /// Refuse it with `EPERM`, and count it.
    pub const ENFORCE: u32 = 2;
}

/// A GRANTS value: in its low byte, the mask of what the cgroup may do on
/// the node, one bit per [`kind`] (bit 0 for the open and every ioctl the
/// vendor's table does not list); in the next byte, the [`rule`] that
/// refuses what the mask leaves out. Values written before rules existed
/// have a zero there: allocated-only, which is what they meant.
pub mod grant {
    /// The bit of `kind`.
    pub const fn bit(kind: u32) -> u32 {
        1 << kind
    }
    /// Every kind: a device the container was given.
    pub const ALL: u32 = bit(super::kind::OTHER)
        | bit(super::kind::SUBMIT)
        | bit(super::kind::ALLOC)
        | bit(super::kind::WAIT);
    /// Where the rule sits in a value.
    const RULE_SHIFT: u32 = 8;
    /// The value of `mask`, whose gaps `rule` refuses.
    pub const fn value(mask: u32, rule: u8) -> u32 {
        (mask & ALL) | (rule as u32) << RULE_SHIFT
    }
    /// What `value` allows.
    pub const fn mask(value: u32) -> u32 {
        value & ALL
    }
    /// The rule that refuses what `value` does not allow.
    pub const fn rule(value: u32) -> u8 {
        (value >> RULE_SHIFT) as u8
    }
}

/// Why a call was refused, as GRANTS values and VERDICTS keys say.
pub mod rule {
    /// The device was not allocated to the container (and no allow
    /// rule grants it): zero, so grants and verdicts from before the
    /// policy file read as what they were.
    pub const ALLOCATED_ONLY: u8 = 0;
    /// A deny rule takes the whole device away.
    pub const DENY_DEVICE: u8 = 1;
    /// A deny-kinds rule refuses the call's kind.
    pub const DENY_KIND: u8 = 2;
}

/// The LSM hooks the policy checks at, as VERDICTS keys name them.
pub mod lsm_hook {
    /// `file_open`.
    pub const OPEN: u8 = 0;
    /// `file_ioctl`.
    pub const IOCTL: u8 = 1;
    /// `file_ioctl_compat`.
    pub const IOCTL_COMPAT: u8 = 2;
}

/// Key of the GRANTS map: a ruled cgroup and a device node.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantKey {
    /// The cgroup v2 id.
    pub cgroup_id: u64,
    /// The device node's kernel dev_t.
    pub dev: u32,
    /// Padding, zero.
    pub pad: u32,
}

/// Key of the VERDICTS map: who was audited or refused, where and why.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VerdictKey {
    /// The caller's cgroup v2 id.
    pub cgroup_id: u64,
    /// The device node's kernel dev_t.
    pub dev: u32,
    /// The [`kind`] the call was of ([`kind::OTHER`] for an open).
    pub kind: u8,
    /// The [`lsm_hook`] it was checked at.
    pub hook: u8,
    /// The [`mode`] in force: [`mode::AUDIT`] (let through) or
    /// [`mode::ENFORCE`] (refused).
    pub mode: u8,
    /// The [`rule`] that refused it; zero (allocated-only) in keys
    /// counted before the policy file, where this byte was padding.
    pub rule: u8,
}

/// What the program knows of one counted ioctl of a vendor.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoctlEntry {
    /// See [`kind`].
    pub kind: u32,
    /// Byte offset of the allocated size in the argument.
    pub size_offset: u16,
    /// Its width in bytes: 4 or 8; 0 if the ioctl declares no size.
    pub size_width: u8,
    /// [`size::BEFORE`] or [`size::AFTER`].
    pub size_phase: u8,
    /// For a multiplexed ioctl: byte offset of the field that selects the
    /// operation; the size counts only if it equals `when_value`.
    pub when_offset: u16,
    /// Its width, 4 or 8; 0 if the size always counts.
    pub when_width: u8,
    /// For a command that multiplexes operations: the width (4 or 8) of
    /// the field whose value says whether the call is of `kind` (its
    /// values are in the CLASSES map); 0 if every call is.
    pub only_width: u8,
    /// That field's byte offset in the argument.
    pub only_offset: u16,
    /// Padding, zero.
    pub pad: [u8; 2],
    /// The selecting field's value for an allocation.
    pub when_value: u64,
}

/// Key of the CLASSES map: a value of a classified entry's field that
/// makes its call count.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassKey {
    /// The table's slot.
    pub vendor_slot: u32,
    /// The entry's key in it.
    pub nr: u32,
    /// The field's value.
    pub value: u64,
}

/// Values the CLASSES map holds, all tables together.
pub const MAX_CLASS_VALUES: u32 = 4096;

/// What the kernel keeps per counted key: how many calls, how they ended,
/// how long they took, how much they allocated. Shared by all CPUs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountValue {
    /// Calls, counted as they enter (a restart after a signal is the same
    /// call, not another).
    pub calls: u64,
    /// Calls that returned an error (`< 0`, restarts excepted), but for
    /// the waits counted in `busy` and `timed_out`.
    pub failed: u64,
    /// Nanoseconds spent inside the calls, counted as they return.
    pub ns: u64,
    /// Bytes the successful allocations reported, for ioctls whose vendor
    /// declares where the size is.
    pub bytes: u64,
    /// Calls made from a CPU of another NUMA node than the device's.
    pub remote: u64,
    /// Waits that found the device not done and did not block: `EBUSY`
    /// or `EAGAIN` (a poll, as Mesa makes). See [`ending`].
    pub busy: u64,
    /// Waits that gave up at their timeout: `ETIME` or `ETIMEDOUT`.
    pub timed_out: u64,
}

impl CountValue {
    /// Adds `other` to `self`, field by field.
    pub fn accumulate(&mut self, other: &Self) {
        self.calls = self.calls.wrapping_add(other.calls);
        self.failed = self.failed.wrapping_add(other.failed);
        self.ns = self.ns.wrapping_add(other.ns);
        self.bytes = self.bytes.wrapping_add(other.bytes);
        self.remote = self.remote.wrapping_add(other.remote);
        self.busy = self.busy.wrapping_add(other.busy);
        self.timed_out = self.timed_out.wrapping_add(other.timed_out);
    }
}

/// How a counted call ended, from its kind and its return value: which of
/// [`CountValue`]'s outcome fields it adds one to. Userspace reads an
/// error of a wait differently from a real failure: Mesa polls its
/// buffers with no-block waits, and a wait with a deadline times out by
/// design. The errno values are the generic ones, the same on x86_64 and
/// arm64.
pub mod ending {
    use super::kind;

    /// `EAGAIN`.
    const EAGAIN: i64 = 11;
    /// `EBUSY`.
    const EBUSY: i64 = 16;
    /// `ETIME`.
    const ETIME: i64 = 62;
    /// `ETIMEDOUT`.
    const ETIMEDOUT: i64 = 110;

    /// The call returned normally (`>= 0`): no outcome field.
    pub const DONE: u8 = 0;
    /// [`super::CountValue::failed`].
    pub const FAILED: u8 = 1;
    /// [`super::CountValue::busy`].
    pub const BUSY: u8 = 2;
    /// [`super::CountValue::timed_out`].
    pub const TIMED_OUT: u8 = 3;

    /// The ending of a call of `kind` that returned `ret` (not a restart).
    /// Only waits are busy or timed out: a submit or an allocation that
    /// returns `EBUSY` or `EAGAIN` did not do what it was asked, and failed.
    #[inline(always)]
    pub fn of(kind: u32, ret: i64) -> u8 {
        match (kind, -ret) {
            _ if ret >= 0 => DONE,
            (kind::WAIT, EBUSY | EAGAIN) => BUSY,
            (kind::WAIT, ETIME | ETIMEDOUT) => TIMED_OUT,
            _ => FAILED,
        }
    }
}

/// The [`Inflight::state`] of a thread's record.
pub mod inflight {
    /// No call: the thread's last counted call returned.
    pub const IDLE: u32 = 0;
    /// Inside a counted call.
    pub const INSIDE: u32 = 1;
    /// Its call returned `-ERESTART*`: the thread's next call with the
    /// same key and argument is its restart, not a new call.
    pub const RESTARTING: u32 = 2;
}

/// The counted call a thread is inside: written by the entry program,
/// concluded by the exit program. Each thread has one record, reused from
/// call to call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inflight {
    /// The counter the call belongs to.
    pub key: CountKey,
    /// The call's argument pointer: a restart passes the same one.
    pub arg: u64,
    /// `bpf_ktime_get_ns()` when it (last) entered.
    pub start_ns: u64,
    /// Nanoseconds of its runs before the kernel restarted it.
    pub earlier_ns: u64,
    /// User address of the size to read at exit (0: none).
    pub size_at: u64,
    /// The size read at entry, for [`size::BEFORE`] fields.
    pub bytes: u64,
    /// Width of the size at `size_at`, 4 or 8.
    pub size_width: u32,
    /// See [`kind`].
    pub kind: u32,
    /// See [`inflight`].
    pub state: u32,
    /// The NUMA node of the device the call is on ([`NO_NUMA_NODE`] if
    /// it has none). With `start_ns`, the thread's placement hint: the
    /// node of the device it last called, and when.
    pub numa_node: u32,
}

/// Key of the duration histogram.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DurationKey {
    /// The device node's kernel dev_t.
    pub dev: u32,
    /// See [`kind`].
    pub kind: u16,
    /// `b`: calls that took `[2^b, 2^(b+1))` ns (bucket 0 also holds 0 ns).
    pub bucket: u16,
}

/// Buckets of the duration histogram: 2^63 ns is 292 years.
pub const DURATION_BUCKETS: u16 = 64;

/// What the program knows of one counted device node.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The slot of the vendor's table for the node in the IOCTLS map.
    pub vendor_slot: u32,
    /// The device's NUMA node, or [`NO_NUMA_NODE`].
    pub numa_node: u32,
    /// The bits of an ioctl command that pick its entry in the table:
    /// [`DRM_COMMAND_MASK`] on DRM and accel nodes; the type and number
    /// (`0xffff`) or the whole command on other drivers' nodes, as their
    /// plugin says.
    pub cmd_mask: u32,
}

/// A device's NUMA node where the machine or the firmware names none:
/// no call on it is remote.
pub const NO_NUMA_NODE: u32 = u32::MAX;

/// Key of the per-vendor ioctl table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IoctlKey {
    /// The table's slot, as the DEVICES map gives it.
    pub vendor_slot: u32,
    /// `cmd & cmd_mask` of the device's entry: `cmd & 0xff` on DRM.
    pub nr: u32,
}

/// Key of a call count: who called, on which device, which ioctl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CountKey {
    /// The caller's cgroup v2 id (the cgroup directory's inode number).
    pub cgroup_id: u64,
    /// The device node's kernel dev_t.
    pub dev: u32,
    /// The ioctl's key in the device's table: `cmd & 0xff` on DRM.
    pub nr: u32,
}

/// Why a call was not counted. Every loss is counted by reason.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// The COUNTS map was full: a new key could not be inserted.
    MapFull = 0,
    /// The NOTES ring buffer was full: a new key was counted, but the agent
    /// learns of it only at its next full read (or, for a policy note of
    /// a cgroup's first open, at the cgroup's first counted call).
    RingbufFull = 1,
    /// A counted call whose return could not be measured, so its result,
    /// time and bytes are missing: the kernel skipped the exit program
    /// (found when the same thread makes its next counted call), or the
    /// kernel had no memory for the thread's in-flight record.
    Unmeasured = 2,
    /// A call's duration could not be put in the histogram (DURATIONS
    /// full); its counters have it.
    HistogramFull = 3,
    /// A successful allocation whose size could not be read from user
    /// memory (the page was not resident).
    SizeUnread = 4,
    /// A call of a classified command whose field could not be read from
    /// user memory, so whether it is of the counted kind is unknown: not
    /// counted.
    Unclassified = 5,
}

impl Loss {
    /// Every reason, in map index order.
    pub const ALL: [Loss; 6] = [
        Loss::MapFull,
        Loss::RingbufFull,
        Loss::Unmeasured,
        Loss::HistogramFull,
        Loss::SizeUnread,
        Loss::Unclassified,
    ];

    /// The `reason` label.
    pub const fn name(self) -> &'static str {
        match self {
            Loss::MapFull => "map_full",
            Loss::RingbufFull => "ringbuf_full",
            Loss::Unmeasured => "unmeasured",
            Loss::HistogramFull => "histogram_full",
            Loss::SizeUnread => "size_unread",
            Loss::Unclassified => "unclassified",
        }
    }

    /// Whether the loss is of a measurement of a counted call (its result,
    /// time or bytes), exported apart from the calls that went uncounted.
    pub const fn of_measurement(self) -> bool {
        matches!(
            self,
            Loss::Unmeasured | Loss::HistogramFull | Loss::SizeUnread
        )
    }
}

/// What made the pinned maps: an agent adopts them only if this matches.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// [`LAYOUT_VERSION`] of the maker.
    pub version: u32,
    /// Capacity of the COUNTS map.
    pub max_counters: u32,
}

/// Levels of a cgroup's path the program records, from the cgroup up:
/// enough for kubelet's deepest layout (systemd driver under a prefix:
/// `kubelet.slice/kubelet-kubepods.slice/…-<qos>.slice/…-pod<uid>.slice/
/// cri-containerd-<id>.scope`) with cgroups a container makes below its
/// own.
pub const PATH_DEPTH: usize = 8;
/// Bytes kept of each name (a containerd scope is 85).
pub const PATH_NAME_LEN: usize = 128;

/// The kernfs names of a cgroup and its ancestors, as the kernel program
/// read them when it counted the cgroup's first call: the agent places a
/// cgroup from them even when it is gone before the agent could look it
/// up in the hierarchy (a container that lived for a millisecond, or one
/// that ran while the agent was stopped).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CgroupPath {
    /// How many of `names` are set; the root's (empty) name is not kept.
    pub depth: u32,
    /// 1 if the path went deeper than [`PATH_DEPTH`]: its top is missing.
    pub truncated: u32,
    /// NUL-terminated names, the cgroup's own first, then its parent's.
    pub names: [[u8; PATH_NAME_LEN]; PATH_DEPTH],
}

/// Who a counted cgroup belongs to, as the agent named it, and whether it
/// is gone. Kept in the pinned OWNERS map so that a restarted agent names
/// the cgroups its predecessor named, gone ones included (whose pods the
/// container runtime may no longer know), and keeps their grace period.
/// Only the agent reads and writes it; the kernel program does not.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerRecord {
    /// When the agent found the cgroup removed, in nanoseconds of
    /// CLOCK_BOOTTIME (which a restart does not reset); 0 while it lives.
    pub gone_at_ns: u64,
    /// The pod's namespace, NUL-padded (Kubernetes allows 63 bytes).
    pub namespace: [u8; 64],
    /// The pod's name, NUL-padded (253 bytes at most).
    pub pod: [u8; 256],
    /// The container's name, NUL-padded (63 bytes at most).
    pub container: [u8; 64],
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: plain `#[repr(C)]` integers without padding.
    unsafe impl aya::Pod for super::IoctlKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::CountKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Layout {}
    // SAFETY: as above: integers, the padding spelled out.
    unsafe impl aya::Pod for super::IoctlEntry {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::CountValue {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Inflight {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::SchedulerExit {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::DurationKey {}
    // SAFETY: as above: a u64 and byte arrays, no padding.
    unsafe impl aya::Pod for super::OwnerRecord {}
    // SAFETY: as above: two u32s and byte arrays, no padding.
    unsafe impl aya::Pod for super::CgroupPath {}
    // SAFETY: as above: three u32s.
    unsafe impl aya::Pod for super::DeviceEntry {}
    // SAFETY: as above, the padding spelled out.
    unsafe impl aya::Pod for super::GrantKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::VerdictKey {}
    // SAFETY: as above: two u32s and a u64, no padding.
    unsafe impl aya::Pod for super::ClassKey {}
}
