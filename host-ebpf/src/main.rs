//! KubeNPU's kernel program: runs on every `drm_ioctl` call and counts the
//! ones the node's vendors care about, per cgroup, device and ioctl number,
//! with how they ended, how long they took and what they allocated.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! The fast path is two hash lookups that almost always miss: a call on a
//! device that is not an accelerator, or with an ioctl number its vendor
//! does not count, returns after them, and its exit after finding its
//! thread's record idle or absent (a kprobe session runs no exit for it
//! at all).
//! A counted call adds one to its counter atomically as it enters (and
//! one to its remote count if the calling CPU's NUMA node is not the
//! device's) and writes its start time in its thread's record (task
//! storage: no hash insert or delete per call); as it returns, the exit
//! program adds its result, time and bytes. Only a key never seen before
//! costs more (an insert and a note on the ring buffer, without waking
//! the agent).
//!
//! A counter is one value shared by all CPUs, not one per CPU: a scrape
//! then reads 40 bytes per key whatever the node's CPU count (per-CPU
//! values made it copy, and the kernel preallocate, their size per key per
//! possible CPU: 128 MiB for the default 16,384 keys on 256 CPUs). The
//! price is that threads of one pod counting the same ioctl on the same
//! device at once share a cache line.
#![no_std]
#![no_main]
// The BPF target offers no atomic read-modify-write types; the intrinsic
// lowers to the BPF atomic add instruction.
#![feature(core_intrinsics)]
#![allow(internal_features, reason = "atomic_xadd is the BPF atomic add")]

use core::intrinsics::{AtomicOrdering, atomic_xadd};

use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_NOEXIST},
    helpers::{bpf_get_current_cgroup_id, bpf_get_numa_node_id, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, HashMap, PerCpuArray, PerCpuHashMap, RingBuf},
};
use kubenpu_ebpf::{
    CountKey, CountValue, DURATION_BUCKETS, DurationKey, Inflight, Layout, Loss, NO_NUMA_NODE,
    OwnerRecord, ending, inflight,
};
use task_storage::TaskStorage;

mod dump;
mod exit;
mod filter;
mod lsm;
mod names;
mod object;
mod session;
mod size;
mod task_storage;

/// Default capacity of the counters; the agent may change it.
const DEFAULT_MAX_COUNTERS: u32 = 16384;
/// New-key notes in flight: a burst of new pods fits many times over.
const NOTES_BYTES: u32 = 256 * 1024;
/// No wakeup per note: the agent drains on a short timer instead.
const BPF_RB_NO_WAKEUP: u64 = 1;
/// Device nodes × kinds × buckets in use: a few thousand on a large node.
const MAX_DURATION_KEYS: u32 = 8192;

#[map]
static COUNTS: HashMap<CountKey, CountValue> = HashMap::pinned(DEFAULT_MAX_COUNTERS, 0);
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
/// The counted call each thread is inside, kept in the thread. Pinned, so
/// a call that entered under one agent's program is finished by its
/// successor's.
#[map]
static INFLIGHT: TaskStorage<Inflight> = TaskStorage::pinned();
/// Call durations per device node, kind and log2 bucket. Allocated as
/// buckets are first used: per-CPU values on a 256-CPU node are costly.
#[map]
static DURATIONS: PerCpuHashMap<DurationKey, u64> =
    PerCpuHashMap::pinned(MAX_DURATION_KEYS, BPF_F_NO_PREALLOC);

filter::programs!(kubenpu_fentry, kubenpu_kprobe, enter);

/// A kept call enters: count it (unless it is the restart of one already
/// counted) and remember it for its exit.
#[inline(always)]
fn enter(call: &filter::Call, kept: &filter::Kept) {
    if kept.unclassified {
        lose(Loss::Unclassified);
        return;
    }
    let entry = kept.entry;
    let key = CountKey {
        // SAFETY: a helper without arguments.
        cgroup_id: unsafe { bpf_get_current_cgroup_id() },
        dev: call.rdev,
        nr: kept.nr,
    };
    let Some(record) = INFLIGHT.current_or_new() else {
        // No memory for the thread's record: counted, not measured.
        count(key, kept.numa_node);
        lose(Loss::Unmeasured);
        return;
    };
    // SAFETY: this thread's record, copied out; only this thread writes it.
    let previous = unsafe { *record };
    let mut earlier_ns = 0;
    match previous.state {
        // The kernel restarts a call a signal interrupted with the same
        // arguments (and libdrm retries one that returned EINTR): one call.
        inflight::RESTARTING if previous.key == key && previous.arg == call.arg => {
            earlier_ns = previous.earlier_ns;
        }
        // The interrupted call was not run again: the caller got EINTR
        // and moved on. It failed.
        inflight::RESTARTING => {
            exit::conclude(&previous, ending::FAILED, 0, 0);
            count(key, kept.numa_node);
        }
        // The exit of this thread's previous call never ran.
        inflight::INSIDE => {
            lose(Loss::Unmeasured);
            count(key, kept.numa_node);
        }
        _ => count(key, kept.numa_node),
    }
    let (size_at, bytes) = size::at_entry(call, entry);
    // SAFETY: as above.
    unsafe {
        *record = Inflight {
            key,
            arg: call.arg,
            // SAFETY: a helper without arguments.
            start_ns: bpf_ktime_get_ns(),
            earlier_ns,
            size_at,
            bytes,
            size_width: u32::from(entry.size_width),
            kind: entry.kind,
            state: inflight::INSIDE,
            numa_node: kept.numa_node,
        }
    };
}

