//! A vendor plugin as one built before WIT 0.6.0 is: bindings generated
//! from the frozen `wit/0.5.0` package, so it exports sizes, usage names,
//! allocators and character devices but no `energy`. The agent must keep
//! loading it, with its allocators.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::{string::ToString as _, vec, vec::Vec};

    wit_bindgen::generate!({ world: "vendor", path: "../../../wit/0.5.0" });

    use kubenpu::vendor::{
        allocation::{Allocator, Ids},
        types::{Ioctl, Kind},
    };

    struct Legacy;

    impl Guest for Legacy {
        fn describe() -> Description {
            Description {
                name: "legacy5".to_string(),
                version: "0.5.0".to_string(),
                drivers: vec!["legacy5_drv".to_string()],
                ioctls: vec![Ioctl {
                    nr: 0x40,
                    name: "DRM_IOCTL_LEGACY5_SUBMIT".to_string(),
                    kind: Kind::Submit,
                }],
            }
        }

        fn matches(_: Device) -> bool {
            true
        }

        fn product_name(_: PciId) -> Option<alloc::string::String> {
            None
        }

        fn alloc_sizes() -> Vec<AllocSize> {
            Vec::new()
        }

        fn usage_names() -> UsageNames {
            UsageNames {
                engines: Vec::new(),
                regions: Vec::new(),
            }
        }

        fn allocators() -> Allocators {
            Allocators {
                device_plugins: vec![Allocator {
                    name: "legacy5.example/gpu".to_string(),
                    ids: Ids::CardNode,
                }],
                dra_drivers: Vec::new(),
            }
        }

        fn char_devices() -> Vec<CharDevice> {
            Vec::new()
        }
    }

    export!(Legacy);

    kubenpu_sdk::component_runtime!();
}
