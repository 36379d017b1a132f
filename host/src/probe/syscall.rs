//! The few `bpf(2)` commands aya 0.14 does not offer: finding a kernel
//! module's BTF object, loading a program with attach attributes aya
//! cannot set, kprobe.multi links, pinning by fd, reading a program's
//! miss counter and which program a pinned link runs, reading or folding
//! a counter map (one value per key, or one per CPU) in batches, and
//! creating a task storage map with the BTF it needs.
//!
//! Every command is built on the kernel's own `union bpf_attr` (aya-obj's
//! bindings). The one unsafe call, [`bpf`], is private; each public
//! function sizes the buffers it hands the kernel itself, from the map's
//! or object's own description, so no caller can get a size wrong.

use std::{
    ffi::{CStr, CString},
    fs, io,
    mem::size_of,
    os::{
        fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
        unix::ffi::OsStrExt as _,
    },
    path::Path,
};

use super::unpreempted::unpreempted;
use aya_obj::generated::{
    bpf_attach_type, bpf_attr, bpf_attr__bindgen_ty_1, bpf_btf_info, bpf_cmd, bpf_insn,
    bpf_map_info, bpf_map_type, bpf_prog_info, bpf_prog_type,
};

/// Plain kernel structs: every bit pattern, all zeroes included, is valid.
trait Plain: Copy {}
impl Plain for bpf_attr {}
impl Plain for bpf_btf_info {}
impl Plain for bpf_map_info {}
impl Plain for bpf_prog_info {}
impl Plain for bpf_attr__bindgen_ty_1 {}

/// A zeroed kernel struct: what every command expects in the fields it
/// does not use.
fn zeroed<T: Plain>() -> T {
    // SAFETY: `Plain` types are integers, arrays and unions of integers.
    unsafe { std::mem::zeroed() }
}

