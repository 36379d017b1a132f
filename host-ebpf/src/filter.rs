//! What every program on `drm_ioctl` does first: find the device from
//! `filp->f_inode->i_rdev`, keep only known accelerator devices and the
//! ioctl numbers their vendor counts. Shared by the counting program and
//! the benchmarks' per-event variant, which must filter exactly alike.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use aya_ebpf::{
    helpers::bpf_probe_read_kernel,
    macros::map,
    maps::HashMap,
    programs::{FEntryContext, ProbeContext},
};
use kubenpu_ebpf::{IoctlKey, MAX_DEVICE_NODES, MAX_VENDORS};

/// Offsets into `struct file` and `struct inode`, set by the agent from
/// the running kernel's BTF; frozen read-only data, so the verifier sees
/// constants.
#[unsafe(no_mangle)]
static F_INODE_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static I_RDEV_OFFSET: u32 = 0;

#[map]
static DEVICES: HashMap<u32, u32> = HashMap::pinned(MAX_DEVICE_NODES, 0);
/// Whole tables (256 numbers) for every vendor.
#[map]
static IOCTLS: HashMap<IoctlKey, u32> = HashMap::pinned(MAX_VENDORS * 256, 0);

/// `(rdev, cmd)` of an fentry call. `filp` is a BTF pointer, so
/// `filp->f_inode->i_rdev` are direct loads.
#[inline(always)]
pub fn fentry_call(ctx: &FEntryContext) -> (u32, u32) {
    // SAFETY: drm_ioctl(struct file *filp, unsigned int cmd, ...); the
    // verifier checks each load against struct file and struct inode.
    unsafe {
        let filp: *const u8 = ctx.arg(0);
        let cmd: u32 = ctx.arg(1);
        let inode = *(filp.add(offset(&F_INODE_OFFSET)) as *const *const u8);
        let rdev = *(inode.add(offset(&I_RDEV_OFFSET)) as *const u32);
        (rdev, cmd)
    }
}

/// `(rdev, cmd)` of a kprobe call, from registers and probe reads.
#[inline(always)]
pub fn kprobe_call(ctx: &ProbeContext) -> Option<(u32, u32)> {
    let filp = ctx.arg::<*const u8>(0)?;
    let cmd = ctx.arg::<u64>(1)?;
    // SAFETY: probe reads of kernel memory; a fault returns an error.
    unsafe {
        let inode =
            bpf_probe_read_kernel(filp.add(offset(&F_INODE_OFFSET)) as *const *const u8).ok()?;
        let rdev = bpf_probe_read_kernel(inode.add(offset(&I_RDEV_OFFSET)) as *const u32).ok()?;
        Some((rdev, cmd as u32))
    }
}

#[inline(always)]
fn offset(global: &'static u32) -> usize {
    // SAFETY: a read of our own read-only global; volatile so the compiler
    // does not fold in the placeholder value.
    unsafe { core::ptr::read_volatile(global) as usize }
}

/// The ioctl number if the device's vendor counts it, else `None`.
#[inline(always)]
pub fn tracked(rdev: u32, cmd: u32) -> Option<u32> {
    // SAFETY (both lookups): map values are only read.
    let &slot = unsafe { DEVICES.get(rdev) }?;
    let nr = cmd & 0xff;
    unsafe {
        IOCTLS.get(IoctlKey {
            vendor_slot: slot,
            nr,
        })
    }?;
    Some(nr)
}

/// Declares the fentry program `$fentry` and the kprobe program `$kprobe`
/// on `drm_ioctl`; both call `$on_kept(rdev, nr)` for every call the
/// vendor tables keep, and nothing else.
macro_rules! programs {
    ($fentry:ident, $kprobe:ident, $on_kept:path) => {
        /// Entry hook with typed arguments (direct loads).
        #[aya_ebpf::macros::fentry(function = "drm_ioctl")]
        pub fn $fentry(ctx: aya_ebpf::programs::FEntryContext) -> u32 {
            let (rdev, cmd) = $crate::filter::fentry_call(&ctx);
            if let Some(nr) = $crate::filter::tracked(rdev, cmd) {
                $on_kept(rdev, nr);
            }
            0
        }

        /// Entry hook from registers, for kernels where fentry is
        /// unavailable.
        #[aya_ebpf::macros::kprobe]
        pub fn $kprobe(ctx: aya_ebpf::programs::ProbeContext) -> u32 {
            if let Some((rdev, cmd)) = $crate::filter::kprobe_call(&ctx)
                && let Some(nr) = $crate::filter::tracked(rdev, cmd)
            {
                $on_kept(rdev, nr);
            }
            0
        }
    };
}
pub(crate) use programs;
