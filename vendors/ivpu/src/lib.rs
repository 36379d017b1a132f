//! KubeNPU vendor plugin for Intel NPUs (the intel_vpu accel driver).
//!
//! Numbers from `uapi/ivpu_accel.h`, an excerpt of the kernel's
//! `include/uapi/drm/ivpu_accel.h` as of v6.15, plus BO_CREATE_FROM_USERPTR from v6.19; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ids, Ioctl, PciId, Product, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "ivpu",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["intel_vpu"],
    pci_vendors: &[0x8086],
    products: &[
        Product {
            id: PciId {
                vendor: 0x8086,
                device: 0x7d1d,
            },
            name: "Core Ultra NPU (Meteor Lake)",
        },
        Product {
            id: PciId {
                vendor: 0x8086,
                device: 0x643e,
            },
            name: "Core Ultra NPU (Lunar Lake)",
        },
    ],
    ioctls: &[
        // submits a job to an engine
        Ioctl::submit("DRM_IOCTL_IVPU_SUBMIT", drm::command(0x05)),
        // submits a job to a command queue
        Ioctl::submit("DRM_IOCTL_IVPU_CMDQ_SUBMIT", drm::command(0x0d)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_IVPU_BO_CREATE", drm::command(0x02))
            .sized(Size::before("size", 0, 8)),
        // wraps user memory as a buffer object
        Ioctl::alloc("DRM_IOCTL_IVPU_BO_CREATE_FROM_USERPTR", drm::command(0x0e)),
        // waits for the jobs using a buffer object
        Ioctl::wait("DRM_IOCTL_IVPU_BO_WAIT", drm::command(0x06)),
    ],
    usage_names: UsageNames::KERNEL,
    // Intel's NPU device plugin names accel nodes (accel0-0).
    allocators: Allocators {
        device_plugins: &[("npu.intel.com/accel", Ids::AccelNode)],
        dra_drivers: &[],
    },
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/ivpu_accel.h"));