/// Runs `cmd` with `attr`.
///
/// # Safety
///
/// Every pointer `attr` holds must be valid for the kernel to read or
/// write as much as the sizes and counts in `attr` say, for the call.
unsafe fn bpf(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<i64> {
    // SAFETY: the buffer is a whole bpf_attr; the caller vouches for the
    // pointers inside it.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as i64,
            std::ptr::from_mut(attr),
            size_of::<bpf_attr>(),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Takes ownership of an fd the kernel just returned.
fn owned(fd: i64) -> OwnedFd {
    // SAFETY: a new fd, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// Kernel objects whose info `BPF_OBJ_GET_INFO_BY_FD` fills.
trait ObjectInfo: Plain {}
impl ObjectInfo for bpf_btf_info {}
impl ObjectInfo for bpf_map_info {}
impl ObjectInfo for bpf_prog_info {}

/// The info of a BPF object, with no output buffers asked for.
fn object_info<T: ObjectInfo>(fd: BorrowedFd<'_>) -> io::Result<T> {
    info_with(fd, zeroed())
}

/// The info of a BPF object, `info` carrying output buffers already.
fn info_with<T: ObjectInfo>(fd: BorrowedFd<'_>, mut info: T) -> io::Result<T> {
    let mut attr: bpf_attr = zeroed();
    attr.info.bpf_fd = fd.as_raw_fd() as u32;
    attr.info.info_len = size_of::<T>() as u32;
    attr.info.info = std::ptr::from_mut(&mut info) as u64;
    // SAFETY: `info` is a whole T, as info_len says; any buffers in it
    // were sized by the caller together with their length fields.
    unsafe { bpf(bpf_cmd::BPF_OBJ_GET_INFO_BY_FD, &mut attr) }?;
    Ok(info)
}

/// The BTF object the kernel loaded for module `name` (e.g. `drm`), with
/// its id; `None` if the module is not loaded or has no BTF.
pub fn module_btf(name: &str) -> io::Result<Option<(u32, OwnedFd)>> {
    let mut id = 0;
    loop {
        let mut next: bpf_attr = zeroed();
        next.__bindgen_anon_6.__bindgen_anon_1.start_id = id;
        // SAFETY: no pointers.
        match unsafe { bpf(bpf_cmd::BPF_BTF_GET_NEXT_ID, &mut next) } {
            // SAFETY: the kernel filled next_id.
            Ok(_) => id = unsafe { next.__bindgen_anon_6.next_id },
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        }
        let mut by_id: bpf_attr = zeroed();
        by_id.__bindgen_anon_6.__bindgen_anon_1.btf_id = id;
        // SAFETY: no pointers.
        let fd = match unsafe { bpf(bpf_cmd::BPF_BTF_GET_FD_BY_ID, &mut by_id) } {
            Ok(fd) => owned(fd),
            // Freed between the two calls.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        let mut name_buf = [0u8; 64];
        let mut info: bpf_btf_info = zeroed();
        info.name = name_buf.as_mut_ptr() as u64;
        info.name_len = name_buf.len() as u32;
        info_with(fd.as_fd(), info)?;
        let found = CStr::from_bytes_until_nul(&name_buf).map(|n| n.to_bytes() == name.as_bytes());
        if found == Ok(true) {
            return Ok(Some((id, fd)));
        }
    }
}

/// Which side of the call a program runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// As the function is entered (fentry, kprobe).
    Entry,
    /// As it returns (fexit, return probe).
    Exit,
}

/// What a program is loaded as, beyond its instructions.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// fentry or fexit on function `btf_id` of a module's BTF object.
    ModuleTracing {
        /// The function's BTF type id in the module's split BTF.
        btf_id: u32,
        /// The module's BTF object.
        btf_obj: BorrowedFd<'a>,
        /// fentry or fexit.
        side: Side,
    },
    /// A kprobe program for a kprobe.multi link.
    KprobeMulti,
    /// A kprobe program for a kprobe session link.
    KprobeSession,
    /// A BPF LSM program on hook `bpf_lsm_<hook>`, `btf_id` in vmlinux.
    Lsm {
        /// The hook's BTF function id in vmlinux.
        btf_id: u32,
    },
    /// A map-element iterator; `btf_id` is vmlinux's
    /// `bpf_iter_bpf_map_elem`.
    MapIterator {
        /// The iterator target's BTF type id in vmlinux.
        btf_id: u32,
    },
    /// One function member of a struct_ops type (such as
    /// `sched_ext_ops`).
    StructOps {
        /// The struct's BTF type id in vmlinux.
        btf_id: u32,
        /// The member's index in the struct.
        member: u32,
        /// Whether the program may sleep (only some members allow it).
        sleepable: bool,
    },
}

/// Loads `insns` (already relocated against their maps) as program `name`
/// for `target`. Returns the program fd, or the error with the verifier's
/// log.
pub fn load_program(
    insns: &[bpf_insn],
    name: &str,
    target: Target<'_>,
    verbose_log: bool,
) -> Result<OwnedFd, (io::Error, String)> {
    let license = c"GPL";
    let mut log = vec![0u8; if verbose_log { 16 << 20 } else { 256 << 10 }];
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_3.insn_cnt = insns.len() as u32;
    attr.__bindgen_anon_3.insns = insns.as_ptr() as u64;
    attr.__bindgen_anon_3.license = license.as_ptr() as u64;
    attr.__bindgen_anon_3.log_level = if verbose_log { 2 } else { 1 };
    attr.__bindgen_anon_3.log_size = log.len() as u32;
    attr.__bindgen_anon_3.log_buf = log.as_mut_ptr() as u64;
    let mut prog_name = [0; 16];
    for (to, &from) in prog_name.iter_mut().zip(name.as_bytes().iter().take(15)) {
        *to = from as std::ffi::c_char;
    }
    attr.__bindgen_anon_3.prog_name = prog_name;
    match target {
        Target::ModuleTracing {
            btf_id,
            btf_obj,
            side,
        } => {
            let attach = match side {
                Side::Entry => bpf_attach_type::BPF_TRACE_FENTRY,
                Side::Exit => bpf_attach_type::BPF_TRACE_FEXIT,
            };
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_TRACING as u32;
            attr.__bindgen_anon_3.expected_attach_type = attach as u32;
            attr.__bindgen_anon_3.attach_btf_id = btf_id;
            attr.__bindgen_anon_3.__bindgen_anon_1.attach_btf_obj_fd = btf_obj.as_raw_fd() as u32;
        }
        Target::KprobeMulti => {
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
            attr.__bindgen_anon_3.expected_attach_type =
                bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32;
        }
        Target::KprobeSession => {
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
            attr.__bindgen_anon_3.expected_attach_type = BPF_TRACE_KPROBE_SESSION;
        }
        Target::Lsm { btf_id } => {
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_LSM as u32;
            attr.__bindgen_anon_3.expected_attach_type = bpf_attach_type::BPF_LSM_MAC as u32;
            attr.__bindgen_anon_3.attach_btf_id = btf_id;
        }
        Target::MapIterator { btf_id } => {
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_TRACING as u32;
            attr.__bindgen_anon_3.expected_attach_type = bpf_attach_type::BPF_TRACE_ITER as u32;
            attr.__bindgen_anon_3.attach_btf_id = btf_id;
        }
        Target::StructOps {
            btf_id,
            member,
            sleepable,
        } => {
            attr.__bindgen_anon_3.prog_type = bpf_prog_type::BPF_PROG_TYPE_STRUCT_OPS as u32;
            attr.__bindgen_anon_3.expected_attach_type = member;
            attr.__bindgen_anon_3.attach_btf_id = btf_id;
            if sleepable {
                attr.__bindgen_anon_3.prog_flags = aya_obj::generated::BPF_F_SLEEPABLE;
            }
        }
    }
    // SAFETY: insns, license and log outlive the call, with the counts and
    // sizes given.
    match unsafe { bpf(bpf_cmd::BPF_PROG_LOAD, &mut attr) } {
        Ok(fd) => Ok(owned(fd)),
        Err(e) => {
            let text = CStr::from_bytes_until_nul(&log)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err((e, text))
        }
    }
}

/// `BPF_F_KPROBE_MULTI_RETURN`: a kprobe.multi link on the function's
/// return.
const KPROBE_MULTI_RETURN: u32 = 1;

/// `BPF_TRACE_KPROBE_SESSION` (Linux 6.10), newer than aya's bindings.
const BPF_TRACE_KPROBE_SESSION: u32 = 56;

/// Attaches a kprobe.multi program to kernel function `symbol` (Linux
/// 5.18, module functions 6.2), on its entry or its return: an fprobe,
/// reached through `BPF_LINK_CREATE` without `perf_event_open`. Returns
/// the link.
pub fn kprobe_multi_link(program: BorrowedFd<'_>, symbol: &str, side: Side) -> io::Result<OwnedFd> {
    let flags = if side == Side::Exit {
        KPROBE_MULTI_RETURN
    } else {
        0
    };
    fprobe_link(
        program,
        symbol,
        bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32,
        flags,
    )
}

/// Attaches a kprobe session program to kernel function `symbol` (Linux
/// 6.10): one fprobe runs it on the entry and, where the entry returned
/// 0, on the return. Returns the link.
pub fn kprobe_session_link(program: BorrowedFd<'_>, symbol: &str) -> io::Result<OwnedFd> {
    fprobe_link(program, symbol, BPF_TRACE_KPROBE_SESSION, 0)
}

fn fprobe_link(
    program: BorrowedFd<'_>,
    symbol: &str,
    attach_type: u32,
    flags: u32,
) -> io::Result<OwnedFd> {
    let symbol = CString::new(symbol)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the symbol"))?;
    let symbols = [symbol.as_ptr()];
    let mut attr: bpf_attr = zeroed();
    attr.link_create.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
    attr.link_create.attach_type = attach_type;
    attr.link_create.__bindgen_anon_3.kprobe_multi.cnt = symbols.len() as u32;
    attr.link_create.__bindgen_anon_3.kprobe_multi.syms = symbols.as_ptr() as u64;
    attr.link_create.__bindgen_anon_3.kprobe_multi.flags = flags;
    // SAFETY: `symbols` holds `cnt` pointers to NUL-terminated strings,
    // all alive for the call.
    unsafe { bpf(bpf_cmd::BPF_LINK_CREATE, &mut attr) }.map(owned)
}

/// Attaches a BPF LSM program to the hook it was loaded for (Linux 5.7);
/// returns the link.
pub fn lsm_link(program: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    // No name: the program's own attach target.
    attr.raw_tracepoint.prog_fd = program.as_raw_fd() as u32;
    // SAFETY: a plain command on a program fd.
    unsafe { bpf(bpf_cmd::BPF_RAW_TRACEPOINT_OPEN, &mut attr) }.map(owned)
}

/// Binds a map-element iterator program to `map` (Linux 5.9); returns
/// the link, from which each read opens a fresh pass.
pub fn map_iterator_link(program: BorrowedFd<'_>, map: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // `union bpf_iter_link_info`'s `map.map_fd`: the kernel takes a
    // shorter union than its own and zero-fills the rest.
    let info: u32 = map.as_raw_fd() as u32;
    let mut attr: bpf_attr = zeroed();
    attr.link_create.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
    attr.link_create.attach_type = bpf_attach_type::BPF_TRACE_ITER as u32;
    attr.link_create.__bindgen_anon_3.__bindgen_anon_1.iter_info = &raw const info as u64;
    attr.link_create
        .__bindgen_anon_3
        .__bindgen_anon_1
        .iter_info_len = size_of::<u32>() as u32;
    // SAFETY: `info` outlives the call, with the length given.
    unsafe { bpf(bpf_cmd::BPF_LINK_CREATE, &mut attr) }.map(owned)
}

/// Starts a pass of iterator `link`: reading the returned fd to its end
/// runs the program once per element.
pub fn iterator_pass(link: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    attr.iter_create.link_fd = link.as_raw_fd() as u32;
    // SAFETY: a plain command on a link fd.
    unsafe { bpf(bpf_cmd::BPF_ITER_CREATE, &mut attr) }.map(owned)
}

/// Pins the BPF object `fd` (a program or link) at `path` on bpffs.
pub fn pin(fd: BorrowedFd<'_>, path: &Path) -> io::Result<()> {
    let path = c_path(path)?;
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_4.pathname = path.as_ptr() as u64;
    attr.__bindgen_anon_4.bpf_fd = fd.as_raw_fd() as u32;
    // SAFETY: a NUL-terminated path that outlives the call.
    unsafe { bpf(bpf_cmd::BPF_OBJ_PIN, &mut attr) }.map(drop)
}

/// Loads the raw BTF `blob` (types and strings) into the kernel.
pub fn load_btf(blob: &[u8]) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_7.btf = blob.as_ptr() as u64;
    attr.__bindgen_anon_7.btf_size = blob.len() as u32;
    // SAFETY: the blob outlives the call, and its size is its own.
    unsafe { bpf(bpf_cmd::BPF_BTF_LOAD, &mut attr) }.map(owned)
}

/// Creates a task-local storage map named `name` of `value_size`-byte
/// values, its 4-byte key and its value described by types `key_type`
/// and `value_type` of `btf` (the kernel makes no such map without).
pub fn task_storage_map(
    name: &str,
    value_size: u32,
    btf: BorrowedFd<'_>,
    key_type: u32,
    value_type: u32,
) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    let mut map_name = [0; 16];
    for (slot, byte) in map_name.iter_mut().zip(name.bytes().take(15)) {
        *slot = byte as _;
    }
    attr.__bindgen_anon_1 = bpf_attr__bindgen_ty_1 {
        map_type: bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE as u32,
        key_size: 4,
        value_size,
        map_flags: aya_obj::generated::BPF_F_NO_PREALLOC,
        btf_fd: btf.as_raw_fd() as u32,
        btf_key_type_id: key_type,
        btf_value_type_id: value_type,
        map_name,
        ..zeroed()
    };
    // SAFETY: no pointers; the BTF fd is open for the call.
    unsafe { bpf(bpf_cmd::BPF_MAP_CREATE, &mut attr) }.map(owned)
}

