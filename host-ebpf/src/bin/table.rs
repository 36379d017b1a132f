//! For the benchmarks only: the ioctl table looked up two ways, so their
//! cost can be compared on the same hook. `hash` is the counting program's
//! own filter (DEVICES, then IOCTLS keyed by the vendor's name hash and
//! the number, both hashes, the agent's pinned maps); `array` finds the
//! device in a hash that gives the vendor's index, then its entry in an
//! array of 256 numbers per vendor. Neither counts: both return after the
//! lookups. The agent never loads them.
//!
//! SPDX-License-Identifier: GPL-2.0-only
#![no_std]
#![no_main]

use aya_ebpf::{
    macros::map,
    maps::{Array, HashMap},
};
use kubenpu_ebpf::{IoctlEntry, MAX_DEVICE_NODES, MAX_VENDORS};

#[path = "../filter.rs"]
#[allow(dead_code, reason = "the table lookups never read the argument")]
mod filter;
#[path = "../object.rs"]
mod object;

filter::programs!(kubenpu_table_hash_fentry, kubenpu_table_hash_kprobe, keep);

/// Nothing: the lookups are what is measured.
#[inline(always)]
fn keep(_call: &filter::Call, _kept: &filter::Kept) {}

/// Device node -> the vendor's index in ARRAY_IOCTLS, filled by
/// `hook_variant` from the agent's DEVICES.
#[map]
static ARRAY_DEVICES: HashMap<u32, u32> = HashMap::with_max_entries(MAX_DEVICE_NODES, 0);
/// `index * 256 + nr` -> the entry; kind 0 where the vendor counts nothing.
#[map]
static ARRAY_IOCTLS: Array<IoctlEntry> = Array::with_max_entries(MAX_VENDORS * 256, 0);

/// The entry of a kept call, from the array table.
#[inline(always)]
fn tracked(call: &filter::Call) -> Option<&'static IoctlEntry> {
    // SAFETY: map values are only read.
    let &index = unsafe { ARRAY_DEVICES.get(call.rdev) }?;
    let entry = ARRAY_IOCTLS.get(index * 256 + (call.cmd & 0xff))?;
    (entry.kind != 0).then_some(entry)
}

/// fentry with the array table.
#[aya_ebpf::macros::fentry(function = "drm_ioctl")]
pub fn kubenpu_table_array_fentry(ctx: aya_ebpf::programs::FEntryContext) -> u32 {
    let _ = tracked(&filter::fentry_call(&ctx));
    0
}

/// kprobe with the array table.
#[aya_ebpf::macros::kprobe]
pub fn kubenpu_table_array_kprobe(ctx: aya_ebpf::programs::ProbeContext) -> u32 {
    if let Some(call) = filter::kprobe_call(&ctx) {
        let _ = tracked(&call);
    }
    0
}
