//! KubeNPU vendor plugin for AMD Ryzen AI NPUs (the amdxdna accel driver).
//!
//! Numbers from `uapi/amdxdna_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/amdxdna_accel.h` as of v6.14, which numbers its
//! ioctls with an enum; the unit test checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, PciId, Product, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "amdxdna",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["amdxdna"],
    pci_vendors: &[0x1022],
    products: &[
        Product {
            id: PciId {
                vendor: 0x1022,
                device: 0x1502,
            },
            name: "Ryzen AI NPU (Phoenix, Hawk Point)",
        },
        Product {
            id: PciId {
                vendor: 0x1022,
                device: 0x17f0,
            },
            name: "Ryzen AI NPU (Strix, Krackan)",
        },
    ],
    ioctls: &[
        // submits commands to a hardware context
        Ioctl::submit("DRM_IOCTL_AMDXDNA_EXEC_CMD", drm::command(0x06)),
        // creates a buffer object (device heap, device, command or shared memory)
        Ioctl::alloc("DRM_IOCTL_AMDXDNA_CREATE_BO", drm::command(0x03))
            .sized(Size::before("size", 16, 8)),
        // a command's completion is a point on its context's timeline syncobj
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/amdxdna_accel.h"));
