//! Energy per pod (`--energy`): each device's joules, from the sensor its
//! vendor's plugin names, divided among the containers that used and held
//! it.
//!
//! The device's sensors are read right after each fdinfo scan, so an
//! interval's energy and the engine time credited in it cover the same
//! span. Over each interval between two readings:
//! - the device's idle power times the interval is **idle** energy,
//!   shared evenly by the containers the allocation join says hold the
//!   device (empty pod labels where nobody does);
//! - the rest is **active** energy, divided among the containers by the
//!   engine time fdinfo credited them on the device or, for drivers that
//!   print none, by the time their counted submit and wait calls took.
//!
//! The idle power is measured: the device's power over the last interval
//! in which nobody used it and its energy grew; until there is one, the
//! plugin's figure.
//!
//! [`read`] does the file I/O, on a blocking thread; [`Meter`] keeps the
//! totals in the agent's loop.

mod sensor;
mod split;
mod track;

use std::{
    collections::{BTreeMap, HashMap, HashSet, VecDeque},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use kubenpu_sdk::EnergySpec;

pub use sensor::Reading;
pub use split::Share;
pub use track::Sample;

use crate::{attribution::Owner, fdinfo::DeviceLabels};
use split::Interval;
use track::Track;

/// One device to read.
#[derive(Debug, Clone)]
pub struct Target {
    /// The device.
    pub device: DeviceLabels,
    /// Its sysfs directory.
    pub dir: PathBuf,
    /// Where its vendor says its energy is.
    pub energy: Arc<EnergySpec>,
    /// Whether its vendor counts calls that submit work to it: only then
    /// does the time of a pod's calls follow the device's work.
    pub submits: bool,
}

/// Reads every target's sensor, with hwmon under `sysfs_root`.
pub fn read(sysfs_root: &Path, targets: &[Target]) -> Vec<(Target, Reading)> {
    targets
        .iter()
        .map(|target| {
            let reading = sensor::read(sysfs_root, &target.dir, &target.energy);
            (target.clone(), reading)
        })
        .collect()
}

/// How a device's active energy is divided among its users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// By the engine time fdinfo credits each container.
    EngineTime,
    /// By the time each container's counted submit and wait calls took,
    /// for drivers whose fdinfo has no engine time.
    CallTime,
    /// Evenly among the holders, for vendors that count no submit call
    /// (Tenstorrent's work goes through memory-mapped I/O, which no call
    /// shows): nothing tells who used the device.
    Even,
}

impl Rule {
    /// The `rule` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::EngineTime => "engine_time",
            Rule::CallTime => "call_time",
            Rule::Even => "even",
        }
    }
}

/// How many of a device's last idle intervals its idle power is measured
/// over: the lowest of them, so an interval that looked idle but was not
/// (work inside a call still in flight, a process gone before the scan
/// saw its last engine time) does not set it.
const IDLE_WINDOW: usize = 10;

/// The most power a reading may imply, in watts: a counter that grew more
/// than this over an interval is a garbage reading or a reset the counter
/// cannot tell, and starts a new baseline instead.
const MOST_WATTS: f64 = 10_000.0;

/// What a device's energy comes from: the `source` label.
fn source(sample: &Sample) -> &'static str {
    match sample {
        Sample::Counter { .. } => "energy",
        Sample::Power { .. } => "power",
    }
}

/// What is kept of one device.
#[derive(Debug, Default)]
struct Metered {
    track: Track,
    /// Microjoules over every interval measured, by source: `energy` or
    /// `power` (a device whose counter goes, or comes back, changes).
    microjoules: BTreeMap<&'static str, u64>,
    /// The power of its last idle intervals, in watts.
    idle_powers: VecDeque<f64>,
    /// The plugin's idle power, in watts.
    default_idle: f64,
    /// Whether its vendor counts submit calls.
    submits: bool,
    /// Engine seconds credited per container since the last reading.
    engine_use: BTreeMap<Owner, f64>,
    /// Call seconds per container since the last reading.
    call_use: BTreeMap<Owner, f64>,
    /// Whether fdinfo ever printed engine time for the device.
    has_engine_time: bool,
    /// The last failure, as logged once.
    failed: Option<String>,
}

