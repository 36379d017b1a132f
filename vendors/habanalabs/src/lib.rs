//! KubeNPU vendor plugin for Intel Gaudi accelerators (the habanalabs accel driver).
//!
//! Numbers from `uapi/habanalabs_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/habanalabs_accel.h` as of the accel-era header (DRM numbering; kernels up to 6.6 used their own ioctls on /dev/hlN, which do not pass drm_ioctl); the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{
    Allocators, Attribute, Energy, Field, Ioctl, PciId, Product, Sensor, Size, UsageNames, Vendor,
    drm,
};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "habanalabs",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["habanalabs"],
    pci_vendors: &[0x1da3],
    products: &[Product {
        id: PciId {
            vendor: 0x1da3,
            device: 0x1020,
        },
        name: "Gaudi2",
    }],
    ioctls: &[
        // submits command buffers
        Ioctl::submit("DRM_IOCTL_HL_CS", drm::command(0x02)),
        // allocates device memory; one ioctl for every memory op, so frees and maps count here too
        Ioctl::alloc("DRM_IOCTL_HL_MEMORY", drm::command(0x04)).sized(
            // one ioctl for alloc, free, map, export...: only
            // HL_MEM_OP_ALLOC (0) allocates, and the returned handle
            // overwrites the size, so both are read as the call enters
            Size::before("in.alloc.mem_size", 0, 8).when(
                Field {
                    name: "in.op",
                    offset: 24,
                    width: 4,
                },
                0,
            ),
        ),
        // waits for a command submission
        Ioctl::wait("DRM_IOCTL_HL_WAIT_CS", drm::command(0x03)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    // The firmware's power, passed through to hwmon unscaled (hwmon's
    // unit is the microwatt). The hwmon is named after the card as the
    // firmware reports it (HL225, HL205 or HL1000 where it reports none):
    // any name under the device. (The HL_INFO_TOTAL_ENERGY info ioctl
    // counts energy itself, but a plugin names files, and the agent opens
    // no device.)
    energy: Energy {
        hwmon_names: &[],
        sensors: &[Sensor::Power(Attribute::file("power1_input"))],
        // A rough figure for an idle Gaudi card, until the agent has
        // measured the device idle itself.
        idle_milliwatts: 80_000,
    },
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/habanalabs_accel.h"));
