//! For the benchmarks only: the design KubeNPU's counting replaced, one
//! ring-buffer event reserved and submitted (waking the reader) per counted
//! call, for userspace to count. Same hooks, same filter and same maps for
//! it (the agent's pinned DEVICES and IOCTLS), so the cost per call can be
//! compared like for like. The agent never loads it.
//!
//! SPDX-License-Identifier: GPL-2.0-only
#![no_std]
#![no_main]

use aya_ebpf::{helpers::bpf_get_current_cgroup_id, macros::map, maps::RingBuf};
use kubenpu_ebpf::CountKey;

#[path = "../filter.rs"]
#[allow(
    dead_code,
    reason = "the per-event variant keeps no state per call, so never reads the argument"
)]
mod filter;
#[path = "../object.rs"]
mod object;

/// Room for the events the reader has not consumed yet.
const EVENTS_BYTES: u32 = 256 * 1024;

#[map]
static EVENTS: RingBuf = RingBuf::with_byte_size(EVENTS_BYTES, 0);

filter::programs!(kubenpu_per_event_fentry, kubenpu_per_event_kprobe, emit);

/// One event per counted call; a full buffer drops it (the reader counts
/// what it gets, so a drop shows as a shortfall).
#[inline(always)]
fn emit(call: &filter::Call, kept: &filter::Kept) {
    if let Some(mut entry) = EVENTS.reserve::<CountKey>(0) {
        entry.write(CountKey {
            // SAFETY: a helper without arguments.
            cgroup_id: unsafe { bpf_get_current_cgroup_id() },
            dev: call.rdev,
            nr: kept.nr,
        });
        entry.submit(0);
    }
}
