//! KubeNPU vendor plugin for vgem, the kernel's virtual GEM provider (no hardware; used for software rendering and tests).
//!
//! Numbers from `uapi/vgem_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/vgem_drm.h` as of v6.12 (numbers unchanged since 2016); the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "vgem",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["vgem"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // attaches an unsignalled fence to a buffer, as a job submission does
        Ioctl::submit("DRM_IOCTL_VGEM_FENCE_ATTACH", drm::command(0x1)),
        drm::MODE_CREATE_DUMB,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/vgem_drm.h"));
