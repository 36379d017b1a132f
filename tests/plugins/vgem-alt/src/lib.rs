//! A replacement for the built-in vgem vendor with a different table: it
//! counts `FENCE_SIGNAL` instead of `FENCE_ATTACH`. The datapath tests drop
//! it into the plugins directory of a running agent and watch what is
//! counted for vgem change.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// vgem, counting only `DRM_IOCTL_VGEM_FENCE_SIGNAL`.
pub const VENDOR: Vendor = Vendor {
    name: "vgem",
    version: "2.0.0-test",
    drivers: &["vgem"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[Ioctl::submit(
        "DRM_IOCTL_VGEM_FENCE_SIGNAL",
        drm::command(0x02),
    )],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
