//! KubeNPU vendor plugin for Broadcom VideoCore GPUs of the Raspberry Pi 4 and 5 (the v3d driver).
//!
//! Numbers from `uapi/v3d_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/v3d_drm.h` as of v6.15; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "v3d",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["v3d"],
    // Device-tree GPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits binner and render command lists
        Ioctl::submit("DRM_IOCTL_V3D_SUBMIT_CL", drm::command(0x00)),
        // submits a texture formatting unit job
        Ioctl::submit("DRM_IOCTL_V3D_SUBMIT_TFU", drm::command(0x06)),
        // submits a compute shader dispatch
        Ioctl::submit("DRM_IOCTL_V3D_SUBMIT_CSD", drm::command(0x07)),
        // submits a CPU job (indirect dispatch, queries) on the GPU's queues
        Ioctl::submit("DRM_IOCTL_V3D_SUBMIT_CPU", drm::command(0x0b)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_V3D_CREATE_BO", drm::command(0x02))
            .sized(Size::before("size", 0, 4)),
        // waits for the jobs using a buffer object
        Ioctl::wait("DRM_IOCTL_V3D_WAIT_BO", drm::command(0x01)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    // The compute shader dispatch queue as other drivers name compute.
    usage_names: UsageNames {
        engines: &[("csd", "compute")],
        regions: &[],
    },
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/v3d_drm.h"));