impl Metered {
    fn rule(&self) -> Rule {
        match (self.has_engine_time, self.submits) {
            (true, _) => Rule::EngineTime,
            (false, true) => Rule::CallTime,
            (false, false) => Rule::Even,
        }
    }

    /// The lowest idle power measured lately, if any was.
    fn measured_idle(&self) -> Option<f64> {
        self.idle_powers.iter().copied().reduce(f64::min)
    }

    fn idle_watts(&self) -> f64 {
        self.measured_idle().unwrap_or(self.default_idle)
    }

    fn measured(&mut self, watts: f64) {
        if self.idle_powers.len() == IDLE_WINDOW {
            self.idle_powers.pop_front();
        }
        self.idle_powers.push_back(watts);
    }

    /// The use added since the last reading, by the device's rule
    /// (`holders`, evenly, for [`Rule::Even`]); the accumulators start
    /// again.
    fn take_use(&mut self, holders: &[Owner]) -> BTreeMap<Owner, f64> {
        let engine_use = std::mem::take(&mut self.engine_use);
        let call_use = std::mem::take(&mut self.call_use);
        match self.rule() {
            Rule::EngineTime => engine_use,
            Rule::CallTime => call_use,
            Rule::Even => holders.iter().map(|owner| (owner.clone(), 1.0)).collect(),
        }
    }
}

/// A per-pod energy series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EnergySeries {
    /// The container charged; all empty for energy nobody held.
    pub owner: Owner,
    /// The device.
    pub device: DeviceLabels,
    /// Active or idle.
    pub share: Share,
}

/// One device's energy as a scrape shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceEnergy {
    /// The device.
    pub device: DeviceLabels,
    /// `energy` (a counter read) or `power` (integrated).
    pub source: &'static str,
    /// Joules over every interval measured.
    pub joules: f64,
    /// The idle power in use.
    pub idle_watts: f64,
    /// Whether it was measured, or is the plugin's figure.
    pub idle_measured: bool,
    /// How its active energy is divided.
    pub rule: Rule,
}

/// What a scrape shows of the meter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnergyView {
    /// Each device read at least once.
    pub devices: Vec<DeviceEnergy>,
    /// Joules per container, device and share.
    pub shares: BTreeMap<EnergySeries, f64>,
    /// Sensor reads that failed, since the agent started.
    pub failed_reads: u64,
}

/// The meter's state in the agent's loop.
#[derive(Debug)]
pub struct Meter {
    sysfs_root: PathBuf,
    devices: BTreeMap<DeviceLabels, Metered>,
    shares: BTreeMap<EnergySeries, u64>,
    /// When each container was last charged (CLOCK_BOOTTIME): its series
    /// go `grace` after, as a gone pod's counts do.
    charged_at: HashMap<Owner, Duration>,
    grace: Duration,
    /// Call nanoseconds per cgroup and device, as last read.
    call_ns: HashMap<(u64, Arc<str>), u64>,
    /// Whether the call nanoseconds were read once: until then, the
    /// calls counted are a baseline, made before the meter ran.
    calls_baselined: bool,
    failed_reads: u64,
}

impl Meter {
    /// A meter of the hwmon directories under `sysfs_root`, whose
    /// containers' series go `grace` after they were last charged (they
    /// neither use nor hold a device any more).
    pub fn new(sysfs_root: PathBuf, grace: Duration) -> Self {
        Self {
            sysfs_root,
            devices: BTreeMap::new(),
            shares: BTreeMap::new(),
            charged_at: HashMap::new(),
            grace,
            call_ns: HashMap::new(),
            calls_baselined: false,
            failed_reads: 0,
        }
    }

    /// The sysfs it reads.
    pub fn sysfs_root(&self) -> &Path {
        &self.sysfs_root
    }

