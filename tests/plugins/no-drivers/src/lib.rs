//! A vendor that claims no driver: the agent must reject it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// An empty driver list.
pub const VENDOR: Vendor = Vendor {
    name: "driverless",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &[],
    pci_vendors: &[],
    products: &[],
    ioctls: &[Ioctl::submit(
        "DRM_IOCTL_DRIVERLESS_RUN",
        drm::command(0x00),
    )],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
