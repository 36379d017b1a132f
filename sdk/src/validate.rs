//! The checks every vendor table must pass. The agent runs them on each
//! plugin it loads; vendor authors run the same function in their unit
//! tests, so a table that passes there loads on a node.

use alloc::{format, string::String, vec::Vec};
use core::fmt;

use crate::{CharDeviceSpec, Description, FieldSpec, Kind, SensorSpec, SizeSpec, drm};

/// The largest argument an ioctl command can encode (`_IOC_SIZE`, 14 bits).
pub const MAX_ARGUMENT: u32 = (1 << 14) - 1;

/// Longest accepted name, version, driver or ioctl name, in bytes.
pub const MAX_TEXT: usize = 128;
/// Most ioctl entries a table may have (aliases included).
pub const MAX_IOCTLS: usize = 512;

/// Why a table is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The vendor name is empty or has characters other than lower-case
    /// letters, digits, `_` and `-`.
    BadName(String),
    /// The version is empty.
    NoVersion,
    /// The driver list is empty.
    NoDrivers,
    /// A driver name is empty or has whitespace or `/`.
    BadDriver(String),
    /// A driver is listed twice.
    DuplicateDriver(String),
    /// An ioctl entry has an empty name.
    UnnamedIoctl(u8),
    /// A number outside the driver range that is not a DRM core ioctl the
    /// SDK knows, or is one under another name.
    NotACoreIoctl(u8, String),
    /// Two entries share a number but not a kind.
    ConflictingKinds {
        /// The shared number.
        nr: u8,
        /// The first entry's name and kind.
        first: (String, Kind),
        /// The conflicting entry's name and kind.
        second: (String, Kind),
    },
    /// A text field is longer than [`MAX_TEXT`].
    TooLong(String),
    /// More than [`MAX_IOCTLS`] entries.
    TooManyIoctls(usize),
    /// A size declared on an ioctl that is not an alloc.
    SizeNotOnAlloc(String),
    /// A size or selector field that is not 4 or 8 bytes wide, lies past
    /// the largest argument an ioctl can have, or has no name.
    BadField(String, String),
    /// Two entries share a number but not the size they declare.
    ConflictingSizes(u8),
    /// A usage name whose kernel name is empty or has whitespace or `:`,
    /// or whose shown name is not lower-case letters, digits, `_`, `-`
    /// or `.`: `(kernel, shown)`.
    BadUsageName(String, String),
    /// A kernel engine or region name renamed twice.
    DuplicateUsageName(String),
    /// More than [`MAX_IOCTLS`] usage names of one kind (or allocators).
    TooManyUsageNames(usize),
    /// An allocator whose name is empty, has whitespace, or is listed
    /// twice in one list.
    BadAllocator(String),
    /// An energy declaration the agent cannot read: what is wrong, and
    /// how to fix it.
    BadEnergy(String),
    /// A character device whose nodes, entry or commands are unusable.
    BadCharDevice {
        /// The device's driver name.
        driver: String,
        /// What is wrong, and how to fix it.
        problem: String,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::BadName(name) => write!(
                f,
                "vendor name {name:?} must be non-empty lower-case letters, digits, '_' or '-'"
            ),
            Fault::NoVersion => f.write_str("the version is empty"),
            Fault::NoDrivers => f.write_str(
                "the driver list is empty: claim at least one driver or character device",
            ),
            Fault::BadDriver(d) => write!(f, "driver name {d:?} is empty or has whitespace or '/'"),
            Fault::DuplicateDriver(d) => write!(f, "driver {d:?} is listed twice"),
            Fault::UnnamedIoctl(nr) => write!(f, "ioctl nr {nr:#04x} has no name"),
            Fault::NotACoreIoctl(nr, name) => write!(
                f,
                "{name} (nr {nr:#04x}) is outside the driver range {:#04x}..{:#04x} and not a DRM core ioctl the SDK knows",
                drm::DRM_COMMAND_BASE,
                drm::DRM_COMMAND_END
            ),
            Fault::ConflictingKinds { nr, first, second } => write!(
                f,
                "nr {nr:#04x} is both {} ({}) and {} ({})",
                first.1.as_str(),
                first.0,
                second.1.as_str(),
                second.0
            ),
            Fault::TooLong(text) => write!(
                f,
                "{:?}... is longer than {MAX_TEXT} bytes",
                text.get(..32).unwrap_or(text)
            ),
            Fault::TooManyIoctls(n) => write!(f, "{n} ioctl entries, more than {MAX_IOCTLS}"),
            Fault::SizeNotOnAlloc(name) => {
                write!(f, "{name} declares a size but is not an alloc")
            }
            Fault::BadField(ioctl, field) => write!(
                f,
                "{ioctl}: field {field:?} must be named, 4 or 8 bytes wide, and end within {MAX_ARGUMENT} bytes"
            ),
            Fault::ConflictingSizes(nr) => {
                write!(f, "nr {nr:#04x} is listed twice with different sizes")
            }
            Fault::BadUsageName(kernel, shown) => write!(
                f,
                "usage name {kernel:?} -> {shown:?}: the kernel's name must be non-empty without whitespace or ':', the shown one lower-case letters, digits, '_', '-' or '.'"
            ),
            Fault::DuplicateUsageName(kernel) => {
                write!(f, "usage name {kernel:?} is renamed twice")
            }
            Fault::TooManyUsageNames(n) => {
                write!(f, "{n} engine or region names, more than {MAX_IOCTLS}")
            }
            Fault::BadAllocator(name) => write!(
                f,
                "allocator {name:?} must be non-empty without whitespace, and listed once"
            ),
            Fault::BadEnergy(problem) => write!(f, "energy: {problem}"),
            Fault::BadCharDevice { driver, problem } => {
                write!(f, "character device {driver}: {problem}")
            }
        }
    }
}

