//! kprobe and kretprobe through `perf_event_open`: on every kernel, exact
//! (handlers run with preemption disabled), and the most expensive to
//! enter.

use std::{os::fd::BorrowedFd, path::Path};

use aya::{
    Ebpf,
    programs::{KProbe, links::FdLink},
};
use kubenpu_ebpf::{HOOKED_FUNCTION, program};

use super::{
    Hook, Kind, Loaded, Pair, SIDES, attach_error, aya_load_error, object_program_fd, pinned,
    program_mut,
};
use crate::probe::{Btf, ProbeError, syscall::Side};

/// Why the kprobe types count every call, for the log.
pub(super) const EXACTNESS: &str = "runs with preemption disabled, so no call is skipped but where the kernel is already running a BPF program on that CPU (counted as recursion losses)";

pub(super) const KIND: Kind = Kind {
    name: "kprobe",
    entry_link_types: &["perf"],
    exit_link_types: &["perf"],
    exactness: EXACTNESS,
    load,
};

/// The object's program for `side`; kprobe.multi runs the same
/// instructions, on the same `pt_regs` context.
pub(super) fn program_name(side: Side) -> &'static str {
    match side {
        Side::Entry => program::KPROBE,
        Side::Exit => program::KRETPROBE,
    }
}

fn load(ebpf: &mut Ebpf, _: &Btf, debug: bool) -> Result<(Hook, Pair), ProbeError> {
    for side in SIDES {
        let prog: &mut KProbe = program_mut(ebpf, program_name(side))?;
        if prog.fd().is_err() {
            prog.load().map_err(|e| aya_load_error(&e, debug))?;
        }
    }
    let pair = Pair {
        entry: Box::new(InObject(program_name(Side::Entry))),
        exit: Some(Box::new(InObject(program_name(Side::Exit)))),
    };
    Ok((Hook::Kprobe, pair))
}

/// A kprobe or kretprobe program of the object, held by aya.
struct InObject(&'static str);

impl Loaded for InObject {
    fn fd<'a>(&'a self, ebpf: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError> {
        object_program_fd(ebpf, self.0)
    }

    fn link(self: Box<Self>, ebpf: &mut Ebpf, _: Side, path: &Path) -> Result<(), ProbeError> {
        let prog: &mut KProbe = program_mut(ebpf, self.0)?;
        let id = prog
            .attach(HOOKED_FUNCTION, 0)
            .map_err(|e| attach_error(&e))?;
        let link: FdLink = prog
            .take_link(id)
            .map_err(|e| attach_error(&e))?
            .try_into()
            .map_err(|e| attach_error(&e))?;
        pinned::pin_fd_link(link, path)
    }
}
