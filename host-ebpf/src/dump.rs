//! Dumps of the maps the agent reads on every scrape and sweep, and of
//! those it reads as it starts (its tables and the owners' records), as
//! BPF map-element iterators: each writes its element's key and value, as
//! the map holds them, to the reader's buffer.
//!
//! Why not `bpf(2)` lookups: the kernel copies a map element for a lookup
//! with `bpf_prog_active` raised, while the copying task can still be
//! preempted. A kprobe program that fires on that CPU meanwhile (a
//! workload's `drm_ioctl`) is skipped, and the call is lost but for the
//! program's miss counter. An iterator runs in the reading task too, but
//! never raises `bpf_prog_active`: reading costs no call its count.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use core::ffi::c_void;

use aya_ebpf::{bindings::seq_file, helpers::bpf_seq_write};
use kubenpu_ebpf::{
    CountKey, CountValue, DeviceEntry, DurationKey, IoctlEntry, IoctlKey, OwnerRecord, VerdictKey,
};

/// Possible CPUs, set by the agent: an iterator sees a per-CPU value as
/// one 8-byte slot per possible CPU.
#[unsafe(no_mangle)]
static POSSIBLE_CPUS: u32 = 0;

/// `struct bpf_iter_meta`, up to what is read.
#[repr(C)]
struct Meta {
    seq: *mut seq_file,
}

/// `struct bpf_iter__bpf_map_elem`: the context of a map-element iterator
/// (its layout is uAPI: `bpf_iter_bpf_map_elem`'s arguments, 8 bytes
/// each). `key` and `value` are null once, after the last element.
#[repr(C)]
struct MapElem {
    meta: *const Meta,
    map: *const c_void,
    key: *const c_void,
    value: *const c_void,
}

/// Writes the element's `key_size` key bytes, then `value_size` value
/// bytes.
#[inline(always)]
fn dump(ctx: *const c_void, key_size: u32, value_size: u32) -> i32 {
    // SAFETY: the verifier checks each load against the iterator's
    // context type and the map's key and value sizes (at attach).
    unsafe {
        let elem = ctx as *const MapElem;
        // Each loaded once: the verifier knows a pointer is not null only
        // in the register it was checked in, not on a reload.
        let key = core::ptr::read_volatile(&raw const (*elem).key);
        let value = core::ptr::read_volatile(&raw const (*elem).value);
        if key.is_null() || value.is_null() {
            return 0;
        }
        let seq = (*(*elem).meta).seq;
        // A record that does not fit is not cut: the kernel stops before
        // it and shows it again in the reader's next read.
        if bpf_seq_write(seq, key, key_size) == 0 {
            bpf_seq_write(seq, value, value_size);
        }
    }
    0
}

/// Bytes of a per-CPU `u64` value, as an iterator sees it.
#[inline(always)]
fn per_cpu_u64() -> u32 {
    // SAFETY: a read of our own read-only global; volatile so the compiler
    // does not fold in the placeholder value.
    8 * unsafe { core::ptr::read_volatile(&POSSIBLE_CPUS) }
}

/// Declares map-element iterator `$name`: `$key` keys and `$value_size`
/// bytes of value.
macro_rules! dump_program {
    ($(#[$doc:meta])* $name:ident, $key:ty, $value_size:expr) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "iter/bpf_map_elem")]
        fn $name(ctx: *const c_void) -> i32 {
            dump(ctx, size_of::<$key>() as u32, $value_size)
        }
    };
}

dump_program!(
    /// The COUNTS map: a [`CountKey`] and its [`CountValue`] per element.
    kubenpu_dump_counts,
    CountKey,
    size_of::<CountValue>() as u32
);
dump_program!(
    /// The DURATIONS map: a [`DurationKey`] and its calls on every CPU.
    kubenpu_dump_durations,
    DurationKey,
    per_cpu_u64()
);
dump_program!(
    /// The LOSSES array: a `u32` reason and its count on every CPU.
    kubenpu_dump_losses,
    u32,
    per_cpu_u64()
);
dump_program!(
    /// The IOCTLS map: an [`IoctlKey`] and its [`IoctlEntry`] per element.
    kubenpu_dump_ioctls,
    IoctlKey,
    size_of::<IoctlEntry>() as u32
);
dump_program!(
    /// The DEVICES map: a `u32` dev_t and its [`DeviceEntry`] per element.
    kubenpu_dump_devices,
    u32,
    size_of::<DeviceEntry>() as u32
);
dump_program!(
    /// The OWNERS map: a `u64` cgroup id and its [`OwnerRecord`] per
    /// element.
    kubenpu_dump_owners,
    u64,
    size_of::<OwnerRecord>() as u32
);
dump_program!(
    /// The VERDICTS map: a [`VerdictKey`] and its `u64` count per element.
    kubenpu_dump_verdicts,
    VerdictKey,
    size_of::<u64>() as u32
);
dump_program!(
    /// The VERDICTS_LOST array: its one `u32` index and its count on
    /// every CPU.
    kubenpu_dump_verdicts_lost,
    u32,
    per_cpu_u64()
);
