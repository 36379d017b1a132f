//! The component side, compiled for WebAssembly only: bindings generated
//! from `wit/vendor.wit` and the conversions [`export_vendor!`] uses.
//!
//! [`export_vendor!`]: crate::export_vendor

use alloc::{
    string::{String, ToString as _},
    vec::Vec,
};

use crate::{Field, Kind, Phase, Vendor};

wit_bindgen::generate!({
    world: "vendor",
    path: "../wit",
    pub_export_macro: true,
    export_macro_name: "__export_vendor_world",
    default_bindings_module: "kubenpu_sdk::guest",
});

pub use alloc::{string::String as OwnedString, vec::Vec as OwnedVec};
pub use kubenpu::vendor::char_devices::CharDevice as WitCharDevice;
use kubenpu::vendor::{
    allocation::{Allocator as WitAllocator, Ids as WitIds},
    char_devices::{
        Classifier, Command as WitCommand, CommandKey as WitCommandKey, CommandSize,
        Nodes as WitNodes,
    },
    energy::{Attribute as WitAttribute, MetricsCounter as WitMetricsCounter, Sensor as WitSensor},
    types::{Field as WitField, Ioctl as WitIoctl, Kind as WitKind, Phase as WitPhase, Selector},
    usage::Rename,
};

/// The allocator plugins use: no_std components bring their own.
pub use dlmalloc::GlobalDlmalloc as Allocator;

fn wit_kind(kind: Kind) -> WitKind {
    match kind {
        Kind::Submit => WitKind::Submit,
        Kind::Alloc => WitKind::Alloc,
        Kind::Wait => WitKind::Wait,
    }
}

fn wit_field(f: &Field) -> WitField {
    WitField {
        name: f.name.to_string(),
        offset: f.offset,
        width: f.width,
    }
}

fn wit_phase(phase: Phase) -> WitPhase {
    match phase {
        Phase::Before => WitPhase::Before,
        Phase::After => WitPhase::After,
    }
}

fn wit_selector(when: Option<(Field, u64)>) -> Option<Selector> {
    when.map(|(f, value)| Selector {
        field: wit_field(&f),
        value,
    })
}

/// `describe` for a declared vendor.
pub fn describe(vendor: &Vendor) -> Description {
    let ioctls = vendor
        .ioctls
        .iter()
        .map(|i| WitIoctl {
            nr: i.nr,
            name: i.name.to_string(),
            kind: wit_kind(i.kind),
        })
        .collect();
    Description {
        name: vendor.name.to_string(),
        version: vendor.version.to_string(),
        drivers: vendor.drivers.iter().map(|d| d.to_string()).collect(),
        ioctls,
    }
}

/// `alloc-sizes` for a declared vendor.
pub fn alloc_sizes(vendor: &Vendor) -> Vec<AllocSize> {
    vendor
        .ioctls
        .iter()
        .filter_map(|i| {
            let size = i.size?;
            Some(AllocSize {
                nr: i.nr,
                size: wit_field(&size.field),
                read: wit_phase(size.read),
                when: wit_selector(size.when),
            })
        })
        .collect()
}

/// `char-devices` for a declared vendor.
pub fn char_devices(vendor: &Vendor) -> Vec<WitCharDevice> {
    use crate::{CommandKey, Nodes};
    vendor
        .char_devices
        .iter()
        .map(|device| WitCharDevice {
            driver: device.driver.to_string(),
            nodes: match device.nodes {
                Nodes::Class(name) => WitNodes::Class(name.to_string()),
                Nodes::Misc(name) => WitNodes::Misc(name.to_string()),
                Nodes::Major(name) => WitNodes::Major(name.to_string()),
            },
            entry: device.entry.to_string(),
            key: match device.key {
                CommandKey::Number => WitCommandKey::Number,
                CommandKey::TypeAndNumber => WitCommandKey::TypeAndNumber,
                CommandKey::Whole => WitCommandKey::Whole,
            },
            commands: device
                .commands
                .iter()
                .map(|c| WitCommand {
                    cmd: c.cmd,
                    name: c.name.to_string(),
                    kind: wit_kind(c.kind),
                    size: c.size.map(|size| CommandSize {
                        size: wit_field(&size.field),
                        read: wit_phase(size.read),
                        when: wit_selector(size.when),
                    }),
                    only_when: c.only_when.map(|(field, values)| Classifier {
                        field: wit_field(&field),
                        values: values.to_vec(),
                    }),
                })
                .collect(),
        })
        .collect()
}

