//! Types shared by KubeNPU's kernel program and its agent.
//!
//! Every key and value that crosses the BPF map boundary is defined here,
//! once, as `#[repr(C)]` without padding, so the kernel side and the host
//! side cannot drift. The crate is `no_std` so the kernel program can use
//! it; the agent enables the `user` feature for aya's `Pod` impls.
#![no_std]

/// Bumped whenever a map's key, value or meaning changes: an agent finding
/// pinned maps of another layout replaces them instead of adopting them.
pub const LAYOUT_VERSION: u32 = 2;

/// The kernel function every DRM and accel driver routes ioctls through.
pub const HOOKED_FUNCTION: &str = "drm_ioctl";

/// Program names in the object, per hook.
pub mod program {
    /// fentry on `drm_ioctl` (typed arguments, direct loads).
    pub const FENTRY: &str = "kubenpu_fentry";
    /// kprobe on `drm_ioctl` (arguments from registers, probe reads).
    pub const KPROBE: &str = "kubenpu_kprobe";
}

/// Map names in the object.
pub mod map {
    /// `u32` kernel dev_t (`MAJOR << 20 | MINOR`) -> `u32` vendor slot.
    pub const DEVICES: &str = "DEVICES";
    /// [`IoctlKey`](super::IoctlKey) -> `u32` kind (see [`kind`](super::kind)).
    pub const IOCTLS: &str = "IOCTLS";
    /// [`CountKey`](super::CountKey) -> per-CPU `u64` call count.
    pub const COUNTS: &str = "COUNTS";
    /// Ring buffer of [`CountKey`](super::CountKey): one note per new key.
    pub const NOTES: &str = "NOTES";
    /// Per-CPU `u64` per [`Loss`](super::Loss) reason.
    pub const LOSSES: &str = "LOSSES";
    /// One [`Layout`](super::Layout): what the pinned maps were made by.
    pub const LAYOUT: &str = "LAYOUT";
    /// `u64` cgroup id -> [`OwnerRecord`](super::OwnerRecord), written by
    /// the agent: who each counted cgroup belongs to.
    pub const OWNERS: &str = "OWNERS";
}

/// Read-only globals the agent sets before loading, resolved from the
/// running kernel's BTF (Rust eBPF has no CO-RE field relocations).
pub mod global {
    /// Byte offset of `f_inode` in `struct file`.
    pub const F_INODE_OFFSET: &str = "F_INODE_OFFSET";
    /// Byte offset of `i_rdev` in `struct inode`.
    pub const I_RDEV_OFFSET: &str = "I_RDEV_OFFSET";
}

/// Vendors the IOCTLS map holds whole tables for (256 numbers each).
pub const MAX_VENDORS: u32 = 64;
/// Accelerator device nodes the DEVICES map holds.
pub const MAX_DEVICE_NODES: u32 = 1024;

/// A vendor's slot in the IOCTLS map: a hash of its name (FNV-1a), so it
/// is the same in every agent that ever uploads it and needs no
/// bookkeeping across restarts. Two vendors whose names collide cannot
/// both be in force.
pub const fn vendor_slot(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash = 0x811c_9dc5_u32;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}

/// The counted kinds, as stored in the IOCTLS map.
pub mod kind {
    /// Hands work to the device.
    pub const SUBMIT: u32 = 1;
    /// Allocates device memory.
    pub const ALLOC: u32 = 2;
    /// Waits for the device.
    pub const WAIT: u32 = 3;
}

/// Key of the per-vendor ioctl table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoctlKey {
    /// The vendor's slot, as the DEVICES map gives it.
    pub vendor_slot: u32,
    /// `cmd & 0xff`.
    pub nr: u32,
}

/// Key of a call count: who called, on which device, which ioctl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CountKey {
    /// The caller's cgroup v2 id (the cgroup directory's inode number).
    pub cgroup_id: u64,
    /// The device node's kernel dev_t.
    pub dev: u32,
    /// `cmd & 0xff`.
    pub nr: u32,
}

/// Why a call was not counted. Every loss is counted by reason.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// The COUNTS map was full: a new key could not be inserted.
    MapFull = 0,
    /// The NOTES ring buffer was full: a new key was counted, but the agent
    /// learns of it only at its next full read.
    RingbufFull = 1,
}

impl Loss {
    /// Every reason, in map index order.
    pub const ALL: [Loss; 2] = [Loss::MapFull, Loss::RingbufFull];

    /// The `reason` label.
    pub const fn name(self) -> &'static str {
        match self {
            Loss::MapFull => "map_full",
            Loss::RingbufFull => "ringbuf_full",
        }
    }
}

/// What made the pinned maps: an agent adopts them only if this matches.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// [`LAYOUT_VERSION`] of the maker.
    pub version: u32,
    /// Capacity of the COUNTS map.
    pub max_counters: u32,
}

/// Who a counted cgroup belongs to, as the agent named it, and whether it
/// is gone. Kept in the pinned OWNERS map so that a restarted agent names
/// the cgroups its predecessor named, gone ones included (whose pods the
/// container runtime may no longer know), and keeps their grace period.
/// Only the agent reads and writes it; the kernel program does not.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerRecord {
    /// When the agent found the cgroup removed, in nanoseconds of
    /// CLOCK_BOOTTIME (which a restart does not reset); 0 while it lives.
    pub gone_at_ns: u64,
    /// The pod's namespace, NUL-padded (Kubernetes allows 63 bytes).
    pub namespace: [u8; 64],
    /// The pod's name, NUL-padded (253 bytes at most).
    pub pod: [u8; 256],
    /// The container's name, NUL-padded (63 bytes at most).
    pub container: [u8; 64],
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: plain `#[repr(C)]` integers without padding.
    unsafe impl aya::Pod for super::IoctlKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::CountKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Layout {}
    // SAFETY: as above: a u64 and byte arrays, no padding.
    unsafe impl aya::Pod for super::OwnerRecord {}
}
