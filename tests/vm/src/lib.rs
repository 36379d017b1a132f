//! Boots real Debian kernels under qemu, with real DRM devices, and runs a
//! command in them as root.
//!
//! The machines KubeNPU is developed on cannot run its kernel hook (no DRM,
//! no kprobes, fentry refused), so every test of the datapath runs here: a
//! Debian kernel package (x86_64, or arm64 on an emulated `virt` board)
//! unpacked into a cache, a busybox initramfs carrying
//! the modules and binaries under test, `virtio-gpu-pci` and `vgem` as DRM
//! devices, cgroup2 and bpffs mounted, and a directory shared with the host
//! for results; on request (`--gpu-3d`), a 3D virtio-gpu and Debian's Mesa
//! clients, drivers and strace at `/mesa`. The command's exit status comes back as the run's status; a
//! guest that never reports one is an error, never a pass.

mod apt;
mod arch;
mod cache;
mod command;
mod cpio;
mod display;
pub mod elf;
mod initramfs;
mod kernel;
mod mesa;
mod modules;
mod qemu;
mod userland;

pub use arch::Arch;
pub use kernel::{Kernel, KernelImage, cache_dir};
pub use mesa::root as mesa_root;
pub use qemu::{Outcome, Vm};
pub use userland::Userland;
