//! A vendor under a new name that claims `i915`, which the built-in i915
//! vendor already claims: the agent must reject it and keep the built-in.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// Claims a driver that is taken.
pub const VENDOR: Vendor = Vendor {
    name: "thief",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["i915"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[Ioctl::submit("DRM_IOCTL_THIEF_SUBMIT", drm::command(0x00))],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
