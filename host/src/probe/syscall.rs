//! The few `bpf(2)` commands aya 0.14 does not offer: finding a kernel
//! module's BTF object, loading a tracing program against it, reading
//! which program a pinned link runs, and reading a map in batches.

use std::{
    ffi::{CStr, CString},
    fs, io,
    os::{
        fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
        unix::ffi::OsStrExt as _,
    },
    path::Path,
};

const BPF_PROG_LOAD: i64 = 5;
const BPF_OBJ_GET: i64 = 7;
const BPF_MAP_LOOKUP_BATCH: i64 = 24;
const BPF_OBJ_GET_INFO_BY_FD: i64 = 15;
const BPF_BTF_GET_FD_BY_ID: i64 = 19;
const BPF_BTF_GET_NEXT_ID: i64 = 23;
const BPF_MAP_TYPE_PERCPU_HASH: u32 = 5;
const BPF_MAP_TYPE_LRU_PERCPU_HASH: u32 = 10;
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
    let info: [u8; 8] = object_info(fd)?;
    Ok(u32::from_ne_bytes(info[4..8].try_into().expect("4 bytes")))
}

/// The first `N` bytes of a BPF object's info (`bpf_prog_info`,
/// `bpf_map_info`, `bpf_link_info`).
fn object_info<const N: usize>(fd: BorrowedFd<'_>) -> io::Result<[u8; N]> {
    let mut info = [0u8; N];
    Attr::new()
        .u32(0, fd.as_raw_fd() as u32)
        .u32(4, N as u32)
        .u64(8, info.as_mut_ptr() as u64)
        .call(BPF_OBJ_GET_INFO_BY_FD)?;
    Ok(info)
}

/// The tag of the program that the link pinned at `path` runs.
///
/// It is read from the link's fdinfo, which needs only access to the pin:
/// looking the program up by id (`BPF_PROG_GET_NEXT_ID`) needs
/// CAP_SYS_ADMIN, which the agent may run without.
pub fn pinned_link_program_tag(path: &Path) -> io::Result<u64> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the pin path"))?;
    // BPF_OBJ_GET: pathname at 0, bpf_fd at 8, file_flags at 12.
    let fd = Attr::new().u64(0, path.as_ptr() as u64).call(BPF_OBJ_GET)?;
    // SAFETY: the kernel just returned this fd to us.
    let link = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let fdinfo = fs::read_to_string(format!("/proc/self/fdinfo/{}", link.as_raw_fd()))?;
    program_tag(&fdinfo).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the pinned link's fdinfo has no prog_tag",
        )
    })
}