/// Creates a struct_ops map named `name` for vmlinux's value type
/// `value_type` (`struct bpf_struct_ops_<ops>`) of `value_size` bytes,
/// to be attached by a link (so that it detaches when the link closes).
/// The kernel wants a BTF object of the caller's beside it, whatever it
/// holds.
pub fn struct_ops_map(
    name: &str,
    value_type: u32,
    value_size: u32,
    btf: BorrowedFd<'_>,
) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    let mut map_name = [0; 16];
    for (slot, byte) in map_name.iter_mut().zip(name.bytes().take(15)) {
        *slot = byte as _;
    }
    attr.__bindgen_anon_1 = bpf_attr__bindgen_ty_1 {
        map_type: bpf_map_type::BPF_MAP_TYPE_STRUCT_OPS as u32,
        key_size: 4,
        value_size,
        max_entries: 1,
        map_flags: aya_obj::generated::BPF_F_LINK,
        btf_fd: btf.as_raw_fd() as u32,
        btf_vmlinux_value_type_id: value_type,
        map_name,
        ..zeroed()
    };
    // SAFETY: no pointers; the BTF fd is open for the call.
    unsafe { bpf(bpf_cmd::BPF_MAP_CREATE, &mut attr) }.map(owned)
}

/// Writes `value` at `key` of `map`, whose values are `value.len()` bytes
/// (the caller sized it from the map's type).
pub fn update_elem(map: BorrowedFd<'_>, key: u32, value: &[u8]) -> io::Result<()> {
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_2.map_fd = map.as_raw_fd() as u32;
    attr.__bindgen_anon_2.key = &raw const key as u64;
    attr.__bindgen_anon_2.__bindgen_anon_1.value = value.as_ptr() as u64;
    // SAFETY: the key and value outlive the call; the value is as long as
    // the map's values.
    unsafe { bpf(bpf_cmd::BPF_MAP_UPDATE_ELEM, &mut attr) }.map(drop)
}

