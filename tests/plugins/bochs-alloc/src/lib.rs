//! Claims the test VM's bochs display, which no built-in claims, and says
//! how made-up allocators name it: a device plugin resource with Intel's
//! `card<N>-<share>` IDs, a monitoring resource standing for every device,
//! and a DRA driver naming devices by dashed PCI address. The allocation
//! tests give it to pods through the test kubelet; no real allocator
//! hands out bochs displays.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ids, UsageNames, Vendor, drm};

/// The bochs display, counting dumb buffer allocations.
pub const VENDOR: Vendor = Vendor {
    name: "bochs",
    version: "1.0.0-test",
    drivers: &["bochs-drm"],
    pci_vendors: &[],
    products: &[],
    ioctls: &[drm::MODE_CREATE_DUMB],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators {
        device_plugins: &[
            ("kubenpu.test/display", Ids::CardNode),
            ("kubenpu.test/monitoring", Ids::EveryDevice),
        ],
        dra_drivers: &[("display.kubenpu.test", Ids::DashedPciAddress)],
    },
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);