impl core::error::Error for Fault {}

/// Checks a table; the first fault found is returned.
pub fn validate(description: &Description) -> Result<(), Fault> {
    let Description {
        name,
        version,
        drivers,
        ioctls,
        usage_names,
        allocators,
        char_devices,
        energy,
    } = description;
    crate::energy::check(energy).map_err(Fault::BadEnergy)?;
    let renames = || usage_names.engines.iter().chain(&usage_names.regions);
    for list in [&allocators.device_plugins, &allocators.dra_drivers] {
        check_allocators(list)?;
    }
    let texts = [name, version]
        .into_iter()
        .chain(drivers)
        .chain(ioctls.iter().map(|i| &i.name))
        .chain(renames().flat_map(|(kernel, shown)| [kernel, shown]))
        .chain(
            allocators
                .device_plugins
                .iter()
                .chain(&allocators.dra_drivers)
                .map(|(name, _)| name),
        )
        .chain(char_devices.iter().flat_map(|d| {
            [&d.driver, &d.entry]
                .into_iter()
                .chain(d.commands.iter().map(|c| &c.name))
        }))
        .chain(&energy.hwmon_names)
        .chain(
            energy
                .sensors
                .iter()
                .flat_map(|sensor| match sensor {
                    SensorSpec::EnergyCounter(a) | SensorSpec::Power(a) => {
                        [Some(&a.file), a.label.as_ref()]
                    }
                    SensorSpec::Metrics(m) => [Some(&m.file), None],
                })
                .flatten(),
        );
    if let Some(long) = texts.into_iter().find(|t| t.len() > MAX_TEXT) {
        return Err(Fault::TooLong(long.clone()));
    }
    if ioctls.len() > MAX_IOCTLS {
        return Err(Fault::TooManyIoctls(ioctls.len()));
    }
    for list in [&usage_names.engines, &usage_names.regions] {
        if list.len() > MAX_IOCTLS {
            return Err(Fault::TooManyUsageNames(list.len()));
        }
        check_usage_names(list)?;
    }
    let name_ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    if name.is_empty() || !name.chars().all(name_ok) {
        return Err(Fault::BadName(name.clone()));
    }
    if version.trim().is_empty() {
        return Err(Fault::NoVersion);
    }
    if drivers.is_empty() && char_devices.is_empty() {
        return Err(Fault::NoDrivers);
    }
    // DRM drivers and character devices share one namespace of claims.
    let claims: Vec<&String> = drivers
        .iter()
        .chain(char_devices.iter().map(|d| &d.driver))
        .collect();
    for (i, driver) in claims.iter().enumerate() {
        if driver.is_empty() || driver.chars().any(|c| c.is_whitespace() || c == '/') {
            return Err(Fault::BadDriver((*driver).clone()));
        }
        if claims[..i].contains(driver) {
            return Err(Fault::DuplicateDriver((*driver).clone()));
        }
    }
    char_devices.iter().try_for_each(check_char_device)?;
    for (i, entry) in ioctls.iter().enumerate() {
        if entry.name.is_empty() {
            return Err(Fault::UnnamedIoctl(entry.nr));
        }
        let known_core = drm::CORE
            .iter()
            .any(|c| c.nr == entry.nr && c.name == entry.name);
        if !drm::is_driver_command(entry.nr) && !known_core {
            return Err(Fault::NotACoreIoctl(entry.nr, entry.name.clone()));
        }
        if let Some(first) = ioctls[..i]
            .iter()
            .find(|e| e.nr == entry.nr && e.kind != entry.kind)
        {
            return Err(Fault::ConflictingKinds {
                nr: entry.nr,
                first: (first.name.clone(), first.kind),
                second: (entry.name.clone(), entry.kind),
            });
        }
        check_size(&entry.name, entry.kind, entry.size.as_ref())?;
        if ioctls[..i]
            .iter()
            .any(|e| e.nr == entry.nr && e.size != entry.size)
        {
            return Err(Fault::ConflictingSizes(entry.nr));
        }
    }
    Ok(())
}