/// Attaches the struct_ops `map` (filled with its programs): the kernel
/// starts calling them. Returns the link; closing it detaches.
pub fn struct_ops_link(map: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut attr: bpf_attr = zeroed();
    attr.link_create.__bindgen_anon_1.map_fd = map.as_raw_fd() as u32;
    attr.link_create.attach_type = bpf_attach_type::BPF_STRUCT_OPS as u32;
    // SAFETY: a plain command on a map fd.
    unsafe { bpf(bpf_cmd::BPF_LINK_CREATE, &mut attr) }.map(owned)
}

/// Opens the BPF object pinned at `path`.
pub fn open_pinned(path: &Path) -> io::Result<OwnedFd> {
    let path = c_path(path)?;
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_4.pathname = path.as_ptr() as u64;
    // SAFETY: a NUL-terminated path that outlives the call.
    unsafe { bpf(bpf_cmd::BPF_OBJ_GET, &mut attr) }.map(owned)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the pin path"))
}

/// What the kernel says of a loaded program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramStats {
    /// Its id.
    pub id: u32,
    /// Its tag (a hash of its instructions, map references masked), as
    /// aya's `ProgramInfo::tag` gives it.
    pub tag: u64,
    /// Runs the kernel skipped because the program was already running
    /// on the CPU (Linux 5.12; 0 before).
    pub recursion_misses: u64,
}

