//! Vendor plugins: the built-in ones, compiled into the agent, and the
//! `*.wasm` files of the plugins directory, which add vendors or replace a
//! built-in of the same name. Every plugin is validated with the SDK's own
//! checks; a bad one is rejected with one line naming it and the fault,
//! and the others keep working.

mod directory;
mod engine;
mod sandbox;
mod tables;
mod watch;

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use kubenpu_ebpf::MAX_VENDORS;
use kubenpu_sdk::{Description, Fault, PciId, validate};

pub use directory::{SIZE_LIMIT, sha256_hex};
pub use sandbox::{FUEL_PER_CALL, MEMORY_LIMIT, Sandbox};
pub use tables::{Row, Table};
pub use watch::Watcher;

use crate::discovery::{CharClaim, Device, Subsystem};

/// The vendors compiled into this binary.
pub static BUILTIN: &[Builtin] = include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// A vendor compiled into this binary: its component, and the machine code
/// the build compiled it to, so that an agent starts without compiling
/// (which takes seconds for all of them on a slow core).
pub struct Builtin {
    /// The crate's directory under `vendors/`.
    pub name: &'static str,
    /// The component, as a plugin file would hold it.
    pub wasm: &'static [u8],
    /// wasmtime's precompiled form of `wasm`, for this binary's target
    /// with no CPU features assumed; `None` where the build could not make
    /// it. Private: only code from this build may ever be loaded as such.
    precompiled: Option<&'static [u8]>,
}

impl Builtin {
    /// Loads it from its precompiled code, or compiles its component where
    /// there is none or wasmtime refuses it (saying why).
    pub fn load(&self, sandbox: &Sandbox) -> Result<Plugin, PluginError> {
        let compiled = match self.precompiled(sandbox) {
            Some(Ok(compiled)) => compiled,
            Some(Err(refused)) => {
                tracing::warn!(
                    "built-in {}: its precompiled code was refused ({refused}); compiling it instead",
                    self.name
                );
                sandbox.compile(self.wasm)?
            }
            None => sandbox.compile(self.wasm)?,
        };
        Plugin::describe(compiled, Source::Builtin)
    }

    /// Whether it has precompiled code and wasmtime accepts it; where not,
    /// every agent start compiles it.
    pub fn precompiled_loads(&self, sandbox: &Sandbox) -> bool {
        matches!(self.precompiled(sandbox), Some(Ok(_)))
    }

    fn precompiled(&self, sandbox: &Sandbox) -> Option<Result<sandbox::Compiled, PluginError>> {
        // SAFETY: `precompiled` is private to this module and set only by
        // the build script, from `wasmtime::Engine::precompile_component` of
        // the same pinned wasmtime with the same `engine::config`.
        self.precompiled
            .map(|code| unsafe { sandbox.deserialize(code) })
    }
}

/// The default plugins directory.
pub const DEFAULT_DIR: &str = "/usr/lib/kubenpu/plugins";

/// Why a plugin is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// Not WebAssembly at all.
    #[error("not a WebAssembly file")]
    NotWasm,
    /// A core module rather than a component.
    #[error(
        "a core WebAssembly module, not a component: build it with kubenpu-sdk for wasm32-wasip2"
    )]
    CoreModule,
    /// Over the size limit.
    #[error("larger than the {limit}-byte limit for a plugin")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// wasmtime could not compile it (truncated, corrupt).
    #[error("not a valid component: {0}")]
    Invalid(String),
    /// It imports something; plugins may import nothing.
    #[error("imports what the sandbox does not provide (plugins may import nothing): {0}")]
    Imports(String),
    /// It does not export the vendor world.
    #[error("does not implement the kubenpu:vendor world: {0}")]
    Exports(String),
    /// A call into it trapped or ran out of budget.
    #[error("{export} failed: {reason}")]
    Call {
        /// The export called.
        export: &'static str,
        /// What happened.
        reason: String,
    },
    /// Its table fails validation.
    #[error("invalid table: {0}")]
    Table(#[from] Fault),
    /// Another plugin already claims one of its drivers.
    #[error("claims driver {driver:?}, which vendor {owner} already claims")]
    DriverTaken {
        /// The contested driver.
        driver: String,
        /// The vendor that keeps it.
        owner: String,
    },
    /// One of its tables' names hashes to the kernel table slot of
    /// another vendor's.
    #[error(
        "its table {name:?} hashes to the kernel table slot of vendor {owner}: rename one of them"
    )]
    SlotTaken {
        /// Its vendor name.
        name: String,
        /// The vendor that keeps the slot.
        owner: String,
    },
    /// The kernel's ioctl table is full.
    #[error(
        "the kernel's ioctl table holds {max} vendor tables (one per vendor and per character device), all in force: remove a plugin first"
    )]
    TooManyVendors {
        /// How many vendors the table holds.
        max: u32,
    },
    /// Another file already provides a vendor of the same name.
    #[error("vendor {name} is already provided by {by}")]
    DuplicateVendor {
        /// The vendor name.
        name: String,
        /// The file that provides it.
        by: String,
    },
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Io(String),
}

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled into this binary.
    Builtin,
    /// A file of the plugins directory.
    File {
        /// Its path.
        path: PathBuf,
        /// SHA-256 of its content, lower-case hex.
        sha256: String,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("built-in"),
            Source::File { path, .. } => write!(f, "{}", path.display()),
        }
    }
}

