//! Choosing, loading and attaching the hook on `drm_ioctl`, and keeping
//! its link and program pinned.
//!
//! Exactness decides the order `auto` tries them in. An fentry program
//! runs behind a per-program, per-CPU recursion guard with migration
//! disabled but preemption enabled: on a kernel that preempts kernel code
//! (full or lazy preemption, as Debian's 7.x kernels do, or any
//! PREEMPT_DYNAMIC kernel booted with `preempt=full`), a thread preempted
//! inside the program makes every other thread's call on that CPU skip it
//! until it runs again. Measured with four threads on two vCPUs on 7.2:
//! 10-18 % of calls skipped, visible only in the program's
//! `recursion_misses`. kprobe and kprobe.multi handlers run with
//! preemption disabled, so no call is skipped. So `auto` takes
//! kprobe.multi (no `perf_event_open`: no CAP_SYS_ADMIN where
//! `perf_event_paranoid` is above 2), then kprobe, and fentry last;
//! whatever a hook still skips is exported as `recursion` losses.
//!
//! Each hook is a pair: the entry program counts the call, the exit
//! program (fexit, a kretprobe, or a kprobe.multi return link) measures
//! how it ended. The exit side is attached first, so no call is ever seen
//! entering without its return being watched.

use std::{
    borrow::Cow,
    fs, io,
    os::fd::{AsFd as _, BorrowedFd, OwnedFd},
    path::{Path, PathBuf},
};

use aya::{
    Ebpf,
    programs::{FEntry, FExit, KProbe, ProgramInfo, links::FdLink, loaded_programs},
};
use kubenpu_ebpf::{HOOKED_FUNCTION, program};

use super::{
    Btf, Config, ProbeError, Stage, errno, pins,
    relocate::Relocated,
    syscall::{self, Side},
};
use crate::program::OBJECT;

/// The hook the agent is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookChoice {
    /// kprobe.multi, else kprobe, else fentry: the first the kernel
    /// allows, in order of exactness.
    Auto,
    /// fentry only (cheapest, but skips calls where kernel code is
    /// preempted; those are counted as `recursion` losses).
    Fentry,
    /// kprobe only.
    Kprobe,
    /// kprobe.multi (fprobe) only.
    KprobeMulti,
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
}

