//! Reads a device's energy where its vendor's plugin says it is: the
//! first of the plugin's sensors the device has, in the hwmon directory
//! registered under the device with one of the plugin's names, or in a
//! binary metrics file of the device's own directory. File I/O: called on
//! a blocking thread.

use std::{
    fs,
    io::{self, Read as _},
    path::{Path, PathBuf},
};

use kubenpu_sdk::{AttributeSpec, EnergySpec, MAX_METRICS_FILE, MetricsCounterSpec, SensorSpec};

use super::track::Sample;
use crate::discovery::sysfs;

/// What a device's sensor gave this time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// A reading, and whether it was a counter or power.
    Read(Sample),
    /// The device has none of the plugin's sensors (an integrated i915,
    /// a DG1 under xe).
    Absent,
    /// No reading this time, and nothing wrong: the device sleeps
    /// (reading its counter would wake it), or the driver printed the 0
    /// it prints for a failed read.
    Skipped,
    /// The sensor is there but could not be read: why.
    Failed(String),
}

/// Reads the energy of the device whose sysfs directory is `device_dir`,
/// with hwmon directories under `sysfs_root/class/hwmon`. A device that
/// runtime power management put to sleep is not woken: no data file of
/// it is opened (reading i915's and xe's counters wakes the GPU, as do
/// amdgpu's files on 6.12).
pub fn read(sysfs_root: &Path, device_dir: &Path, energy: &EnergySpec) -> Reading {
    let hwmon = hwmon_of(sysfs_root, device_dir, &energy.hwmon_names);
    let asleep = sleeping(device_dir);
    // Each metrics file is read once, whatever number of layouts is tried.
    let mut files: Vec<(&str, Option<Vec<u8>>)> = Vec::new();
    for sensor in &energy.sensors {
        match sensor {
            SensorSpec::EnergyCounter(attribute) => {
                let Some(file) = hwmon.as_deref().and_then(|dir| present(dir, attribute)) else {
                    continue;
                };
                return if asleep {
                    Reading::Skipped
                } else {
                    counter(&file)
                };
            }
            SensorSpec::Power(attribute) => {
                let Some(file) = hwmon.as_deref().and_then(|dir| present(dir, attribute)) else {
                    continue;
                };
                // A sleeping device draws next to nothing.
                return if asleep {
                    Reading::Read(Sample::Power { microwatts: 0 })
                } else {
                    power(&file)
                };
            }
            SensorSpec::Metrics(spec) => {
                let path = device_dir.join(&spec.file);
                if !path.exists() {
                    continue;
                }
                if asleep {
                    return Reading::Skipped;
                }
                if !files.iter().any(|(file, _)| *file == spec.file) {
                    match metrics_file(&path) {
                        Ok(bytes) => files.push((spec.file.as_str(), bytes)),
                        Err(reading) => return reading,
                    }
                }
                let bytes = files
                    .iter()
                    .find(|(file, _)| *file == spec.file)
                    .and_then(|(_, bytes)| bytes.as_deref());
                if let Some(raw) = bytes.and_then(|bytes| counter_at(bytes, spec)) {
                    return metrics_counter(raw, spec);
                }
            }
        }
    }
    Reading::Absent
}

/// The hwmon directory registered with one of `names` under the device
/// at `device_dir` or, nearest first, under one of its parents (a
/// character device's hwmon is its PCI function's: Tenstorrent's); with
/// no names, any hwmon under the device itself.
fn hwmon_of(sysfs_root: &Path, device_dir: &Path, names: &[String]) -> Option<PathBuf> {
    let device = device_dir.canonicalize().ok()?;
    sysfs::entries(&sysfs_root.join("class/hwmon"))
        .into_iter()
        .filter(|hwmon| {
            names.is_empty()
                || sysfs::read_trimmed(&hwmon.join("name")).is_ok_and(|name| names.contains(&name))
        })
        .filter_map(|hwmon| {
            let parent = hwmon.join("device").canonicalize().ok()?;
            // Unnamed, only the device's own: a parent bridge's hwmon is
            // not the device's.
            let under = if names.is_empty() {
                device == parent
            } else {
                device.starts_with(&parent)
            };
            under.then(|| (parent.components().count(), hwmon))
        })
        .max_by_key(|(depth, _)| *depth)
        .map(|(_, hwmon)| hwmon)
}

