//! KubeNPU's kernel program: runs on every `drm_ioctl` call and counts the
//! ones the node's vendors care about, per cgroup, device and ioctl number.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! The fast path is two hash lookups that almost always miss: a call on a
//! device that is not an accelerator, or with an ioctl number its vendor
//! does not count, returns after them. A counted call adds one to a per-CPU
//! counter atomically; only a key never seen before costs more (an insert
//! and a note on the ring buffer, without waking the agent).
#![no_std]
#![no_main]
// The BPF target offers no atomic read-modify-write types; the intrinsic
// lowers to the BPF atomic add instruction.
#![feature(core_intrinsics)]
#![allow(internal_features, reason = "atomic_xadd is the BPF atomic add")]

use core::intrinsics::{AtomicOrdering, atomic_xadd};

use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_NOEXIST},
    helpers::bpf_get_current_cgroup_id,
    macros::map,
    maps::{Array, HashMap, PerCpuArray, PerCpuHashMap, RingBuf},
};
use kubenpu_ebpf::{CountKey, Layout, Loss, OwnerRecord};

mod filter;
mod names;
mod object;

/// Default capacity of the counters; the agent may change it.
const DEFAULT_MAX_COUNTERS: u32 = 16384;
/// New-key notes in flight: a burst of new pods fits many times over.
const NOTES_BYTES: u32 = 256 * 1024;
/// No wakeup per note: the agent drains on a short timer instead.
const BPF_RB_NO_WAKEUP: u64 = 1;

#[map]
static COUNTS: PerCpuHashMap<CountKey, u64> = PerCpuHashMap::pinned(DEFAULT_MAX_COUNTERS, 0);
#[map]
static NOTES: RingBuf = RingBuf::pinned(NOTES_BYTES, 0);
#[map]
static LOSSES: PerCpuArray<u64> = PerCpuArray::pinned(Loss::ALL.len() as u32, 0);
#[map]
static LAYOUT: Array<Layout> = Array::pinned(1, 0);
/// The agent's record of who each counted cgroup is: pinned beside the
/// counts so a restart forgets neither. Allocated as entries come.
#[map]
static OWNERS: HashMap<u64, OwnerRecord> = HashMap::pinned(DEFAULT_MAX_COUNTERS, BPF_F_NO_PREALLOC);

filter::programs!(kubenpu_fentry, kubenpu_kprobe, count);

/// Counts one kept call of the current cgroup.
#[inline(always)]
fn count(rdev: u32, nr: u32) {
    let key = CountKey {
        // SAFETY: a helper without arguments.
        cgroup_id: unsafe { bpf_get_current_cgroup_id() },
        dev: rdev,
        nr,
    };
    if let Some(counter) = COUNTS.get_ptr_mut(key) {
        add_one(counter);
        return;
    }
    match COUNTS.insert(key, 1, BPF_NOEXIST as u64) {
        Ok(()) => {
            names::record(key.cgroup_id);
            if NOTES.output::<CountKey>(key, BPF_RB_NO_WAKEUP).is_err() {
                lose(Loss::RingbufFull);
            }
        }
        // Another CPU inserted the key meanwhile: this CPU's slot exists now.
        Err(_) => match COUNTS.get_ptr_mut(key) {
            Some(counter) => add_one(counter),
            None => lose(Loss::MapFull),
        },
    }
}

/// Atomic even on a per-CPU counter: a preempted program may share it.
#[inline(always)]
fn add_one(counter: *mut u64) {
    // SAFETY: a valid, aligned map value pointer for this program run.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(counter, 1) };
}

#[inline(always)]
fn lose(reason: Loss) {
    if let Some(counter) = LOSSES.get_ptr_mut(reason as u32) {
        add_one(counter);
    }
}
