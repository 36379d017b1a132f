//! The maps every scrape and sweep reads, and those a starting agent
//! reads (its tables, the owners' records), read through the program's
//! BPF map-element iterators (`host-ebpf`'s `dump.rs`) instead of `bpf(2)`
//! lookups: a lookup's copy raises `bpf_prog_active` while the agent can
//! be preempted, and a workload's call on that CPU meanwhile is skipped
//! by the kprobe hooks (counted as `recursion`). An iterator never raises
//! it.
//!
//! Where the kernel refuses the iterators (older than 5.9, or a vmlinux
//! BTF without `bpf_iter_bpf_map_elem`), the agent reads with lookups as
//! before, and says so once.

use std::{
    fs::File,
    io::{self, Read as _},
    os::fd::{AsFd as _, OwnedFd},
};

use aya::Ebpf;
use kubenpu_ebpf::{
    CountKey, CountValue, DeviceEntry, DurationKey, IoctlEntry, IoctlKey, OwnerRecord, VerdictKey,
    map, program,
};

use super::{
    Btf, ProbeError,
    counter::Counter,
    hook::load_error,
    relocate::{Relocated, map_fd},
    syscall::{self, Target},
};
use crate::program::OBJECT;

/// vmlinux's BTF function every map-element iterator is loaded against.
const TARGET: &str = "bpf_iter_bpf_map_elem";

/// The iterators, each bound to its map.
pub struct Dumps {
    counts: OwnedFd,
    durations: OwnedFd,
    losses: OwnedFd,
    ioctls: OwnedFd,
    devices: OwnedFd,
    owners: OwnedFd,
    verdicts: OwnedFd,
    verdicts_lost: OwnedFd,
    /// Possible CPUs: a per-CPU value has one `u64` per possible CPU.
    cpus: usize,
}

impl Dumps {
    /// Loads the iterators of `ebpf`'s object (loaded with `cpus` as its
    /// possible CPUs) and binds each to its map.
    pub fn load(ebpf: &Ebpf, vmlinux: &Btf, cpus: usize, debug: bool) -> Result<Self, ProbeError> {
        let btf_id = vmlinux
            .func_id(TARGET, None)
            .ok_or_else(|| ProbeError::Other(format!("vmlinux BTF has no {TARGET} (Linux 5.9)")))?;
        let relocated = Relocated::new(ebpf, OBJECT)?;
        let bind = |name: &str, map_name: &str| -> Result<OwnedFd, ProbeError> {
            let insns = relocated.instructions(name)?;
            let program =
                syscall::load_program(&insns, name, Target::MapIterator { btf_id }, debug)
                    .map_err(|e| load_error(&format!("loading iterator {name}"), e, debug))?;
            let map = ebpf
                .map(map_name)
                .ok_or_else(|| ProbeError::Other(format!("no {map_name} map")))?;
            // SAFETY: the fd belongs to `ebpf`'s map, alive for the call.
            let map = unsafe { std::os::fd::BorrowedFd::borrow_raw(map_fd(map)?) };
            syscall::map_iterator_link(program.as_fd(), map).map_err(|e| {
                ProbeError::Other(format!("binding iterator {name} to {map_name}: {e}"))
            })
        };
        Ok(Self {
            counts: bind(program::DUMP_COUNTS, map::COUNTS)?,
            durations: bind(program::DUMP_DURATIONS, map::DURATIONS)?,
            losses: bind(program::DUMP_LOSSES, map::LOSSES)?,
            ioctls: bind(program::DUMP_IOCTLS, map::IOCTLS)?,
            devices: bind(program::DUMP_DEVICES, map::DEVICES)?,
            owners: bind(program::DUMP_OWNERS, map::OWNERS)?,
            verdicts: bind(program::DUMP_VERDICTS, map::VERDICTS)?,
            verdicts_lost: bind(program::DUMP_VERDICTS_LOST, map::VERDICTS_LOST)?,
            cpus,
        })
    }

    /// Every counter, in key order.
    pub fn counters(&self) -> Result<Vec<Counter>, ProbeError> {
        Ok(pairs::<CountKey, CountValue>(&self.counts)?
            .into_iter()
            .map(|(key, value)| Counter { key, value })
            .collect())
    }

    /// The vendors' ioctl tables in force, in key order.
    pub fn ioctls(&self) -> Result<Vec<(IoctlKey, IoctlEntry)>, ProbeError> {
        pairs(&self.ioctls)
    }