/// A loaded, validated vendor plugin.
pub struct Plugin {
    /// The vendor's validated description.
    pub description: Description,
    /// Where it came from.
    pub source: Source,
    compiled: sandbox::Compiled,
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Plugin({} {} from {})",
            self.description.name, self.description.version, self.source
        )
    }
}

impl Plugin {
    /// Compiles, describes and validates a component.
    pub fn load(sandbox: &Sandbox, bytes: &[u8], source: Source) -> Result<Self, PluginError> {
        Self::describe(sandbox.compile(bytes)?, source)
    }

    /// Asks a compiled plugin for its description and validates it.
    fn describe(compiled: sandbox::Compiled, source: Source) -> Result<Self, PluginError> {
        let description = compiled.describe()?;
        validate(&description)?;
        Ok(Self {
            description,
            source,
            compiled,
        })
    }

    /// The vendor's name.
    pub fn name(&self) -> &str {
        &self.description.name
    }

    /// Whether it claims the driver, as a DRM driver or as a character
    /// device's.
    pub fn claims(&self, driver: &str) -> bool {
        self.description.drivers.iter().any(|d| d == driver) || self.char_device(driver).is_some()
    }

    /// Whether its table fits a device of a driver it claims.
    pub fn matches(&self, device: &Device) -> Result<bool, PluginError> {
        self.compiled.matches(device)
    }

    /// The product name it knows for a PCI id.
    pub fn product_name(&self, id: PciId) -> Result<Option<String>, PluginError> {
        self.compiled.product_name(id)
    }
}

/// Loads one plugin file the way the directory scan does (same size limit,
/// same sandbox, same validation).
pub fn load_file(sandbox: &Sandbox, path: &Path) -> Result<Plugin, PluginError> {
    let io = |e: std::io::Error| PluginError::Io(e.to_string());
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| PluginError::Io("not a file name".into()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir =
        cap_std::fs::Dir::open_ambient_dir(parent, cap_std::ambient_authority()).map_err(io)?;
    let file = directory::read_file(&dir, name.to_owned());
    let source = Source::File {
        path: path.to_owned(),
        sha256: file.sha256,
    };
    Plugin::load(sandbox, &file.bytes?, source)
}

/// A plugin that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The file (or built-in name) rejected.
    pub source: String,
    /// Why.
    pub error: PluginError,
    /// A previous good version of the same file kept in its place.
    pub kept: Option<String>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plugin {} rejected: {}", self.source, self.error)?;
        if let Some(kept) = &self.kept {
            write!(f, " (keeping the previous version {kept})")?;
        }
        Ok(())
    }
}

/// The vendors in force: every accepted plugin, in precedence order, and
/// the rejections that go with them.
#[derive(Debug, Clone, Default)]
pub struct Vendors {
    /// Accepted plugins; no two share a name or a driver.
    pub plugins: Vec<Arc<Plugin>>,
    /// Plugins not in force, with reasons.
    pub rejected: Vec<Rejection>,
}

impl Vendors {
    /// The plugin claiming `device`'s driver, if any: a DRM or accel
    /// driver, or a character device's.
    pub fn for_device(&self, device: &Device) -> Option<&Arc<Plugin>> {
        self.plugins.iter().find(|p| match device.subsystem {
            Subsystem::Drm | Subsystem::Accel => p.description.drivers.contains(&device.driver),
            Subsystem::Char => p.char_device(&device.driver).is_some(),
        })
    }

    /// Where the vendors' character devices are, for discovery.
    pub fn char_claims(&self) -> Vec<CharClaim> {
        self.plugins
            .iter()
            .flat_map(|p| &p.description.char_devices)
            .map(|d| CharClaim {
                driver: d.driver.clone(),
                nodes: d.nodes.clone(),
            })
            .collect()
    }
}

/// What is known of one file of the plugins directory.
struct FileState {
    sha256: String,
    /// The last version of this file that loaded, if any.
    good: Option<Arc<Plugin>>,
    /// Why the current content did not load, if it did not.
    error: Option<PluginError>,
}

/// Loads the built-ins once and keeps the plugins directory's files in
/// step with the disk, loading only what changed.
pub struct PluginHost {
    sandbox: Sandbox,
    dir: PathBuf,
    builtins: Vec<Arc<Plugin>>,
    builtin_rejections: Vec<Rejection>,
    files: BTreeMap<String, FileState>,
}

