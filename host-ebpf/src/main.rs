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
    bindings::BPF_NOEXIST,
    helpers::{bpf_get_current_cgroup_id, bpf_probe_read_kernel},
    macros::{fentry, kprobe, map},
    maps::{Array, HashMap, PerCpuArray, PerCpuHashMap, RingBuf},
    programs::{FEntryContext, ProbeContext},
};
use kubenpu_ebpf::{CountKey, IoctlKey, Layout, Loss};

/// Offsets into `struct file` and `struct inode`, set by the agent from
/// the running kernel's BTF; frozen read-only data, so the verifier sees
/// constants.
#[unsafe(no_mangle)]
static F_INODE_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static I_RDEV_OFFSET: u32 = 0;

/// Upper bound on accelerator device nodes on one node.
const MAX_DEVICES: u32 = 1024;
/// Upper bound on (vendor, ioctl) entries: 64 vendors of full tables.
const MAX_IOCTLS: u32 = 64 * 256;
/// Default capacity of the counters; the agent may change it.
const DEFAULT_MAX_COUNTERS: u32 = 16384;
/// New-key notes in flight: a burst of new pods fits many times over.
const NOTES_BYTES: u32 = 256 * 1024;
/// No wakeup per note: the agent drains on a short timer instead.
const BPF_RB_NO_WAKEUP: u64 = 1;

#[map]
static DEVICES: HashMap<u32, u32> = HashMap::pinned(MAX_DEVICES, 0);
#[map]
static IOCTLS: HashMap<IoctlKey, u32> = HashMap::pinned(MAX_IOCTLS, 0);
#[map]
static COUNTS: PerCpuHashMap<CountKey, u64> = PerCpuHashMap::pinned(DEFAULT_MAX_COUNTERS, 0);
#[map]
static NOTES: RingBuf = RingBuf::pinned(NOTES_BYTES, 0);
#[map]
static LOSSES: PerCpuArray<u64> = PerCpuArray::pinned(Loss::ALL.len() as u32, 0);
#[map]
static LAYOUT: Array<Layout> = Array::pinned(1, 0);

/// Entry hook with typed arguments: `filp` is a BTF pointer, so
/// `filp->f_inode->i_rdev` are direct loads.
#[fentry(function = "drm_ioctl")]
pub fn kubenpu_fentry(ctx: FEntryContext) -> u32 {
    // SAFETY: drm_ioctl(struct file *filp, unsigned int cmd, ...); the
    // verifier checks each load against struct file and struct inode.
    unsafe {
        let filp: *const u8 = ctx.arg(0);
        let cmd: u32 = ctx.arg(1);
        let inode = *(filp.add(offset(&F_INODE_OFFSET)) as *const *const u8);
        let rdev = *(inode.add(offset(&I_RDEV_OFFSET)) as *const u32);
        count(rdev, cmd);
    }
    0
}

/// Entry hook from registers, for kernels where fentry is unavailable.
#[kprobe]
pub fn kubenpu_kprobe(ctx: ProbeContext) -> u32 {
    let (Some(filp), Some(cmd)) = (ctx.arg::<*const u8>(0), ctx.arg::<u64>(1)) else {
        return 0;
    };
    // SAFETY: probe reads of kernel memory; a fault returns an error.
    let rdev = unsafe {
        let Ok(inode) =
            bpf_probe_read_kernel(filp.add(offset(&F_INODE_OFFSET)) as *const *const u8)
        else {
            return 0;
        };
        let Ok(rdev) = bpf_probe_read_kernel(inode.add(offset(&I_RDEV_OFFSET)) as *const u32)
        else {
            return 0;
        };
        rdev
    };
    count(rdev, cmd as u32);
    0
}

#[inline(always)]
fn offset(global: &'static u32) -> usize {
    // SAFETY: a read of our own read-only global; volatile so the compiler
    // does not fold in the placeholder value.
    unsafe { core::ptr::read_volatile(global) as usize }
}

#[inline(always)]
fn count(rdev: u32, cmd: u32) {
    // SAFETY (both lookups): map values are only read.
    let Some(&slot) = (unsafe { DEVICES.get(rdev) }) else {
        return;
    };
    let nr = cmd & 0xff;
    if unsafe {
        IOCTLS.get(IoctlKey {
            vendor_slot: slot,
            nr,
        })
    }
    .is_none()
    {
        return;
    }
    let key = CountKey {
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

/// The kernel refuses GPL-only helpers to programs without a GPL licence.
#[unsafe(no_mangle)]
#[unsafe(link_section = "license")]
pub static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
