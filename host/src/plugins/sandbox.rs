//! Runs vendor components under wasmtime with nothing to reach and little
//! to spend: no imports at all (so no files, network, environment or
//! clock), bounded memory and stack, and a fuel budget per call that stops
//! an endless loop in milliseconds.

use kubenpu_sdk::{
    AllocatorsSpec, AttributeSpec, CharDeviceSpec, CommandKey, CommandSpec, Description,
    EnergySpec, FieldSpec, Ids, Kind, MetricsCounterSpec, NodesSpec, PciId, Phase, SensorSpec,
    SizeSpec, TableEntry, UsageNamesSpec,
};
use wasmtime::{
    Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder,
    component::{Component, Linker},
};

use super::{PluginError, engine};

/// Host bindings generated from `wit/vendor.wit` (0.6.0).
mod bindings {
    wasmtime::component::bindgen!({ world: "vendor", path: "../wit" });
}

/// Host bindings of the frozen 0.5.0 package, for plugins built before
/// 0.6.0: the same world without `energy`. Its interfaces are the
/// current ones, so the current bindings' types serve both.
mod bindings_0_5 {
    wasmtime::component::bindgen!({
        world: "vendor",
        path: "../wit/0.5.0",
        with: {
            "kubenpu:vendor/types@0.5.0": super::bindings::kubenpu::vendor::types,
            "kubenpu:vendor/usage@0.5.0": super::bindings::kubenpu::vendor::usage,
            "kubenpu:vendor/allocation@0.5.0": super::bindings::kubenpu::vendor::allocation,
            "kubenpu:vendor/char-devices@0.5.0": super::bindings::kubenpu::vendor::char_devices,
        },
    });
}

/// Host bindings of the frozen 0.4.0 package, for plugins built before
/// 0.5.0: the same world without `char-devices`. Its interfaces are the
/// current ones, so the current bindings' types serve both.
mod bindings_0_4 {
    wasmtime::component::bindgen!({
        world: "vendor",
        path: "../wit/0.4.0",
        with: {
            "kubenpu:vendor/types@0.4.0": super::bindings::kubenpu::vendor::types,
            "kubenpu:vendor/usage@0.4.0": super::bindings::kubenpu::vendor::usage,
            "kubenpu:vendor/allocation@0.4.0": super::bindings::kubenpu::vendor::allocation,
        },
    });
}

/// Host bindings of the frozen 0.3.0 package, for plugins built before
/// 0.4.0: the same world without `allocators`. Its interfaces are the
/// current ones, so the current bindings' types serve both.
mod bindings_0_3 {
    wasmtime::component::bindgen!({
        world: "vendor",
        path: "../wit/0.3.0",
        with: {
            "kubenpu:vendor/types@0.3.0": super::bindings::kubenpu::vendor::types,
            "kubenpu:vendor/usage@0.3.0": super::bindings::kubenpu::vendor::usage,
        },
    });
}

/// Host bindings of the frozen 0.2.0 package, for plugins built before
/// 0.3.0: the same world without `usage-names`. Its `types` interface is
/// the current one, so the current bindings' types serve both.
mod bindings_0_2 {
    wasmtime::component::bindgen!({
        world: "vendor",
        path: "../wit/0.2.0",
        with: { "kubenpu:vendor/types@0.2.0": super::bindings::kubenpu::vendor::types },
    });
}

/// Host bindings of the frozen 0.1.0 package, for plugins built before
/// 0.2.0: the same world without `alloc-sizes`.
mod bindings_0_1 {
    wasmtime::component::bindgen!({ world: "vendor", path: "../wit/0.1.0" });
}

use bindings::{
    Vendor, VendorPre,
    kubenpu::vendor::{char_devices::CharDevice as WitCharDevice, energy, types},
};

/// Largest linear memory a plugin may grow to.
pub const MEMORY_LIMIT: usize = 16 << 20;
/// Fuel (roughly, wasm instructions) granted to each call; describing a
/// table of a few hundred entries takes well under a tenth of it.
pub const FUEL_PER_CALL: u64 = 20_000_000;
/// Deepest wasm stack a plugin may use.
const STACK_LIMIT: usize = 512 << 10;

/// The engine and the (empty) linker every plugin is instantiated with.
#[derive(Clone)]
pub struct Sandbox {
    engine: Engine,
    linker: Linker<Limits>,
}

