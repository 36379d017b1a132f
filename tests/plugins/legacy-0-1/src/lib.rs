//! A vendor plugin as one built before WIT 0.2.0 is: bindings generated
//! from the frozen `wit/0.1.0` package, so it exports no `alloc-sizes`.
//! The agent must keep loading it.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::{string::ToString as _, vec};

    wit_bindgen::generate!({ world: "vendor", path: "../../../wit/0.1.0" });

    use kubenpu::vendor::types::{Ioctl, Kind};

    struct Legacy;

    impl Guest for Legacy {
        fn describe() -> Description {
            Description {
                name: "legacy".to_string(),
                version: "0.1.0".to_string(),
                drivers: vec!["legacy_drv".to_string()],
                ioctls: vec![Ioctl {
                    nr: 0x41,
                    name: "DRM_IOCTL_LEGACY_BO_CREATE".to_string(),
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
    }

    export!(Legacy);

    kubenpu_sdk::component_runtime!();
}
