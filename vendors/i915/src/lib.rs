//! KubeNPU vendor plugin for Intel integrated and discrete GPUs before Xe2 (the i915 driver).
//!
//! Numbers from `uapi/i915_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/i915_drm.h` as of the v6.4 cycle (numbers unchanged in later releases); the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{
    Allocators, Attribute, Energy, Ids, Ioctl, PciId, Product, Sensor, Size, UsageNames, Vendor,
    drm,
};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "i915",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["i915"],
    pci_vendors: &[0x8086],
    products: &[
        Product {
            id: PciId {
                vendor: 0x8086,
                device: 0x5917,
            },
            name: "UHD Graphics 620",
        },
        Product {
            id: PciId {
                vendor: 0x8086,
                device: 0x56a0,
            },
            name: "Arc A770",
        },
    ],
    ioctls: &[
        // hands a batch buffer to an engine
        Ioctl::submit("DRM_IOCTL_I915_GEM_EXECBUFFER2", drm::command(0x29)),
        // the same, returning an out-fence (what anv uses); shares EXECBUFFER2's number
        Ioctl::submit("DRM_IOCTL_I915_GEM_EXECBUFFER2_WR", drm::command(0x29)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_I915_GEM_CREATE", drm::command(0x1b))
            // in: the size asked for; out: the page-aligned size allocated
            .sized(Size::after("size", 0, 8)),
        // creates a buffer object with placement extensions (discrete memory)
        Ioctl::alloc("DRM_IOCTL_I915_GEM_CREATE_EXT", drm::command(0x3c))
            .sized(Size::after("size", 0, 8)),
        // wraps user memory as a buffer object
        Ioctl::alloc("DRM_IOCTL_I915_GEM_USERPTR", drm::command(0x33)),
        // waits for rendering to a buffer object
        Ioctl::wait("DRM_IOCTL_I915_GEM_WAIT", drm::command(0x2c)),
        // blocks until the GPU is done with the object before a CPU access
        Ioctl::wait("DRM_IOCTL_I915_GEM_SET_DOMAIN", drm::command(0x1f)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    // Regions as xe names them: system memory, device memory per tile,
    // stolen memory.
    usage_names: UsageNames {
        engines: &[],
        regions: &[
            ("system0", "system"),
            ("local0", "vram0"),
            ("local1", "vram1"),
            ("stolen-system0", "stolen"),
            ("stolen-local0", "stolen"),
        ],
    },
    // Intel's GPU device plugin names cards (card0-1: card 0, share 1),
    // its monitoring resource every GPU; its DRA driver names devices by
    // PCI address.
    allocators: Allocators {
        device_plugins: &[
            ("gpu.intel.com/i915", Ids::CardNode),
            ("gpu.intel.com/monitoring", Ids::EveryDevice),
            ("gpu.intel.com/i915_monitoring", Ids::EveryDevice),
        ],
        dra_drivers: &[("gpu.intel.com", Ids::DashedPciAddress)],
    },
    char_devices: &[],
    // Discrete GPUs only register hwmon (i915_hwmon_register returns early
    // for integrated ones): a counter in microjoules the driver extends
    // from the hardware's 32 bits as it is read, restarting at zero when
    // the driver reloads.
    energy: Energy {
        hwmon_names: &["i915"],
        sensors: &[Sensor::EnergyCounter(Attribute::file("energy1_input"))],
        // A rough figure for an idle discrete card, until the agent has
        // measured the device idle itself.
        idle_milliwatts: 20_000,
    },
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/i915_drm.h"));
