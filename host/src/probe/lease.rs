//! The policy's lease: the one `u64` of the kernel's LEASE map, mapped
//! into the agent's memory, that says until when (CLOCK_BOOTTIME) the
//! checks may refuse. Renewing it is a store, not a `bpf(2)` call: a map
//! write from userspace holds the kernel's per-CPU `bpf_prog_active`, and
//! a counted call on that CPU meanwhile would be skipped by the kprobe
//! hooks.

use std::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use aya::Ebpf;
use kubenpu_ebpf::map;

use super::{ProbeError, relocate::map_fd};

/// The mapped LEASE map.
pub struct Lease {
    value: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is the agent's alone, and written atomically.
unsafe impl Send for Lease {}

impl Lease {
    /// Maps `ebpf`'s LEASE map (an mmapable array of one `u64`).
    pub fn map(ebpf: &Ebpf) -> Result<Self, ProbeError> {
        let lease = ebpf
            .map(map::LEASE)
            .ok_or_else(|| ProbeError::Other("no LEASE map".into()))?;
        let fd = map_fd(lease)?;
        // SAFETY: sysconf has no preconditions.
        let len = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        // SAFETY: a shared mapping of the map's one page; the kernel
        // checks the map is mmapable and the length fits.
        let mapped = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            return Err(ProbeError::Other(format!(
                "cannot map the policy's lease: {}",
                std::io::Error::last_os_error()
            )));
        }
        let value = NonNull::new(mapped.cast::<AtomicU64>())
            .ok_or_else(|| ProbeError::Other("the lease mapped at null".into()))?;
        Ok(Self { value, len })
    }

    /// Lets the checks refuse until `until` (CLOCK_BOOTTIME).
    pub fn renew(&self, until: Duration) {
        let nanos = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: the mapping lives as long as `self`, its first 8 bytes
        // are the map's value, page-aligned.
        unsafe { self.value.as_ref() }.store(nanos, Ordering::Release);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of `len` bytes.
        unsafe { libc::munmap(self.value.as_ptr().cast(), self.len) };
    }
}
