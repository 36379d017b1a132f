//! Placement: each accelerator thread runs on CPUs near the device it
//! uses, without changing the application.
//!
//! The counting program keeps, in each thread's record (the pinned task
//! storage map `INFLIGHT`), the NUMA node of the device it last called
//! and when: the *hint*. The modes:
//!
//! - `off`: nothing is placed;
//! - `hints`: the hints are published for others (their layout is in the
//!   README) and `kubenpuctl placement` says what would fix each pod's
//!   placement;
//! - `sched-ext`: the agent also loads [`scheduler`], a fair sched_ext
//!   scheduler for every task that wakes a thread with a fresh hint on an
//!   idle CPU of its device's node. Where the kernel has no sched_ext, or
//!   another BPF scheduler is in force, the agent says so in one line and
//!   stays on hints: it never replaces a scheduler it did not load.

pub mod advice;
pub mod sched_ext;
pub mod scheduler;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use kubenpu_ebpf::{SchedulerExit, placement::OPS_NAME};
use tracing::{info, warn};

pub use self::scheduler::Counters;
use self::{sched_ext::State, scheduler::Scheduler};
use crate::probe::{Btf, ProbeError, VMLINUX_BTF};

/// How long after a thread's last counted call its hint places it: a
/// thread that alternates some milliseconds of work with calls keeps its
/// hint between them.
pub const HINT_FRESH: Duration = Duration::from_millis(100);

/// The longest a runnable task may wait under the scheduler before the
/// kernel's watchdog reverts every task to the kernel's scheduler.
pub const WATCHDOG: Duration = Duration::from_secs(5);

/// What `--placement` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Mode {
    /// Nothing is placed.
    #[default]
    Off,
    /// Hints only: each thread's device node, for `kubenpuctl placement`
    /// and for other schedulers.
    Hints,
    /// Hints, and the agent's sched_ext scheduler.
    SchedExt,
}

impl Mode {
    /// Every mode, for the one-hot metric.
    pub const ALL: [Mode; 3] = [Mode::Off, Mode::Hints, Mode::SchedExt];

    /// The name on the command line and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Hints => "hints",
            Mode::SchedExt => "sched-ext",
        }
    }
}

/// Verifies the scheduler's programs, switches out the earlier agent's
/// scheduler if `replacing`, then attaches this one.
fn start_scheduler(
    pin_dir: &Path,
    sysfs_root: &Path,
    replacing: bool,
    debug: bool,
) -> Result<Scheduler, ProbeError> {
    let vmlinux = Btf::from_file(Path::new(VMLINUX_BTF), None)?;
    let verified = Scheduler::load(pin_dir, &vmlinux, WATCHDOG, HINT_FRESH, debug);
    if replacing {
        // Whether or not this one loaded: an agent never leaves an
        // earlier agent's scheduler running unwatched.
        replace_earlier(&Scheduler::link_path(pin_dir), sysfs_root);
    }
    verified?.attach(&vmlinux)
}

/// Detaches the scheduler an earlier agent left pinned at `pinned`, and
/// waits (up to the watchdog's period) until the kernel has switched it
/// out: a scheduler attached meanwhile would find sched_ext busy.
fn replace_earlier(pinned: &Path, sysfs_root: &Path) {
    if let Err(e) = scheduler::unpin(pinned) {
        warn!("placement: cannot detach the earlier agent's scheduler: {e}");
        return;
    }
    let deadline = std::time::Instant::now() + WATCHDOG;
    // Still ours, or switching: `disabling` may already have no `ops`.
    while matches!(State::read(sysfs_root), State::Loaded { ops, state } if ops == OPS_NAME || state != "enabled")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Placement on this node: the mode asked for, the one in force, and the
/// scheduler while it runs.
pub struct Placement {
    /// `--placement`.
    pub asked: Mode,
    /// What is in force: `hints` where `sched-ext` could not be.
    pub mode: Mode,
    scheduler: Option<Scheduler>,
    sysfs_root: PathBuf,
    /// What schedulers that stopped had counted.
    before: Counters,
    /// The scheduler's stops the kernel reported, by kind.
    exits: BTreeMap<&'static str, u64>,
}

/// What a scrape shows of placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementView {
    /// `--placement`.
    pub asked: Mode,
    /// The mode in force.
    pub mode: Mode,
    /// sched_ext's state: `absent`, `disabled`, or the kernel's word.
    pub sched_ext: String,
    /// The scheduler in force, if any (`kubenpu` for the agent's).
    pub ops: String,
    /// What the agent's schedulers counted since the agent started.
    pub counters: Counters,
    /// Their stops, by kind.
    pub exits: BTreeMap<&'static str, u64>,
}

