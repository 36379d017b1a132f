//! The bytes an alloc ioctl allocates, read from its argument where the
//! vendor's table says the size is: at entry for an input field, at exit
//! for one the kernel reports back. Only within the argument's size as
//! the command encodes it (`_IOC_SIZE`, where it encodes one), and only
//! for the operation that allocates, where one ioctl multiplexes several.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use kubenpu_ebpf::{IoctlEntry, kind, size};

use crate::filter::{Call, read_user as read};

/// `_IOC_SIZE(cmd)`: the argument's size in bytes.
#[inline(always)]
fn argument_size(cmd: u32) -> u32 {
    (cmd >> 16) & 0x3fff
}

/// Whether `offset..offset + width` lies inside the call's argument, as
/// far as its command says: a command that encodes no size (`_IO`, as
/// Tenstorrent's are, or a plain integer, as nvidia-uvm's) leaves the
/// argument's extent to the table, which its plugin's header check
/// measured.
#[inline(always)]
fn inside(call: &Call, offset: u16, width: u8) -> bool {
    let size = argument_size(call.cmd);
    size == 0 || u32::from(offset) + u32::from(width) <= size
}

/// Where to read the size at exit, and the size read now: `(address, 0)`
/// for a field read after the call, `(0, bytes)` for one read before it,
/// `(0, 0)` if the call allocates nothing the table can see.
#[inline(always)]
pub fn at_entry(call: &Call, entry: &IoctlEntry) -> (u64, u64) {
    if entry.kind != kind::ALLOC
        || entry.size_width == 0
        || !inside(call, entry.size_offset, entry.size_width)
    {
        return (0, 0);
    }
    if entry.when_width != 0 {
        if !inside(call, entry.when_offset, entry.when_width) {
            return (0, 0);
        }
        let selector = read(
            call.arg + u64::from(entry.when_offset),
            u32::from(entry.when_width),
        );
        if selector != Some(entry.when_value) {
            return (0, 0);
        }
    }
    let at = call.arg + u64::from(entry.size_offset);
    if entry.size_phase == size::AFTER {
        return (at, 0);
    }
    match read(at, u32::from(entry.size_width)) {
        Some(bytes) => (0, bytes),
        None => {
            crate::lose(kubenpu_ebpf::Loss::SizeUnread);
            (0, 0)
        }
    }
}
