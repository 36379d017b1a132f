//! One file that tests turn into many distinct vendors: its name is a
//! 16-byte placeholder in the component's data, which a test rewrites in
//! the file's bytes; it claims the driver `<name>_drv`.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::{format, string::String, vec};

    use kubenpu_sdk::{
        Allocators, Energy, Ioctl, UsageNames, Vendor, drm,
        guest::{self, AllocSize, Description, Device, Guest, OwnedString, OwnedVec, PciId},
    };

    /// The placeholder tests rewrite. Read volatile, so its bytes stay in
    /// the data section instead of being folded into instructions.
    static NAME: [u8; 16] = *b"numbered-vendor0";

    /// Everything but the name and driver.
    const VENDOR: Vendor = Vendor {
        name: "numbered",
        version: "1.0.0",
        drivers: &[],
        pci_vendors: &[],
        products: &[],
        ioctls: &[Ioctl::submit(
            "DRM_IOCTL_NUMBERED_SUBMIT",
            drm::command(0x00),
        )],
        usage_names: UsageNames::KERNEL,
        allocators: Allocators::NONE,
        char_devices: &[],
        energy: Energy::NONE,
    };

    struct Numbered;

    impl Guest for Numbered {
        fn describe() -> Description {
            // SAFETY: a read of our own static.
            let bytes = unsafe { core::ptr::read_volatile(&NAME) };
            let name = String::from_utf8_lossy(&bytes).into_owned();
            let mut description = guest::describe(&VENDOR);
            description.drivers = vec![format!("{name}_drv")];
            description.name = name;
            description
        }

        fn matches(_: Device) -> bool {
            true
        }

        fn product_name(_: PciId) -> Option<OwnedString> {
            None
        }

        fn alloc_sizes() -> OwnedVec<AllocSize> {
            OwnedVec::new()
        }

        fn usage_names() -> kubenpu_sdk::guest::UsageNames {
            guest::usage_names(&VENDOR.usage_names)
        }

        fn allocators() -> kubenpu_sdk::guest::Allocators {
            guest::allocators(&VENDOR.allocators)
        }

        fn char_devices() -> kubenpu_sdk::guest::OwnedVec<kubenpu_sdk::guest::WitCharDevice> {
            guest::char_devices(&VENDOR)
        }

        fn energy() -> kubenpu_sdk::guest::EnergySource {
            guest::energy(&VENDOR.energy)
        }
    }

    kubenpu_sdk::export_component!(Numbered);
}
