//! A hook's links and programs pinned under the pin directory: whether
//! the pinned ones can be adopted, and replacing them without a gap.

use std::{
    fs,
    os::fd::AsFd as _,
    path::{Path, PathBuf},
};

use aya::{Ebpf, programs::links::FdLink};

use super::{Hook, Pair, chain};
use crate::probe::{ProbeError, pins, syscall, syscall::Side};

/// Whether the link of `side` pinned under `pin_dir` is a `hook` link
/// running the program tagged `tag`, and that program is pinned too (its
/// miss counter is read from there).
pub(super) fn runs(pin_dir: &Path, hook: Hook, side: Side, tag: u64) -> bool {
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

/// Attaches both sides (exit first), pins the new links and programs,
/// then unpins the old ones: the hook is never absent, and a replaced
/// program stops only once its successor runs. A hook without an exit
/// program (a session) unpins the exit side a pair left.
pub(super) fn link_and_pin(ebpf: &mut Ebpf, pair: Pair, pin_dir: &Path) -> Result<(), ProbeError> {
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
    let without_exit = exit.is_none();
    let sides = exit.map(|exit| (Side::Exit, exit));
    for (side, loaded) in sides.into_iter().chain([(Side::Entry, entry)]) {
        let (link_path, program_path) = (
            pins::link_path(pin_dir, side),
            pins::program_path(pin_dir, side),
        );
        let (staged_link, staged_program) =
            (staged(link_path.clone()), staged(program_path.clone()));
        for path in [&staged_link, &staged_program] {
            let _ = fs::remove_file(path);
        }
        syscall::pin(loaded.fd(ebpf)?, &staged_program)
            .map_err(|e| pin_error(&staged_program, e.to_string()))?;
        loaded.link(ebpf, side, &staged_link)?;
        renames.push((staged_link, link_path));
        renames.push((staged_program, program_path));
    }
    for (staged, path) in renames {
        let _ = fs::remove_file(&path);
        fs::rename(&staged, &path).map_err(|e| pin_error(&path, e.to_string()))?;
    }
    if without_exit {
        unpin_exit(pin_dir);
    }
    Ok(())
}

/// Unpins the exit side a pair left, for a hook that has none: also where
/// a session is adopted, so that an exit program an agent stopped between
/// pinning a session and unpinning the pair does not run on beside it.
pub(super) fn unpin_exit(pin_dir: &Path) {
    for path in [
        pins::link_path(pin_dir, Side::Exit),
        pins::program_path(pin_dir, Side::Exit),
    ] {
        let _ = fs::remove_file(path);
    }
}

/// Pins a link aya made at `path`.
pub(super) fn pin_fd_link(link: FdLink, path: &Path) -> Result<(), ProbeError> {
    link.pin(path)
        .map(drop)
        .map_err(|e| pin_error(path, chain(&e)))
}

pub(super) fn pin_error(path: &Path, error: String) -> ProbeError {
    ProbeError::Pin {
        path: path.display().to_string(),
        error,
    }
}
