//! KubeNPU vendor plugin for AMD GPUs (the amdgpu driver).
//!
//! Numbers from `uapi/amdgpu_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/amdgpu_drm.h` as of v6.19; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{
    Allocators, Attribute, Energy, Ids, Ioctl, MetricsCounter, PciId, Product, Sensor, Size,
    UsageNames, Vendor, drm,
};

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
    // amdgpu's hwmon has power only; the energy accumulator of the binary
    // gpu_metrics is better where it is filled (kgd_pp_interface.h:
    // `energy_accumulator`, a u64 at byte 24 in versions 1.3 and 1.4, at
    // byte 88 in 1.5 (MI300), in 15.259 uJ (2^-16 J) units, 32 bits wide
    // on some firmware). Then power1_average (Navi, MI100/MI200), then
    // power1_input (MI300, some APUs, where it includes the CPU).
    energy: Energy {
        hwmon_names: &["amdgpu"],
        sensors: &[
            gpu_metrics(3, 24, true),
            gpu_metrics(4, 24, true),
            // MI300's accumulator is 64 bits wide.
            gpu_metrics(5, 88, false),
            Sensor::Power(Attribute::file("power1_average")),
            Sensor::Power(Attribute::file("power1_input")),
        ],
        // A rough figure for an idle discrete card, until the agent has
        // measured the device idle itself.
        idle_milliwatts: 15_000,
    },
};

/// gpu_metrics' energy accumulator in format 1, content
/// `content_revision`, at byte `offset`, whose firmware may fill only its
/// low 32 bits (`narrow`).
const fn gpu_metrics(content_revision: u8, offset: u16, narrow: bool) -> Sensor {
    Sensor::Metrics(MetricsCounter {
        file: "gpu_metrics",
        format_revision: 1,
        content_revision,
        offset,
        unit_shift: 16,
        wraps_at_32_bits: narrow,
    })
}

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/amdgpu_drm.h"));
