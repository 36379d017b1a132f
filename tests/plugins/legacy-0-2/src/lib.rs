//! A vendor plugin as one built before WIT 0.3.0 is: bindings generated
//! from the frozen `wit/0.2.0` package, so it exports sizes but no
//! `usage-names`. The agent must keep loading it, with its sizes.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::{string::ToString as _, vec};

    wit_bindgen::generate!({ world: "vendor", path: "../../../wit/0.2.0" });

    use kubenpu::vendor::types::{Field, Ioctl, Kind, Phase};

    struct Legacy;

    impl Guest for Legacy {
        fn describe() -> Description {
            Description {
                name: "legacy2".to_string(),
                version: "0.2.0".to_string(),
                drivers: vec!["legacy2_drv".to_string()],
                ioctls: vec![Ioctl {
                    nr: 0x41,
                    name: "DRM_IOCTL_LEGACY2_BO_CREATE".to_string(),
                    kind: Kind::Alloc,
                }],
            }
        }

        fn matches(_: Device) -> bool {
            true
        }

        fn product_name(_: PciId) -> Option<alloc::string::String> {
            None
        }

        fn alloc_sizes() -> alloc::vec::Vec<AllocSize> {
            vec![AllocSize {
                nr: 0x41,
                size: Field {
                    name: "size".to_string(),
                    offset: 8,
                    width: 8,
                },
                read: Phase::After,
                when: None,
            }]
        }
    }

    export!(Legacy);

    kubenpu_sdk::component_runtime!();
}
