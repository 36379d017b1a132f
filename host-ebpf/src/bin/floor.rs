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

#[path = "../object.rs"]
mod object;

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