impl Placement {
    /// Puts `asked` in force. A scheduler this agent's pin directory
    /// holds from an earlier agent is replaced by this one's (its
    /// programs verified first, so the node spends only the switch
    /// itself on the kernel's scheduler), or removed in the other modes;
    /// a scheduler someone else loaded is never touched.
    pub fn start(asked: Mode, sysfs_root: &Path, pin_dir: &Path, debug: bool) -> Self {
        let pinned = Scheduler::link_path(pin_dir);
        let earlier = pinned.exists();
        let mut placement = Self {
            asked,
            mode: asked,
            scheduler: None,
            sysfs_root: sysfs_root.to_owned(),
            before: Counters::default(),
            exits: BTreeMap::new(),
        };
        let state = State::read(sysfs_root);
        let ours = matches!(&state, State::Loaded { ops, .. } if earlier && ops == OPS_NAME);
        if asked != Mode::SchedExt || !ours {
            // An earlier agent's scheduler, in force or stopped by the
            // kernel: this agent's mode or state replaces it.
            if earlier {
                replace_earlier(&pinned, sysfs_root);
            }
            if asked != Mode::SchedExt {
                return placement;
            }
        }
        match state {
            State::Absent => {
                warn!(
                    "placement: this kernel has no sched_ext (it needs CONFIG_SCHED_CLASS_EXT, Linux 6.12 or later); placement stays on hints"
                );
                placement.mode = Mode::Hints;
            }
            State::Loaded { ops, state } if !ours => {
                warn!(
                    "placement: another sched_ext scheduler ({ops:?}, {state}) is in force, and KubeNPU never replaces one; placement stays on hints"
                );
                placement.mode = Mode::Hints;
            }
            _ => match start_scheduler(pin_dir, sysfs_root, ours, debug) {
                Ok(scheduler) => {
                    info!(
                        "placement: the sched_ext scheduler is in force (watchdog {}s)",
                        WATCHDOG.as_secs()
                    );
                    placement.scheduler = Some(scheduler);
                }
                Err(e) => {
                    warn!(
                        "placement: cannot load the sched_ext scheduler: {e}; placement stays on hints"
                    );
                    placement.mode = Mode::Hints;
                }
            },
        }
        placement
    }

    /// Whether the agent's scheduler is loaded, to be watched.
    pub fn scheduling(&self) -> bool {
        self.scheduler.is_some()
    }

    /// Checks that the agent's scheduler is still in force. If the
    /// kernel stopped it (an error, a stalled task past the watchdog, a
    /// SysRq reset), says why in one line, counts the stop, and stays on
    /// hints: it is never loaded again by this agent, which could loop.
    pub fn watch(&mut self) {
        let Some(scheduler) = &self.scheduler else {
            return;
        };
        match State::read(&self.sysfs_root) {
            State::Loaded { ops, state } if ops == OPS_NAME && state == "enabled" => return,
            // Its exit callback may not have run yet: at the next check.
            State::Loaded { state, .. } if state == "disabling" => return,
            _ => {}
        }
        let exit = scheduler.exit();
        let (kind, reason) = match &exit {
            Some(exit) => (exit_kind(exit.kind), exit_reason(exit)),
            None => ("unknown", "it left no exit record".to_owned()),
        };
        warn!(
            "placement: the kernel stopped the sched_ext scheduler ({kind}: {reason}); every task is on the kernel's scheduler, and placement stays on hints"
        );
        *self.exits.entry(kind).or_default() += 1;
        self.end(Mode::Hints);
    }

    /// Leaves the node on the kernel's scheduler (at the agent's stop).
    pub fn stop(&mut self) {
        self.end(self.mode);
    }

    /// Detaches the scheduler, if any, keeping what it counted; `mode`
    /// is in force after.
    fn end(&mut self, mode: Mode) {
        if let Some(scheduler) = self.scheduler.take() {
            self.before = self.before.plus(scheduler.counters());
            if let Err(e) = scheduler.stop() {
                warn!("placement: cannot detach the sched_ext scheduler: {e}");
            }
        }
        self.mode = mode;
    }

    /// What a scrape shows.
    pub fn view(&self) -> PlacementView {
        let (sched_ext, ops) = match State::read(&self.sysfs_root) {
            State::Absent => ("absent".to_owned(), String::new()),
            State::Disabled => ("disabled".to_owned(), String::new()),
            State::Loaded { ops, state } => (state, ops),
        };
        let live = self
            .scheduler
            .as_ref()
            .map(Scheduler::counters)
            .unwrap_or_default();
        PlacementView {
            asked: self.asked,
            mode: self.mode,
            sched_ext,
            ops,
            counters: self.before.plus(live),
            exits: self.exits.clone(),
        }
    }
}

/// The `kind` label of an `enum scx_exit_kind`.
fn exit_kind(kind: u32) -> &'static str {
    match kind {
        1 => "done",
        64 => "unregistered",
        65 => "unregistered_bpf",
        66 => "unregistered_kernel",
        67 => "sysrq",
        1024 => "error",
        1025 => "error_bpf",
        1026 => "error_stall",
        _ => "other",
    }
}

/// The kernel's reason and detail, as one line.
fn exit_reason(exit: &SchedulerExit) -> String {
    let text = |bytes: &[u8]| {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end])
            .trim()
            .replace('\n', "; ")
    };
    match (text(&exit.reason), text(&exit.message)) {
        (reason, message) if message.is_empty() => reason,
        (reason, message) => format!("{reason}: {message}"),
    }
}
