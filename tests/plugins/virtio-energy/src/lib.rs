//! virtio-gpu as a vendor whose devices report their energy: a hwmon
//! named `kubenpu_test` with an energy counter, which no virtual device
//! has. The energy test in the VM drops it into the plugins directory
//! (replacing the built-in virtio_gpu) and mounts a hwmon directory of
//! that name, bound to the virtio-gpu's PCI function, over
//! `/sys/class/hwmon`.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Attribute, Energy, Ioctl, Sensor, UsageNames, Vendor, drm};

/// virtio-gpu's submits, allocations and waits, and the test's sensor.
pub const VENDOR: Vendor = Vendor {
    name: "virtio_gpu",
    version: "2.0.0-test",
    drivers: &["virtio_gpu"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        Ioctl::submit("DRM_IOCTL_VIRTGPU_EXECBUFFER", drm::command(0x02)),
        Ioctl::alloc("DRM_IOCTL_VIRTGPU_RESOURCE_CREATE", drm::command(0x04)),
        Ioctl::wait("DRM_IOCTL_VIRTGPU_WAIT", drm::command(0x08)),
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy {
        hwmon_names: &["kubenpu_test"],
        sensors: &[Sensor::EnergyCounter(Attribute::file("energy1_input"))],
        idle_milliwatts: 10_000,
    },
};

kubenpu_sdk::export_vendor!(VENDOR);