impl Hook {
    /// The name used in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Fentry => "fentry",
            Hook::FentryModule => "fentry-module",
            Hook::Kprobe => "kprobe",
            Hook::KprobeMulti => "kprobe-multi",
        }
    }

    /// The `link_type`s a link of this hook's `side` may show in its
    /// fdinfo: newer kernels (7.x) name a kprobe.multi return link
    /// `kretprobe_multi`, older ones `kprobe_multi` like the entry's.
    fn link_types(self, side: Side) -> &'static [&'static str] {
        match (self, side) {
            (Hook::Fentry | Hook::FentryModule, _) => &["tracing"],
            (Hook::Kprobe, _) => &["perf"],
            (Hook::KprobeMulti, Side::Entry) => &["kprobe_multi"],
            (Hook::KprobeMulti, Side::Exit) => &["kretprobe_multi", "kprobe_multi"],
        }
    }

    /// Why this hook counts every call, or what it may skip, for the log.
    fn exactness(self) -> &'static str {
        match self {
            Hook::Kprobe | Hook::KprobeMulti => {
                "runs with preemption disabled, so no call is skipped but where the kernel is already running a BPF program on that CPU (counted as recursion losses)"
            }
            Hook::Fentry | Hook::FentryModule => {
                "skips calls while a preempted thread is inside it on the same CPU; they are counted as recursion losses"
            }
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

/// One loaded program, not yet attached.
enum Loaded {
    /// The object's program of this name, held by aya's `Ebpf`.
    InObject(&'static str),
    /// An fentry program loaded against the `drm` module.
    EntryOnModule(Box<FEntry>),
    /// An fexit program loaded against the `drm` module.
    ExitOnModule(Box<FExit>),
    /// A kprobe.multi program, loaded here (aya 0.14 has none).
    Multi(OwnedFd),
}

/// A hook's two programs.
struct Pair {
    entry: Loaded,
    exit: Loaded,
}

impl Pair {
    fn side(&self, side: Side) -> &Loaded {
        match side {
            Side::Entry => &self.entry,
            Side::Exit => &self.exit,
        }
    }
}

/// Both sides, exit first: the order they are attached in.
const SIDES: [Side; 2] = [Side::Exit, Side::Entry];

/// The object's program for `side` of a kprobe-family or fentry-family
/// hook.
fn program_name(hook: Hook, side: Side) -> &'static str {
    match (hook, side) {
        (Hook::Kprobe | Hook::KprobeMulti, Side::Entry) => program::KPROBE,
        (Hook::Kprobe | Hook::KprobeMulti, Side::Exit) => program::KRETPROBE,
        (Hook::Fentry | Hook::FentryModule, Side::Entry) => program::FENTRY,
        (Hook::Fentry | Hook::FentryModule, Side::Exit) => program::FEXIT,
    }
}

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
        HookChoice::Auto => &[Hook::KprobeMulti, Hook::Kprobe, Hook::Fentry],
        HookChoice::Fentry => &[Hook::Fentry],
        HookChoice::Kprobe => &[Hook::Kprobe],
        HookChoice::KprobeMulti => &[Hook::KprobeMulti],
    };
    let mut failures = Vec::new();
    let mut denied = false;
    for &wanted in candidates {
        let attempt = load(ebpf, wanted, vmlinux, config.debug).and_then(|(hook, pair)| {
            let mut adopt = !fresh_maps;
            for side in SIDES {
                let tag = syscall::program_stats(program_fd(ebpf, pair.side(side))?)
                    .map_err(|e| ProbeError::Other(format!("cannot read the program's tag: {e}")))?
                    .tag;
                adopt &= runs_pinned(&config.pin_dir, hook, side, tag);
            }
            if !adopt {
                link_and_pin(ebpf, hook, pair, &config.pin_dir)?;
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
                let mut reason = format!("{how}; it {}", hook.exactness());
                if !failures.is_empty() {
                    reason.push_str(&format!(" ({})", failures.join("; ")));
                }
                pins::forget_replaced(&config.pin_dir);
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

/// Whether the link of `side` pinned under `pin_dir` is a `hook` link
/// running the program tagged `tag`, and that program is pinned too (its
/// miss counter is read from there).
fn runs_pinned(pin_dir: &Path, hook: Hook, side: Side, tag: u64) -> bool {
    let program = syscall::open_pinned(&pins::program_path(pin_dir, side))
        .and_then(|fd| syscall::program_stats(fd.as_fd()));
    let link = syscall::pinned_link(&pins::link_path(pin_dir, side));
    matches!(
        (link, program),
        (Ok(link), Ok(program))
            if hook.link_types(side).contains(&link.link_type.as_str())
                && link.tag == tag
                && program.tag == tag
    )
}

/// Attaches `hook` anew (the `drm` module was reloaded), replacing the pins.
pub fn reattach(
    ebpf: &mut Ebpf,
    config: &Config,
    vmlinux: &Btf,
    hook: Hook,
) -> Result<Attached, ProbeError> {
    let wanted = if hook == Hook::FentryModule {
        Hook::Fentry
    } else {
        hook
    };
    let (hook, pair) =
        load(ebpf, wanted, vmlinux, config.debug).map_err(|e| ProbeError::Attach(e.to_string()))?;
    link_and_pin(ebpf, hook, pair, &config.pin_dir)?;
    Ok(Attached {
        hook,
        reason: format!(
            "{} re-attached after the drm module was reloaded",
            hook.as_str()
        ),
    })
}

/// Loads both programs for `wanted`; returns the exact hook and them.
fn load(
    ebpf: &mut Ebpf,
    wanted: Hook,
    vmlinux: &Btf,
    debug: bool,
) -> Result<(Hook, Pair), ProbeError> {
    let err = |e: &(dyn std::error::Error + 'static)| {
        ProbeError::classify(e, Stage::Load, verbose(e, debug), ProbeError::Other)
    };
    let name = |side| program_name(wanted, side);
    match wanted {
        Hook::Kprobe => {
            for side in SIDES {
                let prog: &mut KProbe = program_mut(ebpf, name(side))?;
                if prog.fd().is_err() {
                    prog.load().map_err(|e| err(&e))?;
                }
            }
            let pair = Pair {
                entry: Loaded::InObject(name(Side::Entry)),
                exit: Loaded::InObject(name(Side::Exit)),
            };
            Ok((Hook::Kprobe, pair))
        }
        Hook::KprobeMulti => {
            // The kprobe programs' instructions: a kprobe.multi program
            // gets the same pt_regs context.
            let pair = Pair {
                entry: Loaded::Multi(load_kprobe_multi(ebpf, OBJECT, name(Side::Entry), debug)?),
                exit: Loaded::Multi(load_kprobe_multi(ebpf, OBJECT, name(Side::Exit), debug)?),
            };
            Ok((Hook::KprobeMulti, pair))
        }
        Hook::Fentry | Hook::FentryModule if vmlinux.func_id(HOOKED_FUNCTION, None).is_some() => {
            let btf = aya::Btf::from_sys_fs().map_err(|e| err(&e))?;
            let entry: &mut FEntry = program_mut(ebpf, program::FENTRY)?;
            if entry.fd().is_err() {
                entry.load(HOOKED_FUNCTION, &btf).map_err(|e| err(&e))?;
            }
            let exit: &mut FExit = program_mut(ebpf, program::FEXIT)?;
            if exit.fd().is_err() {
                exit.load(HOOKED_FUNCTION, &btf).map_err(|e| err(&e))?;
            }
            let pair = Pair {
                entry: Loaded::InObject(program::FENTRY),
                exit: Loaded::InObject(program::FEXIT),
            };
            Ok((Hook::Fentry, pair))
        }
        Hook::Fentry | Hook::FentryModule => {
            let entry = load_on_module(
                ebpf,
                OBJECT,
                (program::FENTRY, Side::Entry),
                vmlinux,
                debug,
                // SAFETY: loaded as BPF_PROG_TYPE_TRACING, fentry.
                |info| unsafe { FEntry::from_program_info(info, Cow::Borrowed(program::FENTRY)) },
            )?;
            let exit = load_on_module(
                ebpf,
                OBJECT,
                (program::FEXIT, Side::Exit),
                vmlinux,
                debug,
                // SAFETY: loaded as BPF_PROG_TYPE_TRACING, fexit.
                |info| unsafe { FExit::from_program_info(info, Cow::Borrowed(program::FEXIT)) },
            )?;
            let pair = Pair {
                entry: Loaded::EntryOnModule(Box::new(entry)),
                exit: Loaded::ExitOnModule(Box::new(exit)),
            };
            Ok((Hook::FentryModule, pair))
        }
    }
}

/// The fd of a loaded program.
fn program_fd<'a>(ebpf: &'a Ebpf, loaded: &'a Loaded) -> Result<BorrowedFd<'a>, ProbeError> {
    let other = |e: aya::programs::ProgramError| ProbeError::Other(e.to_string());
    Ok(match loaded {
        Loaded::Multi(fd) => fd.as_fd(),
        Loaded::EntryOnModule(prog) => prog.fd().map_err(other)?.as_fd(),
        Loaded::ExitOnModule(prog) => prog.fd().map_err(other)?.as_fd(),
        Loaded::InObject(name) => ebpf
            .program(name)
            .ok_or_else(|| ProbeError::Other(format!("the object has no program {name}")))?
            .fd()
            .map_err(other)?
            .as_fd(),
    })
}

fn verbose(e: &dyn std::fmt::Display, debug: bool) -> String {
    let text = e.to_string();
    if debug {
        text
    } else {
        text.lines().next().unwrap_or_default().to_owned()
    }
}

/// A failed `BPF_PROG_LOAD` of ours, with the verifier's log if asked.
pub(super) fn load_error(what: &str, (e, log): (io::Error, String), debug: bool) -> ProbeError {
    let log = if debug {
        format!("\n{log}")
    } else {
        String::new()
    };
    let text = format!("{what}: {e}{log}");
    ProbeError::classify(&e, Stage::Load, text, ProbeError::Other)
}

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

/// Loads kprobe (or kretprobe) program `name` of `object` (whose maps
/// `ebpf` created) for a kprobe.multi link: aya 0.14 cannot set its
/// attach type.
pub fn load_kprobe_multi(
    ebpf: &Ebpf,
    object: &[u8],
    name: &str,
    debug: bool,
) -> Result<OwnedFd, ProbeError> {
    let insns = Relocated::new(ebpf, object)?.instructions(name)?;
    syscall::load_program(&insns, name, syscall::Target::KprobeMulti, debug)
        .map_err(|e| load_error("loading kprobe.multi", e, debug))
}

/// Attaches a program [`load_kprobe_multi`] loaded to the entry or the
/// return of `drm_ioctl`; returns the link.
pub fn link_kprobe_multi(program: BorrowedFd<'_>, side: Side) -> Result<OwnedFd, ProbeError> {
    syscall::kprobe_multi_link(program, HOOKED_FUNCTION, side).map_err(|e| {
        let text = format!("BPF_LINK_CREATE kprobe.multi: {e}");
        ProbeError::classify(&e, Stage::Attach, text, ProbeError::Attach)
    })
}

/// Loads fentry or fexit program `name` of `object` (whose maps `ebpf`
/// created) against `drm_ioctl` in the `drm` module's BTF: aya 0.14 only
/// resolves attach targets in vmlinux BTF. `adopt` hands it to aya
/// (`FEntry` or `FExit::from_program_info`) while the load's fd still
/// keeps it alive.
pub fn load_on_module<P>(
    ebpf: &Ebpf,
    object: &[u8],
    (name, side): (&str, Side),
    vmlinux: &Btf,
    debug: bool,
    adopt: impl FnOnce(ProgramInfo) -> Result<P, aya::programs::ProgramError>,
) -> Result<P, ProbeError> {
    let other = |e: &dyn std::fmt::Display| ProbeError::Other(e.to_string());
    let (_, btf_obj) = syscall::module_btf("drm")
        .map_err(|e| other(&e))?
        .ok_or_else(|| {
            ProbeError::Attach(
                "drm_ioctl is neither in vmlinux BTF nor in a loaded drm module with BTF".into(),
            )
        })?;
    let module = Btf::from_file(Path::new("/sys/kernel/btf/drm"), Some(vmlinux))?;
    let btf_id = module
        .func_id(HOOKED_FUNCTION, Some(vmlinux))
        .ok_or_else(|| ProbeError::Attach("the drm module's BTF has no drm_ioctl".into()))?;
    let insns = Relocated::new(ebpf, object)?.instructions(name)?;
    let target = syscall::Target::ModuleTracing {
        btf_id,
        btf_obj: btf_obj.as_fd(),
        side,
    };
    let fd = syscall::load_program(&insns, name, target, debug)
        .map_err(|e| load_error("loading a tracing program against the drm module", e, debug))?;
    let id = syscall::program_stats(fd.as_fd())
        .map_err(|e| other(&e))?
        .id;
    let info = loaded_programs()
        .filter_map(Result::ok)
        .find(|p| p.id() == id)
        .ok_or_else(|| other(&"the loaded program vanished"))?;
    let program = adopt(info).map_err(|e| other(&e))?;
    // aya holds its own fd now; ours can go.
    drop(fd);
    Ok(program)
}

/// Attaches both sides (exit first), pins the new links and programs,
/// then unpins the old ones: the hook is never absent, and a replaced
/// program stops only once its successor runs.
fn link_and_pin(ebpf: &mut Ebpf, hook: Hook, pair: Pair, pin_dir: &Path) -> Result<(), ProbeError> {
    // bpffs reserves names with dots.
    let staged = |path: PathBuf| {
        let name = format!(
            "{}-next",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        path.with_file_name(name)
    };
    let mut renames = Vec::new();
    let Pair { entry, exit } = pair;
    for (side, loaded) in [(Side::Exit, exit), (Side::Entry, entry)] {
        let (link_path, program_path) = (
            pins::link_path(pin_dir, side),
            pins::program_path(pin_dir, side),
        );
        let (staged_link, staged_program) =
            (staged(link_path.clone()), staged(program_path.clone()));
        for path in [&staged_link, &staged_program] {
            let _ = fs::remove_file(path);
        }
        syscall::pin(program_fd(ebpf, &loaded)?, &staged_program)
            .map_err(|e| pin_err(&staged_program, e.to_string()))?;
        link_one(ebpf, hook, side, loaded, &staged_link)?;
        renames.push((staged_link, link_path));
        renames.push((staged_program, program_path));
    }
    for (staged, path) in renames {
        let _ = fs::remove_file(&path);
        fs::rename(&staged, &path).map_err(|e| pin_err(&path, e.to_string()))?;
    }
    Ok(())
}

fn pin_err(path: &Path, error: String) -> ProbeError {
    ProbeError::Pin {
        path: path.display().to_string(),
        error,
    }
}

/// Attaches one side's program and pins its link at `path`.
fn link_one(
    ebpf: &mut Ebpf,
    hook: Hook,
    side: Side,
    loaded: Loaded,
    path: &Path,
) -> Result<(), ProbeError> {
    match (hook, loaded) {
        (_, Loaded::Multi(prog)) => {
            let link = link_kprobe_multi(prog.as_fd(), side)?;
            syscall::pin(link.as_fd(), path).map_err(|e| pin_err(path, e.to_string()))
        }
        (Hook::Kprobe, _) => {
            let prog: &mut KProbe = program_mut(ebpf, program_name(hook, side))?;
            let id = prog
                .attach(HOOKED_FUNCTION, 0)
                .map_err(|e| attach_error(&e))?;
            let link: FdLink = prog
                .take_link(id)
                .map_err(|e| attach_error(&e))?
                .try_into()
                .map_err(|e| attach_error(&e))?;
            pin_fd_link(link, path)
        }
        (_, Loaded::EntryOnModule(mut prog)) => pin_fd_link(fentry_link(&mut prog)?, path),
        (_, Loaded::ExitOnModule(mut prog)) => pin_fd_link(fexit_link(&mut prog)?, path),
        (_, Loaded::InObject(name)) if side == Side::Exit => {
            pin_fd_link(fexit_link(program_mut(ebpf, name)?)?, path)
        }
        (_, Loaded::InObject(name)) => pin_fd_link(fentry_link(program_mut(ebpf, name)?)?, path),
    }
}

fn pin_fd_link(link: FdLink, path: &Path) -> Result<(), ProbeError> {
    link.pin(path)
        .map(drop)
        .map_err(|e| pin_err(path, chain(&e)))
}

fn fentry_link(prog: &mut FEntry) -> Result<FdLink, ProbeError> {
    let id = prog.attach().map_err(|e| trampoline_error(&e))?;
    Ok(prog.take_link(id).map_err(|e| attach_error(&e))?.into())
}

fn fexit_link(prog: &mut FExit) -> Result<FdLink, ProbeError> {
    let id = prog.attach().map_err(|e| trampoline_error(&e))?;
    Ok(prog.take_link(id).map_err(|e| attach_error(&e))?.into())
}

/// A failed fentry or fexit attach. ENOTSUPP there is a kernel that
/// cannot attach a BPF trampoline to a kernel function, having no ftrace
/// direct calls (arm64 before 6.4, or built with kCFI), which aya words as
/// "No error information"; the user needs to hear which hook works instead.
fn trampoline_error(e: &(dyn std::error::Error + 'static)) -> ProbeError {
    if errno(e) == Some(syscall::ENOTSUPP) {
        ProbeError::Attach(
            "this kernel cannot attach BPF trampolines to kernel functions (ENOTSUPP: no \
             ftrace direct calls, as on arm64 before 6.4): use --hook kprobe"
                .into(),
        )
    } else {
        attach_error(e)
    }
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
