//! KubeNPU vendor plugin for Rockchip NPUs (the rocket accel driver).
//!
//! Numbers from `uapi/rocket_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/rocket_accel.h` as of v6.18; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "rocket",
    version: env!("CARGO_PKG_VERSION"),
    // The accel node sits on the virtual `rknn` platform device the module
    // registers, which no driver binds, so sysfs shows its name; the NPU
    // cores bound to `rocket` have no nodes of their own.
    drivers: &["rknn"],
    // Device-tree NPU cores: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits jobs of register command buffers to the NPU cores
        Ioctl::submit("DRM_IOCTL_ROCKET_SUBMIT", drm::command(0x01)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_ROCKET_CREATE_BO", drm::command(0x00))
            .sized(Size::before("size", 0, 4)),
        // waits for the NPU jobs using a buffer object before the CPU reads it
        Ioctl::wait("DRM_IOCTL_ROCKET_PREP_BO", drm::command(0x02)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/rocket_accel.h"));
