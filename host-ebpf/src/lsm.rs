//! The policy's checks, as BPF LSM programs: at a device node's open
//! (`file_open`) and at each ioctl (`file_ioctl`, and `file_ioctl_compat`
//! for 32-bit callers on Linux 6.8+), before the driver sees the call.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! LSM programs are not tracing programs: the kernel's recursion guard
//! never skips them, so a check cannot fail open under preemption. Each
//! returns an earlier LSM's refusal unchanged, then returns at once for a
//! file that is not a known accelerator node (one hash lookup: these
//! hooks run for every open and ioctl on the node), and for a caller the
//! agent has not ruled: a cgroup without a RULES entry (a host process, a
//! container the allocation join has not classified) is never refused,
//! and neither is anyone once the agent's lease has run out (no agent
//! has renewed it for its length: the agent was uninstalled).
//! A ruled cgroup may use a device node as far as its GRANTS value's mask
//! allows; anything else is counted in VERDICTS, under the rule the value
//! names (allocated-only where there is none), and, under enforce,
//! refused with `EPERM`.

use aya_ebpf::{
    bindings::{BPF_F_MMAPABLE, BPF_F_NO_PREALLOC, BPF_NOEXIST},
    helpers::{bpf_get_current_cgroup_id, bpf_ktime_get_boot_ns},
    macros::{lsm, map},
    maps::{Array, HashMap, LruHashMap, PerCpuArray},
    programs::LsmContext,
};
use kubenpu_ebpf::{CountKey, GrantKey, Loss, VerdictKey, grant, kind, lsm_hook, mode};

use crate::{BPF_RB_NO_WAKEUP, DEFAULT_MAX_COUNTERS, NOTES, add, filter, lose};

/// Cgroups the policy may rule at once: every container of a large node.
const MAX_RULED: u32 = 16384;
/// Ruled cgroups × device nodes.
const MAX_GRANTS: u32 = 65536;
/// Unruled cgroups whose opens were noted recently.
const MAX_NOTED: u32 = 4096;
/// What a refused call returns.
const EPERM: i32 = 1;
/// The ioctls `do_vfs_ioctl` answers for every file, before the driver
/// (asm-generic numbers, those of every architecture here).
const FIONBIO: u32 = 0x5421;
const FIONCLEX: u32 = 0x5450;
const FIOCLEX: u32 = 0x5451;
const FIOASYNC: u32 = 0x5452;

#[map]
static RULES: HashMap<u64, u32> = HashMap::pinned(MAX_RULED, 0);
#[map]
static GRANTS: HashMap<GrantKey, u32> = HashMap::pinned(MAX_GRANTS, 0);
/// Distinct (cgroup, node, kind, hook, mode) verdicts, as many as the
/// counters (the agent sizes both). Allocated as verdicts come: most
/// nodes never have one.
#[map]
static VERDICTS: HashMap<VerdictKey, u64> =
    HashMap::pinned(DEFAULT_MAX_COUNTERS, BPF_F_NO_PREALLOC);
#[map]
static VERDICTS_LOST: PerCpuArray<u64> = PerCpuArray::pinned(1, 0);
/// Until when the rules are in force, in CLOCK_BOOTTIME ns; mapped into
/// the agent's memory, which renews it.
#[map]
static LEASE: Array<u64> = Array::pinned(1, BPF_F_MMAPABLE);
/// Unruled cgroups already noted at an open, so that a process opening a
/// node again and again notes it once, not once per open.
#[map]
static NOTED: LruHashMap<u64, u8> = LruHashMap::with_max_entries(MAX_NOTED, 0);

/// `file_open(file)`: an unruled caller is noted, so the agent learns of a
/// container at its first open of an accelerator, not at its first
/// counted call; a ruled one may open what any of its grants allow.
#[lsm(hook = "file_open")]
pub fn kubenpu_policy_open(ctx: LsmContext) -> i32 {
    let earlier: i32 = ctx.arg(1);
    if earlier != 0 {
        return earlier;
    }
    // SAFETY: the hook's first argument is the struct file being opened,
    // its inode set.
    let rdev = unsafe { filter::file_rdev(ctx.arg(0)) };
    if filter::device(rdev).is_none() {
        return 0;
    }
    // SAFETY: a helper without arguments.
    let cgroup_id = unsafe { bpf_get_current_cgroup_id() };
    // SAFETY: map values are only read.
    let Some(&ruled) = (unsafe { RULES.get(cgroup_id) }) else {
        note(cgroup_id, rdev);
        return 0;
    };
    if !leased() {
        return 0;
    }
    let key = GrantKey {
        cgroup_id,
        dev: rdev,
        pad: 0,
    };
    // SAFETY: as above.
    let granted = unsafe { GRANTS.get(key) }.copied().unwrap_or(0);
    if grant::mask(granted) != 0 {
        return 0;
    }
    let Some(ruled) = still_ruled(cgroup_id, ruled) else {
        return 0;
    };
    let refused_by = grant::rule(granted);
    verdict(
        cgroup_id,
        rdev,
        kind::OTHER,
        lsm_hook::OPEN,
        ruled,
        refused_by,
    )
}

/// `file_ioctl(file, cmd, arg)`.
#[lsm(hook = "file_ioctl")]
pub fn kubenpu_policy_ioctl(ctx: LsmContext) -> i32 {
    check_ioctl(&ctx, lsm_hook::IOCTL)
}

/// `file_ioctl_compat(file, cmd, arg)`: a 32-bit caller's ioctl.
#[lsm(hook = "file_ioctl_compat")]
pub fn kubenpu_policy_ioctl_compat(ctx: LsmContext) -> i32 {
    check_ioctl(&ctx, lsm_hook::IOCTL_COMPAT)
}

