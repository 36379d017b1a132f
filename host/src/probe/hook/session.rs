//! A kprobe session (Linux 6.10): one fprobe runs one program as
//! `drm_ioctl` enters and, only for the calls its entry kept, as it
//! returns. The kprobe types' exit program runs for every call, kept or
//! not; here a filtered call costs the entry alone. Exact like the other
//! kprobe types: handlers run with preemption disabled.

use std::{
    os::fd::{AsFd as _, BorrowedFd, OwnedFd},
    path::Path,
};

use aya::Ebpf;
use kubenpu_ebpf::{HOOKED_FUNCTION, SESSION_IS_RETURN_CALL, program};

use super::{Hook, Kind, Loaded, Pair, kprobe, load_error, pinned};
use crate::{
    probe::{Btf, ProbeError, Stage, kfunc, relocate::Relocated, syscall, syscall::Side},
    program::OBJECT,
};

/// Why a session is refused where fprobe takes return hooks from a pool.
/// Before Linux 6.14 (fprobe on rethook, `struct fprobe` has a `rethook`)
/// an fprobe with a return handler takes one from a pool of two per CPU
/// before it runs the entry handler, and where the pool is dry it runs
/// neither: a session would then miss the whole call, counted nowhere but
/// in the link's own `missed`. kprobe.multi's entry link has no return
/// handler, so its calls are all counted; only their exits may go
/// unmeasured (counted as such). From 6.14 fprobe keeps its return state
/// on each task's function-graph stack.
const POOLED_RETURNS: &str = "this kernel's fprobe (before Linux 6.14) skips a session's whole call, uncounted, when more calls are in flight than its pool of return hooks (two per CPU) holds; use kprobe-multi";

pub(super) const KIND: Kind = Kind {
    name: "kprobe-session",
    // A session link shows as a kprobe.multi link in its fdinfo.
    entry_link_types: &["kprobe_multi"],
    exit_link_types: &[],
    exactness: kprobe::EXACTNESS,
    load,
};

fn load(ebpf: &mut Ebpf, vmlinux: &Btf, debug: bool) -> Result<(Hook, Pair), ProbeError> {
    if vmlinux.member_offset("fprobe", "rethook").is_ok() {
        return Err(ProbeError::Attach(POOLED_RETURNS.into()));
    }
    let fd =
        load_kprobe_session(ebpf, OBJECT, program::SESSION, vmlinux, debug).map_err(
            |e| match e {
                ProbeError::Attach(_) => ProbeError::Attach(
                    "this kernel has no kprobe sessions (Linux 6.10 and later have them)".into(),
                ),
                other => other,
            },
        )?;
    let pair = Pair {
        entry: Box::new(Session(fd)),
        exit: None,
    };
    Ok((Hook::KprobeSession, pair))
}

/// Loads kprobe program `name` of `object` (whose maps `ebpf` created)
/// for a kprobe session link, its calls of `bpf_session_is_return`
/// linked (a program that returns 0 without asking runs on both sides
/// alike).
pub fn load_kprobe_session(
    ebpf: &Ebpf,
    object: &[u8],
    name: &str,
    vmlinux: &Btf,
    debug: bool,
) -> Result<OwnedFd, ProbeError> {
    let mut insns = Relocated::new(ebpf, object)?.instructions(name)?;
    kfunc::link(
        &mut insns,
        SESSION_IS_RETURN_CALL,
        "bpf_session_is_return",
        vmlinux,
    )?;
    syscall::load_program(&insns, name, syscall::Target::KprobeSession, debug)
        .map_err(|e| load_error("loading a kprobe session", e, debug))
}

/// Attaches a program [`load_kprobe_session`] loaded to `drm_ioctl`;
/// returns the link.
pub fn link_kprobe_session(program: BorrowedFd<'_>) -> Result<OwnedFd, ProbeError> {
    syscall::kprobe_session_link(program, HOOKED_FUNCTION).map_err(|e| {
        let text = format!("BPF_LINK_CREATE kprobe session: {e}");
        ProbeError::classify(&e, Stage::Attach, text, ProbeError::Attach)
    })
}

/// The session program, held by its fd.
struct Session(OwnedFd);

impl Loaded for Session {
    fn fd<'a>(&'a self, _: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError> {
        Ok(self.0.as_fd())
    }

    fn link(self: Box<Self>, _: &mut Ebpf, _: Side, path: &Path) -> Result<(), ProbeError> {
        let link = link_kprobe_session(self.0.as_fd())?;
        syscall::pin(link.as_fd(), path).map_err(|e| pinned::pin_error(path, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use kubenpu_ebpf::{SESSION_IS_RETURN_CALL, program};

    use crate::{probe::kfunc, program::OBJECT};

    /// The object's session program asks whether it runs at the return
    /// through the placeholder the loader links: without it, the return
    /// side would count every call again.
    #[test]
    fn the_session_program_calls_the_placeholder_the_loader_links() {
        let object = aya_obj::Object::parse(OBJECT).unwrap();
        let session = &object.programs[program::SESSION];
        let insns = &object.functions[&session.function_key()].instructions;
        assert_eq!(kfunc::calls(insns, SESSION_IS_RETURN_CALL).count(), 1);
    }
}
