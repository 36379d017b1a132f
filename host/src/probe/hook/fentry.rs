//! fentry and fexit through a BPF trampoline: the cheapest to enter, but
//! skipped where a preempted thread is inside the program on the same CPU
//! (see the parent module). Against vmlinux BTF where DRM is built in,
//! else against the `drm` module's split BTF, which aya 0.14 cannot
//! resolve: those programs are loaded here and handed to aya.

use std::{
    borrow::Cow,
    os::fd::{AsFd as _, BorrowedFd},
    path::Path,
};

use aya::{
    Ebpf,
    programs::{
        FEntry, FExit, ProgramError, ProgramFd, ProgramInfo, links::FdLink, loaded_programs,
    },
};
use kubenpu_ebpf::{HOOKED_FUNCTION, program};

use super::{
    Hook, Kind, Loaded, Pair, attach_error, aya_load_error, load_error, object_program_fd, pinned,
    program_mut,
};
use crate::{
    probe::{Btf, ProbeError, errno, relocate::Relocated, syscall, syscall::Side},
    program::OBJECT,
};

const EXACTNESS: &str = "skips calls while a preempted thread is inside it on the same CPU; they are counted as recursion losses";

pub(super) const BUILT_IN: Kind = Kind {
    name: "fentry",
    entry_link_types: &["tracing"],
    exit_link_types: &["tracing"],
    exactness: EXACTNESS,
    load,
};

pub(super) const ON_MODULE: Kind = Kind {
    name: "fentry-module",
    ..BUILT_IN
};

fn load(ebpf: &mut Ebpf, vmlinux: &Btf, debug: bool) -> Result<(Hook, Pair), ProbeError> {
    if vmlinux.func_id(HOOKED_FUNCTION, None).is_some() {
        let btf = aya::Btf::from_sys_fs().map_err(|e| aya_load_error(&e, debug))?;
        let entry: &mut FEntry = program_mut(ebpf, program::FENTRY)?;
        if entry.fd().is_err() {
            entry
                .load(HOOKED_FUNCTION, &btf)
                .map_err(|e| aya_load_error(&e, debug))?;
        }
        let exit: &mut FExit = program_mut(ebpf, program::FEXIT)?;
        if exit.fd().is_err() {
            exit.load(HOOKED_FUNCTION, &btf)
                .map_err(|e| aya_load_error(&e, debug))?;
        }
        let pair = Pair {
            entry: Box::new(InObject(program::FENTRY)),
            exit: Some(Box::new(InObject(program::FEXIT))),
        };
        return Ok((Hook::Fentry, pair));
    }
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
        entry: Box::new(OnModule(entry)),
        exit: Some(Box::new(OnModule(exit))),
    };
    Ok((Hook::FentryModule, pair))
}

/// An fentry or fexit program aya holds.
trait Trampoline {
    fn program_fd(&self) -> Result<&ProgramFd, ProgramError>;
    /// Attaches it through a trampoline; returns the link.
    fn trampoline_link(&mut self) -> Result<FdLink, ProbeError>;
}

impl Trampoline for FEntry {
    fn program_fd(&self) -> Result<&ProgramFd, ProgramError> {
        self.fd()
    }

    fn trampoline_link(&mut self) -> Result<FdLink, ProbeError> {
        let id = self.attach().map_err(|e| trampoline_error(&e))?;
        Ok(self.take_link(id).map_err(|e| attach_error(&e))?.into())
    }
}

impl Trampoline for FExit {
    fn program_fd(&self) -> Result<&ProgramFd, ProgramError> {
        self.fd()
    }

    fn trampoline_link(&mut self) -> Result<FdLink, ProbeError> {
        let id = self.attach().map_err(|e| trampoline_error(&e))?;
        Ok(self.take_link(id).map_err(|e| attach_error(&e))?.into())
    }
}

/// The object's fentry or fexit program, loaded against vmlinux.
struct InObject(&'static str);

impl Loaded for InObject {
    fn fd<'a>(&'a self, ebpf: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError> {
        object_program_fd(ebpf, self.0)
    }

    fn link(self: Box<Self>, ebpf: &mut Ebpf, side: Side, path: &Path) -> Result<(), ProbeError> {
        let link = match side {
            Side::Entry => program_mut::<FEntry>(ebpf, self.0)?.trampoline_link()?,
            Side::Exit => program_mut::<FExit>(ebpf, self.0)?.trampoline_link()?,
        };
        pinned::pin_fd_link(link, path)
    }
}

/// An fentry or fexit program loaded against the `drm` module.
struct OnModule<P>(P);

impl<P: Trampoline> Loaded for OnModule<P> {
    fn fd<'a>(&'a self, _: &'a Ebpf) -> Result<BorrowedFd<'a>, ProbeError> {
        Ok(self
            .0
            .program_fd()
            .map_err(|e| ProbeError::Other(e.to_string()))?
            .as_fd())
    }

    fn link(mut self: Box<Self>, _: &mut Ebpf, _: Side, path: &Path) -> Result<(), ProbeError> {
        pinned::pin_fd_link(self.0.trampoline_link()?, path)
    }
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
    adopt: impl FnOnce(ProgramInfo) -> Result<P, ProgramError>,
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
