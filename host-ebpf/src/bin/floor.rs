//! Calibration programs for benchmarks: they return at once, so their cost
//! on `drm_ioctl` is the floor the counting programs are measured against,
//! per hook, entry and exit alike, and their cost on the `file_ioctl` LSM
//! hook the floor of the policy's check. The agent never loads them.
//!
//! SPDX-License-Identifier: GPL-2.0-only
#![no_std]
#![no_main]

use aya_ebpf::{
    macros::{fentry, fexit, kprobe, kretprobe, lsm},
    programs::{FEntryContext, FExitContext, LsmContext, ProbeContext, RetProbeContext},
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

/// Empty fexit program on `drm_ioctl`.
#[fexit(function = "drm_ioctl")]
pub fn kubenpu_floor_fexit(_ctx: FExitContext) -> u32 {
    0
}

/// Empty return probe on `drm_ioctl`.
#[kretprobe]
pub fn kubenpu_floor_kretprobe(_ctx: RetProbeContext) -> u32 {
    0
}

/// Empty BPF LSM program on `file_ioctl`: it allows every call, as the
/// policy's check does for a file that is not an accelerator's.
#[lsm(hook = "file_ioctl")]
pub fn kubenpu_floor_lsm(_ctx: LsmContext) -> i32 {
    0
}