/// The attribute's file in `hwmon`, if it is there and its channel bears
/// the label asked for.
fn present(hwmon: &Path, attribute: &AttributeSpec) -> Option<PathBuf> {
    let file = hwmon.join(&attribute.file);
    if !file.exists() {
        return None;
    }
    if let Some(label) = &attribute.label {
        // `energy2_input` is labelled by `energy2_label`.
        let (channel, _) = attribute.file.rsplit_once('_')?;
        let read = sysfs::read_trimmed(&hwmon.join(format!("{channel}_label"))).ok()?;
        if &read != label {
            return None;
        }
    }
    Some(file)
}

/// Whether runtime power management has put the device to sleep: reading
/// an i915 or xe energy counter would wake it (`hwm_energy` runs under
/// `with_intel_runtime_pm`), and so would amdgpu's files on 6.12.
fn sleeping(device_dir: &Path) -> bool {
    sysfs::read_trimmed(&device_dir.join("power/runtime_status")).is_ok_and(|s| s == "suspended")
}

/// hwmon prints values as `%ld` (`hwmon_attr_show`), amdgpu's own power
/// files as `%zd`: decimal, then a newline.
fn parse(file: &Path, text: &str) -> Result<u64, String> {
    let text = text.trim();
    text.parse::<u64>()
        .map_err(|_| format!("{}: {text:?} is not a count", file.display()))
}

/// A refusal that means the device sleeps: amdgpu's
/// `pm_runtime_get_if_active` answers EPERM (some report EBUSY).
fn asleep(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ResourceBusy
    )
}

fn counter(file: &Path) -> Reading {
    let read = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()));
    match read.and_then(|text| parse(file, &text)) {
        // A real counter is past zero as soon as the device has run: 0 is
        // no reading.
        Ok(0) => Reading::Skipped,
        Ok(microjoules) => Reading::Read(Sample::Counter {
            microjoules,
            wraps_at: None,
        }),
        Err(e) => Reading::Failed(e),
    }
}

fn power(file: &Path) -> Reading {
    match fs::read_to_string(file) {
        // Later amdgpu refuses while the GPU is runtime-suspended rather
        // than wake it (EPERM, EBUSY): it draws next to nothing then.
        Err(e) if asleep(&e) => Reading::Read(Sample::Power { microwatts: 0 }),
        Err(e) => Reading::Failed(format!("{}: {e}", file.display())),
        Ok(text) => match parse(file, &text) {
            Ok(microwatts) => Reading::Read(Sample::Power { microwatts }),
            Err(e) => Reading::Failed(e),
        },
    }
}

/// A metrics file's first [`MAX_METRICS_FILE`] bytes; none where it went
/// meanwhile, a reading where it cannot be read.
fn metrics_file(path: &Path) -> Result<Option<Vec<u8>>, Reading> {
    let mut bytes = Vec::new();
    let read = fs::File::open(path).and_then(|file| {
        file.take(u64::from(MAX_METRICS_FILE))
            .read_to_end(&mut bytes)
    });
    match read {
        Ok(_) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        // Suspended amdgpu refuses this file too.
        Err(e) if asleep(&e) => Err(Reading::Skipped),
        Err(e) => Err(Reading::Failed(format!("{}: {e}", path.display()))),
    }
}

/// A metrics counter's raw value as a reading, in microjoules.
fn metrics_counter(raw: u64, spec: &MetricsCounterSpec) -> Reading {
    let to_microjoules = |units: u64| {
        u64::try_from((u128::from(units) * 1_000_000) >> spec.unit_shift).unwrap_or(u64::MAX)
    };
    Reading::Read(Sample::Counter {
        microjoules: to_microjoules(raw),
        wraps_at: spec.wraps_at_32_bits.then(|| to_microjoules(1 << 32)),
    })
}

/// The little-endian 64-bit counter at the spec's offset, if the header's
/// revisions are the spec's and the counter is filled: the SMU fills the
/// table with ones first (`smu_cmn_init_soft_gpu_metrics`), and newer
/// firmware of SMU 13.0.0 and 13.0.7 writes `UINT_MAX` instead of a count.
fn counter_at(bytes: &[u8], spec: &MetricsCounterSpec) -> Option<u64> {
    let [_, _, format, content, ..] = *bytes else {
        return None;
    };
    if (format, content) != (spec.format_revision, spec.content_revision) {
        return None;
    }
    let at = usize::from(spec.offset);
    let raw = u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?);
    (raw != u64::MAX && raw != u64::from(u32::MAX)).then_some(raw)
}