/// The id, tag and miss counter of the program `fd`.
pub fn program_stats(fd: BorrowedFd<'_>) -> io::Result<ProgramStats> {
    let info: bpf_prog_info = object_info(fd)?;
    Ok(ProgramStats {
        id: info.id,
        tag: u64::from_be_bytes(info.tag),
        recursion_misses: info.recursion_misses,
    })
}

/// What a pinned link runs, from its fdinfo: that needs only access to
/// the pin, where looking the program up by id (`BPF_PROG_GET_NEXT_ID`)
/// needs CAP_SYS_ADMIN, which the agent may run without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// `link_type`: `tracing`, `perf` (kprobe), `kprobe_multi`, …
    pub link_type: String,
    /// The program's tag.
    pub tag: u64,
    /// The program's id, where the kernel shows it.
    pub prog_id: Option<u32>,
}

/// [`LinkInfo`] of the link pinned at `path`.
pub fn pinned_link(path: &Path) -> io::Result<LinkInfo> {
    let link = open_pinned(path)?;
    let fdinfo = fs::read_to_string(format!("/proc/self/fdinfo/{}", link.as_raw_fd()))?;
    link_info(&fdinfo).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the pinned link's fdinfo has no link_type or prog_tag",
        )
    })
}

/// The `link_type`, `prog_tag` and `prog_id` of a BPF link's fdinfo (the
/// tag is 16 hex digits, its bytes in order, read as `ProgramInfo::tag`
/// reads them).
fn link_info(fdinfo: &str) -> Option<LinkInfo> {
    let field = |name: &str| {
        fdinfo
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let hex = field("prog_tag")?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(LinkInfo {
        link_type: field("link_type")?.to_owned(),
        tag: u64::from_str_radix(hex, 16).ok()?,
        prog_id: field("prog_id").and_then(|id| id.parse().ok()),
    })
}

/// Whether a program with id `id` is still loaded: a detached program is
/// freed only after its link, which bpffs releases a moment after the
/// last pin goes. `None` where the kernel will not say: looking a program
/// up by id needs CAP_SYS_ADMIN, which the agent may run without.
pub fn program_loaded(id: u32) -> Option<bool> {
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_6.__bindgen_anon_1.prog_id = id;
    // SAFETY: a plain command with an id.
    match unsafe { bpf(bpf_cmd::BPF_PROG_GET_FD_BY_ID, &mut attr) } {
        Ok(fd) => {
            drop(owned(fd));
            Some(true)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Some(false),
        Err(_) => None,
    }
}

/// A counter map's value, which the agent adds up: over the CPUs, for a
/// map with one value per CPU, and when it folds one key into another.
pub trait CounterValue: aya::Pod + Default {
    /// Adds `other` into `self`.
    fn accumulate(&mut self, other: &Self);
}

impl CounterValue for u64 {
    fn accumulate(&mut self, other: &Self) {
        *self = self.wrapping_add(*other);
    }
}

impl CounterValue for kubenpu_ebpf::CountValue {
    fn accumulate(&mut self, other: &Self) {
        kubenpu_ebpf::CountValue::accumulate(self, other);
    }
}

/// The copies of one key's value summed.
fn summed<V: CounterValue>(copies: &[V]) -> V {
    copies.iter().fold(V::default(), |mut sum, v| {
        sum.accumulate(v);
        sum
    })
}

/// The kernel's stride between two CPUs' values: the value rounded up to
/// 8 bytes. Every [`CounterValue`] is a multiple of 8 already, so a slice
/// of `V` matches it.
const fn per_cpu_stride<V>() -> usize {
    size_of::<V>().div_ceil(8) * 8
}

/// How many values the kernel copies per key of counter map `map` (1 for a
/// hash, one per possible CPU for a per-CPU hash), once it is known to be
/// a hash of `K` keys and `V` values: the shape buffers sized from `K` and
/// `V` must have before the kernel writes into them.
fn counter_copies<K, V>(map: BorrowedFd<'_>) -> io::Result<usize> {
    let info: bpf_map_info = object_info(map)?;
    let shared = [
        bpf_map_type::BPF_MAP_TYPE_HASH as u32,
        bpf_map_type::BPF_MAP_TYPE_LRU_HASH as u32,
    ];
    let per_cpu = [
        bpf_map_type::BPF_MAP_TYPE_PERCPU_HASH as u32,
        bpf_map_type::BPF_MAP_TYPE_LRU_PERCPU_HASH as u32,
    ];
    let (key_size, value_size) = (size_of::<K>(), size_of::<V>());
    let shaped = info.key_size as usize == key_size
        && info.value_size as usize == value_size
        && per_cpu_stride::<V>() == value_size;
    match info.type_ {
        t if shaped && shared.contains(&t) => Ok(1),
        t if shaped && per_cpu.contains(&t) => possible_cpus(),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a hash map of {key_size}-byte keys and {value_size}-byte values (type {}, key {} bytes, value {} bytes)",
                info.type_, info.key_size, info.value_size
            ),
        )),
    }
}

