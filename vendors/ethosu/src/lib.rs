//! KubeNPU vendor plugin for Arm Ethos-U NPUs (the ethosu accel driver).
//!
//! Numbers from `uapi/ethosu_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/ethosu_accel.h` as of v6.19, which numbers its ioctls
//! with enum constants; the unit test checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "ethosu",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["ethosu"],
    // Device-tree NPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits jobs of command streams to the NPU
        Ioctl::submit("DRM_IOCTL_ETHOSU_SUBMIT", drm::command(0x05)),
        // creates a buffer object; the kernel returns its page-aligned size
        Ioctl::alloc("DRM_IOCTL_ETHOSU_BO_CREATE", drm::command(0x01))
            .sized(Size::after("size", 0, 8)),
        // creates a buffer object holding a copy of a command stream
        Ioctl::alloc("DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE", drm::command(0x04))
            .sized(Size::before("size", 0, 4)),
        // waits for the jobs using a buffer object
        Ioctl::wait("DRM_IOCTL_ETHOSU_BO_WAIT", drm::command(0x02)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/ethosu_accel.h"));