/// Each driver's files as it prints them (cited from Linux 6.12 and
/// tt-kmd 2.10), read with the energy source its built-in plugin declares.
#[cfg(test)]
mod tests {
    use std::{fs, os::unix::fs::symlink, path::PathBuf, time::Duration};

    use super::{super::track::Track, *};
    use crate::plugins::{BUILTIN, Sandbox};

    /// The energy source the built-in plugin `vendor` declares.
    fn declared(vendor: &str) -> EnergySpec {
        let sandbox = Sandbox::new().unwrap();
        let builtin = BUILTIN.iter().find(|b| b.name == vendor).unwrap();
        builtin.load(&sandbox).unwrap().description.energy.clone()
    }

    /// A sysfs with one PCI function, `0000:03:00.0`.
    struct Sysfs {
        root: tempfile::TempDir,
    }

    const FUNCTION: &str = "devices/pci0000:00/0000:03:00.0";

    impl Sysfs {
        fn new() -> Self {
            let root = tempfile::tempdir().unwrap();
            fs::create_dir_all(root.path().join(FUNCTION)).unwrap();
            fs::create_dir_all(root.path().join("bus/pci/devices")).unwrap();
            fs::create_dir_all(root.path().join("class/hwmon")).unwrap();
            symlink(
                format!("../../../{FUNCTION}"),
                root.path().join("bus/pci/devices/0000:03:00.0"),
            )
            .unwrap();
            Self { root }
        }

        fn root(&self) -> &Path {
            self.root.path()
        }

        /// The function's directory, as the agent names it.
        fn device(&self) -> PathBuf {
            self.root().join("bus/pci/devices/0000:03:00.0")
        }

        /// Registers hwmon `hwmon<n>` named `name` under the function
        /// (hwmon_device_register_with_info with the PCI device as parent:
        /// a `hwmon` glue directory, a `device` link back, and the class
        /// link), with `files`.
        fn hwmon(&self, n: u32, name: &str, files: &[(&str, &str)]) -> PathBuf {
            let dir = self.root().join(FUNCTION).join(format!("hwmon/hwmon{n}"));
            fs::create_dir_all(&dir).unwrap();
            symlink("../..", dir.join("device")).unwrap();
            symlink(&dir, self.root().join(format!("class/hwmon/hwmon{n}"))).unwrap();
            // hwmon.c:74, name_show: "%s\n".
            fs::write(dir.join("name"), format!("{name}\n")).unwrap();
            for (file, text) in files {
                fs::write(dir.join(file), text).unwrap();
            }
            dir
        }

        fn write(&self, file: &str, bytes: &[u8]) {
            let path = self.root().join(FUNCTION).join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }

        fn read(&self, energy: &EnergySpec) -> Reading {
            read(self.root(), &self.device(), energy)
        }
    }

    fn counter(microjoules: u64) -> Reading {
        Reading::Read(Sample::Counter {
            microjoules,
            wraps_at: None,
        })
    }

    fn power(microwatts: u64) -> Reading {
        Reading::Read(Sample::Power { microwatts })
    }

    #[test]
    fn i915_reads_its_microjoule_counter() {
        let sysfs = Sysfs::new();
        // i915_hwmon.c:888 names it "i915"; energy1_input (285) is printed
        // by hwmon_attr_show, hwmon.c:438: sprintf(buf, "%ld\n", val), in
        // microjoules (SF_ENERGY, i915_hwmon.c:30).
        sysfs.hwmon(2, "i915", &[("energy1_input", "123456789\n")]);
        assert_eq!(sysfs.read(&declared("i915")), counter(123_456_789));
    }

    #[test]
    fn an_integrated_i915_has_no_sensor() {
        // i915_hwmon.c:875: hwmon is registered for discrete GPUs only.
        let sysfs = Sysfs::new();
        assert_eq!(sysfs.read(&declared("i915")), Reading::Absent);
        // Another device's hwmon of the same name is not this one's.
        let other = sysfs
            .root()
            .join("devices/pci0000:00/0000:04:00.0/hwmon/hwmon5");
        fs::create_dir_all(&other).unwrap();
        symlink("../..", other.join("device")).unwrap();
        symlink(&other, sysfs.root().join("class/hwmon/hwmon5")).unwrap();
        fs::write(other.join("name"), "i915\n").unwrap();
        fs::write(other.join("energy1_input"), "5\n").unwrap();
        assert_eq!(sysfs.read(&declared("i915")), Reading::Absent);
    }