    /// Adds one fdinfo scan's engine seconds, per container and device
    /// (zero for clients on a device that prints engine time but was
    /// idle).
    pub fn add_engine_time(
        &mut self,
        credited: impl IntoIterator<Item = (Owner, DeviceLabels, f64)>,
    ) {
        for (owner, device, seconds) in credited {
            let metered = self.devices.entry(device).or_default();
            metered.has_engine_time = true;
            *metered.engine_use.entry(owner).or_default() += seconds;
        }
    }

    /// Adds the counted submit and wait time since the last call, from
    /// the cumulative nanoseconds per cgroup and device in `call_ns`
    /// (each cgroup's owner by `owner`).
    pub fn add_call_time(
        &mut self,
        call_ns: HashMap<(u64, Arc<str>), u64>,
        devices: &BTreeMap<Arc<str>, DeviceLabels>,
        owner: impl Fn(u64) -> Owner,
    ) {
        let baselined = std::mem::replace(&mut self.calls_baselined, true);
        for ((cgroup, device), &ns) in &call_ns {
            // A cgroup seen for the first time: all of its calls are new,
            // unless this is the baseline.
            let before = self.call_ns.get(&(*cgroup, device.clone())).copied();
            let grown = ns.saturating_sub(before.unwrap_or(0));
            if grown == 0 || !baselined {
                continue;
            }
            let Some(labels) = devices.get(device) else {
                continue;
            };
            let metered = self.devices.entry(labels.clone()).or_default();
            *metered.call_use.entry(owner(*cgroup)).or_default() += grown as f64 / 1e9;
        }
        self.call_ns = call_ns;
    }

    /// Moves gone cgroup `from`'s call time onto `into`, as the kernel's
    /// counters are merged: the merge is not new use.
    pub fn merge(&mut self, from: u64, into: u64) {
        let moved: Vec<(Arc<str>, u64)> = self
            .call_ns
            .extract_if(|(cgroup, _), _| *cgroup == from)
            .map(|((_, device), ns)| (device, ns))
            .collect();
        for (device, ns) in moved {
            *self.call_ns.entry((into, device)).or_default() += ns;
        }
    }

    /// Forgets cgroup `id`, whose grace period is over.
    pub fn remove(&mut self, id: u64) {
        self.call_ns.retain(|(cgroup, _), _| *cgroup != id);
    }

