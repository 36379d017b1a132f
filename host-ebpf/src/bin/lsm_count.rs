//! For the benchmarks only: a BPF LSM program on `file_ioctl` as the
//! counting hook, to weigh against the tracing hooks on `drm_ioctl`. An
//! LSM program is not a tracing program, so the kernel's recursion guard
//! never skips it; but it runs for every ioctl on the node, accelerator or
//! not, and before the call, so it cannot see how long the call took, how
//! it ended or what it allocated. It filters with the agent's pinned
//! DEVICES and IOCTLS, as the counting program does, and counts each kept
//! call as the counting program's entry does: the counter per cgroup,
//! device and number (made on first use), an atomic add, and the NUMA
//! check. It counts every ioctl syscall, so a call the kernel restarts
//! after a signal is counted once per restart. It attaches to
//! `file_ioctl` only: 32-bit callers pass `file_ioctl_compat` from Linux
//! 6.8 on, and the benchmarks' workload is 64-bit. The agent never loads
//! it.
//!
//! SPDX-License-Identifier: GPL-2.0-only
#![no_std]
#![no_main]
#![feature(core_intrinsics)]
#![allow(internal_features, reason = "atomic_xadd is the BPF atomic add")]

use core::intrinsics::{AtomicOrdering, atomic_xadd};

use aya_ebpf::{
    bindings::BPF_NOEXIST,
    helpers::{bpf_get_current_cgroup_id, bpf_get_numa_node_id},
    macros::{lsm, map},
    maps::HashMap,
    programs::LsmContext,
};
use kubenpu_ebpf::{CountKey, NO_NUMA_NODE};

#[path = "../filter.rs"]
#[allow(
    dead_code,
    unused_imports,
    unused_macros,
    reason = "the LSM hook has its own entry: the tracing hooks' entries and their macro are unused"
)]
mod filter;
#[path = "../object.rs"]
mod object;

/// Keys counted: as many as the agent's counters hold by default.
const MAX_COUNTERS: u32 = 16384;

/// Calls and remote calls per key, read by `hook_variant` at its end.
#[map]
static LSM_COUNTS: HashMap<CountKey, [u64; 2]> = HashMap::with_max_entries(MAX_COUNTERS, 0);

/// `file_ioctl(file, cmd, arg)`: counts the calls the vendor tables keep;
/// allows every call (returns an earlier LSM's verdict unchanged).
#[lsm(hook = "file_ioctl")]
pub fn kubenpu_count_lsm(ctx: LsmContext) -> i32 {
    let earlier: i32 = ctx.arg(3);
    if earlier != 0 {
        return earlier;
    }
    // SAFETY: the hook's first argument is the struct file.
    let call = filter::Call {
        rdev: unsafe { filter::file_rdev(ctx.arg(0)) },
        cmd: ctx.arg(1),
        arg: ctx.arg(2),
    };
    if let Some(kept) = filter::tracked(&call) {
        count(
            CountKey {
                // SAFETY: a helper without arguments.
                cgroup_id: unsafe { bpf_get_current_cgroup_id() },
                dev: call.rdev,
                nr: kept.nr,
            },
            kept.numa_node,
        );
    }
    0
}

/// One call of `key` on a device of NUMA node `device_node`.
#[inline(always)]
fn count(key: CountKey, device_node: u32) {
    let value = match LSM_COUNTS.get_ptr_mut(key) {
        Some(value) => value,
        None => {
            // NOEXIST: a key another CPU made meanwhile keeps its count.
            let _ = LSM_COUNTS.insert(key, [0, 0], BPF_NOEXIST as u64);
            let Some(value) = LSM_COUNTS.get_ptr_mut(key) else {
                return;
            };
            value
        }
    };
    // SAFETY: a valid map value pointer for this program run.
    unsafe {
        atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(&raw mut (*value)[0], 1);
        if device_node != NO_NUMA_NODE && device_node != bpf_get_numa_node_id() as u32 {
            atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(&raw mut (*value)[1], 1);
        }
    }
}
