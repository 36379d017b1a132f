//! The hook on the other drivers' ioctl entries (`dma_heap_ioctl`,
//! `nvidia_unlocked_ioctl`, ...), which take `drm_ioctl`'s arguments:
//! the hook's own pinned programs, linked to each entry function the
//! claimed character devices name, and pinned per function:
//!
//! ```text
//! <pin dir>/entries/<function>        the entry link
//! <pin dir>/entries/<function>-exit   the exit link (none for a session)
//! ```
//!
//! A restarted agent keeps the links that run the programs in force and
//! replaces the others (exit side first, as for `drm_ioctl`); functions no
//! longer wanted are unlinked. Only the kprobe types link this way: an
//! fentry program is verified against one function, so it would need a
//! load per entry, and under fentry the character devices are not
//! counted, in one line.

use std::{
    collections::BTreeSet,
    fs,
    os::fd::{AsFd as _, OwnedFd},
    path::{Path, PathBuf},
};

use aya::programs::{KProbe, ProbeKind, links::FdLink};

use super::{Hook, attach_error, pinned};
use crate::probe::{ProbeError, pins, syscall, syscall::Side};

/// Where the entry links are pinned.
fn dir(pin_dir: &Path) -> PathBuf {
    pin_dir.join("entries")
}

/// The suffix of a link pinned before it replaces the one in place (bpffs
/// refuses names with dots).
const STAGED: &str = "-next";

fn link_path(pin_dir: &Path, function: &str, side: Side) -> PathBuf {
    dir(pin_dir).join(match side {
        Side::Entry => function.to_owned(),
        Side::Exit => format!("{function}-exit"),
    })
}

/// How a hook type links its pinned programs to another function: the
/// kprobe types can; an fentry program is verified against one function.
#[derive(Clone, Copy)]
enum Linker {
    /// A kprobe session link (one program, both sides).
    Session,
    /// kprobe.multi links, entry and return.
    Multi,
    /// kprobe and kretprobe through `perf_event_open`.
    Perf,
}

impl Linker {
    fn of(hook: Hook) -> Option<Self> {
        match hook {
            Hook::KprobeSession => Some(Linker::Session),
            Hook::KprobeMulti => Some(Linker::Multi),
            Hook::Kprobe => Some(Linker::Perf),
            Hook::Fentry | Hook::FentryModule => None,
        }
    }

    /// The sides it links, exit first.
    fn sides(self) -> &'static [Side] {
        match self {
            Linker::Session => &[Side::Entry],
            Linker::Multi | Linker::Perf => &[Side::Exit, Side::Entry],
        }
    }
}

/// Makes the hook's programs run on exactly the `wanted` functions besides
/// `drm_ioctl`. Returns what changed, for the log; a function that cannot
/// be linked is an error naming it, after every other one is in place.
/// Under fentry every link goes: another hook's links would go on running
/// programs that are no longer the agent's.
pub fn sync(pin_dir: &Path, hook: Hook, wanted: &BTreeSet<String>) -> Result<String, ProbeError> {
    remove_staged(pin_dir);
    let linker = Linker::of(hook);
    let keep = |function: &String| linker.is_some() && wanted.contains(function);
    let mut changes = Vec::new();
    for function in pinned_functions(pin_dir) {
        if !keep(&function) {
            for side in [Side::Entry, Side::Exit] {
                let _ = fs::remove_file(link_path(pin_dir, &function, side));
            }
            changes.push(format!("unlinked from {function}"));
        }
    }
    let Some(linker) = linker else {
        if wanted.is_empty() {
            return Ok(changes.join("; "));
        }
        let functions: Vec<&str> = wanted.iter().map(String::as_str).collect();
        return Err(ProbeError::Other(format!(
            "the {} hook is verified against drm_ioctl alone, so {} (the claimed character devices' ioctl entries) are not hooked and their calls not counted: use a kprobe hook (--hook auto)",
            hook.as_str(),
            functions.join(", ")
        )));
    };
    let mut failures = Vec::new();
    for function in wanted {
        match link(pin_dir, hook, linker, function) {
            Ok(true) => changes.push(format!("{} linked to {function}", hook.as_str())),
            Ok(false) => {}
            Err(e) => failures.push(format!("{function}: {}", e.reason())),
        }
    }
    if failures.is_empty() {
        Ok(changes.join("; "))
    } else {
        Err(ProbeError::Other(format!(
            "cannot hook {}: the calls of their character devices are not counted",
            failures.join("; ")
        )))
    }
}

