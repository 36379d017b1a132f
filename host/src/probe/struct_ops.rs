//! struct_ops: a kernel interface (a struct of function pointers, such as
//! sched_ext's `sched_ext_ops`) implemented by BPF programs. aya 0.14 has
//! none, so the agent does what libbpf does:
//!
//! 1. loads each callback as a struct_ops program for its member of the
//!    struct (by the member's index), its kfunc calls linked;
//! 2. fills a value of the kernel's wrapper type, `struct
//!    bpf_struct_ops_<ops>`, whose `data` member is the struct: each
//!    function member holds its program's fd, the other members the
//!    values given, everything else zero;
//! 3. writes it into a struct_ops map made for that type with
//!    `BPF_F_LINK`;
//! 4. attaches the map with a link. Closing the link (or the agent dying
//!    with it unpinned) detaches the whole interface.
//!
//! Every offset and index comes from the running kernel's BTF.

use std::{
    os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd},
    path::Path,
};

use aya::Ebpf;

use super::{
    Btf, ProbeError, Stage, hook::load_error, inflight, kfunc, relocate::Relocated, syscall,
};

/// A value for one of the struct's members that is not a function.
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    /// A name, in a `char[128]` (as sched_ext's is): at most 127 bytes,
    /// NUL-padded.
    Text(&'a str),
    /// A 32-bit integer.
    U32(u32),
    /// A 64-bit integer.
    U64(u64),
}

/// One implementation of a struct_ops type.
#[derive(Debug, Clone, Copy)]
pub struct Interface<'a> {
    /// The struct, such as `sched_ext_ops`.
    pub ops: &'a str,
    /// The name of the map, as `bpftool` shows it.
    pub map_name: &'a str,
    /// Each callback: member, program and whether it may sleep.
    pub callbacks: &'a [(&'a str, &'a str, bool)],
    /// The programs' kfunc placeholders and the kfuncs they stand for.
    pub kfuncs: &'a [(i32, &'a str)],
    /// The members that are not functions, and their values.
    pub fields: &'a [(&'a str, Field<'a>)],
}

/// A callback loaded for its member.
pub struct Loaded {
    /// The member's byte offset in the struct.
    offset: u32,
    /// The program.
    program: OwnedFd,
}

/// Loads `interface`'s callbacks from `object` (whose maps `ebpf` made),
/// their kfunc calls linked, each as a struct_ops program for its member.
pub fn load(
    ebpf: &Ebpf,
    object: &[u8],
    vmlinux: &Btf,
    interface: &Interface<'_>,
    debug: bool,
) -> Result<Vec<Loaded>, ProbeError> {
    let ops = interface.ops;
    let (ops_id, _) = vmlinux.struct_id(ops).map_err(ProbeError::Layout)?;
    let relocated = Relocated::new(ebpf, object)?;
    let mut loaded = Vec::with_capacity(interface.callbacks.len());
    for &(member, program, sleepable) in interface.callbacks {
        let (index, offset) = vmlinux
            .member_index(ops, member)
            .map_err(ProbeError::Layout)?;
        let mut insns = relocated.instructions(program)?;
        for &(placeholder, name) in interface.kfuncs {
            // Not an attach failure: a kernel older than the callbacks.
            kfunc::link(&mut insns, placeholder, name, vmlinux).map_err(|e| match e {
                ProbeError::Attach(missing) => {
                    ProbeError::Other(format!("{missing}, which {ops}.{member} calls"))
                }
                other => other,
            })?;
        }
        let target = syscall::Target::StructOps {
            btf_id: ops_id,
            member: index,
            sleepable,
        };
        let program = syscall::load_program(&insns, program, target, debug)
            .map_err(|e| load_error(&format!("loading {ops}.{member}"), e, debug))?;
        loaded.push(Loaded { offset, program });
    }
    Ok(loaded)
}

/// Attaches `interface` with its `callbacks` (from [`load`]; none for an
/// interface of defaults, such as a sched_ext scheduler that only has a
/// name). Returns the link.
pub fn attach(
    vmlinux: &Btf,
    interface: &Interface<'_>,
    callbacks: &[Loaded],
) -> Result<OwnedFd, ProbeError> {
    let ops = interface.ops;
    let layout = ProbeError::Layout;
    let (_, ops_size) = vmlinux.struct_id(ops).map_err(layout)?;
    let wrapper = format!("bpf_struct_ops_{ops}");
    let (value_id, value_size) = vmlinux.struct_id(&wrapper).map_err(layout)?;
    let data = vmlinux.member_offset(&wrapper, "data").map_err(layout)? as usize;
    let mut value = vec![0u8; value_size as usize];
    if data + ops_size as usize > value.len() {
        return Err(layout(format!("{wrapper} is smaller than its {ops}")));
    }
    for callback in callbacks {
        let fd = u64::from(callback.program.as_raw_fd() as u32);
        put(
            &mut value,
            data + callback.offset as usize,
            &fd.to_ne_bytes(),
        );
    }
    for &(member, field) in interface.fields {
        let (_, offset) = vmlinux.member_index(ops, member).map_err(layout)?;
        let at = data + offset as usize;
        match field {
            Field::Text(text) if text.len() < 128 => put(&mut value, at, text.as_bytes()),
            Field::Text(text) => {
                return Err(ProbeError::Other(format!(
                    "{ops}.{member} holds 127 bytes, not {text:?}"
                )));
            }
            Field::U32(n) => put(&mut value, at, &n.to_ne_bytes()),
            Field::U64(n) => put(&mut value, at, &n.to_ne_bytes()),
        }
    }

    let kernel = |what: &str, e: std::io::Error, stage: Stage| {
        let text = format!("{what} {ops}: {e}");
        ProbeError::classify(&e, stage, text, ProbeError::Other)
    };
    // The kernel wants BTF of ours beside the map, whatever it describes.
    let btf = syscall::load_btf(&inflight::btf(1))
        .map_err(|e| kernel("cannot load BTF for", e, Stage::Load))?;
    let map = syscall::struct_ops_map(interface.map_name, value_id, value_size, btf.as_fd())
        .map_err(|e| kernel("cannot create the struct_ops map of", e, Stage::Load))?;
    syscall::update_elem(map.as_fd(), 0, &value)
        .map_err(|e| kernel("the kernel refused the callbacks of", e, Stage::Load))?;
    syscall::struct_ops_link(map.as_fd()).map_err(|e| kernel("cannot attach", e, Stage::Attach))
}

/// Pins `link` at `path` on bpffs, so that it outlives the agent.
pub fn pin(link: BorrowedFd<'_>, path: &Path) -> Result<(), ProbeError> {
    syscall::pin(link, path).map_err(|e| ProbeError::Pin {
        path: path.display().to_string(),
        error: e.to_string(),
    })
}

/// Copies `bytes` into `value` at `at`, within bounds the caller checked
/// against the struct's size.
fn put(value: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(slot) = value.get_mut(at..at + bytes.len()) {
        slot.copy_from_slice(bytes);
    }
}
