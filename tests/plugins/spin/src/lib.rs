//! A plugin whose `describe` loops forever: the agent's fuel budget must
//! stop it.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    use kubenpu_sdk::guest::{AllocSize, Description, Device, Guest, OwnedString, OwnedVec, PciId};

    struct Spin;

    impl Guest for Spin {
        fn describe() -> Description {
            #[allow(clippy::empty_loop, reason = "the endless loop is the test")]
            loop {}
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
            kubenpu_sdk::guest::usage_names(&kubenpu_sdk::UsageNames::KERNEL)
        }

        fn allocators() -> kubenpu_sdk::guest::Allocators {
            kubenpu_sdk::guest::allocators(&kubenpu_sdk::Allocators::NONE)
        }

        fn char_devices() -> kubenpu_sdk::guest::OwnedVec<kubenpu_sdk::guest::WitCharDevice> {
            OwnedVec::new()
        }

        fn energy() -> kubenpu_sdk::guest::EnergySource {
            kubenpu_sdk::guest::energy(&kubenpu_sdk::Energy::NONE)
        }
    }

    kubenpu_sdk::export_component!(Spin);
}
