//! Where a vendor's devices report their energy (WIT 0.6.0): a hwmon
//! energy counter, hwmon power the agent integrates, or a counter in a
//! binary metrics file. The kernel's hwmon conventions are
//! `Documentation/hwmon/sysfs-interface.rst`: energy in microjoules,
//! power in microwatts, one `<type><channel>_<item>` file per value.

use alloc::{
    format,
    string::{String, ToString as _},
    vec::Vec,
};

/// One hwmon attribute file, and the label its channel must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    /// The file: `energy1_input`, `power1_average`.
    pub file: &'static str,
    /// The label its channel's `<type><channel>_label` file must read
    /// (xe's `card`, `pkg`); none: whatever the label.
    pub label: Option<&'static str>,
}

impl Attribute {
    /// `file`, whatever its channel's label.
    pub const fn file(file: &'static str) -> Self {
        Self { file, label: None }
    }

    /// `file`, only where its channel is labelled `label`.
    pub const fn labelled(file: &'static str, label: &'static str) -> Self {
        Self {
            file,
            label: Some(label),
        }
    }
}

/// A little-endian 64-bit energy counter in a binary metrics file in the
/// device's sysfs directory, behind the header amdgpu's `gpu_metrics`
/// has: a 16-bit size, an 8-bit format revision, an 8-bit content
/// revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsCounter {
    /// The file: `gpu_metrics`.
    pub file: &'static str,
    /// The format revision whose layout holds the counter.
    pub format_revision: u8,
    /// The content revision whose layout holds the counter.
    pub content_revision: u8,
    /// The counter's byte offset.
    pub offset: u16,
    /// Its unit: 2^-`unit_shift` joules.
    pub unit_shift: u8,
    /// A step back between two readings below 2^32 is a wrap at 2^32
    /// (firmware that fills only the low 32 bits), not a restart.
    pub wraps_at_32_bits: bool,
}

/// One way to read a device's energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sensor {
    /// A cumulative hwmon counter in microjoules, `energy<N>_input`.
    EnergyCounter(Attribute),
    /// hwmon power in microwatts, `power<N>_average` or `power<N>_input`,
    /// which the agent integrates between reads.
    Power(Attribute),
    /// A counter in a binary metrics file.
    Metrics(MetricsCounter),
}

/// Where a vendor's devices report their energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Energy {
    /// The hwmon `name`s the driver registers under its devices; none:
    /// any hwmon registered under the device (a name the firmware gives).
    pub hwmon_names: &'static [&'static str],
    /// The sensors, best first: the agent reads the first a device has.
    pub sensors: &'static [Sensor],
    /// The device's idle power, in milliwatts, until the agent has
    /// measured it.
    pub idle_milliwatts: u32,
}

impl Energy {
    /// A vendor whose devices report no energy.
    pub const NONE: Self = Self {
        hwmon_names: &[],
        sensors: &[],
        idle_milliwatts: 0,
    };
}

/// [`Attribute`] in an [`EnergySpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeSpec {
    /// The file.
    pub file: String,
    /// The label its channel must have.
    pub label: Option<String>,
}

/// [`MetricsCounter`] in an [`EnergySpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsCounterSpec {
    /// The file.
    pub file: String,
    /// The format revision whose layout holds the counter.
    pub format_revision: u8,
    /// The content revision whose layout holds the counter.
    pub content_revision: u8,
    /// The counter's byte offset.
    pub offset: u16,
    /// Its unit: 2^-`unit_shift` joules.
    pub unit_shift: u8,
    /// Whether a step back below 2^32 is a wrap at 2^32.
    pub wraps_at_32_bits: bool,
}

/// [`Sensor`] in an [`EnergySpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SensorSpec {
    /// A cumulative hwmon counter in microjoules.
    EnergyCounter(AttributeSpec),
    /// hwmon power in microwatts.
    Power(AttributeSpec),
    /// A counter in a binary metrics file.
    Metrics(MetricsCounterSpec),
}

/// [`Energy`] in a [`crate::Description`] (none before WIT 0.6.0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnergySpec {
    /// The hwmon names of the vendor's devices.
    pub hwmon_names: Vec<String>,
    /// The sensors, best first.
    pub sensors: Vec<SensorSpec>,
    /// The idle power until measured, in milliwatts.
    pub idle_milliwatts: u32,
}

impl From<&Attribute> for AttributeSpec {
    fn from(a: &Attribute) -> Self {
        Self {
            file: a.file.to_string(),
            label: a.label.map(str::to_string),
        }
    }
}