/// Each allocator is named, once per list, and the lists stay short.
fn check_allocators(list: &[(String, crate::Ids)]) -> Result<(), Fault> {
    if list.len() > MAX_IOCTLS {
        return Err(Fault::TooManyUsageNames(list.len()));
    }
    for (i, (name, _)) in list.iter().enumerate() {
        if name.is_empty()
            || name.contains(char::is_whitespace)
            || list[..i].iter().any(|(n, _)| n == name)
        {
            return Err(Fault::BadAllocator(name.clone()));
        }
    }
    Ok(())
}

/// Each kernel name is a name the kernel could print, renamed once, to a
/// name fit for a label value.
fn check_usage_names(renames: &[(String, String)]) -> Result<(), Fault> {
    let shown_ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c);
    for (i, (kernel, shown)) in renames.iter().enumerate() {
        let kernel_ok =
            !kernel.is_empty() && !kernel.contains(|c: char| c.is_whitespace() || c == ':');
        if !kernel_ok || shown.is_empty() || !shown.chars().all(shown_ok) {
            return Err(Fault::BadUsageName(kernel.clone(), shown.clone()));
        }
        if renames[..i].iter().any(|(k, _)| k == kernel) {
            return Err(Fault::DuplicateUsageName(kernel.clone()));
        }
    }
    Ok(())
}

/// A character device's nodes and entry can be found, and its commands
/// form a table: named, each key of one kind and one size.
fn check_char_device(device: &CharDeviceSpec) -> Result<(), Fault> {
    let fault = |problem: String| Fault::BadCharDevice {
        driver: device.driver.clone(),
        problem,
    };
    let nodes = device.nodes.name();
    if nodes.is_empty() || nodes.contains(|c: char| c.is_whitespace() || c == '/') || nodes == ".."
    {
        return Err(fault(format!(
            "{} must be named without whitespace or '/'",
            device.nodes
        )));
    }
    let is_identifier = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !is_identifier(&device.entry) {
        return Err(fault(format!(
            "entry {:?} must be the name of a kernel function",
            device.entry
        )));
    }
    if device.commands.is_empty() {
        return Err(fault("lists no commands to count".into()));
    }
    if device.commands.len() > MAX_IOCTLS {
        return Err(Fault::TooManyIoctls(device.commands.len()));
    }
    let mask = device.key.mask();
    for (i, command) in device.commands.iter().enumerate() {
        if command.name.is_empty() {
            return Err(fault(format!("command {:#010x} has no name", command.cmd)));
        }
        check_size(&command.name, command.kind, command.size.as_ref())?;
        if let Some((field, values)) = &command.only_when {
            check_field(&command.name, field)?;
            if values.is_empty() || values.len() > crate::MAX_CLASSES {
                return Err(fault(format!(
                    "{} counts only when {} has one of {} values: list 1 to {}",
                    command.name,
                    field.name,
                    values.len(),
                    crate::MAX_CLASSES
                )));
            }
        }
        let shared = device.commands[..i]
            .iter()
            .find(|c| c.cmd & mask == command.cmd & mask);
        if let Some(first) = shared
            && (first.kind != command.kind
                || first.size != command.size
                || first.only_when != command.only_when)
        {
            return Err(fault(format!(
                "{} and {} share the key {:#x} ({}) but not their kind, size and classifier",
                first.name,
                command.name,
                command.cmd & mask,
                device.key.as_str()
            )));
        }
    }
    Ok(())
}

