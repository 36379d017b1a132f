//! One DRM client's usage as the kernel prints it in
//! `/proc/<pid>/fdinfo/<fd>` (`Documentation/gpu/drm-usage-stats.rst`):
//! `key:<tab>value[ unit]` lines (some drivers put a space before the
//! tab), the generic `pos:`/`flags:` ones first.
//! Unknown keys and values that do not parse are skipped, so a driver
//! that adds keys never breaks the reader.

use std::collections::{BTreeMap, BTreeSet};

use kubenpu_sdk::UsageNamesSpec;

/// The memory states the specification defines: the `state` label of
/// `kubenpu_device_memory_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryState {
    /// Every buffer the client can reach.
    Total,
    /// Buffers shared with other clients.
    Shared,
    /// Buffers resident in the region.
    Resident,
    /// Buffers the device is using or about to use.
    Active,
    /// Buffers the driver may free under pressure.
    Purgeable,
}

impl MemoryState {
    /// Every state, as the keys name them (`drm-<state>-<region>`).
    const KEYS: [(&'static str, Self); 5] = [
        ("total", Self::Total),
        ("shared", Self::Shared),
        ("resident", Self::Resident),
        ("active", Self::Active),
        ("purgeable", Self::Purgeable),
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        Self::KEYS
            .iter()
            .find(|(_, state)| *state == self)
            .map_or("", |(name, _)| name)
    }
}

/// What one open DRM file reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// `drm-driver`.
    pub driver: Option<String>,
    /// `drm-pdev`: the PCI address, for PCI devices.
    pub pdev: Option<String>,
    /// `drm-client-id`: unique per device at least (the core's counter is
    /// global; drivers printed their own before it).
    pub client_id: Option<u64>,
    /// `drm-engine-<class>`: nanoseconds the class was busy for the client.
    pub engine_ns: BTreeMap<String, u64>,
    /// `drm-cycles-<class>`: busy cycles on the device's own clock (xe).
    pub cycles: BTreeMap<String, u64>,
    /// `drm-total-cycles-<class>`: cycles elapsed on that clock (xe).
    pub total_cycles: BTreeMap<String, u64>,
    /// `drm-engine-capacity-<class>`: engines in the class (1 if absent).
    pub capacity: BTreeMap<String, u64>,
    /// Bytes per region and state; amdgpu's legacy `drm-memory-<region>`
    /// (its only memory keys before Linux 6.11) is the resident state, as
    /// the specification defines it, where the standard key is absent.
    pub memory: BTreeMap<(String, MemoryState), u64>,
}

impl ClientStats {
    /// Engines in `class`: 1 unless the driver says more.
    pub fn capacity(&self, class: &str) -> u64 {
        self.capacity.get(class).copied().unwrap_or(1).max(1)
    }

    /// Whether the file reported any usage at all: drivers without
    /// per-client stats print none of these keys.
    pub fn has_usage(&self) -> bool {
        !(self.engine_ns.is_empty() && self.cycles.is_empty() && self.memory.is_empty())
    }

    /// The same usage under the vendor's names. Classes that share a name
    /// add up: their time, their busy cycles and their engines (elapsed
    /// cycles are one clock's, so the largest is kept); so do regions'
    /// bytes.
    pub fn renamed(self, names: &UsageNamesSpec) -> Self {
        if names.is_empty() {
            return self;
        }
        let engine = |class: &str| names.engine(class).to_owned();
        let mut renamed = Self {
            driver: self.driver.clone(),
            pdev: self.pdev.clone(),
            client_id: self.client_id,
            ..Self::default()
        };
        let classes: BTreeSet<&String> = self.engine_ns.keys().chain(self.cycles.keys()).collect();
        for class in classes {
            *renamed.capacity.entry(engine(class)).or_default() += self.capacity(class);
        }
        for (class, ns) in &self.engine_ns {
            *renamed.engine_ns.entry(engine(class)).or_default() += ns;
        }
        for (class, cycles) in &self.cycles {
            *renamed.cycles.entry(engine(class)).or_default() += cycles;
        }
        for (class, &total) in &self.total_cycles {
            let elapsed = renamed.total_cycles.entry(engine(class)).or_default();
            *elapsed = (*elapsed).max(total);
        }
        for ((region, state), bytes) in &self.memory {
            let key = (names.region(region).to_owned(), *state);
            *renamed.memory.entry(key).or_default() += bytes;
        }
        renamed
    }
}

/// Parses the text of one fdinfo file.
pub fn parse(text: &str) -> ClientStats {
    let mut stats = ClientStats::default();
    let mut legacy = BTreeMap::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Some(key) = key.trim().strip_prefix("drm-") else {
            continue;
        };
        take(&mut stats, &mut legacy, key, value.trim());
    }
    // The legacy key stands for the resident state only where the driver
    // does not print the standard one.
    for (region, bytes) in legacy {
        stats
            .memory
            .entry((region, MemoryState::Resident))
            .or_insert(bytes);
    }
    stats
}

