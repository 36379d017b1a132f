//! KubeNPU vendor plugin for Arm Mali CSF GPUs (the panthor driver).
//!
//! Numbers from `uapi/panthor_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/panthor_drm.h` as of v6.11 (later releases append
//! ioctls only), which numbers its ioctls with enum constants; the unit
//! test checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "panthor",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["panthor"],
    // Device-tree GPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits command streams to the queues of a scheduling group
        Ioctl::submit("DRM_IOCTL_PANTHOR_GROUP_SUBMIT", drm::command(0x09)),
        // creates a buffer object; the kernel returns its page-aligned size
        Ioctl::alloc("DRM_IOCTL_PANTHOR_BO_CREATE", drm::command(0x05))
            .sized(Size::after("size", 0, 8)),
        // allocates a tiler heap's context and first chunks (their bytes are
        // a product of two fields, not one size)
        Ioctl::alloc("DRM_IOCTL_PANTHOR_TILER_HEAP_CREATE", drm::command(0x0b)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    // Its one engine, named after the driver, as msm names the same
    // whole-GPU engine.
    usage_names: UsageNames {
        engines: &[("panthor", "gpu")],
        regions: &[],
    },
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/panthor_drm.h"));