    /// The counted device nodes in force, in key order.
    pub fn devices(&self) -> Result<Vec<(u32, DeviceEntry)>, ProbeError> {
        pairs(&self.devices)
    }

    /// Every owner's record, in cgroup id order.
    pub fn owners(&self) -> Result<Vec<(u64, OwnerRecord)>, ProbeError> {
        pairs(&self.owners)
    }

    /// The policy's verdicts, in key order.
    pub fn verdicts(&self) -> Result<Vec<(VerdictKey, u64)>, ProbeError> {
        pairs(&self.verdicts)
    }

    /// Verdicts that could not be counted, summed over the CPUs.
    pub fn verdicts_lost(&self) -> Result<u64, ProbeError> {
        Ok(self
            .per_cpu_sums::<u32>(&self.verdicts_lost)?
            .iter()
            .map(|(_, n)| n)
            .sum())
    }

    /// Every bucket of the duration histogram, its calls summed over the
    /// CPUs, in key order.
    pub fn durations(&self) -> Result<Vec<(DurationKey, u64)>, ProbeError> {
        self.per_cpu_sums(&self.durations)
    }

    /// The program's losses, summed over the CPUs, by reason index.
    pub fn losses(&self) -> Result<Vec<(u32, u64)>, ProbeError> {
        self.per_cpu_sums(&self.losses)
    }

    /// Every key of a per-CPU `u64` map with its values' sum, in key order.
    fn per_cpu_sums<K: aya::Pod + Ord>(&self, link: &OwnedFd) -> Result<Vec<(K, u64)>, ProbeError> {
        let mut all: Vec<(K, u64)> = records(link, 8 * self.cpus)?
            .into_iter()
            .map(|(key, values)| (key, per_cpu_sum(values)))
            .collect();
        sorted_once(&mut all, |(key, _)| *key);
        Ok(all)
    }
}

/// Every element of the map behind `link`, in key order.
fn pairs<K: aya::Pod + Ord, V: aya::Pod>(link: &OwnedFd) -> Result<Vec<(K, V)>, ProbeError> {
    let mut all: Vec<(K, V)> = records(link, size_of::<V>())?
        .into_iter()
        // SAFETY: V is plain old data, written whole by the iterator.
        .map(|(key, value)| {
            (key, unsafe {
                std::ptr::read_unaligned(value.as_ptr().cast())
            })
        })
        .collect();
    sorted_once(&mut all, |(key, _)| *key);
    Ok(all)
}

/// One pass of iterator `link`: every element's key, and its value's
/// `value_size` bytes.
fn records<K: aya::Pod>(
    link: &OwnedFd,
    value_size: usize,
) -> Result<Vec<(K, Vec<u8>)>, ProbeError> {
    let bytes =
        pass(link).map_err(|e| ProbeError::Other(format!("reading a map iterator: {e}")))?;
    let record = size_of::<K>() + value_size;
    if bytes.len() % record != 0 {
        return Err(ProbeError::Other(format!(
            "a map iterator wrote {} bytes, not whole records of {record}",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(record)
        .map(|chunk| {
            let (key, value) = chunk.split_at(size_of::<K>());
            // SAFETY: K is plain old data, written whole by the iterator.
            (
                unsafe { std::ptr::read_unaligned(key.as_ptr().cast()) },
                value.to_vec(),
            )
        })
        .collect())
}

/// Reads a fresh pass of `link` to its end. The kernel fills the reader's
/// buffer a page-sized chunk at a time and never cuts a record.
fn pass(link: &OwnedFd) -> io::Result<Vec<u8>> {
    let mut file = File::from(syscall::iterator_pass(link.as_fd())?);
    let mut bytes = Vec::with_capacity(64 << 10);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The sum of a per-CPU value's `u64`s.
fn per_cpu_sum(values: Vec<u8>) -> u64 {
    values
        .chunks_exact(8)
        .map(|v| u64::from_ne_bytes(v.try_into().expect("chunks of 8")))
        .sum()
}

/// Sorts by key and keeps one record per key. A pass that resumes in the
/// middle of a hash bucket (the reader's buffer was full) shows an element
/// twice if a new key was inserted into that bucket meanwhile.
fn sorted_once<T, K: Ord + Copy>(all: &mut Vec<T>, key: impl Fn(&T) -> K) {
    all.sort_by_key(&key);
    all.dedup_by_key(|t| key(t));
}
