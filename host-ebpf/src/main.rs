//! KubeNPU's kernel program: runs on every `drm_ioctl` call.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! The counting datapath (device filter, per-vendor ioctl table, per-cgroup
//! counters) grows here; this first version attaches and lets every call
//! through, which proves the build, load and attach path end to end.
#![no_std]
#![no_main]

use aya_ebpf::{macros::fentry, programs::FEntryContext};

/// Entry hook on `drm_ioctl(struct file *, unsigned int cmd, unsigned long)`.
#[fentry(function = "drm_ioctl")]
pub fn drm_ioctl(_ctx: FEntryContext) -> u32 {
    0
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