    /// Takes the devices' readings made at `at` (CLOCK_BOOTTIME): each
    /// interval a reading closes is divided with the use added since and
    /// the holders of each device now (by device name). `calls_read`:
    /// whether the counted calls' time was added for this interval (a
    /// failed read of the kernel's counters leaves it out, and no idle
    /// power is measured from its intervals). Returns the failures to
    /// log: once per device until it reads again.
    pub fn take(
        &mut self,
        readings: Vec<(Target, Reading)>,
        at: Duration,
        holders: &BTreeMap<Arc<str>, Vec<Owner>>,
        calls_read: bool,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        let mut read = HashSet::new();
        for (target, reading) in readings {
            read.insert(target.device.clone());
            let metered = self.devices.entry(target.device.clone()).or_default();
            metered.default_idle = f64::from(target.energy.idle_milliwatts) / 1000.0;
            metered.submits = target.submits;
            let holding = holders
                .get(&target.device.device)
                .map_or(&[][..], Vec::as_slice);
            let sample = match reading {
                Reading::Read(sample) => sample,
                // The interval goes on to the next reading, and so does
                // the use added in it.
                Reading::Skipped => continue,
                Reading::Absent => {
                    metered.take_use(holding);
                    continue;
                }
                Reading::Failed(why) => {
                    self.failed_reads += 1;
                    if metered.failed.as_ref() != Some(&why) {
                        failures.push(format!(
                            "energy: cannot read device {}'s sensor ({why}); its energy is not measured until it reads again",
                            target.device.device
                        ));
                        metered.failed = Some(why);
                    }
                    continue;
                }
            };
            metered.failed = None;
            // Its series exists from its first reading, at 0.
            metered.microjoules.entry(source(&sample)).or_default();
            let closed = metered.track.take(sample, at);
            let use_by = metered.take_use(holding);
            // The first reading is a baseline: the use before it is not
            // divided. So is one that implies more power than any device
            // draws.
            let Some((microjoules, span)) = closed else {
                continue;
            };
            let seconds = span.as_secs_f64();
            if microjoules as f64 > MOST_WATTS * 1e6 * seconds {
                continue;
            }
            // An interval nobody used is how the device idles; one whose
            // counter did not move tells nothing of it (a sleeping device,
            // a counter the driver updates seldom), nor does one whose
            // use was not all read.
            let rule = metered.rule();
            let unused = use_by.values().all(|used| *used <= 0.0);
            let use_known = rule == Rule::EngineTime || (rule == Rule::CallTime && calls_read);
            if unused && use_known && seconds > 0.0 && microjoules > 0 {
                metered.measured(microjoules as f64 / 1e6 / seconds);
            }
            let interval = Interval {
                microjoules,
                seconds,
                idle_watts: metered.idle_watts(),
                use_by: &use_by,
                holders: holding,
            };
            let total = metered.microjoules.entry(source(&sample)).or_default();
            *total = total.saturating_add(microjoules);
            for ((owner, share), microjoules) in split::split(&interval) {
                self.charged_at.insert(owner.clone(), at);
                let series = EnergySeries {
                    owner,
                    device: target.device.clone(),
                    share,
                };
                let total = self.shares.entry(series).or_default();
                *total = total.saturating_add(microjoules);
            }
        }
        // Use on devices not read (no sensor, or gone) is not kept.
        for (device, metered) in &mut self.devices {
            if !read.contains(device) {
                metered.engine_use.clear();
                metered.call_use.clear();
            }
        }
        self.forget_the_gone(at);
        failures
    }

    /// Drops the series of containers not charged for `grace`: gone pods,
    /// and pods that let go of their devices.
    fn forget_the_gone(&mut self, now: Duration) {
        let grace = self.grace;
        self.charged_at
            .retain(|_, at| now.saturating_sub(*at) <= grace);
        let charged = &self.charged_at;
        self.shares
            .retain(|series, _| charged.contains_key(&series.owner));
    }