/// The possible CPUs: how many values the kernel copies per per-CPU key.
pub fn possible_cpus() -> io::Result<usize> {
    aya::util::nr_cpus().map_err(|(_, e)| e)
}

/// One element command on a counter map (checked to be one of `K` keys
/// and `V` values): `values`, where given, is one `V` per copy the map
/// keeps of a key. Returns whether the key was there.
fn counter_elem<K: aya::Pod, V: CounterValue>(
    cmd: bpf_cmd,
    map: BorrowedFd<'_>,
    key: &K,
    values: Option<&mut [V]>,
) -> io::Result<bool> {
    let copies = counter_copies::<K, V>(map)?;
    let mut attr: bpf_attr = zeroed();
    attr.__bindgen_anon_2.map_fd = map.as_raw_fd() as u32;
    attr.__bindgen_anon_2.key = std::ptr::from_ref(key) as u64;
    if let Some(values) = values {
        if values.len() != copies {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} values for {copies} copies per key", values.len()),
            ));
        }
        attr.__bindgen_anon_2.__bindgen_anon_1.value = values.as_mut_ptr() as u64;
    }
    // SAFETY: the key is a whole K and the values buffer, where one is
    // given, holds one V per copy of a key: the sizes (and stride) the map
    // was just checked to have.
    match unpreempted(|| unsafe { bpf(cmd, &mut attr) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes `key` from the counter map `map` and returns its value (summed
/// over the CPUs where it has one per CPU), or `None` if it is absent.
///
/// One `BPF_MAP_LOOKUP_AND_DELETE_ELEM` (Linux 5.14 for hash maps), so an
/// increment between a read and a delete cannot be lost. Older kernels
/// get a lookup, then a delete: exact only for keys nothing increments
/// any more, such as those of a cgroup known to be gone.
pub fn take_counter<K: aya::Pod, V: CounterValue>(
    map: BorrowedFd<'_>,
    key: &K,
) -> io::Result<Option<V>> {
    let mut values = vec![V::default(); counter_copies::<K, V>(map)?];
    let found = match counter_elem(
        bpf_cmd::BPF_MAP_LOOKUP_AND_DELETE_ELEM,
        map,
        key,
        Some(&mut values),
    ) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP)
            ) =>
        {
            counter_elem(bpf_cmd::BPF_MAP_LOOKUP_ELEM, map, key, Some(&mut values))?
                && counter_elem::<K, V>(bpf_cmd::BPF_MAP_DELETE_ELEM, map, key, None)?
        }
        other => other?,
    };
    Ok(found.then(|| summed(&values)))
}

