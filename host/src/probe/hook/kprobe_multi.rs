//! kprobe.multi: an fprobe, created through `BPF_LINK_CREATE` (no
//! `perf_event_open`), with a return link for the exit side. aya 0.14 has
//! no such program type, so the programs are loaded and linked here.

use std::{
    os::fd::{AsFd as _, BorrowedFd, OwnedFd},
    path::Path,
};

use aya::Ebpf;
use kubenpu_ebpf::HOOKED_FUNCTION;

use super::{Hook, Kind, Loaded, Pair, kprobe, load_error, pinned};
use crate::{
    probe::{Btf, ProbeError, Stage, relocate::Relocated, syscall, syscall::Side},
    program::OBJECT,
};

pub(super) const KIND: Kind = Kind {
    name: "kprobe-multi",
    entry_link_types: &["kprobe_multi"],
    // Newer kernels (7.x) name a return link `kretprobe_multi`, older ones
    // `kprobe_multi` like the entry's.
    exit_link_types: &["kretprobe_multi", "kprobe_multi"],
    exactness: kprobe::EXACTNESS,
    load,
};

fn load(ebpf: &mut Ebpf, _: &Btf, debug: bool) -> Result<(Hook, Pair), ProbeError> {
    let ebpf: &Ebpf = ebpf;
    let program = |side| -> Result<Box<dyn Loaded>, ProbeError> {
        let name = kprobe::program_name(side);
        Ok(Box::new(Multi(load_kprobe_multi(
            ebpf, OBJECT, name, debug,
        )?)))
    };
    let pair = Pair {
        entry: program(Side::Entry)?,
        exit: Some(program(Side::Exit)?),
    };
    Ok((Hook::KprobeMulti, pair))
}

/// A kprobe.multi program, held by its fd.
struct Multi(OwnedFd);

impl Loaded for Multi {
    fn fd<'a>(&'a self, _: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError> {
        Ok(self.0.as_fd())
    }

    fn link(self: Box<Self>, _: &mut Ebpf, side: Side, path: &Path) -> Result<(), ProbeError> {
        let link = link_kprobe_multi(self.0.as_fd(), side)?;
        syscall::pin(link.as_fd(), path).map_err(|e| pinned::pin_error(path, e.to_string()))
    }
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