/// A plugin compiled and checked against the world, ready to instantiate.
#[derive(Clone)]
pub struct Compiled {
    pre: Pre,
}

/// A pre-instance of one of the world's versions.
#[derive(Clone)]
enum Pre {
    Current(VendorPre<Limits>),
    V0_5(bindings_0_5::VendorPre<Limits>),
    V0_4(bindings_0_4::VendorPre<Limits>),
    V0_3(bindings_0_3::VendorPre<Limits>),
    V0_2(bindings_0_2::VendorPre<Limits>),
    V0_1(bindings_0_1::VendorPre<Limits>),
}

impl Sandbox {
    /// Creates the engine with fuel metering and stack limits.
    pub fn new() -> anyhow::Result<Self> {
        let mut config = engine::config();
        config.max_wasm_stack(STACK_LIMIT);
        let engine = Engine::new(&config)?;
        // Nothing is added: a plugin that imports anything fails to link,
        // and the error names the import.
        let linker = Linker::new(&engine);
        Ok(Self { engine, linker })
    }

    /// Compiles a component and checks its imports and exports.
    pub fn compile(&self, bytes: &[u8]) -> Result<Compiled, PluginError> {
        match bytes {
            [0x00, b'a', b's', b'm', _, _, 0x00, 0x00, ..] => return Err(PluginError::CoreModule),
            [0x00, b'a', b's', b'm', ..] => {}
            _ => return Err(PluginError::NotWasm),
        }
        let component = Component::from_binary(&self.engine, bytes)
            .map_err(|e| PluginError::Invalid(one_line(&e)))?;
        self.prepare(&component)
    }

    /// Loads code precompiled by `wasmtime::Engine::precompile_component`
    /// and checks its imports and exports. wasmtime refuses code of
    /// another version, settings or CPU features.
    ///
    /// # Safety
    ///
    /// `code` must come from wasmtime's own precompilation: it is mapped and
    /// run as machine code without being validated as WebAssembly.
    pub(super) unsafe fn deserialize(&self, code: &[u8]) -> Result<Compiled, PluginError> {
        // SAFETY: the caller vouches for the code's origin.
        let component = unsafe { Component::deserialize(&self.engine, code) }
            .map_err(|e| PluginError::Invalid(one_line(&e)))?;
        self.prepare(&component)
    }

    /// Links a component (with nothing) and matches it to a world version.
    fn prepare(&self, component: &Component) -> Result<Compiled, PluginError> {
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| PluginError::Imports(one_line(&e)))?;
        // A plugin of the current world, else of an earlier one; a plugin
        // of none is reported against the current one.
        let pre = match VendorPre::new(pre.clone()) {
            Ok(current) => Pre::Current(current),
            Err(e) => bindings_0_5::VendorPre::new(pre.clone())
                .map(Pre::V0_5)
                .or_else(|_| bindings_0_4::VendorPre::new(pre.clone()).map(Pre::V0_4))
                .or_else(|_| bindings_0_3::VendorPre::new(pre.clone()).map(Pre::V0_3))
                .or_else(|_| bindings_0_2::VendorPre::new(pre.clone()).map(Pre::V0_2))
                .or_else(|_| bindings_0_1::VendorPre::new(pre).map(Pre::V0_1))
                .map_err(|_| PluginError::Exports(one_line(&e)))?,
        };
        Ok(Compiled { pre })
    }
}

/// wasmtime's store limits, remembering whether a memory growth was
/// refused so the failure can be reported as such.
struct Limits {
    limits: StoreLimits,
    memory_refused: bool,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum);
        self.memory_refused |= !matches!(allowed, Ok(true));
        allowed
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// An instance of one of the world's versions.
enum Instance {
    Current(Vendor),
    V0_5(bindings_0_5::Vendor),
    V0_4(bindings_0_4::Vendor),
    V0_3(bindings_0_3::Vendor),
    V0_2(bindings_0_2::Vendor),
    V0_1(bindings_0_1::Vendor),
}

