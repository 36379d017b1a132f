//! Choosing, loading and attaching the hook on `drm_ioctl`, and keeping
//! its links and programs pinned. Each hook type is a module of its own
//! ([`session`], [`kprobe_multi`], [`kprobe`], [`fentry`]) that loads its
//! programs into [`Loaded`] values and describes itself in a [`Kind`];
//! this module chooses among them and pins what they attach
//! ([`pinned`]).
//!
//! Exactness decides the order `auto` tries them in. An fentry program
//! runs behind a per-program, per-CPU recursion guard with migration
//! disabled but preemption enabled: on a kernel that preempts kernel code
//! (full or lazy preemption, as Debian's 7.x kernels do, or any
//! PREEMPT_DYNAMIC kernel booted with `preempt=full`), a thread preempted
//! inside the program makes every other thread's call on that CPU skip it
//! until it runs again. Measured with four threads on two vCPUs on 7.2:
//! 10-18 % of calls skipped, visible only in the program's
//! `recursion_misses`. kprobe handlers, of every kind, run with preemption
//! disabled, so no call is skipped. So `auto` takes a kprobe session (one
//! program for both sides, whose return side runs only for kept calls),
//! then kprobe.multi (both need no `perf_event_open`: no CAP_SYS_ADMIN
//! where `perf_event_paranoid` is above 2), then kprobe, and fentry last;
//! whatever a hook still skips is exported as `recursion` losses.
//!
//! Each hook is a pair, but for the session: the entry program counts the
//! call, the exit program (fexit, a kretprobe, or a kprobe.multi return
//! link) measures how it ended. The exit side is attached first, so no
//! call is ever seen entering without its return being watched.

pub mod entries;
mod fentry;
mod kprobe;
mod kprobe_multi;
mod pinned;
mod session;

use std::{
    io,
    os::fd::{AsFd as _, BorrowedFd},
    path::Path,
};

use aya::Ebpf;

use super::{Btf, Config, ProbeError, Stage, syscall};
pub use fentry::load_on_module;
pub use kprobe_multi::{link_kprobe_multi, load_kprobe_multi};
pub use session::{link_kprobe_session, load_kprobe_session};
use syscall::Side;

/// The hook the agent is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookChoice {
    /// A kprobe session, else kprobe.multi, else kprobe, else fentry: the
    /// first the kernel allows, in order of exactness and cost.
    Auto,
    /// fentry only (cheapest, but skips calls where kernel code is
    /// preempted; those are counted as `recursion` losses).
    Fentry,
    /// kprobe only.
    Kprobe,
    /// kprobe.multi (fprobe) only.
    KprobeMulti,
    /// A kprobe session only (Linux 6.10).
    KprobeSession,
}

/// The hook in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// fentry, `drm_ioctl` in vmlinux BTF (DRM built in).
    Fentry,
    /// fentry, `drm_ioctl` in the `drm` module's split BTF.
    FentryModule,
    /// kprobe, through `perf_event_open`.
    Kprobe,
    /// kprobe.multi: an fprobe, through `BPF_LINK_CREATE`.
    KprobeMulti,
    /// A kprobe session: one fprobe for both sides.
    KprobeSession,
}

/// What one hook type is, to the code that chooses, attaches and adopts
/// hooks.
struct Kind {
    /// The name used in logs and metrics.
    name: &'static str,
    /// The `link_type`s its entry link may show in its fdinfo.
    entry_link_types: &'static [&'static str],
    /// The same for its exit link (none: it has none).
    exit_link_types: &'static [&'static str],
    /// Why it counts every call, or what it may skip, for the log.
    exactness: &'static str,
    /// Loads both programs; returns the hook they are for exactly (fentry
    /// loads against the `drm` module where DRM is not built in).
    load: LoadFn,
}

/// Loads a hook type's two programs into the object's maps, with the
/// verifier's log on failure if asked (the `bool`).
type LoadFn = fn(&mut Ebpf, &Btf, bool) -> Result<(Hook, Pair), ProbeError>;

impl Hook {
    fn kind(self) -> &'static Kind {
        match self {
            Hook::Fentry => &fentry::BUILT_IN,
            Hook::FentryModule => &fentry::ON_MODULE,
            Hook::Kprobe => &kprobe::KIND,
            Hook::KprobeMulti => &kprobe_multi::KIND,
            Hook::KprobeSession => &session::KIND,
        }
    }

    /// The name used in logs and metrics.
    pub fn as_str(self) -> &'static str {
        self.kind().name
    }

    fn link_types(self, side: Side) -> &'static [&'static str] {
        match side {
            Side::Entry => self.kind().entry_link_types,
            Side::Exit => self.kind().exit_link_types,
        }
    }
}

/// A hook in place, and why it was chosen.
pub struct Attached {
    /// The hook.
    pub hook: Hook,
    /// One line for the log.
    pub reason: String,
}

/// One side's program, loaded and not yet attached.
trait Loaded {
    /// Its fd: for its tag, and to pin it.
    fn fd<'a>(&'a self, ebpf: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError>;
    /// Attaches it to its `side` of `drm_ioctl` and pins the link at
    /// `path`.
    fn link(self: Box<Self>, ebpf: &mut Ebpf, side: Side, path: &Path) -> Result<(), ProbeError>;
}

/// A hook's programs: an entry and an exit program, or one program for
/// both (a session), which runs as the entry.
struct Pair {
    entry: Box<dyn Loaded>,
    exit: Option<Box<dyn Loaded>>,
}

impl Pair {
    /// Its programs by side, exit first: the order they are attached in.
    fn sides(&self) -> impl Iterator<Item = (Side, &dyn Loaded)> {
        let exit = self.exit.as_deref().map(|exit| (Side::Exit, exit));
        exit.into_iter().chain([(Side::Entry, &*self.entry)])
    }
}