impl From<&MetricsCounter> for MetricsCounterSpec {
    fn from(m: &MetricsCounter) -> Self {
        Self {
            file: m.file.to_string(),
            format_revision: m.format_revision,
            content_revision: m.content_revision,
            offset: m.offset,
            unit_shift: m.unit_shift,
            wraps_at_32_bits: m.wraps_at_32_bits,
        }
    }
}

impl From<&Energy> for EnergySpec {
    fn from(energy: &Energy) -> Self {
        Self {
            hwmon_names: energy.hwmon_names.iter().map(|n| n.to_string()).collect(),
            sensors: energy
                .sensors
                .iter()
                .map(|sensor| match sensor {
                    Sensor::EnergyCounter(a) => SensorSpec::EnergyCounter(a.into()),
                    Sensor::Power(a) => SensorSpec::Power(a.into()),
                    Sensor::Metrics(m) => SensorSpec::Metrics(m.into()),
                })
                .collect(),
            idle_milliwatts: energy.idle_milliwatts,
        }
    }
}

/// The most sensors a vendor may list.
pub const MAX_SENSORS: usize = 16;
/// The highest idle power a vendor may declare: 2 kW.
pub const MAX_IDLE_MILLIWATTS: u32 = 2_000_000;
/// The largest metrics file the agent reads, in bytes.
pub const MAX_METRICS_FILE: u16 = 4096;

/// Checks an energy declaration: the first problem, and how to fix it.
pub fn check(energy: &EnergySpec) -> Result<(), String> {
    if energy.sensors.len() > MAX_SENSORS {
        return Err(format!(
            "{} sensors, more than {MAX_SENSORS}",
            energy.sensors.len()
        ));
    }
    if energy.idle_milliwatts > MAX_IDLE_MILLIWATTS {
        return Err(format!(
            "an idle power of {} mW is more than {MAX_IDLE_MILLIWATTS} mW",
            energy.idle_milliwatts
        ));
    }
    if let Some(name) = energy.hwmon_names.iter().find(|n| !plain(n)) {
        return Err(format!(
            "hwmon name {name:?} must be non-empty letters, digits, '_', '-' or '.'"
        ));
    }
    for sensor in &energy.sensors {
        match sensor {
            SensorSpec::EnergyCounter(a) => check_attribute(a, "energy", &["input"])?,
            SensorSpec::Power(a) => check_attribute(a, "power", &["average", "input"])?,
            SensorSpec::Metrics(m) => check_metrics(m)?,
        }
    }
    Ok(())
}

/// A name fit for a sysfs file: letters, digits, `_`, `-`, `.`, and not
/// only dots.
fn plain(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && s.chars().any(|c| c != '.')
}

/// A hwmon attribute of `kind` (`energy`, `power`) is `<kind><N>_<item>`
/// with `item` one of `items`.
fn check_attribute(attribute: &AttributeSpec, kind: &str, items: &[&str]) -> Result<(), String> {
    let channel_and_item = attribute
        .file
        .strip_prefix(kind)
        .and_then(|rest| rest.split_once('_'));
    let well_formed = channel_and_item.is_some_and(|(channel, item)| {
        !channel.is_empty()
            && !channel.starts_with('0')
            && channel.bytes().all(|b| b.is_ascii_digit())
            && items.contains(&item)
    });
    if !well_formed {
        return Err(format!(
            "hwmon file {:?} must be {kind}<N>_{}",
            attribute.file,
            items.join(" or ")
        ));
    }
    match &attribute.label {
        Some(label) if label.is_empty() || label.contains(char::is_whitespace) => Err(format!(
            "label {label:?} of {:?} must be non-empty without whitespace",
            attribute.file
        )),
        _ => Ok(()),
    }
}

/// A metrics counter is a file of the device's directory, past the
/// header, with a unit the agent can scale.
fn check_metrics(m: &MetricsCounterSpec) -> Result<(), String> {
    if !plain(&m.file) {
        return Err(format!(
            "metrics file {:?} must be a file name in the device's sysfs directory",
            m.file
        ));
    }
    if m.offset < 4 || m.offset > MAX_METRICS_FILE - 8 {
        return Err(format!(
            "metrics counter offset {} must lie past the 4-byte header and end within {MAX_METRICS_FILE} bytes",
            m.offset
        ));
    }
    if m.unit_shift > 32 {
        return Err(format!(
            "metrics counter unit 2^-{} J: the shift must be at most 32",
            m.unit_shift
        ));
    }
    Ok(())
}
