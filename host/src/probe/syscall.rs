//! The few `bpf(2)` commands aya 0.14 does not offer: finding a kernel
//! module's BTF object, and loading a tracing program against it.

use std::{
    ffi::CStr,
    io,
    os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
};

const BPF_PROG_LOAD: i64 = 5;
const BPF_OBJ_GET_INFO_BY_FD: i64 = 15;
const BPF_BTF_GET_FD_BY_ID: i64 = 19;
const BPF_BTF_GET_NEXT_ID: i64 = 23;
const BPF_PROG_TYPE_TRACING: u32 = 26;
const BPF_TRACE_FENTRY: u32 = 24;

/// `union bpf_attr`, as a zeroed buffer with typed writers: each command
/// uses a prefix of it.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Self([0; 128])
    }

    fn u32(mut self, offset: usize, value: u32) -> Self {
        self.0[offset..offset + 4].copy_from_slice(&value.to_ne_bytes());
        self
    }

    fn u64(mut self, offset: usize, value: u64) -> Self {
        self.0[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
        self
    }

    fn bytes(mut self, offset: usize, value: &[u8]) -> Self {
        self.0[offset..offset + value.len()].copy_from_slice(value);
        self
    }

    fn read_u32(&self, offset: usize) -> u32 {
        u32::from_ne_bytes(self.0[offset..offset + 4].try_into().expect("4 bytes"))
    }

    fn call(&mut self, cmd: i64) -> io::Result<i64> {
        // SAFETY: bpf(2) reads and writes at most size_of::<Attr>() bytes
        // of the buffer, and the pointers written into it outlive the call.
        let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, self.0.as_mut_ptr(), self.0.len()) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    }
}

/// The BTF object the kernel loaded for module `name` (e.g. `drm`), with
/// its id; `None` if the module is not loaded or has no BTF.
pub fn module_btf(name: &str) -> io::Result<Option<(u32, OwnedFd)>> {
    let mut id = 0;
    loop {
        // BTF_GET_NEXT_ID: start_id at 0, next_id at 4.
        let mut next = Attr::new().u32(0, id);
        match next.call(BPF_BTF_GET_NEXT_ID) {
            Ok(_) => id = next.read_u32(4),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        }
        let fd = match Attr::new().u32(0, id).call(BPF_BTF_GET_FD_BY_ID) {
            Ok(fd) => fd as i32,
            // Freed between the two calls.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        // SAFETY: the kernel just returned this fd to us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // struct bpf_btf_info: btf u64, btf_size u32, id u32, name u64,
        // name_len u32, kernel_btf u32.
        let mut name_buf = [0u8; 64];
        let mut info = [0u8; 32];
        info[16..24].copy_from_slice(&(name_buf.as_mut_ptr() as u64).to_ne_bytes());
        info[24..28].copy_from_slice(&(name_buf.len() as u32).to_ne_bytes());
        Attr::new()
            .u32(0, fd.as_raw_fd() as u32)
            .u32(4, info.len() as u32)
            .u64(8, info.as_mut_ptr() as u64)
            .call(BPF_OBJ_GET_INFO_BY_FD)?;
        let found = CStr::from_bytes_until_nul(&name_buf).map(|n| n.to_bytes() == name.as_bytes());
        if found == Ok(true) {
            return Ok(Some((id, fd)));
        }
    }
}

/// Loads an fentry program against a function of a module's BTF object.
/// Returns the program fd, or the error with the verifier's log.
pub fn load_module_fentry(
    insns: &[u8],
    name: &str,
    attach_btf_id: u32,
    btf_obj: BorrowedFd<'_>,
    verbose_log: bool,
) -> Result<OwnedFd, (io::Error, String)> {
    let license = c"GPL";
    let mut log = vec![0u8; if verbose_log { 16 << 20 } else { 256 << 10 }];
    let mut prog_name = [0u8; 16];
    let short = &name.as_bytes()[..name.len().min(15)];
    prog_name[..short.len()].copy_from_slice(short);
    let mut attr = Attr::new()
        .u32(0, BPF_PROG_TYPE_TRACING)
        .u32(4, (insns.len() / 8) as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, if verbose_log { 2 } else { 1 })
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .bytes(48, &prog_name)
        .u32(68, BPF_TRACE_FENTRY)
        .u32(108, attach_btf_id)
        .u32(112, btf_obj.as_raw_fd() as u32);
    match attr.call(BPF_PROG_LOAD) {
        // SAFETY: the kernel just returned this fd to us.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
        Err(e) => {
            let text = CStr::from_bytes_until_nul(&log)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err((e, text))
        }
    }
}

/// The id of a BPF object (program or link) from its fd.
pub fn object_id(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // Both bpf_prog_info and bpf_link_info start with type u32, id u32.
    let mut info = [0u8; 16];
    Attr::new()
        .u32(0, fd.as_raw_fd() as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64)
        .call(BPF_OBJ_GET_INFO_BY_FD)?;
    Ok(u32::from_ne_bytes(info[4..8].try_into().expect("4 bytes")))
}
