//! A vendor's table, in two shapes: [`Vendor`], written by authors as a
//! constant, and [`Description`], the owned form that crosses the component
//! boundary and that the agent validates.

use alloc::{
    string::{String, ToString as _},
    vec::Vec,
};

use crate::{CharDevice, CharDeviceSpec, Energy, EnergySpec};

/// What an ioctl asks of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Hands work to the device.
    Submit,
    /// Allocates memory the device uses.
    Alloc,
    /// Blocks until the device has finished something.
    Wait,
}

impl Kind {
    /// The lower-case name used in metrics and JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Submit => "submit",
            Kind::Alloc => "alloc",
            Kind::Wait => "wait",
        }
    }
}

/// When the kernel program reads an allocation's size from the ioctl's
/// argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// As the call enters: an input field, which the call may overwrite
    /// with its output (amdgpu's `GEM_CREATE` returns a handle over it).
    Before,
    /// As it returns, successfully: a size the kernel reports back (the
    /// dumb buffer's `size`, i915's page-aligned `size`).
    After,
}

/// A field of an ioctl's argument struct, as the uAPI header lays it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its path in the struct, e.g. `size` or `in.bo_size`: what tests
    /// check `offset` and `width` against, with the header compiled.
    pub name: &'static str,
    /// Byte offset in the argument.
    pub offset: u16,
    /// Width in bytes: 4 or 8 (an unsigned integer).
    pub width: u8,
}

/// Where an alloc ioctl's argument holds the bytes it allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// The size field.
    pub field: Field,
    /// When to read it.
    pub read: Phase,
    /// For an ioctl that multiplexes operations: the size counts only
    /// when this field (read as the call enters) has this value.
    pub when: Option<(Field, u64)>,
}

impl Size {
    /// A size read as the call enters.
    pub const fn before(name: &'static str, offset: u16, width: u8) -> Self {
        Self {
            field: Field {
                name,
                offset,
                width,
            },
            read: Phase::Before,
            when: None,
        }
    }

    /// A size read as the call returns successfully.
    pub const fn after(name: &'static str, offset: u16, width: u8) -> Self {
        Self {
            read: Phase::After,
            ..Self::before(name, offset, width)
        }
    }

    /// Counts the size only when `field` equals `value` (the operation
    /// code of a multiplexed ioctl).
    pub const fn when(self, field: Field, value: u64) -> Self {
        Self {
            when: Some((field, value)),
            ..self
        }
    }
}

/// One counted ioctl, as an author writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ioctl {
    /// `cmd & 0xff`.
    pub nr: u8,
    /// The uAPI macro.
    pub name: &'static str,
    /// What it does.
    pub kind: Kind,
    /// For an alloc: where its argument holds the size it allocates.
    pub size: Option<Size>,
}

impl Ioctl {
    const fn new(name: &'static str, nr: u8, kind: Kind) -> Self {
        Self {
            nr,
            name,
            kind,
            size: None,
        }
    }

    /// An ioctl that submits work.
    pub const fn submit(name: &'static str, nr: u8) -> Self {
        Self::new(name, nr, Kind::Submit)
    }

    /// An ioctl that allocates device memory.
    pub const fn alloc(name: &'static str, nr: u8) -> Self {
        Self::new(name, nr, Kind::Alloc)
    }

    /// An ioctl that waits for the device.
    pub const fn wait(name: &'static str, nr: u8) -> Self {
        Self::new(name, nr, Kind::Wait)
    }

    /// The same ioctl, with the size it allocates at `size`.
    pub const fn sized(self, size: Size) -> Self {
        Self {
            size: Some(size),
            ..self
        }
    }
}

/// A PCI function's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciId {
    /// PCI vendor id.
    pub vendor: u16,
    /// PCI device id.
    pub device: u16,
}

/// A marketing name for one PCI id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Product {
    /// The PCI id.
    pub id: PciId,
    /// What the vendor calls it.
    pub name: &'static str,
}

/// How the metrics name what a driver reports per DRM client in fdinfo:
/// `(kernel, shown)` pairs, e.g. amdgpu's engine `("gfx", "render")`.
/// Names not listed are shown as the kernel prints them; several kernel
/// names may share a shown one, and their time and bytes add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageNames {
    /// Engine classes (`drm-engine-<class>`, `drm-cycles-<class>`).
    pub engines: &'static [(&'static str, &'static str)],
    /// Memory regions (`drm-total-<region>` and the other states).
    pub regions: &'static [(&'static str, &'static str)],
}

impl UsageNames {
    /// The kernel's own names, unchanged.
    pub const KERNEL: Self = Self {
        engines: &[],
        regions: &[],
    };
}