    /// The totals as a scrape shows them.
    pub fn view(&self) -> EnergyView {
        EnergyView {
            devices: self
                .devices
                .iter()
                .flat_map(|(device, metered)| {
                    metered
                        .microjoules
                        .iter()
                        .map(move |(&source, microjoules)| DeviceEnergy {
                            device: device.clone(),
                            source,
                            joules: *microjoules as f64 / 1e6,
                            idle_watts: metered.idle_watts(),
                            idle_measured: metered.measured_idle().is_some(),
                            rule: metered.rule(),
                        })
                })
                .collect(),
            shares: self
                .shares
                .iter()
                .map(|(series, microjoules)| (series.clone(), *microjoules as f64 / 1e6))
                .collect(),
            failed_reads: self.failed_reads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{split::tests::owner, *};

    fn gpu() -> DeviceLabels {
        DeviceLabels {
            device: "0000:03:00.0".into(),
            vendor: "xe".into(),
        }
    }

    fn target(idle_milliwatts: u32) -> Target {
        Target {
            device: gpu(),
            dir: PathBuf::from("/sys/bus/pci/devices/0000:03:00.0"),
            energy: Arc::new(EnergySpec {
                idle_milliwatts,
                ..EnergySpec::default()
            }),
            submits: true,
        }
    }

    fn joules(view: &EnergyView, pod: &str, share: Share) -> f64 {
        let owner = if pod.is_empty() {
            Owner::default()
        } else {
            owner(pod)
        };
        view.shares
            .get(&EnergySeries {
                owner,
                device: gpu(),
                share,
            })
            .copied()
            .unwrap_or(0.0)
    }

    fn counter(joules: u64) -> Reading {
        Reading::Read(Sample::Counter {
            microjoules: joules * 1_000_000,
            wraps_at: None,
        })
    }

    const SECOND: Duration = Duration::from_secs(1);
    const GRACE: Duration = Duration::from_secs(300);

    #[test]
    fn engine_time_divides_the_active_energy_and_holders_share_the_idle() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let holders = [(gpu().device, vec![owner("a"), owner("b"), owner("idle")])].into();
        meter.take(
            vec![(target(20_000), counter(1_000))],
            SECOND,
            &holders,
            true,
        );
        // 10 s, 1000 J, 20 W idle: 200 J idle among three holders, 800 J
        // active at 3:1.
        meter.add_engine_time([
            (owner("a"), gpu(), 6.0),
            (owner("b"), gpu(), 2.0),
            (owner("idle"), gpu(), 0.0),
        ]);
        meter.take(
            vec![(target(20_000), counter(2_000))],
            11 * SECOND,
            &holders,
            true,
        );
        let view = meter.view();
        assert_eq!(joules(&view, "a", Share::Active), 600.0);
        assert_eq!(joules(&view, "b", Share::Active), 200.0);
        for pod in ["a", "b", "idle"] {
            assert!((joules(&view, pod, Share::Idle) - 200.0 / 3.0).abs() < 1e-6);
        }
        assert_eq!(joules(&view, "idle", Share::Active), 0.0);
        let device = &view.devices[0];
        assert_eq!((device.joules, device.source), (1_000.0, "energy"));
        assert_eq!((device.idle_watts, device.idle_measured), (20.0, false));
        assert_eq!(device.rule, Rule::EngineTime);
        let charged: f64 = view.shares.values().sum();
        assert!((charged - device.joules).abs() < 1e-6);
    }

    #[test]
    fn an_interval_nobody_used_measures_the_idle_power() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let none = BTreeMap::new();
        meter.take(vec![(target(20_000), counter(1_000))], SECOND, &none, true);
        // A counter that did not move measures nothing.
        meter.take(
            vec![(target(20_000), counter(1_000))],
            2 * SECOND,
            &none,
            true,
        );
        assert!(!meter.view().devices[0].idle_measured);
        meter.add_engine_time([(owner("a"), gpu(), 0.0)]);
        // 150 J over 10 s with no engine time: 15 W, all idle, nobody
        // holding it.
        meter.take(
            vec![(target(20_000), counter(1_150))],
            12 * SECOND,
            &none,
            true,
        );
        let view = meter.view();
        assert_eq!(joules(&view, "", Share::Idle), 150.0);
        assert_eq!(view.devices[0].idle_watts, 15.0);
        assert!(view.devices[0].idle_measured);
    }