impl PluginHost {
    /// Loads the built-in vendors; `dir` is scanned by [`PluginHost::scan`].
    pub fn new(dir: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let sandbox = Sandbox::new()?;
        let mut builtins = Vec::new();
        let mut builtin_rejections = Vec::new();
        for builtin in BUILTIN {
            match builtin.load(&sandbox) {
                Ok(plugin) => builtins.push(Arc::new(plugin)),
                Err(error) => builtin_rejections.push(Rejection {
                    source: format!("built-in {}", builtin.name),
                    error,
                    kept: None,
                }),
            }
        }
        Ok(Self {
            sandbox,
            dir: dir.into(),
            builtins,
            builtin_rejections,
            files: BTreeMap::new(),
        })
    }

    /// The plugins directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Re-reads the plugins directory (loading new and changed files only)
    /// and returns the vendors now in force.
    pub fn scan(&mut self) -> std::io::Result<Vendors> {
        let files = directory::read(&self.dir)?;
        self.files
            .retain(|name, _| files.iter().any(|f| &f.name == name));
        for file in files {
            if self
                .files
                .get(&file.name)
                .is_some_and(|s| s.sha256 == file.sha256)
            {
                continue;
            }
            let source = Source::File {
                path: self.dir.join(&file.name),
                sha256: file.sha256.clone(),
            };
            let loaded = file
                .bytes
                .and_then(|bytes| Plugin::load(&self.sandbox, &bytes, source));
            let previous = self.files.remove(&file.name).and_then(|s| s.good);
            let state = match loaded {
                Ok(plugin) => FileState {
                    sha256: file.sha256,
                    good: Some(Arc::new(plugin)),
                    error: None,
                },
                Err(error) => FileState {
                    sha256: file.sha256,
                    good: previous,
                    error: Some(error),
                },
            };
            self.files.insert(file.name, state);
        }
        Ok(self.compose())
    }

    /// Built-ins, then files in name order: a file replaces the built-in
    /// of its vendor's name; a later plugin that repeats a vendor name or
    /// claims a driver already claimed is rejected.
    fn compose(&self) -> Vendors {
        let mut rejected = self.builtin_rejections.clone();
        let mut plugins: Vec<Arc<Plugin>> = self.builtins.clone();
        // Vendor name -> the file that provides it.
        let mut provided: BTreeMap<&str, String> = BTreeMap::new();
        for (name, state) in &self.files {
            let source = self.dir.join(name).display().to_string();
            if let Some(error) = &state.error {
                let kept = state.good.as_ref().map(|p| p.description.version.clone());
                rejected.push(Rejection {
                    source: source.clone(),
                    error: error.clone(),
                    kept,
                });
            }
            let Some(plugin) = &state.good else { continue };
            if let Some(by) = provided.get(plugin.name()) {
                let error = PluginError::DuplicateVendor {
                    name: plugin.name().to_owned(),
                    by: by.clone(),
                };
                rejected.push(Rejection {
                    source,
                    error,
                    kept: None,
                });
                continue;
            }
            provided.insert(plugin.name(), source);
            plugins.retain(|p| p.name() != plugin.name());
            plugins.push(plugin.clone());
        }
        // The first plugin in precedence order keeps a driver, and a
        // kernel table slot; the table holds MAX_VENDORS.
        let mut accepted: Vec<Arc<Plugin>> = Vec::new();
        for plugin in plugins {
            match admission(&accepted, &plugin) {
                Some(error) => rejected.push(Rejection {
                    source: plugin.source.to_string(),
                    error,
                    kept: None,
                }),
                None => accepted.push(plugin),
            }
        }
        Vendors {
            plugins: accepted,
            rejected,
        }
    }
}

/// Why `plugin` cannot join the `accepted` vendors, if it cannot: a driver
/// or a kernel table slot already taken, or a full table.
fn admission(accepted: &[Arc<Plugin>], plugin: &Plugin) -> Option<PluginError> {
    let claims = plugin
        .description
        .drivers
        .iter()
        .chain(plugin.description.char_devices.iter().map(|d| &d.driver));
    let driver_taken = claims.into_iter().find_map(|driver| {
        accepted
            .iter()
            .find(|p| p.claims(driver))
            .map(|owner| PluginError::DriverTaken {
                driver: driver.clone(),
                owner: owner.name().to_owned(),
            })
    });
    let slot_taken = || {
        plugin.slots().into_iter().find_map(|(slot, name)| {
            accepted
                .iter()
                .find(|p| p.slots().iter().any(|(taken, _)| *taken == slot))
                .map(|owner| PluginError::SlotTaken {
                    name,
                    owner: owner.name().to_owned(),
                })
        })
    };
    let full = || {
        let tables: usize = accepted.iter().map(|p| p.slots().len()).sum();
        (tables + plugin.slots().len() > MAX_VENDORS as usize)
            .then_some(PluginError::TooManyVendors { max: MAX_VENDORS })
    };
    driver_taken.or_else(slot_taken).or_else(full)
}