/// The form of the device IDs an allocator (a kubelet device plugin or a
/// DRA driver) hands out for a vendor's devices, so that the agent can
/// tell which device a container was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ids {
    /// `card<N>`, optionally followed by `-<share>`: the DRM card node's
    /// name (Intel's GPU plugin: `card0-1`).
    CardNode,
    /// `accel<N>`, optionally followed by `-<share>`: the accel node's
    /// name (Intel's NPU plugin: `accel0-0`).
    AccelNode,
    /// The PCI address, `0000:03:00.0` (AMD's GPU plugin).
    PciAddress,
    /// The PCI address with dashes, optionally followed by `-<more>`
    /// (Intel's DRA driver: `0000-03-00-0-0x56a0`).
    DashedPciAddress,
    /// `gpu-<card>-<render>`, the card node's and render node's numbers
    /// (AMD's DRA driver).
    CardRender,
    /// Any ID stands for every device of the vendor (Intel's monitoring
    /// resource, whose one ID is `all`).
    EveryDevice,
}

impl Ids {
    /// The form's name in the WIT package, as `kubenpuctl plugins` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Ids::CardNode => "card-node",
            Ids::AccelNode => "accel-node",
            Ids::PciAddress => "pci-address",
            Ids::DashedPciAddress => "dashed-pci-address",
            Ids::CardRender => "card-render",
            Ids::EveryDevice => "every-device",
        }
    }
}

/// Which allocators hand out a vendor's devices, and the form of their
/// IDs: `(name, form)` pairs, the name being a device plugin's extended
/// resource (`gpu.intel.com/i915`) or a DRA driver (`gpu.intel.com`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocators {
    /// Device plugins, by resource name.
    pub device_plugins: &'static [(&'static str, Ids)],
    /// DRA drivers, by driver name; used where a claim's CDI devices
    /// cannot be looked up.
    pub dra_drivers: &'static [(&'static str, Ids)],
}

impl Allocators {
    /// No allocator is known.
    pub const NONE: Self = Self {
        device_plugins: &[],
        dra_drivers: &[],
    };
}

/// [`Allocators`] in a [`Description`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocatorsSpec {
    /// Device plugins, `(resource, form)`.
    pub device_plugins: Vec<(String, Ids)>,
    /// DRA drivers, `(driver, form)`.
    pub dra_drivers: Vec<(String, Ids)>,
}

impl From<&Allocators> for AllocatorsSpec {
    fn from(allocators: &Allocators) -> Self {
        let owned =
            |pairs: &[(&str, Ids)]| pairs.iter().map(|&(n, ids)| (n.to_string(), ids)).collect();
        Self {
            device_plugins: owned(allocators.device_plugins),
            dra_drivers: owned(allocators.dra_drivers),
        }
    }
}

/// A vendor plugin, declared as a constant.
#[derive(Debug, Clone, Copy)]
pub struct Vendor {
    /// The vendor's name, the `vendor` label of the metrics.
    pub name: &'static str,
    /// The plugin's version.
    pub version: &'static str,
    /// Kernel driver names claimed, as sysfs shows them: DRM and accel
    /// drivers. Empty only if it claims character devices.
    pub drivers: &'static [&'static str],
    /// PCI vendor ids whose devices the table fits; a PCI device of
    /// another vendor bound to a claimed driver is declined. Empty: every
    /// device of the claimed drivers.
    pub pci_vendors: &'static [u16],
    /// Product names by PCI id, for `kubenpuctl devices`.
    pub products: &'static [Product],
    /// The counted ioctls.
    pub ioctls: &'static [Ioctl],
    /// The names the metrics give its fdinfo engines and regions.
    pub usage_names: UsageNames,
    /// The allocators that hand out its devices.
    pub allocators: Allocators,
    /// Its character devices outside DRM and accel, each with its table.
    pub char_devices: &'static [CharDevice],
    /// Where its devices report their energy.
    pub energy: Energy,
}

impl Vendor {
    /// A vendor of character devices alone: no DRM or accel driver, no
    /// PCI filter or product names, the kernel's usage names, no
    /// allocator and no energy sensor (set those with struct update syntax
    /// where it has some).
    pub const fn of_char_devices(
        name: &'static str,
        version: &'static str,
        char_devices: &'static [CharDevice],
    ) -> Self {
        Self {
            name,
            version,
            drivers: &[],
            pci_vendors: &[],
            products: &[],
            ioctls: &[],
            usage_names: UsageNames::KERNEL,
            allocators: Allocators::NONE,
            char_devices,
            energy: Energy::NONE,
        }
    }