    #[test]
    fn without_engine_time_the_counted_call_time_divides_it() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let devices = [(gpu().device, gpu())].into();
        let by_cgroup = |id| owner(if id == 1 { "a" } else { "b" });
        let calls = |a: u64, b: u64| [((1, gpu().device), a), ((2, gpu().device), b)].into();
        let none = BTreeMap::new();
        // The first reading of the counters is their baseline.
        meter.add_call_time(calls(5_000_000_000, 0), &devices, by_cgroup);
        meter.take(vec![(target(0), counter(100))], SECOND, &none, true);
        meter.add_call_time(calls(6_000_000_000, 3_000_000_000), &devices, by_cgroup);
        meter.take(vec![(target(0), counter(500))], 5 * SECOND, &none, true);
        let view = meter.view();
        assert_eq!(view.devices[0].rule, Rule::CallTime);
        assert_eq!(joules(&view, "a", Share::Active), 100.0);
        assert_eq!(joules(&view, "b", Share::Active), 300.0);
    }

    #[test]
    fn a_pod_that_neither_uses_nor_holds_the_device_goes_after_the_grace() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let holders = [(gpu().device, vec![owner("a")])].into();
        meter.take(vec![(target(1_000), counter(0))], SECOND, &holders, true);
        meter.take(
            vec![(target(1_000), counter(10))],
            11 * SECOND,
            &holders,
            true,
        );
        assert!(joules(&meter.view(), "a", Share::Idle) > 0.0);
        // Pod a is gone: nobody holds the device from now on.
        let none = BTreeMap::new();
        let later = |meter: &mut Meter, seconds: u64, joules: u64| {
            meter.take(
                vec![(target(1_000), counter(joules))],
                Duration::from_secs(seconds),
                &none,
                true,
            );
        };
        later(&mut meter, 21, 20);
        later(&mut meter, 11 + 300, 30);
        assert!(
            joules(&meter.view(), "a", Share::Idle) > 0.0,
            "within the grace"
        );
        later(&mut meter, 12 + 300, 31);
        let view = meter.view();
        assert_eq!(joules(&view, "a", Share::Idle), 0.0, "{view:?}");
        assert!(joules(&view, "", Share::Idle) > 0.0);
        // The device's total keeps every joule.
        assert_eq!(view.devices[0].joules, 31.0);
    }

    #[test]
    fn a_device_that_cannot_be_read_leaves_the_others_measured() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let other = DeviceLabels {
            device: "0000:04:00.0".into(),
            vendor: "xe".into(),
        };
        let broken = Target {
            device: other.clone(),
            ..target(0)
        };
        let none = BTreeMap::new();
        let failed =
            || Reading::Failed("/sys/class/hwmon/hwmon4: No such file or directory".into());
        meter.take(
            vec![(target(0), counter(10)), (broken.clone(), failed())],
            SECOND,
            &none,
            true,
        );
        let said = meter.take(
            vec![(target(0), counter(30)), (broken, failed())],
            2 * SECOND,
            &none,
            true,
        );
        // Said once, at the first failure; the other device divides on.
        assert!(said.is_empty(), "{said:?}");
        let view = meter.view();
        assert_eq!(view.devices.len(), 1, "{view:?}");
        assert_eq!(view.devices[0].joules, 20.0);
        assert_eq!(view.failed_reads, 2);
    }

    #[test]
    fn calls_after_a_quiet_baseline_are_use_and_a_merge_is_not() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let devices = [(gpu().device, gpu())].into();
        // Cgroups 1 and 2 are pod a's (a restart), 3 pod b's.
        let by_cgroup = |id| owner(if id == 3 { "b" } else { "a" });
        let none = BTreeMap::new();
        // Nobody had called yet when the meter began.
        meter.add_call_time(HashMap::new(), &devices, by_cgroup);
        meter.take(vec![(target(0), counter(100))], SECOND, &none, true);
        // Pod a's first calls are use, not a baseline.
        let calls = [((1, gpu().device), 2_000_000_000)].into();
        meter.add_call_time(calls, &devices, by_cgroup);
        meter.take(vec![(target(0), counter(300))], 3 * SECOND, &none, true);
        assert_eq!(joules(&meter.view(), "a", Share::Active), 200.0);
        // Cgroup 1 is gone, its counters merged into cgroup 2's: that is
        // not new use; pod b's calls are.
        meter.merge(1, 2);
        let calls = [
            ((2, gpu().device), 2_000_000_000),
            ((3, gpu().device), 1_000_000_000),
        ]
        .into();
        meter.add_call_time(calls, &devices, by_cgroup);
        meter.take(vec![(target(0), counter(400))], 5 * SECOND, &none, true);
        let view = meter.view();
        assert_eq!(joules(&view, "a", Share::Active), 200.0);
        assert_eq!(joules(&view, "b", Share::Active), 100.0);
    }

    #[test]
    fn idle_power_is_the_lowest_of_the_last_idle_intervals() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let none = BTreeMap::new();
        let mut at = 0;
        let mut energy = 0;
        let mut step = |meter: &mut Meter, joules: u64, used: bool, calls_read: bool| {
            if used {
                meter.add_engine_time([(owner("a"), gpu(), 1.0)]);
            } else {
                meter.add_engine_time([(owner("a"), gpu(), 0.0)]);
            }
            at += 10;
            energy += joules;
            let reading = (target(30_000), counter(energy));
            meter.take(vec![reading], Duration::from_secs(at), &none, calls_read);
            meter.view().devices[0].idle_watts
        };
        step(&mut meter, 0, false, true);
        assert_eq!(step(&mut meter, 1_000, true, true), 30.0, "the plugin's");
        assert_eq!(step(&mut meter, 200, false, true), 20.0);
        // An interval that looked idle but drew 90 W does not raise it.
        assert_eq!(step(&mut meter, 900, false, true), 20.0);
        assert_eq!(step(&mut meter, 150, false, true), 15.0);
        // Engine time is known whatever the kernel's counters did.
        assert_eq!(step(&mut meter, 100, false, false), 10.0);
    }

    #[test]
    fn without_submits_the_holders_share_all_of_it_evenly() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let holders = [(gpu().device, vec![owner("a"), owner("b")])].into();
        let lock_waits = Target {
            submits: false,
            ..target(10_000)
        };
        meter.take(
            vec![(lock_waits.clone(), counter(0))],
            SECOND,
            &holders,
            true,
        );
        meter.take(
            vec![(lock_waits, counter(100))],
            11 * SECOND,
            &holders,
            true,
        );
        let view = meter.view();
        assert_eq!(view.devices[0].rule, Rule::Even);
        // 100 J over 10 s at 10 W idle: 100 J idle... all of it.
        for pod in ["a", "b"] {
            let total = joules(&view, pod, Share::Active) + joules(&view, pod, Share::Idle);
            assert_eq!(total, 50.0, "{view:?}");
        }
        assert!(!view.devices[0].idle_measured, "nothing tells idle here");
    }

    #[test]
    fn power_is_integrated_and_an_impossible_jump_starts_again() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let none = BTreeMap::new();
        let power = |watts: u64| {
            Reading::Read(Sample::Power {
                microwatts: watts * 1_000_000,
            })
        };
        meter.take(vec![(target(0), power(20))], SECOND, &none, true);
        meter.take(vec![(target(0), power(40))], 3 * SECOND, &none, true);
        let view = meter.view();
        assert_eq!(
            (view.devices[0].source, view.devices[0].joules),
            ("power", 60.0)
        );
        // The device's counter comes back: a baseline under its source.
        meter.take(vec![(target(0), counter(5))], 4 * SECOND, &none, true);
        // A garbage reading 1 EJ on: not energy, a new baseline.
        let garbage = counter(1_000_000_000_000);
        meter.take(vec![(target(0), garbage)], 5 * SECOND, &none, true);
        meter.take(
            vec![(target(0), counter(1_000_000_000_010))],
            6 * SECOND,
            &none,
            true,
        );
        let view = meter.view();
        let by_source: Vec<(&str, f64)> =
            view.devices.iter().map(|d| (d.source, d.joules)).collect();
        assert_eq!(by_source, [("energy", 10.0), ("power", 60.0)]);
        let charged: f64 = view.shares.values().sum();
        assert_eq!(charged, 70.0);
    }

    #[test]
    fn a_failed_read_is_said_once_and_the_interval_goes_on() {
        let mut meter = Meter::new(PathBuf::from("/sys"), GRACE);
        let none = BTreeMap::new();
        let failed = || Reading::Failed("energy1_input: Input/output error".into());
        meter.take(vec![(target(0), counter(10))], SECOND, &none, true);
        assert_eq!(
            meter
                .take(vec![(target(0), failed())], 2 * SECOND, &none, true)
                .len(),
            1
        );
        assert!(
            meter
                .take(vec![(target(0), failed())], 3 * SECOND, &none, true)
                .is_empty()
        );
        meter.take(vec![(target(0), counter(40))], 4 * SECOND, &none, true);
        let view = meter.view();
        assert_eq!(view.failed_reads, 2);
        assert_eq!(view.devices[0].joules, 30.0);
        assert_eq!(joules(&view, "", Share::Idle), 30.0);
    }
}