/// Adds `amount` to `key` of the counter map `map`, creating it if
/// absent. A read, then a write: only for keys nothing else increments,
/// such as those of a cgroup known to be gone.
pub fn add_counter<K: aya::Pod, V: CounterValue>(
    map: BorrowedFd<'_>,
    key: &K,
    amount: V,
) -> io::Result<()> {
    let mut values = vec![V::default(); counter_copies::<K, V>(map)?];
    counter_elem(bpf_cmd::BPF_MAP_LOOKUP_ELEM, map, key, Some(&mut values))?;
    let mut total = summed(&values);
    total.accumulate(&amount);
    values.fill(V::default());
    values[0] = total;
    counter_elem(bpf_cmd::BPF_MAP_UPDATE_ELEM, map, key, Some(&mut values)).map(drop)
}

/// Keys asked for per call at first; doubled if one hash bucket holds more.
const BATCH_KEYS: usize = 1024;

/// Every key of the counter map `map` with its value (summed over the
/// CPUs, where it has one per CPU).
///
/// Read with `BPF_MAP_LOOKUP_BATCH` (Linux 5.6), a whole run of hash
/// buckets per call, where aya 0.14 iterates with two calls per key (next
/// key, then lookup): a scrape of 10,000 counters took 22 ms that way.
/// `None` if the kernel has no batched lookup for the map.
pub fn summed_counters<K: aya::Pod, V: CounterValue>(
    map: BorrowedFd<'_>,
) -> io::Result<Option<Vec<(K, V)>>> {
    summed_counters_with_room(map, BATCH_KEYS)
}

