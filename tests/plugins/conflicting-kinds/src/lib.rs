//! A table in which one number is both submit and wait: the agent must
//! reject it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// Two entries share nr 0x41 with different kinds.
pub const VENDOR: Vendor = Vendor {
    name: "conflicting",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["conflicting_drv"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        Ioctl::submit("DRM_IOCTL_CONFLICTING_RUN", drm::command(0x01)),
        Ioctl::wait("DRM_IOCTL_CONFLICTING_WAIT", drm::command(0x01)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
