//! KubeNPU vendor plugin for AMD GPUs (the amdgpu driver).
//!
//! Numbers from `uapi/amdgpu_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/amdgpu_drm.h` as of v6.19; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Ids, Ioctl, PciId, Product, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "amdgpu",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["amdgpu"],
    pci_vendors: &[0x1002],
    products: &[
        Product {
            id: PciId {
                vendor: 0x1002,
                device: 0x744c,
            },
            name: "Radeon RX 7900 XTX",
        },
        Product {
            id: PciId {
                vendor: 0x1002,
                device: 0x74a1,
            },
            name: "Instinct MI300X",
        },
    ],
    ioctls: &[
        // submits command streams
        Ioctl::submit("DRM_IOCTL_AMDGPU_CS", drm::command(0x04)),
        // signals the fence of work queued on a user queue
        Ioctl::submit("DRM_IOCTL_AMDGPU_USERQ_SIGNAL", drm::command(0x17)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_AMDGPU_GEM_CREATE", drm::command(0x00))
            // read as the call enters: the returned handle overwrites it
            .sized(Size::before("in.bo_size", 0, 8)),
        // wraps user memory as a buffer object
        Ioctl::alloc("DRM_IOCTL_AMDGPU_GEM_USERPTR", drm::command(0x11)),
        // waits for a command submission
        Ioctl::wait("DRM_IOCTL_AMDGPU_WAIT_CS", drm::command(0x09)),
        // waits for several submissions
        Ioctl::wait("DRM_IOCTL_AMDGPU_WAIT_FENCES", drm::command(0x12)),
        // waits until a buffer object is idle
        Ioctl::wait("DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE", drm::command(0x07)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    // The rings other drivers call render and copy engines, and the
    // system-memory placement by its common name.
    usage_names: UsageNames {
        engines: &[("gfx", "render"), ("dma", "copy")],
        regions: &[("cpu", "system")],
    },
    // AMD's GPU device plugin names GPUs by PCI address; its DRA driver
    // by card and render node numbers (gpu-1-129).
    allocators: Allocators {
        device_plugins: &[("amd.com/gpu", Ids::PciAddress)],
        dra_drivers: &[("gpu.amd.com", Ids::CardRender)],
    },
    char_devices: &[],
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/amdgpu_drm.h"));
