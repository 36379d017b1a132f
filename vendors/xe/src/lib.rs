//! KubeNPU vendor plugin for Intel Xe GPUs (the xe driver).
//!
//! Numbers from `uapi/xe_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/xe_drm.h` as of v7.1; the unit test
//! checks every entry against it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{
    Allocators, Attribute, Energy, Ids, Ioctl, PciId, Product, Sensor, Size, UsageNames, Vendor,
    drm,
};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "xe",
    version: env!("CARGO_PKG_VERSION"),
    drivers: &["xe"],
    pci_vendors: &[0x8086],
    products: &[Product {
        id: PciId {
            vendor: 0x8086,
            device: 0xe20b,
        },
        name: "Arc B580",
    }],
    ioctls: &[
        // submits a batch to an exec queue
        Ioctl::submit("DRM_IOCTL_XE_EXEC", drm::command(0x09)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_XE_GEM_CREATE", drm::command(0x01))
            .sized(Size::before("size", 8, 8)),
        // waits for a user fence the GPU writes
        Ioctl::wait("DRM_IOCTL_XE_WAIT_USER_FENCE", drm::command(0x0a)),
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    // Its engine classes as i915 names the same hardware engines.
    usage_names: UsageNames {
        engines: &[
            ("rcs", "render"),
            ("bcs", "copy"),
            ("vcs", "video"),
            ("vecs", "video-enhance"),
            ("ccs", "compute"),
        ],
        regions: &[],
    },
    // Intel's GPU device plugin names cards (card0-1: card 0, share 1),
    // its monitoring resource every GPU; its DRA driver names devices by
    // PCI address.
    allocators: Allocators {
        device_plugins: &[
            ("gpu.intel.com/xe", Ids::CardNode),
            ("gpu.intel.com/monitoring", Ids::EveryDevice),
            ("gpu.intel.com/xe_monitoring", Ids::EveryDevice),
        ],
        dra_drivers: &[("gpu.intel.com", Ids::DashedPciAddress)],
    },
    char_devices: &[],
    // Channel 1 is the card, channel 2 the package (xe_hwmon's labels):
    // Battlemage has both, DG2 and PVC only the package, DG1 neither. The
    // card includes the package: never add them.
    energy: Energy {
        hwmon_names: &["xe"],
        sensors: &[
            Sensor::EnergyCounter(Attribute::labelled("energy1_input", "card")),
            Sensor::EnergyCounter(Attribute::labelled("energy2_input", "pkg")),
            // Before 6.8: one channel, unlabelled.
            Sensor::EnergyCounter(Attribute::file("energy1_input")),
        ],
        // A rough figure for an idle discrete card, until the agent has
        // measured the device idle itself.
        idle_milliwatts: 20_000,
    },
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/xe_drm.h"));
