//! KubeNPU vendor plugin for Vivante GPUs and NPUs (the etnaviv driver).
//!
//! Numbers from `uapi/etnaviv_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/etnaviv_drm.h` as of v6.x (its numbers unchanged
//! since v4.10); the unit test checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "etnaviv",
    version: env!("CARGO_PKG_VERSION"),
    // The DRM device is the driver's own virtual `etnaviv` platform device;
    // its GPU cores are separate devices bound to `etnaviv-gpu`.
    drivers: &["etnaviv"],
    // Device-tree GPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits a command stream to a pipe
        Ioctl::submit("DRM_IOCTL_ETNAVIV_GEM_SUBMIT", drm::command(0x06)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_ETNAVIV_GEM_NEW", drm::command(0x02))
            .sized(Size::before("size", 0, 8)),
        // wraps user memory as a buffer object
        Ioctl::alloc("DRM_IOCTL_ETNAVIV_GEM_USERPTR", drm::command(0x08)),
        // waits for a submission's fence
        Ioctl::wait("DRM_IOCTL_ETNAVIV_WAIT_FENCE", drm::command(0x07)),
        // waits until a buffer object is idle
        Ioctl::wait("DRM_IOCTL_ETNAVIV_GEM_WAIT", drm::command(0x09)),
        // waits for the GPU to finish with a buffer before the CPU uses it
        Ioctl::wait("DRM_IOCTL_ETNAVIV_GEM_CPU_PREP", drm::command(0x04)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/etnaviv_drm.h"));