/// The names pinned under the entries' directory.
fn pinned_names(pin_dir: &Path) -> impl Iterator<Item = String> {
    fs::read_dir(dir(pin_dir))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
}

/// Removes links an agent staged and stopped before renaming into place:
/// left pinned, they would count every call on their function twice.
fn remove_staged(pin_dir: &Path) {
    for name in pinned_names(pin_dir).filter(|name| name.ends_with(STAGED)) {
        let _ = fs::remove_file(dir(pin_dir).join(name));
    }
}

/// The functions with a pinned entry link.
fn pinned_functions(pin_dir: &Path) -> BTreeSet<String> {
    pinned_names(pin_dir)
        .filter(|name| !name.ends_with(STAGED))
        .map(|name| name.strip_suffix("-exit").unwrap_or(&name).to_owned())
        .collect()
}

/// Links `function`'s sides that do not already run the pinned programs;
/// returns whether it linked any.
fn link(pin_dir: &Path, hook: Hook, linker: Linker, function: &str) -> Result<bool, ProbeError> {
    fs::create_dir_all(dir(pin_dir))
        .map_err(|e| pinned::pin_error(&dir(pin_dir), e.to_string()))?;
    let mut linked = false;
    for &side in linker.sides() {
        let program_path = pins::program_path(pin_dir, side);
        let program = syscall::open_pinned(&program_path)
            .map_err(|e| pinned::pin_error(&program_path, e.to_string()))?;
        let stats = syscall::program_stats(program.as_fd())
            .map_err(|e| ProbeError::Other(format!("cannot read the program's id: {e}")))?;
        let path = link_path(pin_dir, function, side);
        // The very program, not one of the same tag: a tag masks the maps,
        // and a program of a replaced layout counts into the old ones.
        let runs_it = |link: &syscall::LinkInfo| match link.prog_id {
            Some(id) => id == stats.id,
            None => link.tag == stats.tag,
        };
        let current = syscall::pinned_link(&path).ok();
        if current.is_some_and(|link| {
            runs_it(&link) && hook.link_types(side).contains(&link.link_type.as_str())
        }) {
            continue;
        }
        // Staged, then renamed over the old link: the function is never
        // without one of them.
        let staged = path.with_file_name(format!(
            "{}{STAGED}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        let _ = fs::remove_file(&staged);
        make_link(linker, side, program, &program_path, function, &staged)?;
        fs::rename(&staged, &path).map_err(|e| pinned::pin_error(&path, e.to_string()))?;
        linked = true;
    }
    Ok(linked)
}

/// Links `program` (pinned at `program_path`) to `side` of `function` as
/// `linker` does, and pins the link at `path`.
fn make_link(
    linker: Linker,
    side: Side,
    program: OwnedFd,
    program_path: &Path,
    function: &str,
    path: &Path,
) -> Result<(), ProbeError> {
    let pin = |link: OwnedFd| {
        syscall::pin(link.as_fd(), path).map_err(|e| pinned::pin_error(path, e.to_string()))
    };
    match linker {
        Linker::Session => pin(syscall::kprobe_session_link(program.as_fd(), function)
            .map_err(|e| ProbeError::Attach(format!("BPF_LINK_CREATE kprobe session: {e}")))?),
        Linker::Multi => pin(syscall::kprobe_multi_link(program.as_fd(), function, side)
            .map_err(|e| ProbeError::Attach(format!("BPF_LINK_CREATE kprobe.multi: {e}")))?),
        Linker::Perf => {
            let kind = match side {
                Side::Entry => ProbeKind::Entry,
                Side::Exit => ProbeKind::Return,
            };
            let mut probe = KProbe::from_pin(program_path, kind).map_err(|e| attach_error(&e))?;
            let id = probe.attach(function, 0).map_err(|e| attach_error(&e))?;
            let link: FdLink = probe
                .take_link(id)
                .map_err(|e| attach_error(&e))?
                .try_into()
                .map_err(|e| attach_error(&e))?;
            pinned::pin_fd_link(link, path)
        }
    }
}