    /// The owned description the component returns from `describe`.
    pub fn description(&self) -> Description {
        Description {
            name: self.name.to_string(),
            version: self.version.to_string(),
            drivers: self.drivers.iter().map(|d| d.to_string()).collect(),
            ioctls: self
                .ioctls
                .iter()
                .map(|i| TableEntry {
                    nr: i.nr,
                    name: i.name.to_string(),
                    kind: i.kind,
                    size: i.size.map(|s| SizeSpec::from(&s)),
                })
                .collect(),
            usage_names: UsageNamesSpec::from(&self.usage_names),
            allocators: AllocatorsSpec::from(&self.allocators),
            char_devices: self.char_devices.iter().map(CharDevice::spec).collect(),
            energy: EnergySpec::from(&self.energy),
        }
    }

    /// Whether the table fits a device of a claimed driver with this PCI
    /// identity (`None`: not a PCI device).
    pub fn matches(&self, pci: Option<PciId>) -> bool {
        match pci {
            Some(id) if !self.pci_vendors.is_empty() => self.pci_vendors.contains(&id.vendor),
            _ => true,
        }
    }

    /// The product name of a PCI id, if listed.
    pub fn product_name(&self, id: PciId) -> Option<&'static str> {
        self.products.iter().find(|p| p.id == id).map(|p| p.name)
    }
}

/// A vendor's description as the agent receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// The vendor's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Claimed driver names.
    pub drivers: Vec<String>,
    /// Counted ioctls.
    pub ioctls: Vec<TableEntry>,
    /// Names for its fdinfo engines and regions (none before WIT 0.3.0).
    pub usage_names: UsageNamesSpec,
    /// The allocators of its devices (none before WIT 0.4.0).
    pub allocators: AllocatorsSpec,
    /// Its character devices outside DRM and accel (none before WIT
    /// 0.5.0).
    pub char_devices: Vec<CharDeviceSpec>,
    /// Where its devices report their energy (none before WIT 0.6.0).
    pub energy: EnergySpec,
}

/// [`UsageNames`] in a [`Description`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageNamesSpec {
    /// Engine classes, `(kernel, shown)`.
    pub engines: Vec<(String, String)>,
    /// Memory regions, `(kernel, shown)`.
    pub regions: Vec<(String, String)>,
}

impl UsageNamesSpec {
    /// The name the metrics show for engine class `kernel`.
    pub fn engine<'a>(&'a self, kernel: &'a str) -> &'a str {
        shown(&self.engines, kernel)
    }

    /// The name the metrics show for memory region `kernel`.
    pub fn region<'a>(&'a self, kernel: &'a str) -> &'a str {
        shown(&self.regions, kernel)
    }

    /// Whether every name is the kernel's.
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty() && self.regions.is_empty()
    }
}

fn shown<'a>(renames: &'a [(String, String)], kernel: &'a str) -> &'a str {
    renames
        .iter()
        .find(|(k, _)| k == kernel)
        .map_or(kernel, |(_, shown)| shown)
}

impl From<&UsageNames> for UsageNamesSpec {
    fn from(names: &UsageNames) -> Self {
        let owned = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, s)| (k.to_string(), s.to_string()))
                .collect()
        };
        Self {
            engines: owned(names.engines),
            regions: owned(names.regions),
        }
    }
}

/// One counted ioctl in a [`Description`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// `cmd & 0xff`.
    pub nr: u8,
    /// The uAPI macro.
    pub name: String,
    /// What it does.
    pub kind: Kind,
    /// For an alloc: where its argument holds the size it allocates.
    pub size: Option<SizeSpec>,
}

/// A [`Field`] in a [`Description`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    /// Its path in the argument struct.
    pub name: String,
    /// Byte offset.
    pub offset: u16,
    /// Width in bytes.
    pub width: u8,
}

/// A [`Size`] in a [`Description`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeSpec {
    /// The size field.
    pub field: FieldSpec,
    /// When to read it.
    pub read: Phase,
    /// The selecting field and value, for multiplexed ioctls.
    pub when: Option<(FieldSpec, u64)>,
}

impl From<&Field> for FieldSpec {
    fn from(field: &Field) -> Self {
        Self {
            name: field.name.to_string(),
            offset: field.offset,
            width: field.width,
        }
    }
}

impl From<&Size> for SizeSpec {
    fn from(size: &Size) -> Self {
        Self {
            field: FieldSpec::from(&size.field),
            read: size.read,
            when: size.when.as_ref().map(|(f, v)| (FieldSpec::from(f), *v)),
        }
    }
}