/// Counts one call of `key` on a device of NUMA node `device_node`, and
/// whether it came from a CPU of another node.
#[inline(always)]
fn count(key: CountKey, device_node: u32) {
    let Some(value) = counter(key) else {
        lose(Loss::MapFull);
        return;
    };
    add(value_field(value, Field::Calls), 1);
    // SAFETY: a helper without arguments.
    if device_node != NO_NUMA_NODE && device_node != unsafe { bpf_get_numa_node_id() } as u32 {
        add(value_field(value, Field::Remote), 1);
    }
}

/// The counter of `key`, made (zero) if it is new: then the cgroup's names
/// are recorded and the agent is told of the key. `None` if the map is
/// full.
#[inline(always)]
fn counter(key: CountKey) -> Option<*mut CountValue> {
    if let Some(value) = COUNTS.get_ptr_mut(key) {
        return Some(value);
    }
    // NOEXIST: a key another CPU made meanwhile keeps what it counted.
    if COUNTS
        .insert(key, CountValue::default(), BPF_NOEXIST as u64)
        .is_ok()
    {
        names::record(key.cgroup_id);
        if NOTES.output::<CountKey>(key, BPF_RB_NO_WAKEUP).is_err() {
            lose(Loss::RingbufFull);
        }
    }
    COUNTS.get_ptr_mut(key)
}

/// The fields of a [`CountValue`], for atomic adds to one of them.
#[derive(Clone, Copy)]
enum Field {
    Calls,
    Failed,
    Ns,
    Bytes,
    Remote,
    Busy,
    TimedOut,
}

#[inline(always)]
fn value_field(value: *mut CountValue, field: Field) -> *mut u64 {
    // SAFETY: a valid map value pointer; the field pointers stay inside it.
    unsafe {
        match field {
            Field::Calls => &raw mut (*value).calls,
            Field::Failed => &raw mut (*value).failed,
            Field::Ns => &raw mut (*value).ns,
            Field::Bytes => &raw mut (*value).bytes,
            Field::Remote => &raw mut (*value).remote,
            Field::Busy => &raw mut (*value).busy,
            Field::TimedOut => &raw mut (*value).timed_out,
        }
    }
}

/// Atomic: every CPU adds to the same counter.
#[inline(always)]
fn add(counter: *mut u64, amount: u64) {
    // SAFETY: a valid, aligned map value pointer for this program run.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(counter, amount) };
}

#[inline(always)]
fn lose(reason: Loss) {
    if let Some(counter) = LOSSES.get_ptr_mut(reason as u32) {
        add(counter, 1);
    }
}

/// Adds one call of `ns` to the duration histogram of `key`'s device and
/// `kind`.
#[inline(always)]
fn record_duration(dev: u32, kind: u32, ns: u64) {
    let key = DurationKey {
        dev,
        kind: kind as u16,
        bucket: log2(ns).min(u32::from(DURATION_BUCKETS) - 1) as u16,
    };
    if let Some(counter) = DURATIONS.get_ptr_mut(key) {
        add(counter, 1);
        return;
    }
    if DURATIONS.insert(key, 1, BPF_NOEXIST as u64).is_err() {
        match DURATIONS.get_ptr_mut(key) {
            Some(counter) => add(counter, 1),
            None => lose(Loss::HistogramFull),
        }
    }
}

/// `floor(log2(n))`, 0 for 0: a binary search, since BPF has no
/// count-leading-zeros instruction.
#[inline(always)]
fn log2(mut n: u64) -> u32 {
    let mut log = 0;
    for shift in [32, 16, 8, 4, 2, 1] {
        if n >> shift != 0 {
            n >>= shift;
            log += shift;
        }
    }
    log
}