impl Compiled {
    /// Runs one export in a fresh, limited instance. A trapped instance is
    /// never reused: each call gets its own store.
    fn call<R>(
        &self,
        export: &'static str,
        f: impl FnOnce(&Instance, &mut Store<Limits>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(MEMORY_LIMIT)
            .instances(16)
            .tables(8)
            .memories(2)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(
            match &self.pre {
                Pre::Current(pre) => pre.engine(),
                Pre::V0_5(pre) => pre.engine(),
                Pre::V0_4(pre) => pre.engine(),
                Pre::V0_3(pre) => pre.engine(),
                Pre::V0_2(pre) => pre.engine(),
                Pre::V0_1(pre) => pre.engine(),
            },
            Limits {
                limits,
                memory_refused: false,
            },
        );
        store.limiter(|limits| limits);
        let result = store
            .set_fuel(FUEL_PER_CALL)
            .and_then(|()| match &self.pre {
                Pre::Current(pre) => pre.instantiate(&mut store).map(Instance::Current),
                Pre::V0_5(pre) => pre.instantiate(&mut store).map(Instance::V0_5),
                Pre::V0_4(pre) => pre.instantiate(&mut store).map(Instance::V0_4),
                Pre::V0_3(pre) => pre.instantiate(&mut store).map(Instance::V0_3),
                Pre::V0_2(pre) => pre.instantiate(&mut store).map(Instance::V0_2),
                Pre::V0_1(pre) => pre.instantiate(&mut store).map(Instance::V0_1),
            })
            .and_then(|vendor| f(&vendor, &mut store));
        result.map_err(|e| PluginError::Call {
            export,
            reason: call_failure(&e, store.data().memory_refused),
        })
    }

    /// The plugin's description, unvalidated, with the sizes its alloc
    /// entries declare (none from a 0.1.0 plugin), its usage names (none
    /// before 0.3.0), its allocators (none before 0.4.0), its character
    /// devices (none before 0.5.0) and its energy source (none before
    /// 0.6.0).
    pub fn describe(&self) -> Result<Description, PluginError> {
        let char_devices =
            |list: Vec<WitCharDevice>| list.into_iter().map(char_device_spec).collect();
        // One instance, one fuel budget, for every call.
        let (d, sizes, names, allocators, char_devices, energy) =
            self.call("describe", |v, s| match v {
                Instance::Current(v) => Ok((
                    v.call_describe(&mut *s)?,
                    v.call_alloc_sizes(&mut *s)?,
                    usage_names(v.call_usage_names(&mut *s)?),
                    allocators_spec(v.call_allocators(&mut *s)?),
                    char_devices(v.call_char_devices(&mut *s)?),
                    energy_spec(v.call_energy(s)?),
                )),
                Instance::V0_5(v) => Ok((
                    v.call_describe(&mut *s)?,
                    v.call_alloc_sizes(&mut *s)?,
                    usage_names(v.call_usage_names(&mut *s)?),
                    allocators_spec(v.call_allocators(&mut *s)?),
                    char_devices(v.call_char_devices(s)?),
                    EnergySpec::default(),
                )),
                Instance::V0_4(v) => Ok((
                    v.call_describe(&mut *s)?,
                    v.call_alloc_sizes(&mut *s)?,
                    usage_names(v.call_usage_names(&mut *s)?),
                    allocators_spec(v.call_allocators(s)?),
                    Vec::new(),
                    EnergySpec::default(),
                )),
                Instance::V0_3(v) => Ok((
                    v.call_describe(&mut *s)?,
                    v.call_alloc_sizes(&mut *s)?,
                    usage_names(v.call_usage_names(s)?),
                    AllocatorsSpec::default(),
                    Vec::new(),
                    EnergySpec::default(),
                )),
                Instance::V0_2(v) => Ok((
                    v.call_describe(&mut *s)?,
                    v.call_alloc_sizes(s)?,
                    UsageNamesSpec::default(),
                    AllocatorsSpec::default(),
                    Vec::new(),
                    EnergySpec::default(),
                )),
                Instance::V0_1(v) => Ok((
                    from_0_1(v.call_describe(s)?),
                    Vec::new(),
                    UsageNamesSpec::default(),
                    AllocatorsSpec::default(),
                    Vec::new(),
                    EnergySpec::default(),
                )),
            })?;
        let size_of = |nr: u8| sizes.iter().find(|s| s.nr == nr).map(size_spec);
        let ioctls = d
            .ioctls
            .into_iter()
            .map(|i| TableEntry {
                nr: i.nr,
                size: size_of(i.nr),
                name: i.name,
                kind: kind(i.kind),
            })
            .collect();
        Ok(Description {
            name: d.name,
            version: d.version,
            drivers: d.drivers,
            ioctls,
            usage_names: names,
            allocators,
            char_devices,
            energy,
        })
    }

    /// Whether the plugin's table fits this device.
    pub fn matches(&self, device: &crate::discovery::Device) -> Result<bool, PluginError> {
        let subsystem = match device.subsystem {
            crate::discovery::Subsystem::Drm => types::Subsystem::Drm,
            crate::discovery::Subsystem::Accel => types::Subsystem::Accel,
            // The plugin named the character device itself: nothing to
            // decline, and `matches` is asked of DRM and accel devices
            // only.
            crate::discovery::Subsystem::Char => return Ok(true),
        };
        let device = types::Device {
            driver: device.driver.clone(),
            subsystem,
            pci: device.pci.as_ref().map(|p| wit_pci_id(p.id)),
        };
        self.call("matches", |v, s| match v {
            Instance::Current(v) => v.call_matches(s, &device),
            Instance::V0_5(v) => v.call_matches(s, &device),
            Instance::V0_4(v) => v.call_matches(s, &device),
            Instance::V0_3(v) => v.call_matches(s, &device),
            Instance::V0_2(v) => v.call_matches(s, &device),
            Instance::V0_1(v) => v.call_matches(s, &device_0_1(&device)),
        })
    }

    /// The product name the plugin knows for a PCI id.
    pub fn product_name(&self, id: PciId) -> Result<Option<String>, PluginError> {
        self.call("product-name", |v, s| match v {
            Instance::Current(v) => v.call_product_name(s, wit_pci_id(id)),
            Instance::V0_5(v) => v.call_product_name(s, wit_pci_id(id)),
            Instance::V0_4(v) => v.call_product_name(s, wit_pci_id(id)),
            Instance::V0_3(v) => v.call_product_name(s, wit_pci_id(id)),
            Instance::V0_2(v) => v.call_product_name(s, wit_pci_id(id)),
            Instance::V0_1(v) => v.call_product_name(s, pci_id_0_1(wit_pci_id(id))),
        })
    }
}

/// A 0.1.0 description in the current package's types (the records are
/// the same).
fn from_0_1(d: bindings_0_1::kubenpu::vendor::types::Description) -> types::Description {
    use bindings_0_1::kubenpu::vendor::types::Kind as Old;
    types::Description {
        name: d.name,
        version: d.version,
        drivers: d.drivers,
        ioctls: d
            .ioctls
            .into_iter()
            .map(|i| types::Ioctl {
                nr: i.nr,
                name: i.name,
                kind: match i.kind {
                    Old::Submit => types::Kind::Submit,
                    Old::Alloc => types::Kind::Alloc,
                    Old::Wait => types::Kind::Wait,
                },
            })
            .collect(),
    }
}

fn pci_id_0_1(id: types::PciId) -> bindings_0_1::kubenpu::vendor::types::PciId {
    bindings_0_1::kubenpu::vendor::types::PciId {
        vendor: id.vendor,
        device: id.device,
    }
}

fn device_0_1(device: &types::Device) -> bindings_0_1::kubenpu::vendor::types::Device {
    use bindings_0_1::kubenpu::vendor::types::{Device, Subsystem};
    Device {
        driver: device.driver.clone(),
        subsystem: match device.subsystem {
            types::Subsystem::Drm => Subsystem::Drm,
            types::Subsystem::Accel => Subsystem::Accel,
        },
        pci: device.pci.map(pci_id_0_1),
    }
}

fn usage_names(names: bindings::kubenpu::vendor::usage::UsageNames) -> UsageNamesSpec {
    let pairs = |renames: Vec<bindings::kubenpu::vendor::usage::Rename>| {
        renames.into_iter().map(|r| (r.kernel, r.shown)).collect()
    };
    UsageNamesSpec {
        engines: pairs(names.engines),
        regions: pairs(names.regions),
    }
}

fn allocators_spec(
    allocators: bindings::kubenpu::vendor::allocation::Allocators,
) -> AllocatorsSpec {
    use bindings::kubenpu::vendor::allocation::{Allocator, Ids as WitIds};
    let pairs = |list: Vec<Allocator>| {
        list.into_iter()
            .map(|a| {
                let ids = match a.ids {
                    WitIds::CardNode => Ids::CardNode,
                    WitIds::AccelNode => Ids::AccelNode,
                    WitIds::PciAddress => Ids::PciAddress,
                    WitIds::DashedPciAddress => Ids::DashedPciAddress,
                    WitIds::CardRender => Ids::CardRender,
                    WitIds::EveryDevice => Ids::EveryDevice,
                };
                (a.name, ids)
            })
            .collect()
    };
    AllocatorsSpec {
        device_plugins: pairs(allocators.device_plugins),
        dra_drivers: pairs(allocators.dra_drivers),
    }
}

fn kind(kind: types::Kind) -> Kind {
    match kind {
        types::Kind::Submit => Kind::Submit,
        types::Kind::Alloc => Kind::Alloc,
        types::Kind::Wait => Kind::Wait,
    }
}

/// The plugin's energy source in the SDK's types.
fn energy_spec(source: energy::EnergySource) -> EnergySpec {
    let attribute = |a: energy::Attribute| AttributeSpec {
        file: a.file,
        label: a.label,
    };
    EnergySpec {
        hwmon_names: source.hwmon_names,
        sensors: source
            .sensors
            .into_iter()
            .map(|sensor| match sensor {
                energy::Sensor::EnergyCounter(a) => SensorSpec::EnergyCounter(attribute(a)),
                energy::Sensor::Power(a) => SensorSpec::Power(attribute(a)),
                energy::Sensor::Metrics(m) => SensorSpec::Metrics(MetricsCounterSpec {
                    file: m.file,
                    format_revision: m.format_revision,
                    content_revision: m.content_revision,
                    offset: m.offset,
                    unit_shift: m.unit_shift,
                    wraps_at_32_bits: m.wraps_at_32_bits,
                }),
            })
            .collect(),
        idle_milliwatts: source.idle_milliwatts,
    }
}

fn char_device_spec(device: WitCharDevice) -> CharDeviceSpec {
    use bindings::kubenpu::vendor::char_devices::{CommandKey as WitKey, Nodes};
    CharDeviceSpec {
        driver: device.driver,
        nodes: match device.nodes {
            Nodes::Class(name) => NodesSpec::Class(name),
            Nodes::Misc(name) => NodesSpec::Misc(name),
            Nodes::Major(name) => NodesSpec::Major(name),
        },
        entry: device.entry,
        key: match device.key {
            WitKey::Number => CommandKey::Number,
            WitKey::TypeAndNumber => CommandKey::TypeAndNumber,
            WitKey::Whole => CommandKey::Whole,
        },
        commands: device
            .commands
            .into_iter()
            .map(|c| CommandSpec {
                cmd: c.cmd,
                name: c.name,
                kind: kind(c.kind),
                size: c.size.map(|size| SizeSpec {
                    field: field_spec(&size.size),
                    read: phase(size.read),
                    when: size.when.as_ref().map(|w| (field_spec(&w.field), w.value)),
                }),
                only_when: c
                    .only_when
                    .map(|only| (field_spec(&only.field), only.values)),
            })
            .collect(),
    }
}

fn phase(phase: types::Phase) -> Phase {
    match phase {
        types::Phase::Before => Phase::Before,
        types::Phase::After => Phase::After,
    }
}

fn field_spec(field: &types::Field) -> FieldSpec {
    FieldSpec {
        name: field.name.clone(),
        offset: field.offset,
        width: field.width,
    }
}

fn size_spec(size: &types::AllocSize) -> SizeSpec {
    SizeSpec {
        field: field_spec(&size.size),
        read: phase(size.read),
        when: size.when.as_ref().map(|w| (field_spec(&w.field), w.value)),
    }
}

fn wit_pci_id(id: PciId) -> types::PciId {
    types::PciId {
        vendor: id.vendor,
        device: id.device,
    }
}

/// Why a call failed, in words an operator can act on.
fn call_failure(e: &wasmtime::Error, memory_refused: bool) -> String {
    if memory_refused {
        return format!(
            "tried to grow its memory past the {} MiB limit",
            MEMORY_LIMIT >> 20
        );
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::OutOfFuel) => {
            format!("used up its CPU budget of {FUEL_PER_CALL} fuel units (an endless loop?)")
        }
        Some(trap) => format!("trapped: {trap}"),
        None => one_line(e),
    }
}

/// An error chain on one line: wasmtime's messages span several.
fn one_line(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