/// The `prog_tag` of a BPF link's fdinfo (16 hex digits, the tag's bytes
/// in order), as the number `ProgramInfo::tag` gives for the same tag.
fn program_tag(fdinfo: &str) -> Option<u64> {
    let hex = fdinfo
        .lines()
        .find_map(|line| line.strip_prefix("prog_tag:"))?
        .trim();
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Keys asked for per call at first; doubled if one hash bucket holds more.
const BATCH_KEYS: usize = 1024;

/// Every key of the per-CPU hash map `map`, whose values are u64, with
/// its values summed over the `cpus` possible CPUs.
///
/// Read with `BPF_MAP_LOOKUP_BATCH` (Linux 5.6), a whole run of hash
/// buckets per call, where aya 0.14 iterates with two calls per key (next
/// key, then lookup): a scrape of 10,000 counters took 22 ms that way.
/// `None` if the kernel has no batched lookup for the map.
pub fn summed_per_cpu<K: aya::Pod>(
    map: BorrowedFd<'_>,
    cpus: usize,
) -> io::Result<Option<Vec<(K, u64)>>> {
    summed_per_cpu_with_room(map, cpus, BATCH_KEYS)
}

/// [`summed_per_cpu`], asking for `capacity` keys per call at first.
pub fn summed_per_cpu_with_room<K: aya::Pod>(
    map: BorrowedFd<'_>,
    cpus: usize,
    capacity: usize,
) -> io::Result<Option<Vec<(K, u64)>>> {
    // The kernel writes whole keys and values into the buffers below:
    // they are sized from K and u64, so the map must have those sizes.
    // bpf_map_info: type at 0, key_size at 8, value_size at 12.
    let info: [u8; 16] = object_info(map)?;
    let field = |at: usize| u32::from_ne_bytes(info[at..at + 4].try_into().expect("4 bytes"));
    let key_size = size_of::<K>();
    if !matches!(
        field(0),
        BPF_MAP_TYPE_PERCPU_HASH | BPF_MAP_TYPE_LRU_PERCPU_HASH
    ) || field(8) as usize != key_size
        || field(12) as usize != size_of::<u64>()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a per-CPU hash map of {key_size}-byte keys and u64 values (type {}, key {} bytes, value {} bytes)",
                field(0),
                field(8),
                field(12)
            ),
        ));
    }
    let mut capacity = capacity.max(1);
    let mut keys = vec![0u8; capacity * key_size];
    let mut values = vec![0u64; capacity * cpus];
    let mut entries = Vec::new();
    // Where the next call starts: the kernel's token for a hash map, a
    // u32 bucket index; none for the first call.
    let mut position: Option<u32> = None;
    loop {
        let mut next = 0u32;
        // BPF_MAP_LOOKUP_BATCH: in_batch at 0, out_batch at 8, keys at
        // 16, values at 24, count at 32 (in: room, out: copied), map_fd
        // at 36.
        let mut attr = Attr::new()
            .u64(
                0,
                position
                    .as_ref()
                    .map_or(0, |p| std::ptr::from_ref(p) as u64),
            )
            .u64(8, std::ptr::from_mut(&mut next) as u64)
            .u64(16, keys.as_mut_ptr() as u64)
            .u64(24, values.as_mut_ptr() as u64)
            .u32(32, capacity as u32)
            .u32(36, map.as_raw_fd() as u32);
        let result = attr.call(BPF_MAP_LOOKUP_BATCH);
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
        let copied = attr.read_u32(32) as usize;
        for (key, per_cpu) in keys
            .chunks_exact(key_size)
            .zip(values.chunks_exact(cpus))
            .take(copied)
        {
            // SAFETY: K is Pod, and the kernel wrote whole keys of its size.
            let key = unsafe { std::ptr::read_unaligned(key.as_ptr().cast::<K>()) };
            entries.push((key, per_cpu.iter().sum()));
        }
        match errno {
            // Past the last bucket.
            Some(libc::ENOENT) => return Ok(Some(entries)),
            // The next bucket holds more keys than there is room for: ask
            // again from the same place with more room.
            Some(libc::ENOSPC) if copied == 0 => {
                capacity *= 2;
                keys.resize(capacity * key_size, 0);
                values.resize(capacity * cpus, 0);
            }
            _ => position = Some(next),
        }
    }
}

/// The kernel's internal "operation not supported", which `bpf(2)` returns
/// for a map type without batched operations.
const ENOTSUPP: i32 = 524;

#[cfg(test)]
mod tests {
    use super::program_tag;

    #[test]
    fn reads_the_program_tag_of_a_link() {
        let fdinfo = "pos:\t0\nflags:\t02000000\nmnt_id:\t15\nino:\t2059\n\
                      link_type:\tperf\nlink_id:\t7\nprog_tag:\t0a1b2c3d4e5f6789\nprog_id:\t42\n";
        assert_eq!(program_tag(fdinfo), Some(0x0a1b_2c3d_4e5f_6789));
    }

    #[test]
    fn a_link_without_a_whole_tag_has_none() {
        assert_eq!(program_tag("link_type:\tperf\nlink_id:\t7\n"), None);
        assert_eq!(program_tag("prog_tag:\t0a1b2c\n"), None);
        assert_eq!(program_tag("prog_tag:\tzzzzzzzzzzzzzzzz\n"), None);
    }
}