    #[test]
    fn xe_reads_the_card_channel_by_its_label_and_never_adds_the_package() {
        // Battlemage: xe_hwmon.c:760/762 label channel 0 "card" and
        // channel 1 "pkg" (energy1_*, energy2_*), printed "%s\n" by
        // hwmon_attr_show_string, hwmon.c:458.
        let sysfs = Sysfs::new();
        sysfs.hwmon(
            3,
            "xe",
            &[
                ("energy1_input", "9000000\n"),
                ("energy1_label", "card\n"),
                ("energy2_input", "7000000\n"),
                ("energy2_label", "pkg\n"),
            ],
        );
        assert_eq!(sysfs.read(&declared("xe")), counter(9_000_000));
    }

    #[test]
    fn xe_on_dg2_has_only_the_package_channel() {
        // xe_hwmon.c:118-130: DG2 and PVC have only the package register,
        // so only energy2_input and energy2_label are visible (636-646).
        let sysfs = Sysfs::new();
        sysfs.hwmon(
            3,
            "xe",
            &[("energy2_input", "7000000\n"), ("energy2_label", "pkg\n")],
        );
        assert_eq!(sysfs.read(&declared("xe")), counter(7_000_000));
    }

    #[test]
    fn a_counter_at_zero_is_no_reading() {
        let sysfs = Sysfs::new();
        sysfs.hwmon(
            3,
            "xe",
            &[("energy1_input", "0\n"), ("energy1_label", "card\n")],
        );
        assert_eq!(sysfs.read(&declared("xe")), Reading::Skipped);
    }

    #[test]
    fn a_sleeping_gpu_is_not_woken_to_read_its_counter() {
        // hwm_energy runs under with_intel_runtime_pm (i915_hwmon.c:148).
        let sysfs = Sysfs::new();
        sysfs.hwmon(2, "i915", &[("energy1_input", "123456789\n")]);
        sysfs.write("power/runtime_status", b"suspended\n");
        assert_eq!(sysfs.read(&declared("i915")), Reading::Skipped);
        sysfs.write("power/runtime_status", b"active\n");
        assert_eq!(sysfs.read(&declared("i915")), counter(123_456_789));
    }

