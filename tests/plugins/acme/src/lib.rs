//! A well-formed vendor that no built-in provides: the hot-reload tests
//! add, replace and remove it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};

/// A made-up vendor claiming the made-up driver `acme_drv`.
pub const VENDOR: Vendor = Vendor {
    name: "acme",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["acme_drv"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        Ioctl::submit("DRM_IOCTL_ACME_SUBMIT", drm::command(0x00)),
        drm::SYNCOBJ_WAIT,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