/// Takes one `drm-<key>: <value>` line. The order of the prefixes
/// matters: `engine-capacity-` before `engine-`, and `total-cycles-`
/// before the memory state `total-`.
fn take(
    stats: &mut ClientStats,
    legacy: &mut BTreeMap<String, u64>,
    key: &str,
    value: &str,
) -> Option<()> {
    match key {
        "driver" => stats.driver = Some(value.to_owned()),
        "pdev" => stats.pdev = Some(value.to_owned()),
        "client-id" => stats.client_id = Some(value.parse().ok()?),
        _ => {
            if let Some(class) = key.strip_prefix("engine-capacity-") {
                stats.capacity.insert(class.into(), value.parse().ok()?);
            } else if let Some(class) = key.strip_prefix("engine-") {
                let ns = value.strip_suffix("ns").unwrap_or(value).trim_end();
                stats.engine_ns.insert(class.into(), ns.parse().ok()?);
            } else if let Some(class) = key.strip_prefix("total-cycles-") {
                stats.total_cycles.insert(class.into(), value.parse().ok()?);
            } else if let Some(class) = key.strip_prefix("cycles-") {
                stats.cycles.insert(class.into(), value.parse().ok()?);
            } else if let Some(region) = key.strip_prefix("memory-") {
                legacy.insert(region.into(), bytes(value)?);
            } else {
                let (state, region) = MemoryState::KEYS.iter().find_map(|&(name, state)| {
                    Some((state, key.strip_prefix(name)?.strip_prefix('-')?))
                })?;
                stats.memory.insert((region.into(), state), bytes(value)?);
            }
        }
    }
    Some(())
}

/// A size as the kernel prints it: bytes without a unit, or whole KiB or
/// MiB (since Linux 6.7 the core picks the largest unit that divides the
/// size exactly; amdgpu's legacy keys are always KiB).
fn bytes(value: &str) -> Option<u64> {
    let (number, unit) = match value.split_once(char::is_whitespace) {
        Some((number, unit)) => (number, unit.trim()),
        None => (value, ""),
    };
    let shift = match unit {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_with_their_units_and_prefixes() {
        let stats = parse(
            "pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t5\n\
             drm-driver:\txe\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t42\n\
             drm-total-system:\t12 MiB\ndrm-shared-system:\t4 KiB\n\
             drm-resident-vram0:\t1000\ndrm-active-vram0:\t0\n\
             drm-cycles-rcs:\t28257900\ndrm-total-cycles-rcs:\t7655183225\n\
             drm-engine-capacity-vcs:\t2\ndrm-engine-render:\t9288864723 ns\n\
             drm-maxfreq-rcs:\t1100 MHz\ndrm-unknown-key:\tx\n",
        );
        assert_eq!(stats.driver.as_deref(), Some("xe"));
        assert_eq!(stats.pdev.as_deref(), Some("0000:03:00.0"));
        assert_eq!(stats.client_id, Some(42));
        let region = |r: &str, s| stats.memory.get(&(r.to_owned(), s)).copied();
        assert_eq!(region("system", MemoryState::Total), Some(12 << 20));
        assert_eq!(region("system", MemoryState::Shared), Some(4 << 10));
        assert_eq!(region("vram0", MemoryState::Resident), Some(1000));
        assert_eq!(region("vram0", MemoryState::Active), Some(0));
        assert_eq!(stats.cycles["rcs"], 28_257_900);
        assert_eq!(stats.total_cycles["rcs"], 7_655_183_225);
        assert_eq!(stats.capacity("vcs"), 2);
        assert_eq!(stats.capacity("rcs"), 1);
        assert_eq!(stats.engine_ns["render"], 9_288_864_723);
        assert!(!stats.engine_ns.contains_key("capacity-vcs"));
        assert_eq!(stats.memory.len(), 4);
    }

    #[test]
    fn the_legacy_memory_key_is_resident_unless_the_standard_one_is_there() {
        let stats =
            parse("drm-memory-vram:\t8 KiB\ndrm-memory-gtt:\t2 MiB\ndrm-resident-gtt:\t1 MiB\n");
        let resident = |r: &str| stats.memory[&(r.to_owned(), MemoryState::Resident)];
        assert_eq!(resident("vram"), 8 << 10);
        assert_eq!(resident("gtt"), 1 << 20);
    }

    #[test]
    fn renamed_classes_and_regions_add_up() {
        let names = UsageNamesSpec {
            engines: vec![
                ("dec".into(), "video".into()),
                ("enc".into(), "video".into()),
                ("gfx".into(), "render".into()),
            ],
            regions: vec![("cpu".into(), "system".into())],
        };
        let stats = parse(
            "drm-engine-gfx:\t5 ns\ndrm-engine-dec:\t3 ns\ndrm-engine-enc:\t4 ns\n\
             drm-engine-dma:\t1 ns\ndrm-resident-cpu:\t4 KiB\ndrm-resident-vram:\t8 KiB\n",
        )
        .renamed(&names);
        let ns: Vec<(&str, u64)> = stats
            .engine_ns
            .iter()
            .map(|(c, &n)| (c.as_str(), n))
            .collect();
        assert_eq!(ns, [("dma", 1), ("render", 5), ("video", 7)]);
        assert_eq!(stats.capacity("video"), 2, "two engines share the name");
        assert_eq!(stats.capacity("render"), 1);
        let system = ("system".to_owned(), MemoryState::Resident);
        assert_eq!(stats.memory[&system], 4096);
        assert_eq!(stats.memory.len(), 2);
    }

    #[test]
    fn files_without_drm_keys_report_no_usage() {
        let stats = parse("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1044\n");
        assert_eq!(stats, ClientStats::default());
        assert!(!stats.has_usage());
    }

    #[test]
    fn values_that_do_not_parse_are_skipped() {
        let stats = parse(
            "drm-engine-gfx:\tlots ns\ndrm-total-vram:\t3 TiB\ndrm-client-id:\t-1\ndrm-engine-dma:\t7 ns\n",
        );
        assert_eq!(stats.engine_ns.len(), 1);
        assert_eq!(stats.engine_ns["dma"], 7);
        assert!(stats.memory.is_empty());
        assert_eq!(stats.client_id, None);
    }
}