/// [`summed_counters`], asking for `capacity` keys per call at first.
pub fn summed_counters_with_room<K: aya::Pod, V: CounterValue>(
    map: BorrowedFd<'_>,
    capacity: usize,
) -> io::Result<Option<Vec<(K, V)>>> {
    let copies = counter_copies::<K, V>(map)?;
    let key_size = size_of::<K>();
    let mut capacity = capacity.max(1);
    let mut keys = vec![0u8; capacity * key_size];
    let mut values = vec![V::default(); capacity * copies];
    let mut entries = Vec::new();
    // Where the next call starts: the kernel's token for a hash map, a
    // u32 bucket index; none for the first call.
    let mut position: Option<u32> = None;
    loop {
        let mut next = 0u32;
        let mut attr: bpf_attr = zeroed();
        attr.batch.in_batch = position
            .as_ref()
            .map_or(0, |p| std::ptr::from_ref(p) as u64);
        attr.batch.out_batch = std::ptr::from_mut(&mut next) as u64;
        attr.batch.keys = keys.as_mut_ptr() as u64;
        attr.batch.values = values.as_mut_ptr() as u64;
        attr.batch.count = capacity as u32;
        attr.batch.map_fd = map.as_raw_fd() as u32;
        // SAFETY: keys and values hold `capacity` whole keys and their
        // copies of values, of the sizes (and stride) the map was checked
        // to have; the tokens are u32, as the kernel's hash batch token is.
        let result = unsafe { bpf(bpf_cmd::BPF_MAP_LOOKUP_BATCH, &mut attr) };
        let errno = result.as_ref().err().and_then(io::Error::raw_os_error);
        match (result, errno) {
            (Err(_), Some(libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP)) if position.is_none() => {
                return Ok(None);
            }
            (Err(e), Some(errno)) if errno != libc::ENOENT && errno != libc::ENOSPC => {
                return Err(e);
            }
            _ => {}
        }
        // SAFETY: the kernel wrote how many it copied.
        let copied = unsafe { attr.batch.count } as usize;
        for (key, value) in keys
            .chunks_exact(key_size)
            .zip(values.chunks_exact(copies))
            .take(copied)
        {
            // SAFETY: K is Pod, and the kernel wrote whole keys of its size.
            let key = unsafe { std::ptr::read_unaligned(key.as_ptr().cast::<K>()) };
            entries.push((key, summed(value)));
        }
        match errno {
            // Past the last bucket.
            Some(libc::ENOENT) => return Ok(Some(entries)),
            // The next bucket holds more keys than there is room for: ask
            // again from the same place with more room.
            Some(libc::ENOSPC) if copied == 0 => {
                capacity *= 2;
                keys.resize(capacity * key_size, 0);
                values.resize(capacity * copies, V::default());
            }
            _ => position = Some(next),
        }
    }
}

/// The kernel's internal "operation not supported", which `bpf(2)` returns
/// for a map type without batched operations, for a trampoline the
/// architecture cannot build, and for a map type the kernel lacks.
pub(super) const ENOTSUPP: i32 = 524;

#[cfg(test)]
mod tests {
    use super::{LinkInfo, link_info};

    #[test]
    fn reads_what_a_link_runs() {
        let fdinfo = "pos:\t0\nflags:\t02000000\nmnt_id:\t15\nino:\t2059\n\
                      link_type:\tkprobe_multi\nlink_id:\t7\nprog_tag:\t0a1b2c3d4e5f6789\nprog_id:\t42\n";
        assert_eq!(
            link_info(fdinfo),
            Some(LinkInfo {
                link_type: "kprobe_multi".into(),
                tag: 0x0a1b_2c3d_4e5f_6789,
                prog_id: Some(42),
            })
        );
    }

    #[test]
    fn a_link_without_a_whole_tag_or_type_has_none() {
        assert_eq!(link_info("link_type:\tperf\nlink_id:\t7\n"), None);
        assert_eq!(link_info("link_type:\tperf\nprog_tag:\t0a1b2c\n"), None);
        assert_eq!(
            link_info("link_type:\tperf\nprog_tag:\tzzzzzzzzzzzzzzzz\n"),
            None
        );
        assert_eq!(link_info("prog_tag:\t0a1b2c3d4e5f6789\n"), None);
    }
}
