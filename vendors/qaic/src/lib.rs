//! KubeNPU vendor plugin for Qualcomm Cloud AI accelerators (the qaic accel driver).
//!
//! Numbers from `uapi/qaic_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/qaic_accel.h` as of the AIC200-era driver (ioctls 0x00..0x08); the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, PciId, Product, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "qaic",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["qaic"],
    pci_vendors: &[0x17cb],
    products: &[Product {
        id: PciId {
            vendor: 0x17cb,
            device: 0xa100,
        },
        name: "Cloud AI 100",
    }],
    ioctls: &[
        // queues buffer objects for execution
        Ioctl::submit("DRM_IOCTL_QAIC_EXECUTE_BO", drm::command(0x04)),
        // queues part of buffer objects for execution
        Ioctl::submit("DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO", drm::command(0x05)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_QAIC_CREATE_BO", drm::command(0x01))
            .sized(Size::before("size", 0, 8)),
        // waits for a buffer object's execution
        Ioctl::wait("DRM_IOCTL_QAIC_WAIT_BO", drm::command(0x06)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/qaic_accel.h"));
