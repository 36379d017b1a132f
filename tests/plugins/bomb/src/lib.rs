//! A plugin whose `describe` allocates until memory runs out: the agent's
//! memory limit must stop it.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::vec::Vec;

    use kubenpu_sdk::guest::{AllocSize, Description, Device, Guest, OwnedString, OwnedVec, PciId};

    struct Bomb;

    impl Guest for Bomb {
        fn describe() -> Description {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(alloc::vec![0xa5; 1 << 20]);
            }
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

    kubenpu_sdk::export_component!(Bomb);
}
