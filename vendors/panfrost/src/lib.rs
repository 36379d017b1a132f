//! KubeNPU vendor plugin for Arm Mali Midgard and Bifrost GPUs (the panfrost driver).
//!
//! Numbers from `uapi/panfrost_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/panfrost_drm.h` as of v6.x (its numbers unchanged
//! since v5.4); the unit test checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "panfrost",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["panfrost"],
    // Device-tree GPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits a job chain
        Ioctl::submit("DRM_IOCTL_PANFROST_SUBMIT", drm::command(0x00)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_PANFROST_CREATE_BO", drm::command(0x02))
            .sized(Size::before("size", 0, 4)),
        // waits for the jobs using a buffer object
        Ioctl::wait("DRM_IOCTL_PANFROST_WAIT_BO", drm::command(0x01)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/panfrost_drm.h"));
