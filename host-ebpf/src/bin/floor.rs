//! Calibration programs for benchmarks: they return at once, so their cost
//! on `drm_ioctl` is the floor the counting program is measured against,
//! per hook. The agent never loads them.
//!
//! SPDX-License-Identifier: GPL-2.0-only
#![no_std]
#![no_main]

use aya_ebpf::{
    macros::{fentry, kprobe},
    programs::{FEntryContext, ProbeContext},
};

/// Empty fentry program on `drm_ioctl`.
#[fentry(function = "drm_ioctl")]
pub fn kubenpu_floor_fentry(_ctx: FEntryContext) -> u32 {
    0
}

/// Empty kprobe program on `drm_ioctl`.
#[kprobe]
pub fn kubenpu_floor_kprobe(_ctx: ProbeContext) -> u32 {
    0
}

/// Same licence as the counting program, so the comparison is like for like.
#[unsafe(no_mangle)]
#[unsafe(link_section = "license")]
pub static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
