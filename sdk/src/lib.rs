//! The crate vendor authors use to teach KubeNPU about their accelerators.
//!
//! A vendor plugin is a WebAssembly component implementing the WIT world in
//! `wit/vendor.wit`: it claims kernel driver names and lists which of the
//! driver's ioctls submit work, allocate device memory or wait for the
//! device. With this crate a vendor is a constant and one macro call:
//!
//! ```
//! #![cfg_attr(target_family = "wasm", no_std)]
//! use kubenpu_sdk::{Allocators, Energy, Ioctl, UsageNames, Vendor, drm};
//!
//! pub const VENDOR: Vendor = Vendor {
//!     name: "example",
//!     version: "1.0.0",
//!     drivers: &["example_drv"],
//!     pci_vendors: &[0x1234],
//!     products: &[],
//!     ioctls: &[
//!         Ioctl::submit("DRM_IOCTL_EXAMPLE_SUBMIT", drm::command(0x02)),
//!         Ioctl::alloc("DRM_IOCTL_EXAMPLE_BO_CREATE", drm::command(0x00)),
//!         drm::SYNCOBJ_WAIT,
//!     ],
//!     usage_names: UsageNames::KERNEL,
//!     allocators: Allocators::NONE,
//!     char_devices: &[],
//!     energy: Energy::NONE,
//! };
//! kubenpu_sdk::export_vendor!(VENDOR);
//! # fn main() { assert_eq!(kubenpu_sdk::validate(&VENDOR.description()), Ok(())); }
//! ```
//!
//! Built for `wasm32-wasip2`, that crate is a component with no imports;
//! built natively, the macro expands to nothing, so the crate's unit tests
//! can check the table with [`validate`], the very function the agent runs
//! on every plugin it loads.
#![no_std]

extern crate alloc;

mod char_device;
pub mod drm;
mod energy;
mod table;
pub mod uapi;
mod validate;

pub use char_device::{
    CharDevice, CharDeviceSpec, Command, CommandKey, CommandSpec, MAX_CLASSES, Nodes, NodesSpec,
};
pub use energy::{
    Attribute, AttributeSpec, Energy, EnergySpec, MAX_IDLE_MILLIWATTS, MAX_METRICS_FILE,
    MAX_SENSORS, MetricsCounter, MetricsCounterSpec, Sensor, SensorSpec,
};
pub use table::{
    Allocators, AllocatorsSpec, Description, Field, FieldSpec, Ids, Ioctl, Kind, PciId, Phase,
    Product, Size, SizeSpec, TableEntry, UsageNames, UsageNamesSpec, Vendor,
};
pub use validate::{Fault, MAX_IOCTLS, MAX_TEXT, validate};

#[cfg(target_family = "wasm")]
#[doc(hidden)]
pub mod guest;

/// Declares the unit tests every vendor crate has: the table passes the
/// agent's validation, each entry's number matches the uAPI header
/// excerpt(s) given (see [`uapi::check`]), each character device command
/// matches them as a C compiler computes it (see
/// [`uapi::check_commands`]), and each declared size's offset and width
/// match the excerpts' structs as a C compiler lays them out (see
/// [`uapi::check_layouts`]).
///
/// `kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/acme_drm.h"));`
#[macro_export]
macro_rules! uapi_test {
    ($vendor:path, $($header:expr),+ $(,)?) => {
        #[cfg(test)]
        #[test]
        fn table_passes_validation_and_matches_the_uapi_header() {
            assert_eq!($crate::uapi::check(&$vendor, &[$($header),+]), Ok(()));
        }

        #[cfg(test)]
        #[test]
        fn declared_sizes_match_the_compiled_uapi_structs() {
            assert_eq!($crate::uapi::check_layouts(&$vendor, &[$($header),+]), Ok(()));
        }

        #[cfg(test)]
        #[test]
        fn character_device_commands_match_the_compiled_uapi_header() {
            assert_eq!($crate::uapi::check_commands(&$vendor, &[$($header),+]), Ok(()));
        }
    };
}

/// Exports a [`Vendor`] constant as the plugin's component. Expands to
/// nothing outside WebAssembly, so the crate builds and tests natively.
#[macro_export]
macro_rules! export_vendor {
    ($vendor:path) => {
        #[cfg(target_family = "wasm")]
        const _: () = {
            struct Plugin;

            impl $crate::guest::Guest for Plugin {
                fn describe() -> $crate::guest::Description {
                    $crate::guest::describe(&$vendor)
                }

                fn matches(device: $crate::guest::Device) -> bool {
                    $crate::guest::matches(&$vendor, device)
                }

                fn product_name(id: $crate::guest::PciId) -> Option<$crate::guest::OwnedString> {
                    $crate::guest::product_name(&$vendor, id)
                }

                fn alloc_sizes() -> $crate::guest::OwnedVec<$crate::guest::AllocSize> {
                    $crate::guest::alloc_sizes(&$vendor)
                }

                fn usage_names() -> $crate::guest::UsageNames {
                    $crate::guest::usage_names(&$vendor.usage_names)
                }

                fn allocators() -> $crate::guest::Allocators {
                    $crate::guest::allocators(&$vendor.allocators)
                }

                fn char_devices() -> $crate::guest::OwnedVec<$crate::guest::WitCharDevice> {
                    $crate::guest::char_devices(&$vendor)
                }

                fn energy() -> $crate::guest::EnergySource {
                    $crate::guest::energy(&$vendor.energy)
                }
            }

            $crate::export_component!(Plugin);
        };
    };
}

/// Exports a type implementing the world's `Guest` trait (for a vendor
/// that needs its own `matches` logic), with the allocator, `cabi_realloc`
/// and panic handler a `no_std` component needs. WebAssembly only.
#[macro_export]
macro_rules! export_component {
    ($plugin:ident) => {
        $crate::guest::__export_vendor_world!($plugin with_types_in $crate::guest);
        $crate::component_runtime!();
    };
}

/// The allocator, `cabi_realloc` and panic handler a `no_std` component
/// needs, for a component whose bindings are generated elsewhere (one
/// built against an older WIT package, say). [`export_component!`] has
/// them already. WebAssembly only.
#[macro_export]
macro_rules! component_runtime {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::guest::Allocator = $crate::guest::Allocator;

        #[unsafe(no_mangle)]
        unsafe extern "C" fn cabi_realloc(
            old_ptr: *mut u8,
            old_len: usize,
            align: usize,
            new_len: usize,
        ) -> *mut u8 {
            // SAFETY: the canonical ABI's contract for cabi_realloc.
            unsafe { $crate::guest::realloc(old_ptr, old_len, align, new_len) }
        }

        #[panic_handler]
        fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
            core::arch::wasm32::unreachable()
        }
    };
}