/// A declared size must be on an alloc, and its fields readable.
fn check_size(name: &str, kind: Kind, size: Option<&SizeSpec>) -> Result<(), Fault> {
    let Some(size) = size else {
        return Ok(());
    };
    if kind != Kind::Alloc {
        return Err(Fault::SizeNotOnAlloc(name.into()));
    }
    let fields = core::iter::once(&size.field).chain(size.when.as_ref().map(|(f, _)| f));
    fields
        .into_iter()
        .try_for_each(|field| check_field(name, field))
}

/// A field the kernel program can read: named, 4 or 8 bytes wide, within
/// the largest argument.
fn check_field(ioctl: &str, field: &FieldSpec) -> Result<(), Fault> {
    let FieldSpec {
        name,
        offset,
        width,
    } = field;
    let readable = matches!(width, 4 | 8)
        && u32::from(*offset) + u32::from(*width) <= MAX_ARGUMENT
        && !name.is_empty()
        && name.len() <= MAX_TEXT;
    if readable {
        Ok(())
    } else {
        Err(Fault::BadField(ioctl.into(), name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use alloc::{string::ToString as _, vec};

    use super::*;
    use crate::{CharDeviceSpec, TableEntry};

    fn entry(nr: u8, name: &str, kind: Kind) -> TableEntry {
        TableEntry {
            nr,
            name: name.to_string(),
            kind,
            size: None,
        }
    }

    fn size(offset: u16, width: u8) -> crate::SizeSpec {
        crate::SizeSpec::from(&crate::Size::after("size", offset, width))
    }

    fn good() -> Description {
        Description {
            name: "acme".to_string(),
            version: "1.0.0".to_string(),
            drivers: vec!["acme_drv".to_string()],
            ioctls: vec![
                entry(0x40, "DRM_IOCTL_ACME_SUBMIT", Kind::Submit),
                entry(0x40, "DRM_IOCTL_ACME_SUBMIT_V2", Kind::Submit),
                entry(0xc3, "DRM_IOCTL_SYNCOBJ_WAIT", Kind::Wait),
                TableEntry {
                    size: Some(size(8, 8)),
                    ..entry(0x41, "DRM_IOCTL_ACME_BO_CREATE", Kind::Alloc)
                },
            ],
            usage_names: crate::UsageNamesSpec {
                engines: vec![
                    ("gfx".to_string(), "render".to_string()),
                    ("ring_0".to_string(), "render".to_string()),
                ],
                regions: vec![("local0".to_string(), "vram0".to_string())],
            },
            allocators: crate::AllocatorsSpec {
                device_plugins: vec![
                    ("acme.com/gpu".to_string(), crate::Ids::CardNode),
                    ("acme.com/monitoring".to_string(), crate::Ids::EveryDevice),
                ],
                dra_drivers: vec![("gpu.acme.com".to_string(), crate::Ids::PciAddress)],
            },
            char_devices: vec![ACME_CHAR.spec()],
            energy: crate::EnergySpec::from(&ACME_ENERGY),
        }
    }

    const ACME_CHAR: crate::CharDevice = crate::CharDevice {
        driver: "acme_char",
        nodes: crate::Nodes::Class("acme"),
        entry: "acme_ioctl",
        key: crate::CommandKey::TypeAndNumber,
        commands: &[
            crate::Command::alloc("ACME_IOCTL_ALLOC", 0xc018_4100)
                .sized(crate::Size::before("len", 0, 8)),
            // The same type and number in another size: one entry.
            crate::Command::alloc("ACME_IOCTL_ALLOC_V2", 0xc020_4100)
                .sized(crate::Size::before("len", 0, 8)),
            crate::Command::wait("ACME_IOCTL_WAIT", 0x0000_4101),
        ],
    };

    const ACME_ENERGY: crate::Energy = crate::Energy {
        hwmon_names: &["acme"],
        sensors: &[
            crate::Sensor::EnergyCounter(crate::Attribute::labelled("energy1_input", "card")),
            crate::Sensor::Metrics(crate::MetricsCounter {
                file: "gpu_metrics",
                format_revision: 1,
                content_revision: 3,
                offset: 24,
                unit_shift: 16,
                wraps_at_32_bits: true,
            }),
            crate::Sensor::Power(crate::Attribute::file("power1_average")),
        ],
        idle_milliwatts: 20_000,
    };

    #[test]
    fn each_energy_fault_is_found_and_says_how_to_fix_it() {
        use crate::{AttributeSpec, SensorSpec};
        let with = |change: &dyn Fn(&mut crate::EnergySpec)| {
            let mut description = good();
            change(&mut description.energy);
            match validate(&description) {
                Err(Fault::BadEnergy(problem)) => problem,
                other => panic!("expected an energy fault, got {other:?}"),
            }
        };
        let attribute = |file: &str| AttributeSpec {
            file: file.to_string(),
            label: None,
        };
        for (file, counter) in [
            ("energy1_average", true),
            ("energy0_input", true),
            ("energy_input", true),
            ("power1_input", true),
            ("power1_max", false),
            ("../power1_input", false),
        ] {
            let problem = with(&|e| {
                let sensor = if counter {
                    SensorSpec::EnergyCounter(attribute(file))
                } else {
                    SensorSpec::Power(attribute(file))
                };
                e.sensors = vec![sensor];
            });
            assert!(problem.contains(file), "{file}: {problem}");
        }
        for name in ["a b", "..", ""] {
            let problem = with(&|e| e.hwmon_names = vec![name.to_string()]);
            assert!(problem.contains("hwmon name"), "{name:?}: {problem}");
        }
        let problem = with(&|e| e.idle_milliwatts = crate::MAX_IDLE_MILLIWATTS + 1);
        assert!(problem.contains("idle power"), "{problem}");
        let metrics = |change: &dyn Fn(&mut crate::MetricsCounterSpec)| {
            with(&|e| {
                let mut m = crate::MetricsCounterSpec::from(&match ACME_ENERGY.sensors[1] {
                    crate::Sensor::Metrics(m) => m,
                    _ => unreachable!(),
                });
                change(&mut m);
                e.sensors = vec![SensorSpec::Metrics(m)];
            })
        };
        assert!(metrics(&|m| m.offset = 2).contains("header"));
        assert!(metrics(&|m| m.offset = crate::MAX_METRICS_FILE).contains("within"));
        assert!(metrics(&|m| m.unit_shift = 40).contains("at most 32"));
        assert!(metrics(&|m| m.file = "../gpu_metrics".to_string()).contains("file name"));
        // Any hwmon under the device, whatever its name, passes.
        let mut description = good();
        description.energy.hwmon_names.clear();
        assert_eq!(validate(&description), Ok(()));
        // A vendor without energy passes.
        let mut description = good();
        description.energy = crate::EnergySpec::default();
        assert_eq!(validate(&description), Ok(()));
    }

    #[test]
    fn a_plugin_of_character_devices_alone_passes() {
        let mut description = good();
        description.drivers.clear();
        description.ioctls.clear();
        assert_eq!(validate(&description), Ok(()));
        description.char_devices.clear();
        assert_eq!(validate(&description), Err(Fault::NoDrivers));
    }

    #[test]
    fn each_character_device_fault_is_found() {
        type Breakage = fn(&mut CharDeviceSpec);
        let cases: [(Breakage, &str); 6] = [
            (
                |d| {
                    d.commands[2].only_when =
                        Some((d.commands[0].size.clone().unwrap().field, vec![]))
                },
                "ACME_IOCTL_WAIT counts only when len has one of 0 values: list 1 to 64",
            ),
            (
                |d| d.entry = "acme ioctl".to_string(),
                "entry \"acme ioctl\" must be the name of a kernel function",
            ),
            (
                |d| d.nodes = crate::NodesSpec::Misc("a/b".to_string()),
                "misc device a/b must be named without whitespace or '/'",
            ),
            (|d| d.commands.clear(), "lists no commands to count"),
            (
                |d| d.commands[1].size = None,
                "ACME_IOCTL_ALLOC and ACME_IOCTL_ALLOC_V2 share the key 0x4100 (type-and-number) but not their kind, size and classifier",
            ),
            (
                |d| d.commands[2].name.clear(),
                "command 0x00004101 has no name",
            ),
        ];
        for (break_it, problem) in cases {
            let mut description = good();
            break_it(&mut description.char_devices[0]);
            let fault = validate(&description).unwrap_err();
            assert_eq!(
                fault.to_string(),
                alloc::format!("character device acme_char: {problem}")
            );
        }
        // Keyed on the whole command, the two sizes are two entries.
        let mut description = good();
        description.char_devices[0].key = crate::CommandKey::Whole;
        description.char_devices[0].commands[1].kind = Kind::Wait;
        description.char_devices[0].commands[1].size = None;
        assert_eq!(validate(&description), Ok(()));
        // A character device's driver is a claim like a DRM driver's.
        description.char_devices[0].driver = "acme_drv".to_string();
        assert_eq!(
            validate(&description),
            Err(Fault::DuplicateDriver("acme_drv".to_string()))
        );
    }

    #[test]
    fn a_good_table_with_aliases_and_a_core_wait_passes() {
        assert_eq!(validate(&good()), Ok(()));
    }

    #[test]
    fn each_fault_is_found() {
        type Breakage = fn(&mut Description);
        let cases: [(Breakage, Fault); 17] = [
            (
                |d| d.allocators.device_plugins[1].0 = "acme.com/gpu".to_string(),
                Fault::BadAllocator("acme.com/gpu".to_string()),
            ),
            (
                |d| d.allocators.dra_drivers[0].0 = String::new(),
                Fault::BadAllocator(String::new()),
            ),
            (
                |d| d.usage_names.engines[0].1 = "Render".to_string(),
                Fault::BadUsageName("gfx".to_string(), "Render".to_string()),
            ),
            (
                |d| d.usage_names.regions[0].0 = "local 0".to_string(),
                Fault::BadUsageName("local 0".to_string(), "vram0".to_string()),
            ),
            (
                |d| d.usage_names.engines[1].0 = "gfx".to_string(),
                Fault::DuplicateUsageName("gfx".to_string()),
            ),
            (
                |d| d.ioctls[0].size = Some(size(0, 8)),
                Fault::SizeNotOnAlloc("DRM_IOCTL_ACME_SUBMIT".to_string()),
            ),
            (
                |d| d.ioctls[3].size = Some(size(8, 2)),
                Fault::BadField("DRM_IOCTL_ACME_BO_CREATE".to_string(), "size".to_string()),
            ),
            (
                |d| d.ioctls[3].size = Some(size(16380, 8)),
                Fault::BadField("DRM_IOCTL_ACME_BO_CREATE".to_string(), "size".to_string()),
            ),
            (
                |d| {
                    let mut alias = d.ioctls[3].clone();
                    alias.name = "DRM_IOCTL_ACME_BO_CREATE2".to_string();
                    alias.size = Some(size(0, 8));
                    d.ioctls.push(alias);
                },
                Fault::ConflictingSizes(0x41),
            ),
            (
                |d| d.name = "ACME".to_string(),
                Fault::BadName("ACME".to_string()),
            ),
            (|d| d.version.clear(), Fault::NoVersion),
            (
                |d| {
                    d.drivers.clear();
                    d.char_devices.clear();
                },
                Fault::NoDrivers,
            ),
            (
                |d| d.drivers.push("acme_drv".to_string()),
                Fault::DuplicateDriver("acme_drv".to_string()),
            ),
            (
                |d| d.drivers.push("a b".to_string()),
                Fault::BadDriver("a b".to_string()),
            ),
            (
                |d| d.ioctls[1].kind = Kind::Wait,
                Fault::ConflictingKinds {
                    nr: 0x40,
                    first: ("DRM_IOCTL_ACME_SUBMIT".to_string(), Kind::Submit),
                    second: ("DRM_IOCTL_ACME_SUBMIT_V2".to_string(), Kind::Wait),
                },
            ),
            (
                |d| d.ioctls[2].name = "DRM_IOCTL_ACME_WAIT".to_string(),
                Fault::NotACoreIoctl(0xc3, "DRM_IOCTL_ACME_WAIT".to_string()),
            ),
            (|d| d.ioctls[0].name.clear(), Fault::UnnamedIoctl(0x40)),
        ];
        for (break_it, fault) in cases {
            let mut description = good();
            break_it(&mut description);
            assert_eq!(validate(&description), Err(fault));
        }
    }

    #[test]
    fn oversized_tables_are_rejected_before_anything_else() {
        let mut description = good();
        description.ioctls = vec![entry(0x41, "X", Kind::Alloc); MAX_IOCTLS + 1];
        assert_eq!(
            validate(&description),
            Err(Fault::TooManyIoctls(MAX_IOCTLS + 1))
        );
        description.name = "x".repeat(MAX_TEXT + 1);
        assert!(matches!(validate(&description), Err(Fault::TooLong(_))));
    }
}
