//! KubeNPU vendor plugin for virtio-gpu, the paravirtual GPU of virtual machines.
//!
//! Numbers from `uapi/virtgpu_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/virtgpu_drm.h` as of v6.11 (later releases add parameters only); the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, PciId, Product, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "virtio_gpu",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["virtio_gpu"],
    pci_vendors: &[0x1af4],
    products: &[Product {
        id: PciId {
            vendor: 0x1af4,
            device: 0x1050,
        },
        name: "virtio GPU",
    }],
    ioctls: &[
        // submits a command buffer to the host
        Ioctl::submit("DRM_IOCTL_VIRTGPU_EXECBUFFER", drm::command(0x02)),
        // queues a copy from host to guest memory
        Ioctl::submit("DRM_IOCTL_VIRTGPU_TRANSFER_FROM_HOST", drm::command(0x06)),
        // queues a copy from guest to host memory
        Ioctl::submit("DRM_IOCTL_VIRTGPU_TRANSFER_TO_HOST", drm::command(0x07)),
        // creates a resource
        Ioctl::alloc("DRM_IOCTL_VIRTGPU_RESOURCE_CREATE", drm::command(0x04))
            .sized(Size::before("size", 48, 4)),
        // creates a blob resource
        Ioctl::alloc("DRM_IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB", drm::command(0x0a))
            .sized(Size::before("size", 16, 8)),
        // waits for a resource to be idle
        Ioctl::wait("DRM_IOCTL_VIRTGPU_WAIT", drm::command(0x08)),
        drm::MODE_CREATE_DUMB,
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/virtgpu_drm.h"));
