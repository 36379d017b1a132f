//! KubeNPU's node agent, as a library with one module per job.
//!
//! The agent attaches the kernel program built from `host-ebpf` to
//! `drm_ioctl`, fills its maps from the node's device table, folds the
//! per-cgroup counts per pod and serves them to Prometheus. Modules arrive
//! with the features that need them; what is here today is the embedded
//! kernel program itself.

pub mod program;
