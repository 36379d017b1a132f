//! Types shared by KubeNPU's kernel program and its agent.
//!
//! Every key and value that crosses the BPF map boundary is defined here,
//! once, as `#[repr(C)]`, so the kernel side and the host side cannot drift.
//! The crate is `no_std` so the kernel program can use it; the agent uses
//! the same definitions on the host.
#![no_std]

/// Name of the program in the object file, as the agent looks it up.
pub const PROGRAM_NAME: &str = "drm_ioctl";

/// The kernel function every DRM and accel driver routes ioctls through.
pub const HOOKED_FUNCTION: &str = "drm_ioctl";
