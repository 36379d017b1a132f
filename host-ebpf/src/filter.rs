//! What every program on `drm_ioctl` (and on the other drivers' ioctl
//! entries, which take the same arguments) does first: find the device
//! from `filp->f_inode->i_rdev`, keep only known accelerator devices and
//! the ioctl commands their vendor counts. Shared by the counting program and
//! the benchmarks' per-event variant, which must filter exactly alike.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use aya_ebpf::{
    helpers::{bpf_probe_read_kernel, bpf_probe_read_user},
    macros::map,
    maps::HashMap,
    programs::{FEntryContext, ProbeContext},
};
use kubenpu_ebpf::{
    ClassKey, DeviceEntry, IoctlEntry, IoctlKey, MAX_CLASS_VALUES, MAX_DEVICE_NODES, MAX_VENDORS,
};

/// Offsets into `struct file` and `struct inode`, set by the agent from
/// the running kernel's BTF; frozen read-only data, so the verifier sees
/// constants.
#[unsafe(no_mangle)]
static F_INODE_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static I_RDEV_OFFSET: u32 = 0;

#[map]
static DEVICES: HashMap<u32, DeviceEntry> = HashMap::pinned(MAX_DEVICE_NODES, 0);
/// Whole tables (256 numbers) for every vendor.
#[map]
static IOCTLS: HashMap<IoctlKey, IoctlEntry> = HashMap::pinned(MAX_VENDORS * 256, 0);
/// The values of classified entries' fields that make their calls count.
#[map]
static CLASSES: HashMap<ClassKey, u8> = HashMap::pinned(MAX_CLASS_VALUES, 0);

/// One `drm_ioctl(filp, cmd, arg)` call, as the entry programs see it.
#[derive(Clone, Copy)]
pub struct Call {
    /// `filp->f_inode->i_rdev`.
    pub rdev: u32,
    /// The ioctl command.
    pub cmd: u32,
    /// The user address of its argument.
    pub arg: u64,
}

/// An fentry call. `filp` is a BTF pointer, so `filp->f_inode->i_rdev`
/// are direct loads.
#[inline(always)]
pub fn fentry_call(ctx: &FEntryContext) -> Call {
    // SAFETY: drm_ioctl(struct file *filp, unsigned int cmd, unsigned long
    // arg); the verifier checks each load against struct file and struct
    // inode.
    unsafe {
        let filp: *const u8 = ctx.arg(0);
        let cmd: u32 = ctx.arg(1);
        let arg: u64 = ctx.arg(2);
        Call {
            rdev: file_rdev(filp),
            cmd,
            arg,
        }
    }
}

/// `file->f_inode->i_rdev`, by direct loads.
///
/// # Safety
///
/// `file` must be a BTF pointer to a `struct file` (an fentry or LSM
/// argument): the verifier checks each load against the types.
#[inline(always)]
pub unsafe fn file_rdev(file: *const u8) -> u32 {
    // SAFETY: see above.
    unsafe {
        let inode = *(file.add(offset(&F_INODE_OFFSET)) as *const *const u8);
        *(inode.add(offset(&I_RDEV_OFFSET)) as *const u32)
    }
}

/// A kprobe call, from registers and probe reads.
#[inline(always)]
pub fn kprobe_call(ctx: &ProbeContext) -> Option<Call> {
    let filp = ctx.arg::<*const u8>(0)?;
    let cmd = ctx.arg::<u64>(1)?;
    let arg = ctx.arg::<u64>(2)?;
    // SAFETY: probe reads of kernel memory; a fault returns an error.
    unsafe {
        let inode =
            bpf_probe_read_kernel(filp.add(offset(&F_INODE_OFFSET)) as *const *const u8).ok()?;
        let rdev = bpf_probe_read_kernel(inode.add(offset(&I_RDEV_OFFSET)) as *const u32).ok()?;
        Some(Call {
            rdev,
            cmd: cmd as u32,
            arg,
        })
    }
}

#[inline(always)]
fn offset(global: &'static u32) -> usize {
    // SAFETY: a read of our own read-only global; volatile so the compiler
    // does not fold in the placeholder value.
    unsafe { core::ptr::read_volatile(global) as usize }
}

