//! Finding the DRM clients of the counted cgroups: their processes (from
//! each cgroup's `cgroup.procs`), the fds of those processes that are open
//! on a claimed device node, and what each fd's fdinfo says. Only cgroups
//! the kernel program saw using a claimed device are visited, never the
//! whole of `/proc`.
//!
//! Everything here races with processes that exit and fds that close: a
//! file that is gone by the time it is read is simply not there.

use std::{
    collections::HashMap,
    fs,
    io::ErrorKind,
    os::unix::fs::{FileTypeExt as _, MetadataExt as _},
    path::{Path, PathBuf},
    sync::Arc,
};

use kubenpu_sdk::UsageNamesSpec;

use super::parse::{self, ClientStats};
use crate::discovery::DevNum;

/// The device a claimed node belongs to, as the metrics label it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceLabels {
    /// The device's stable name (PCI address or sysfs path).
    pub device: Arc<str>,
    /// The vendor claiming it.
    pub vendor: Arc<str>,
}

/// What one scan is asked to look at.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Counted cgroups that are still there: id and directory.
    pub cgroups: Vec<(u64, PathBuf)>,
    /// Claimed device nodes, by device number.
    pub devices: HashMap<DevNum, DeviceLabels>,
    /// The names each vendor gives its engines and regions; a vendor not
    /// here keeps the kernel's.
    pub names: HashMap<Arc<str>, UsageNamesSpec>,
}

/// An fd open on a claimed device node, with what its fdinfo said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The cgroup of the process holding it.
    pub cgroup: u64,
    /// That process.
    pub pid: u32,
    /// The fd.
    pub fd: u32,
    /// The device it is open on.
    pub device: DeviceLabels,
    /// Its fdinfo.
    pub stats: ClientStats,
}

/// What one scan found, and what it cost.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Every fd open on a claimed device, in cgroup, pid and fd order.
    pub sightings: Vec<Sighting>,
    /// fdinfo files read.
    pub files_read: u64,
    /// Processes whose fds this agent may not read: another user's,
    /// without CAP_SYS_PTRACE.
    pub denied: Vec<u32>,
    /// Whether `cgroup.procs` showed processes outside this agent's pid
    /// namespace, as pid 0: the reader cannot find their fds.
    pub foreign: bool,
    /// Cgroups that list no process although `cgroup.events` says they
    /// are populated and they have no child cgroup: newer kernels leave
    /// out, rather than show as 0, processes of other pid namespaces.
    pub hiding: Vec<u64>,
}

/// Visits the processes of `targets.cgroups` in the `/proc` at
/// `proc_root`.
pub fn scan(proc_root: &Path, targets: &Targets) -> Scan {
    // Resolved once: a root that is a link swapped whole (a test's
    // fixture) is read as one.
    let proc_root = &proc_root
        .canonicalize()
        .unwrap_or_else(|_| proc_root.to_owned());
    let mut scan = Scan::default();
    for (cgroup, dir) in &targets.cgroups {
        let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) else {
            continue; // removed since it was listed
        };
        let mut pids: Vec<u32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        scan.foreign |= pids.contains(&0);
        if pids.is_empty() && hides_processes(dir) {
            scan.hiding.push(*cgroup);
        }
        pids.retain(|&pid| pid != 0);
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            visit(proc_root, *cgroup, pid, targets, &mut scan);
        }
    }
    scan
}

/// Whether cgroup `dir`, which lists no process, is populated and has no
/// child cgroup that could hold its processes.
fn hides_processes(dir: &Path) -> bool {
    let populated = fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|events| events.lines().any(|l| l.trim() == "populated 1"));
    let has_children = fs::read_dir(dir)
        .map(|entries| entries.flatten().any(|e| e.path().is_dir()))
        .unwrap_or(true);
    populated && !has_children
}

/// Reads the fdinfo of every fd of `pid` that is open on a claimed node.
/// The kernel may refuse the fd list, an fd's target or its fdinfo (each
/// needs ptrace-read access to the process): the process is then denied,
/// and left.
fn visit(proc_root: &Path, cgroup: u64, pid: u32, targets: &Targets, scan: &mut Scan) {
    let process = proc_root.join(pid.to_string());
    let denied = |e: &std::io::Error| e.kind() == ErrorKind::PermissionDenied;
    let entries = match fs::read_dir(process.join("fd")) {
        Ok(entries) => entries,
        Err(e) if denied(&e) => return scan.denied.push(pid),
        Err(_) => return, // exited
    };
    let mut fds: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    for fd in fds {
        // The link is followed to the node itself, whichever mount
        // namespace its path is in.
        let meta = match fs::metadata(process.join("fd").join(fd.to_string())) {
            Ok(meta) => meta,
            Err(e) if denied(&e) => return scan.denied.push(pid),
            Err(_) => continue, // closed meanwhile
        };
        if !meta.file_type().is_char_device() {
            continue;
        }
        let Some(device) = DevNum::from_st_rdev(meta.rdev()).and_then(|n| targets.devices.get(&n))
        else {
            continue;
        };
        let text = match fs::read_to_string(process.join("fdinfo").join(fd.to_string())) {
            Ok(text) => text,
            Err(e) if denied(&e) => return scan.denied.push(pid),
            Err(_) => continue, // closed meanwhile
        };
        scan.files_read += 1;
        let stats = parse::parse(&text);
        scan.sightings.push(Sighting {
            cgroup,
            pid,
            fd,
            device: device.clone(),
            stats: match targets.names.get(&device.vendor) {
                Some(names) => stats.renamed(names),
                None => stats,
            },
        });
    }
}