#[inline(always)]
fn check_ioctl(ctx: &LsmContext, hook: u8) -> i32 {
    let earlier: i32 = ctx.arg(3);
    if earlier != 0 {
        return earlier;
    }
    // SAFETY: the hook's first argument is the struct file.
    let rdev = unsafe { filter::file_rdev(ctx.arg(0)) };
    let Some(device) = filter::device(rdev) else {
        return 0;
    };
    // SAFETY: a helper without arguments.
    let cgroup_id = unsafe { bpf_get_current_cgroup_id() };
    // SAFETY: map values are only read.
    let Some(&ruled) = (unsafe { RULES.get(cgroup_id) }) else {
        return 0;
    };
    if !leased() {
        return 0;
    }
    let cmd: u32 = ctx.arg(1);
    // drm_ioctl dispatches on the number alone, whatever the type, so the
    // vendor's table classifies every ioctl by it (other drivers by the
    // bits their plugin names), but for the few the VFS answers itself
    // for every file: they never reach the driver.
    // A classified command is of its entry's kind only where its field
    // says so; one whose field cannot be read is refused as no kind.
    let nr = cmd & device.cmd_mask;
    let kind = match filter::ioctl(device, nr) {
        _ if matches!(cmd, FIONBIO | FIONCLEX | FIOCLEX | FIOASYNC) => kind::OTHER,
        Some(entry) if filter::of_kind(device, nr, entry, ctx.arg(2)) == Some(true) => entry.kind,
        _ => kind::OTHER,
    };
    let key = GrantKey {
        cgroup_id,
        dev: rdev,
        pad: 0,
    };
    // SAFETY: as above.
    let granted = unsafe { GRANTS.get(key) }.copied().unwrap_or(0);
    if grant::mask(granted) & grant::bit(kind) != 0 {
        return 0;
    }
    let Some(ruled) = still_ruled(cgroup_id, ruled) else {
        return 0;
    };
    verdict(cgroup_id, rdev, kind, hook, ruled, grant::rule(granted))
}

/// The mode to judge by, from the cgroup's RULES value read before its
/// grant (`before`) and read again now: `None` if its rule is gone, audit
/// unless both reads say enforce. The agent loosens modes before it
/// narrows grants, so a check that read the mode before a loosening and
/// the grant after a narrowing would refuse what neither the old rules
/// nor the new ones refuse; read again after the grant, the mode is the
/// loosened one. A check never refuses on a mode only one read saw
/// (`policy::rules`' tests go through every order of reads and writes).
#[inline(always)]
fn still_ruled(cgroup_id: u64, before: u32) -> Option<u32> {
    // SAFETY: map values are only read.
    let now = unsafe { RULES.get(cgroup_id) }.copied()?;
    let judged = if before == mode::ENFORCE && now == mode::ENFORCE {
        mode::ENFORCE
    } else {
        mode::AUDIT
    };
    // Opaque to the compiler, so that the return value is chosen by a
    // branch on it, as from a map value: folded into arithmetic on the
    // two reads (a negated bit), it leaves 6.12's verifier unable to see
    // that an LSM program returns 0 or an errno.
    // SAFETY: a read of a local.
    Some(unsafe { core::ptr::read_volatile(&judged) })
}

/// Whether the agent's lease on the rules runs.
#[inline(always)]
fn leased() -> bool {
    let Some(until) = LEASE.get(0) else {
        return false;
    };
    // SAFETY: a helper without arguments; a volatile read of the map
    // value the agent writes through its mapping.
    unsafe { bpf_ktime_get_boot_ns() < core::ptr::read_volatile(until) }
}

/// Counts a call the rules do not allow, by the rule `refused_by`, and
/// returns what the mode `ruled` says: `-EPERM` under enforce, 0 under
/// audit.
#[inline(always)]
fn verdict(cgroup_id: u64, dev: u32, kind: u32, hook: u8, ruled: u32, refused_by: u8) -> i32 {
    let key = VerdictKey {
        cgroup_id,
        dev,
        kind: kind as u8,
        hook,
        mode: ruled as u8,
        rule: refused_by,
    };
    let counted = match VERDICTS.get_ptr_mut(key) {
        Some(count) => {
            add(count, 1);
            true
        }
        // NOEXIST: a key another CPU made meanwhile keeps its count.
        None => {
            VERDICTS.insert(key, 1, BPF_NOEXIST as u64).is_ok()
                || VERDICTS
                    .get_ptr_mut(key)
                    .map(|count| add(count, 1))
                    .is_some()
        }
    };
    if !counted && let Some(lost) = VERDICTS_LOST.get_ptr_mut(0) {
        add(lost, 1);
    }
    if ruled == mode::ENFORCE { -EPERM } else { 0 }
}

/// Tells the agent of an unruled cgroup opening an accelerator node, once
/// while it stays in the recent set.
#[inline(always)]
fn note(cgroup_id: u64, dev: u32) {
    // SAFETY: map values are only read.
    if unsafe { NOTED.get(cgroup_id) }.is_some() {
        return;
    }
    let key = CountKey {
        cgroup_id,
        dev,
        nr: 0,
    };
    // Marked only once sent: a note the full ring buffer lost is tried
    // again at the next open.
    if NOTES.output::<CountKey>(key, BPF_RB_NO_WAKEUP).is_err() {
        lose(Loss::RingbufFull);
    } else {
        let _ = NOTED.insert(cgroup_id, 1, 0);
    }
}
