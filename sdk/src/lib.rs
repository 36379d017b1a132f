//! The crate vendor authors use to teach KubeNPU about their accelerators.
//!
//! A vendor plugin is a WebAssembly component implementing the WIT package
//! in `wit/`: it claims DRM/accel driver names and lists which of the
//! driver's ioctl numbers submit work, allocate device memory or wait for
//! the device. This crate grows the bindings, the declarative macro and the
//! validation the agent applies to every table.
#![no_std]