    /// A gpu_metrics table as the SMU leaves it: every byte 0xff
    /// (smu_cmn_init_soft_gpu_metrics), then the header (kgd_pp_interface.h
    /// 469-473) and the fields the ASIC fills.
    fn gpu_metrics(content: u8, size: u16, energy: Option<(usize, u64)>) -> Vec<u8> {
        let mut table = vec![0xff; usize::from(size)];
        table[..2].copy_from_slice(&size.to_le_bytes());
        table[2] = 1;
        table[3] = content;
        if let Some((offset, value)) = energy {
            table[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
        }
        table
    }

    #[test]
    fn amdgpu_reads_the_gpu_metrics_energy_accumulator_in_2_to_the_minus_16_joules() {
        // gpu_metrics_v1_3 (kgd_pp_interface.h:652): energy_accumulator,
        // a uint64_t at byte 24 of 120; 15.259 uJ (2^-16 J) units (the
        // unit comment of v1_4 and v1_5, 740 and 813).
        let sysfs = Sysfs::new();
        sysfs.write("gpu_metrics", &gpu_metrics(3, 120, Some((24, 3 << 16))));
        sysfs.hwmon(4, "amdgpu", &[("power1_average", "35000000\n")]);
        assert_eq!(
            sysfs.read(&declared("amdgpu")),
            Reading::Read(Sample::Counter {
                microjoules: 3_000_000,
                wraps_at: Some(65_536_000_000),
            })
        );
        // MI300's v1_5 has it at byte 88 of 360, 64 bits wide.
        sysfs.write("gpu_metrics", &gpu_metrics(5, 360, Some((88, 1 << 15))));
        assert_eq!(
            sysfs.read(&declared("amdgpu")),
            Reading::Read(Sample::Counter {
                microjoules: 500_000,
                wraps_at: None,
            })
        );
    }

    #[test]
    fn amdgpu_without_an_accumulator_integrates_its_power() {
        // amdgpu_pm.c:3217-3228, amdgpu_hwmon_show_power_avg:
        // sysfs_emit(buf, "%zd\n", val), in microwatts.
        let sysfs = Sysfs::new();
        sysfs.hwmon(4, "amdgpu", &[("power1_average", "35000000\n")]);
        assert_eq!(sysfs.read(&declared("amdgpu")), power(35_000_000));
        // A table the firmware leaves unfilled (smu_v14_0_2: all ones) or
        // fills with UINT_MAX (smu_v13_0_0_ppt.c:2093-2097), or an APU's
        // v2 table, which has no accumulator.
        for table in [
            gpu_metrics(3, 120, None),
            gpu_metrics(3, 120, Some((24, u64::from(u32::MAX)))),
            {
                let mut apu = gpu_metrics(0, 120, None);
                apu[2] = 2;
                apu
            },
        ] {
            sysfs.write("gpu_metrics", &table);
            assert_eq!(sysfs.read(&declared("amdgpu")), power(35_000_000));
        }
    }

    #[test]
    fn amdgpu_on_mi300_reads_its_instantaneous_power() {
        // amdgpu_pm.c:3230-3241: power1_input, "%zd\n", where
        // power1_average is hidden (3682-3691).
        let sysfs = Sysfs::new();
        sysfs.hwmon(4, "amdgpu", &[("power1_input", "412000000\n")]);
        assert_eq!(sysfs.read(&declared("amdgpu")), power(412_000_000));
        // Runtime-suspended: 6.12 would wake the GPU to answer
        // (amdgpu_pm.c:1518-1541); it draws next to nothing.
        sysfs.write("power/runtime_status", b"suspended\n");
        assert_eq!(sysfs.read(&declared("amdgpu")), power(0));
    }

    #[test]
    fn a_sleeping_amdgpu_is_not_woken_to_read_its_metrics() {
        // amdgpu_get_gpu_metrics calls pm_runtime_get_sync on 6.12
        // (amdgpu_pm.c:1884-1916). A directory where the file should be
        // fails any read: the reading must not try.
        let sysfs = Sysfs::new();
        fs::create_dir_all(sysfs.root().join(FUNCTION).join("gpu_metrics")).unwrap();
        sysfs.hwmon(4, "amdgpu", &[("power1_average", "35000000\n")]);
        sysfs.write("power/runtime_status", b"suspended\n");
        assert_eq!(sysfs.read(&declared("amdgpu")), Reading::Skipped);
        sysfs.write("power/runtime_status", b"active\n");
        assert!(matches!(
            sysfs.read(&declared("amdgpu")),
            Reading::Failed(_)
        ));
    }

    #[test]
    fn habanalabs_reads_its_firmwares_power_under_any_card_name() {
        // hwmon.c (habanalabs) 883-885 registers under the card name the
        // firmware gives, HL225 by default for Gaudi2 (gaudi2P.h:97);
        // hl_get_power (841-869) passes the value through, printed "%ld\n".
        for name in ["HL225", "HL-338"] {
            let sysfs = Sysfs::new();
            sysfs.hwmon(6, name, &[("power1_input", "180000000\n")]);
            assert_eq!(sysfs.read(&declared("habanalabs")), power(180_000_000));
        }
    }

    #[test]
    fn an_unnamed_hwmon_is_only_the_devices_own() {
        // A hwmon of the bridge above the function, with a power file: not
        // the card's, whatever habanalabs' firmware names its own.
        let sysfs = Sysfs::new();
        let bridge = sysfs.root().join("devices/pci0000:00/hwmon/hwmon8");
        fs::create_dir_all(&bridge).unwrap();
        symlink("../..", bridge.join("device")).unwrap();
        symlink(&bridge, sysfs.root().join("class/hwmon/hwmon8")).unwrap();
        fs::write(bridge.join("name"), "pcie_switch\n").unwrap();
        fs::write(bridge.join("power1_input"), "9000000\n").unwrap();
        assert_eq!(sysfs.read(&declared("habanalabs")), Reading::Absent);
        sysfs.hwmon(6, "HL225", &[("power1_input", "180000000\n")]);
        assert_eq!(sysfs.read(&declared("habanalabs")), power(180_000_000));
    }

    #[test]
    fn xe_before_labels_reads_its_one_counter() {
        // Before 6.8, xe had one energy channel and no label.
        let sysfs = Sysfs::new();
        sysfs.hwmon(3, "xe", &[("energy1_input", "9000000\n")]);
        assert_eq!(sysfs.read(&declared("xe")), counter(9_000_000));
    }

    #[test]
    fn tenstorrent_reads_its_power_in_whole_watts() {
        // tt-kmd blackhole.c:662 registers "blackhole"; telemetry.c:324
        // gives whole watts times 1000000, printed "%ld\n"; the label is
        // "power" (blackhole.c:397).
        let sysfs = Sysfs::new();
        sysfs.hwmon(
            7,
            "blackhole",
            &[("power1_input", "45000000\n"), ("power1_label", "power\n")],
        );
        assert_eq!(sysfs.read(&declared("tenstorrent")), power(45_000_000));
    }

    /// The energy of the interval between two readings of `sysfs`, as the
    /// agent's tracker measures it.
    fn grown(sysfs: &Sysfs, vendor: &str, between: impl FnOnce()) -> Option<u64> {
        let mut track = Track::default();
        let Reading::Read(first) = sysfs.read(&declared(vendor)) else {
            panic!("the first reading failed");
        };
        track.take(first, Duration::from_secs(1));
        between();
        let Reading::Read(second) = sysfs.read(&declared(vendor)) else {
            panic!("the second reading failed");
        };
        track
            .take(second, Duration::from_secs(11))
            .map(|(uj, _)| uj)
    }

    #[test]
    fn an_i915_counter_that_restarts_with_its_driver_counts_from_zero() {
        // hwm_energy (i915_hwmon.c:134-163) keeps its 64-bit sum in the
        // driver: a reload starts it again near zero.
        let sysfs = Sysfs::new();
        let dir = sysfs.hwmon(2, "i915", &[("energy1_input", "987654321000\n")]);
        let grown = grown(&sysfs, "i915", || {
            fs::write(dir.join("energy1_input"), "4000000\n").unwrap();
        });
        assert_eq!(grown, Some(4_000_000));
    }

    #[test]
    fn an_xe_counter_past_32_bits_is_not_taken_for_a_wrap() {
        // xe_hwmon_energy_get (xe_hwmon.c:259-278) extends its 32-bit
        // register in software, wraps included: the file's value passes
        // 2^32 and goes on growing.
        let sysfs = Sysfs::new();
        let dir = sysfs.hwmon(
            3,
            "xe",
            &[
                ("energy1_input", "4294000000\n"),
                ("energy1_label", "card\n"),
            ],
        );
        let grown = grown(&sysfs, "xe", || {
            fs::write(dir.join("energy1_input"), "4296000000\n").unwrap();
        });
        assert_eq!(grown, Some(2_000_000));
    }

    #[test]
    fn amdgpus_32_bit_accumulator_wraps_at_65536_joules() {
        // Firmware that fills only the low 32 bits of energy_accumulator:
        // 2^32 - 2^16 units (65,535 J), then 2^16 units (1 J) past the wrap.
        let sysfs = Sysfs::new();
        sysfs.write(
            "gpu_metrics",
            &gpu_metrics(3, 120, Some((24, (1 << 32) - (1 << 16)))),
        );
        let grown = grown(&sysfs, "amdgpu", || {
            sysfs.write("gpu_metrics", &gpu_metrics(3, 120, Some((24, 1 << 16))));
        });
        assert_eq!(grown, Some(2_000_000));
    }

    #[test]
    fn an_unreadable_sensor_says_which_file_and_why() {
        let sysfs = Sysfs::new();
        let dir = sysfs.hwmon(2, "i915", &[]);
        // A directory where the file should be: read(2) fails (EISDIR).
        fs::create_dir(dir.join("energy1_input")).unwrap();
        let Reading::Failed(why) = sysfs.read(&declared("i915")) else {
            panic!("a failed read must say so");
        };
        assert!(why.contains("energy1_input"), "{why}");
        assert!(!why.contains('\n'), "one line: {why}");
        // Text that is not a number.
        fs::remove_dir(dir.join("energy1_input")).unwrap();
        fs::write(dir.join("energy1_input"), "n/a\n").unwrap();
        assert!(matches!(sysfs.read(&declared("i915")), Reading::Failed(_)));
    }
}
