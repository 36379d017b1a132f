//! cgroup weights (`cpu.weight`) for the placement scheduler: a task's
//! weight is its share of the CPU as the kernel's fair class would give
//! it through the cgroup hierarchy, flattened into one number, so that
//! one virtual time can order every task of the node.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! The fair class shares a CPU among the entities queued at each level:
//! a cgroup's runnable tasks and its children with runnable tasks, each
//! by its weight. A task's flattened weight is therefore its weight,
//! times each cgroup's weight over that cgroup's *load* (the weights of
//! what is runnable in it), from its own cgroup up to the one below the
//! root. A task in the root cgroup keeps its own weight; a cgroup with
//! nothing runnable takes no share, so a busy pod beside idle ones gets
//! the CPU they leave.
//!
//! Each cgroup's load is kept as tasks become runnable and stop being
//! so (`ops.runnable` and `ops.quiescent`, which sched_ext pairs, and
//! between which a task changes neither its weight nor its cgroup). A
//! cgroup adds its weight to its parent's load while its own load is
//! not zero: [`settle`] keeps that up to date, without a lock.
//!
//! The cgroups are those of the `cpu` controller, the kernel's task
//! groups, which sched_ext reports (`ops.cgroup_init`, `cgroup_exit`,
//! `cgroup_set_weight`). `cpu.max` is not enforced here.

use core::intrinsics::{AtomicOrdering, atomic_xadd, atomic_xchg};

use aya_ebpf::{bindings::task_struct, macros::map, maps::HashMap};

/// The most cgroups kept. One more is not kept: its tasks are weighed by
/// nice alone, as if in the root cgroup, and [`GroupOutcome::Untracked`]
/// counts it.
pub const MAX_GROUPS: u32 = 16_384;
/// The deepest hierarchy walked; a Kubernetes container's cgroup is at
/// depth 4 or 5.
const MAX_DEPTH: u32 = 16;
/// Tries of one cgroup's settling before it gives up (module doc); each
/// try past the first means another CPU changed its load meanwhile.
const SETTLE_TRIES: u32 = 4;
/// The fixed point of a flattened weight: 1 is 1/65536 of a nice-0
/// task's weight unit.
pub const WEIGHT_ONE: u64 = 1 << 16;
/// `BPF_F_NO_PREALLOC`: entries allocated as cgroups appear.
const NO_PREALLOC: u32 = 1;

/// A cgroup, as the scheduler keeps it.
#[derive(Clone, Copy)]
#[repr(C)]
struct Group {
    /// Its `cpu.weight` (1 to 10000, 100 by default).
    weight: u64,
    /// Its parent's id; 0 for the root.
    parent: u64,
    /// Its depth; 0 for the root.
    level: u64,
    /// The weights of its runnable tasks, and of its children that have
    /// any, as their parent's queue would weigh them.
    load: u64,
    /// What it adds to its parent's load now: its weight while its load
    /// is not zero, else 0.
    contributed: u64,
}

/// The cgroups, by id.
#[map]
static GROUPS: HashMap<u64, Group> = HashMap::with_max_entries(MAX_GROUPS, NO_PREALLOC);

/// Offsets the agent sets from the running kernel's BTF.
#[unsafe(no_mangle)]
static TASK_GROUP_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static TASK_GROUP_CGROUP_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CGROUP_KN_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static KERNFS_NODE_ID_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CGROUP_LEVEL_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CGROUP_PARENT_CSS_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CSS_CGROUP_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static INIT_ARGS_WEIGHT_OFFSET: u32 = 0;

/// What [`init`] or [`exit`] found of a cgroup.
pub enum GroupOutcome {
    Kept,
    /// [`init`]: the table was full.
    Untracked,
    /// [`exit`]: it went with load left, which only a miscount of its
    /// tasks' runnable weight can leave (a cgroup that goes has no task).
    Miscounted,
}

/// The value at `offset` (a global the agent set) past `base`.
#[inline(always)]
fn read<T: Copy>(base: *const u8, offset: &'static u32) -> T {
    // SAFETY: a field of a kernel struct the verifier knows by BTF, at
    // the offset the running kernel's BTF gives; a pointer that is null
    // or stale reads as zero (the verifier's guarded loads).
    unsafe {
        *base
            .add(core::ptr::read_volatile(offset) as usize)
            .cast::<T>()
    }
}

/// A cgroup's id, as `/sys/fs/cgroup` numbers it.
#[inline(always)]
fn cgroup_id(cgroup: *const u8) -> u64 {
    read(
        read::<*const u8>(cgroup, &CGROUP_KN_OFFSET),
        &KERNFS_NODE_ID_OFFSET,
    )
}

/// The id of `p`'s cgroup of the `cpu` controller (its task group).
#[inline(always)]
fn group_of(p: *mut task_struct) -> u64 {
    let task_group = read::<*const u8>(p.cast(), &TASK_GROUP_OFFSET);
    cgroup_id(read(task_group, &TASK_GROUP_CGROUP_OFFSET))
}

/// `ops.cgroup_init`: keeps `cgroup`, whose weight `args` gives. Parents
/// come before their children.
#[inline(always)]
pub fn init(cgroup: *const u8, args: *const u8) -> GroupOutcome {
    let level = read::<i32>(cgroup, &CGROUP_LEVEL_OFFSET).max(0) as u64;
    let parent = if level == 0 {
        0
    } else {
        cgroup_id(read(
            read::<*const u8>(cgroup, &CGROUP_PARENT_CSS_OFFSET),
            &CSS_CGROUP_OFFSET,
        ))
    };
    let group = Group {
        weight: u64::from(read::<u32>(args, &INIT_ARGS_WEIGHT_OFFSET)).max(1),
        parent,
        level,
        load: 0,
        contributed: 0,
    };
    match GROUPS.insert(cgroup_id(cgroup), group, 0) {
        Ok(()) => GroupOutcome::Kept,
        Err(_) => GroupOutcome::Untracked,
    }
}