/// A call the vendor tables keep.
pub struct Kept {
    /// Its key in the device's table, `cmd & cmd_mask` (`cmd & 0xff` on
    /// DRM).
    pub nr: u32,
    /// What the vendor's table says of it.
    pub entry: &'static IoctlEntry,
    /// The device's NUMA node, or `NO_NUMA_NODE`.
    pub numa_node: u32,
    /// A classified entry whose field could not be read: the call may or
    /// may not be of its kind, and is not counted (a loss by reason).
    pub unclassified: bool,
}

/// The accelerator device node `rdev`, if it is one.
#[inline(always)]
pub fn device(rdev: u32) -> Option<&'static DeviceEntry> {
    // SAFETY: map values are only read.
    unsafe { DEVICES.get(rdev) }
}

/// What `device`'s vendor counts of the ioctl keyed `nr` (`cmd &
/// cmd_mask`), if it counts it.
#[inline(always)]
pub fn ioctl(device: &DeviceEntry, nr: u32) -> Option<&'static IoctlEntry> {
    // SAFETY: map values are only read.
    unsafe {
        IOCTLS.get(IoctlKey {
            vendor_slot: device.vendor_slot,
            nr,
        })
    }
}

/// Reads a `width`-byte unsigned integer (4 or 8) at user address `at`.
#[inline(always)]
pub fn read_user(at: u64, width: u32) -> Option<u64> {
    // SAFETY: probe reads of user memory; a fault returns an error.
    unsafe {
        match width {
            8 => bpf_probe_read_user(at as *const u64).ok(),
            4 => bpf_probe_read_user(at as *const u32).ok().map(u64::from),
            _ => None,
        }
    }
}

/// Whether a call with argument `arg` of `device`'s entry `nr` is of the
/// entry's kind: always for an unclassified entry; for a classified one,
/// whether its field has a value the table lists (`None`: the field
/// could not be read).
#[inline(always)]
pub fn of_kind(device: &DeviceEntry, nr: u32, entry: &IoctlEntry, arg: u64) -> Option<bool> {
    if entry.only_width == 0 {
        return Some(true);
    }
    let value = read_user(
        arg + u64::from(entry.only_offset),
        u32::from(entry.only_width),
    )?;
    let key = ClassKey {
        vendor_slot: device.vendor_slot,
        nr,
        value,
    };
    // SAFETY: map values are only read.
    Some(unsafe { CLASSES.get(key) }.is_some())
}

/// The call, if the device's vendor counts its command, else `None`.
#[inline(always)]
pub fn tracked(call: &Call) -> Option<Kept> {
    let device = device(call.rdev)?;
    let nr = call.cmd & device.cmd_mask;
    let entry = ioctl(device, nr)?;
    let unclassified = match of_kind(device, nr, entry, call.arg) {
        Some(true) => false,
        Some(false) => return None,
        None => true,
    };
    Some(Kept {
        nr,
        entry,
        numa_node: device.numa_node,
        unclassified,
    })
}

/// Declares the fentry program `$fentry` and the kprobe program `$kprobe`
/// on `drm_ioctl`; both call `$on_kept(&call, &kept)` for every call the
/// vendor tables keep, and nothing else.
macro_rules! programs {
    ($fentry:ident, $kprobe:ident, $on_kept:path) => {
        /// Entry hook with typed arguments (direct loads).
        #[aya_ebpf::macros::fentry(function = "drm_ioctl")]
        pub fn $fentry(ctx: aya_ebpf::programs::FEntryContext) -> u32 {
            let call = $crate::filter::fentry_call(&ctx);
            if let Some(kept) = $crate::filter::tracked(&call) {
                $on_kept(&call, &kept);
            }
            0
        }

        /// Entry hook from registers, for kernels where fentry is
        /// unavailable.
        #[aya_ebpf::macros::kprobe]
        pub fn $kprobe(ctx: aya_ebpf::programs::ProbeContext) -> u32 {
            if let Some(call) = $crate::filter::kprobe_call(&ctx)
                && let Some(kept) = $crate::filter::tracked(&call)
            {
                $on_kept(&call, &kept);
            }
            0
        }
    };
}
pub(crate) use programs;
