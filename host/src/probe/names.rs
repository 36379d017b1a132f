//! The cgroup paths the kernel program records (the NAMES map): the
//! struct offsets it needs, resolved from the running kernel's BTF, and
//! the paths read back.

use std::path::PathBuf;

use aya::{
    Ebpf, EbpfLoader,
    maps::{HashMap, MapData},
};
use kubenpu_ebpf::{CgroupPath, global, map};

use super::{Btf, ProbeError, unpreempted::unpreempted};

/// Where the program finds a task's cgroup and its kernfs names; all zero
/// (recording off) where the kernel's BTF lacks one of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Offsets {
    enabled: u32,
    task_cgroups: u32,
    css_set_dfl_cgrp: u32,
    cgroup_kn: u32,
    kn_name: u32,
    kn_parent: u32,
}

impl Offsets {
    /// The offsets in `vmlinux`'s BTF. The kernfs parent link is
    /// `__parent` since Linux 6.15, `parent` before.
    pub fn resolve(vmlinux: &Btf) -> Self {
        let find = || -> Result<Self, String> {
            Ok(Self {
                enabled: 1,
                task_cgroups: vmlinux.member_offset("task_struct", "cgroups")?,
                css_set_dfl_cgrp: vmlinux.member_offset("css_set", "dfl_cgrp")?,
                cgroup_kn: vmlinux.member_offset("cgroup", "kn")?,
                kn_name: vmlinux.member_offset("kernfs_node", "name")?,
                kn_parent: vmlinux
                    .member_offset("kernfs_node", "__parent")
                    .or_else(|_| vmlinux.member_offset("kernfs_node", "parent"))?,
            })
        };
        find().unwrap_or_default()
    }

    /// Sets the program's globals.
    pub fn set<'a>(&'a self, loader: &mut EbpfLoader<'a>) {
        let values = self;
        loader
            .override_global(global::CGROUP_NAMES, &values.enabled, true)
            .override_global(global::TASK_CGROUPS_OFFSET, &values.task_cgroups, true)
            .override_global(
                global::CSS_SET_DFL_CGRP_OFFSET,
                &values.css_set_dfl_cgrp,
                true,
            )
            .override_global(global::CGROUP_KN_OFFSET, &values.cgroup_kn, true)
            .override_global(global::KN_NAME_OFFSET, &values.kn_name, true)
            .override_global(global::KN_PARENT_OFFSET, &values.kn_parent, true);
    }
}

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(format!("NAMES map: {e}"))
}

/// The path below the cgroup2 root of cgroup `id`, as recorded.
pub fn path(ebpf: &Ebpf, id: u64) -> Option<PathBuf> {
    let names: HashMap<&MapData, u64, CgroupPath> =
        HashMap::try_from(ebpf.map(map::NAMES)?).ok()?;
    let recorded = unpreempted(|| names.get(&id, 0)).ok()?;
    let depth = (recorded.depth as usize).min(recorded.names.len());
    Some(
        recorded.names[..depth]
            .iter()
            .rev()
            .map(|name| {
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                String::from_utf8_lossy(&name[..end]).into_owned()
            })
            .collect(),
    )
}

/// Deletes cgroup `id`'s recorded path, if there is one.
pub fn forget(ebpf: &mut Ebpf, id: u64) -> Result<(), ProbeError> {
    let mut names: HashMap<&mut MapData, u64, CgroupPath> =
        HashMap::try_from(ebpf.map_mut(map::NAMES).ok_or_else(|| other("missing"))?)
            .map_err(other)?;
    if unpreempted(|| names.get(&id, 0)).is_err() {
        return Ok(());
    }
    unpreempted(|| names.remove(&id)).map_err(other)
}