/// `ops.cgroup_exit`: forgets `cgroup`, which has no task left. What it
/// still added to its parent's load is taken back first, so that no
/// miscount can outlive it.
#[inline(always)]
pub fn exit(cgroup: *const u8) -> GroupOutcome {
    let id = cgroup_id(cgroup);
    let mut outcome = GroupOutcome::Kept;
    if let Some(group) = GROUPS.get_ptr_mut(id) {
        // SAFETY: the map's value, read.
        let (parent, load) = unsafe { ((*group).parent, (*group).load) };
        if load != 0 {
            outcome = GroupOutcome::Miscounted;
        }
        let had = swap_contribution(group, 0);
        if had != 0
            && let Some(up) = GROUPS.get_ptr_mut(parent)
        {
            add_load(up, had.wrapping_neg());
            settle(parent);
        }
    }
    let _ = GROUPS.remove(id);
    outcome
}

/// `ops.cgroup_set_weight`.
#[inline(always)]
pub fn set_weight(cgroup: *const u8, weight: u32) {
    let id = cgroup_id(cgroup);
    if let Some(group) = GROUPS.get_ptr_mut(id) {
        // SAFETY: the map's value; a racing settle reads either weight,
        // and settles again if it read the old one (`settle`).
        unsafe { core::ptr::write_volatile(&raw mut (*group).weight, u64::from(weight).max(1)) };
        settle(id);
    }
}

/// `ops.runnable` (`joins`) and `ops.quiescent`: `p`'s weight joins or
/// leaves its cgroup's load. The root's load is not kept: nothing
/// divides by it.
#[inline(always)]
pub fn account(p: *mut task_struct, task_weight: u64, joins: bool) {
    let id = group_of(p);
    let Some(group) = GROUPS.get_ptr_mut(id) else {
        return;
    };
    // SAFETY: the map's value, read.
    if unsafe { (*group).level } == 0 {
        return;
    }
    let delta = if joins {
        task_weight
    } else {
        task_weight.wrapping_neg()
    };
    add_load(group, delta);
    settle(id);
}

/// Adds `delta` (two's complement: it may take away) to `group`'s load.
#[inline(always)]
fn add_load(group: *mut Group, delta: u64) {
    // SAFETY: a map value; every CPU adds to it atomically.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::SeqCst }>(&raw mut (*group).load, delta) };
}

/// Sets what `group` adds to its parent's load; returns what it added.
#[inline(always)]
fn swap_contribution(group: *mut Group, owes: u64) -> u64 {
    // SAFETY: a map value; swapped atomically.
    unsafe { atomic_xchg::<u64, { AtomicOrdering::SeqCst }>(&raw mut (*group).contributed, owes) }
}

/// What `group` should add to its parent's load now.
#[inline(always)]
fn owed(group: *mut Group) -> u64 {
    // SAFETY: the map's value, read as other CPUs change it.
    unsafe {
        if core::ptr::read_volatile(&raw const (*group).load) == 0 {
            0
        } else {
            core::ptr::read_volatile(&raw const (*group).weight)
        }
    }
}

/// Brings what the cgroup `id` adds to its parent's load in line with its
/// own load and weight, and so on up while a parent's load changes.
///
/// No lock: the contribution is swapped in atomically, and the parent's
/// load takes the difference atomically, so the parent's load is always
/// the sum of what its children's contributions say. Whoever swaps reads
/// the load again after, and swaps again if it changed: of two CPUs whose
/// changes of one load race, the last to swap saw the last load.
#[inline(always)]
fn settle(mut id: u64) {
    for _ in 0..MAX_DEPTH {
        let Some(group) = GROUPS.get_ptr_mut(id) else {
            return;
        };
        // SAFETY: the map's value, read.
        let (level, parent) = unsafe { ((*group).level, (*group).parent) };
        // A cgroup of the top level would add to the root's load, which
        // is not kept.
        if level < 2 {
            return;
        }
        let mut change: u64 = 0;
        for _ in 0..SETTLE_TRIES {
            let owes = owed(group);
            let had = swap_contribution(group, owes);
            change = change.wrapping_add(owes.wrapping_sub(had));
            if owed(group) == owes {
                break;
            }
        }
        if change == 0 {
            return;
        }
        let Some(up) = GROUPS.get_ptr_mut(parent) else {
            return;
        };
        add_load(up, change);
        id = parent;
    }
}

/// `p`'s flattened weight, in [`WEIGHT_ONE`]s of a nice-0 task's weight
/// unit (module doc), from `task_weight`, its own: at least 1.
#[inline(always)]
pub fn flattened(p: *mut task_struct, task_weight: u64) -> u64 {
    let mut weight = task_weight * WEIGHT_ONE;
    let mut id = group_of(p);
    for _ in 0..MAX_DEPTH {
        let Some(group) = GROUPS.get_ptr_mut(id) else {
            break;
        };
        // SAFETY: the map's value, read as other CPUs change it.
        let (level, parent, own, load) = unsafe {
            (
                (*group).level,
                (*group).parent,
                core::ptr::read_volatile(&raw const (*group).weight),
                core::ptr::read_volatile(&raw const (*group).load),
            )
        };
        if level == 0 {
            break;
        }
        // A load of 0 is a moment's race (the task is runnable): its
        // share is the whole cgroup's then.
        if let Some(share) = (weight * own).checked_div(load) {
            weight = share;
        }
        id = parent;
    }
    weight.max(1)
}
