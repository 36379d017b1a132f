//! Runs vendor components under wasmtime with nothing to reach and little
//! to spend: no imports at all (so no files, network, environment or
//! clock), bounded memory and stack, and a fuel budget per call that stops
//! an endless loop in milliseconds.

use kubenpu_sdk::{Description, Kind, PciId, TableEntry};
use wasmtime::{
    Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder,
    component::{Component, Linker},
};

use super::PluginError;

/// Host bindings generated from `wit/vendor.wit`.
mod bindings {
    wasmtime::component::bindgen!({ world: "vendor", path: "../wit" });
}

use bindings::{Vendor, VendorPre, kubenpu::vendor::types};

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
    pre: VendorPre<Limits>,
}

impl Sandbox {
    /// Creates the engine with fuel metering and stack limits.
    pub fn new() -> anyhow::Result<Self> {
        let mut config = Config::new();
        config
            .consume_fuel(true)
            .max_wasm_stack(STACK_LIMIT)
            .wasm_backtrace_max_frames(None)
            .wasm_component_model(true);
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
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| PluginError::Imports(one_line(&e)))?;
        let pre = VendorPre::new(pre).map_err(|e| PluginError::Exports(one_line(&e)))?;
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

impl Compiled {
    /// Runs one export in a fresh, limited instance. A trapped instance is
    /// never reused: each call gets its own store.
    fn call<R>(
        &self,
        export: &'static str,
        f: impl FnOnce(&Vendor, &mut Store<Limits>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(MEMORY_LIMIT)
            .instances(16)
            .tables(8)
            .memories(2)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(
            self.pre.engine(),
            Limits {
                limits,
                memory_refused: false,
            },
        );
        store.limiter(|limits| limits);
        let result = store
            .set_fuel(FUEL_PER_CALL)
            .and_then(|()| self.pre.instantiate(&mut store))
            .and_then(|vendor| f(&vendor, &mut store));
        result.map_err(|e| PluginError::Call {
            export,
            reason: call_failure(&e, store.data().memory_refused),
        })
    }

    /// The plugin's description, unvalidated.
    pub fn describe(&self) -> Result<Description, PluginError> {
        let d = self.call("describe", |v, s| v.call_describe(s))?;
        let ioctls = d
            .ioctls
            .into_iter()
            .map(|i| TableEntry {
                nr: i.nr,
                name: i.name,
                kind: match i.kind {
                    types::Kind::Submit => Kind::Submit,
                    types::Kind::Alloc => Kind::Alloc,
                    types::Kind::Wait => Kind::Wait,
                },
            })
            .collect();
        Ok(Description {
            name: d.name,
            version: d.version,
            drivers: d.drivers,
            ioctls,
        })
    }

    /// Whether the plugin's table fits this device.
    pub fn matches(&self, device: &crate::discovery::Device) -> Result<bool, PluginError> {
        let device = types::Device {
            driver: device.driver.clone(),
            subsystem: match device.subsystem {
                crate::discovery::Subsystem::Drm => types::Subsystem::Drm,
                crate::discovery::Subsystem::Accel => types::Subsystem::Accel,
            },
            pci: device.pci.as_ref().map(|p| wit_pci_id(p.id)),
        };
        self.call("matches", |v, s| v.call_matches(s, &device))
    }

    /// The product name the plugin knows for a PCI id.
    pub fn product_name(&self, id: PciId) -> Result<Option<String>, PluginError> {
        self.call("product-name", |v, s| {
            v.call_product_name(s, wit_pci_id(id))
        })
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