/// Both sides, exit first: the order a pair is loaded in.
const SIDES: [Side; 2] = [Side::Exit, Side::Entry];

/// The `drm` module's BTF object id, `None` where DRM is built in or not
/// loaded. A new id means the module was reloaded.
pub fn drm_identity() -> Option<u32> {
    syscall::module_btf("drm").ok().flatten().map(|(id, _)| id)
}

/// Attaches per `config.hook`, adopting the pinned links if they are of
/// the same hook and run these very programs on these maps.
pub fn attach(
    ebpf: &mut Ebpf,
    config: &Config,
    vmlinux: &Btf,
    fresh_maps: bool,
) -> Result<Attached, ProbeError> {
    let candidates: &[Hook] = match config.hook {
        HookChoice::Auto => &[
            Hook::KprobeSession,
            Hook::KprobeMulti,
            Hook::Kprobe,
            Hook::Fentry,
        ],
        HookChoice::KprobeSession => &[Hook::KprobeSession],
        HookChoice::Fentry => &[Hook::Fentry],
        HookChoice::Kprobe => &[Hook::Kprobe],
        HookChoice::KprobeMulti => &[Hook::KprobeMulti],
    };
    let mut failures = Vec::new();
    let mut denied = false;
    for &wanted in candidates {
        let attempt = (wanted.kind().load)(ebpf, vmlinux, config.debug).and_then(|(hook, pair)| {
            let mut adopt = !fresh_maps;
            for (side, loaded) in pair.sides() {
                let tag = syscall::program_stats(loaded.fd(ebpf)?)
                    .map_err(|e| ProbeError::Other(format!("cannot read the program's tag: {e}")))?
                    .tag;
                adopt &= pinned::runs(&config.pin_dir, hook, side, tag);
            }
            if !adopt {
                pinned::link_and_pin(ebpf, pair, &config.pin_dir)?;
            } else if pair.exit.is_none() {
                pinned::unpin_exit(&config.pin_dir);
            }
            Ok((hook, adopt))
        });
        match attempt {
            Ok((hook, adopt)) => {
                let how = if adopt {
                    format!(
                        "adopted the pinned {} links with their counts",
                        hook.as_str()
                    )
                } else {
                    format!("{} attached", hook.as_str())
                };
                let mut reason = format!("{how}; it {}", hook.kind().exactness);
                if !failures.is_empty() {
                    reason.push_str(&format!(" ({})", failures.join("; ")));
                }
                super::pins::forget_replaced(&config.pin_dir);
                return Ok(Attached { hook, reason });
            }
            Err(e) => {
                denied |= matches!(e, ProbeError::Permission(_));
                failures.push(format!("{} unavailable: {}", wanted.as_str(), e.reason()));
            }
        }
    }
    // Where a privilege is what stopped one hook, granting it is the fix,
    // whatever the others lacked.
    if denied {
        Err(ProbeError::AttachDenied(failures.join("; ")))
    } else {
        Err(ProbeError::Attach(failures.join("; ")))
    }
}

/// Attaches `hook` anew (the `drm` module was reloaded), replacing the pins.
pub fn reattach(
    ebpf: &mut Ebpf,
    config: &Config,
    vmlinux: &Btf,
    hook: Hook,
) -> Result<Attached, ProbeError> {
    let (hook, pair) = (hook.kind().load)(ebpf, vmlinux, config.debug)
        .map_err(|e| ProbeError::Attach(e.to_string()))?;
    pinned::link_and_pin(ebpf, pair, &config.pin_dir)?;
    Ok(Attached {
        hook,
        reason: format!(
            "{} re-attached after the drm module was reloaded",
            hook.as_str()
        ),
    })
}

/// The fd of program `name` of the object, once loaded.
fn object_program_fd<'a>(ebpf: &'a Ebpf, name: &str) -> Result<BorrowedFd<'a>, ProbeError> {
    Ok(ebpf
        .program(name)
        .ok_or_else(|| ProbeError::Other(format!("the object has no program {name}")))?
        .fd()
        .map_err(|e| ProbeError::Other(e.to_string()))?
        .as_fd())
}

/// Program `name` of the object as its type `P`.
fn program_mut<'a, P>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut P, ProbeError>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let prog = ebpf
        .program_mut(name)
        .ok_or_else(|| ProbeError::Other(format!("the object has no program {name}")))?;
    prog.try_into()
        .map_err(|e: aya::programs::ProgramError| ProbeError::Other(e.to_string()))
}

/// A failed load by aya: its first line, or all of it (the verifier's
/// log) with `debug`.
fn aya_load_error(e: &(dyn std::error::Error + 'static), debug: bool) -> ProbeError {
    let text = e.to_string();
    let text = if debug {
        text
    } else {
        text.lines().next().unwrap_or_default().to_owned()
    };
    ProbeError::classify(e, Stage::Load, text, ProbeError::Other)
}

/// A failed `BPF_PROG_LOAD` of ours, with the verifier's log if asked.
pub(in crate::probe) fn load_error(
    what: &str,
    (e, log): (io::Error, String),
    debug: bool,
) -> ProbeError {
    let log = if debug {
        format!("\n{log}")
    } else {
        String::new()
    };
    let text = format!("{what}: {e}{log}");
    ProbeError::classify(&e, Stage::Load, text, ProbeError::Other)
}

/// A failed attach, refused for lack of privilege or not.
fn attach_error(e: &(dyn std::error::Error + 'static)) -> ProbeError {
    ProbeError::classify(e, Stage::Attach, chain(e), ProbeError::Attach)
}

/// An error and its sources on one line (aya's top-level messages omit
/// the errno).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