/// `usage-names` for declared names ([`crate::UsageNames::KERNEL`] for a
/// plugin that keeps the kernel's).
pub fn usage_names(names: &crate::UsageNames) -> UsageNames {
    let renames = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(kernel, shown)| Rename {
                kernel: kernel.to_string(),
                shown: shown.to_string(),
            })
            .collect()
    };
    UsageNames {
        engines: renames(names.engines),
        regions: renames(names.regions),
    }
}

/// `allocators` for declared allocators.
pub fn allocators(allocators: &crate::Allocators) -> Allocators {
    let list = |pairs: &[(&str, crate::Ids)]| {
        pairs
            .iter()
            .map(|&(name, ids)| WitAllocator {
                name: name.to_string(),
                ids: match ids {
                    crate::Ids::CardNode => WitIds::CardNode,
                    crate::Ids::AccelNode => WitIds::AccelNode,
                    crate::Ids::PciAddress => WitIds::PciAddress,
                    crate::Ids::DashedPciAddress => WitIds::DashedPciAddress,
                    crate::Ids::CardRender => WitIds::CardRender,
                    crate::Ids::EveryDevice => WitIds::EveryDevice,
                },
            })
            .collect()
    };
    Allocators {
        device_plugins: list(allocators.device_plugins),
        dra_drivers: list(allocators.dra_drivers),
    }
}

/// `energy` for a declared source ([`crate::Energy::NONE`] for a vendor
/// whose devices report none).
pub fn energy(energy: &crate::Energy) -> EnergySource {
    use crate::Sensor;
    let attribute = |a: &crate::Attribute| WitAttribute {
        file: a.file.to_string(),
        label: a.label.map(str::to_string),
    };
    EnergySource {
        hwmon_names: energy.hwmon_names.iter().map(|n| n.to_string()).collect(),
        sensors: energy
            .sensors
            .iter()
            .map(|sensor| match sensor {
                Sensor::EnergyCounter(a) => WitSensor::EnergyCounter(attribute(a)),
                Sensor::Power(a) => WitSensor::Power(attribute(a)),
                Sensor::Metrics(m) => WitSensor::Metrics(WitMetricsCounter {
                    file: m.file.to_string(),
                    format_revision: m.format_revision,
                    content_revision: m.content_revision,
                    offset: m.offset,
                    unit_shift: m.unit_shift,
                    wraps_at_32_bits: m.wraps_at_32_bits,
                }),
            })
            .collect(),
        idle_milliwatts: energy.idle_milliwatts,
    }
}

/// `matches` for a declared vendor.
pub fn matches(vendor: &Vendor, device: Device) -> bool {
    vendor.matches(device.pci.map(sdk_pci_id))
}

/// `product-name` for a declared vendor.
pub fn product_name(vendor: &Vendor, id: PciId) -> Option<String> {
    vendor.product_name(sdk_pci_id(id)).map(str::to_string)
}

fn sdk_pci_id(id: PciId) -> crate::PciId {
    crate::PciId {
        vendor: id.vendor,
        device: id.device,
    }
}

/// The canonical ABI's allocation hook (`cabi_realloc`): the host calls it
/// to place arguments in the component's memory. std provides it on
/// `wasm32-wasip2`; a `no_std` component exports this one.
///
/// # Safety
///
/// As for `cabi_realloc`: `old_ptr`/`old_len`/`align` describe a block this
/// allocator returned (or `old_len` is 0), and `align` is a power of two.
pub unsafe fn realloc(old_ptr: *mut u8, old_len: usize, align: usize, new_len: usize) -> *mut u8 {
    use alloc::alloc::{Layout, alloc, realloc};
    if new_len == 0 {
        return align as *mut u8;
    }
    // SAFETY: the caller passes a valid alignment and, for a reallocation,
    // the layout the block was allocated with.
    let ptr = unsafe {
        if old_len == 0 {
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        // Out of memory: trap rather than hand the host a null pointer.
        core::arch::wasm32::unreachable();
    }
    ptr
}
