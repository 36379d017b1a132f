//! A vendor plugin as one built before WIT 0.4.0 is: bindings generated
//! from the frozen `wit/0.3.0` package, so it exports sizes and usage names
//! but no `allocators`. The agent must keep loading it, with both.
#![cfg_attr(target_family = "wasm", no_std)]

#[cfg(target_family = "wasm")]
mod component {
    extern crate alloc;

    use alloc::{string::ToString as _, vec, vec::Vec};

    wit_bindgen::generate!({ world: "vendor", path: "../../../wit/0.3.0" });

    use kubenpu::vendor::{
        types::{Ioctl, Kind},
        usage::Rename,
    };

    struct Legacy;

    impl Guest for Legacy {
        fn describe() -> Description {
            Description {
                name: "legacy3".to_string(),
                version: "0.3.0".to_string(),
                drivers: vec!["legacy3_drv".to_string()],
                ioctls: vec![Ioctl {
                    nr: 0x40,
                    name: "DRM_IOCTL_LEGACY3_SUBMIT".to_string(),
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
                engines: vec![Rename {
                    kernel: "gfx".to_string(),
                    shown: "render".to_string(),
                }],
                regions: Vec::new(),
            }
        }
    }

    export!(Legacy);

    kubenpu_sdk::component_runtime!();
}
