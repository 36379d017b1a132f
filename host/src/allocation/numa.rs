//! Where a holder's CPUs are against its device's NUMA node, before any
//! call: a container whose CPUs are all on other nodes than its
//! accelerator's crosses the interconnect on every call and every DMA it
//! starts, whatever it does (the remote-call counters show the calls it
//! made; this shows the placement itself).
//!
//! A container's CPUs are its exclusive ones where kubelet's CPU manager
//! gave it some (PodResources `cpu_ids`), else the CPUs its cgroup may run
//! on (`cpuset.cpus.effective`), which the agent can read only for a
//! container it has counted calls of. Without either, or for a device
//! without a node (`numa_node` -1), there is no fit to report.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

/// Where a container's CPUs were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuSource {
    /// Its exclusive CPUs, from kubelet's PodResources `cpu_ids`.
    Exclusive,
    /// Its cgroup's `cpuset.cpus.effective`.
    Cpuset,
}

impl CpuSource {
    /// The `cpus` label.
    pub fn as_str(self) -> &'static str {
        match self {
            CpuSource::Exclusive => "cpu_ids",
            CpuSource::Cpuset => "cpuset",
        }
    }
}

/// How many of a container's CPUs are on its device's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fit {
    /// Its CPUs on the device's node.
    pub local: u32,
    /// All its CPUs that the node map knows.
    pub total: u32,
    /// Where its CPUs were read.
    pub cpus: CpuSource,
}

/// The node of each CPU, from sysfs' `devices/system/node/node<N>/cpulist`.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    node_of_cpu: HashMap<u32, u32>,
}

impl Topology {
    /// Reads the node map below `sysfs_root`; a kernel without NUMA has
    /// no node directories, and the map is then empty.
    pub fn read(sysfs_root: &Path) -> Self {
        let mut node_of_cpu = HashMap::new();
        let dir = sysfs_root.join("devices/system/node");
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(node) = name
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse().ok())
            else {
                continue;
            };
            let cpus = std::fs::read_to_string(entry.path().join("cpulist"))
                .ok()
                .and_then(|list| parse_cpulist(&list));
            for cpu in cpus.into_iter().flatten() {
                node_of_cpu.insert(cpu, node);
            }
        }
        Self { node_of_cpu }
    }

    /// The fit of `cpus` (read from `source`) to `node`; `None` when the
    /// map knows none of them.
    pub fn fit(&self, cpus: &[u32], source: CpuSource, node: u32) -> Option<Fit> {
        let nodes: Vec<u32> = cpus
            .iter()
            .filter_map(|cpu| self.node_of_cpu.get(cpu).copied())
            .collect();
        (!nodes.is_empty()).then(|| Fit {
            local: nodes.iter().filter(|&&n| n == node).count() as u32,
            total: nodes.len() as u32,
            cpus: source,
        })
    }
}

/// The CPUs a container may run on: `exclusive` (kubelet's `cpu_ids`)
/// where it has any, else those of its cgroup `cgroup_dir`, where known.
pub fn cpus_of(exclusive: &[u32], cgroup_dir: Option<&PathBuf>) -> Option<(Vec<u32>, CpuSource)> {
    if !exclusive.is_empty() {
        return Some((exclusive.to_vec(), CpuSource::Exclusive));
    }
    let list = std::fs::read_to_string(cgroup_dir?.join("cpuset.cpus.effective")).ok()?;
    Some((parse_cpulist(&list)?, CpuSource::Cpuset))
}

/// The CPUs of a kernel CPU list such as `0-3,8,10-11`; `None` if it does
/// not parse.
pub fn parse_cpulist(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
                if first > last {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_prints_them() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist("5"), Some(vec![5]));
        // An empty cpuset (a cgroup with no CPUs of its own yet).
        assert_eq!(parse_cpulist("\n"), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a-b"), None);
    }

    #[test]
    fn the_fit_counts_a_containers_cpus_on_its_devices_node() {
        let sysfs = tempfile::tempdir().unwrap();
        for (node, cpus) in [(0, "0-1\n"), (1, "2-3\n")] {
            let dir = sysfs.path().join(format!("devices/system/node/node{node}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cpulist"), cpus).unwrap();
        }
        // Not a node: sysfs lists other files there too.
        std::fs::write(sysfs.path().join("devices/system/node/possible"), "0-1\n").unwrap();
        let topology = Topology::read(sysfs.path());

        let cgroup = tempfile::tempdir().unwrap();
        std::fs::write(cgroup.path().join("cpuset.cpus.effective"), "1-3\n").unwrap();
        let dir = cgroup.path().to_owned();

        // Exclusive CPUs win over the cgroup's.
        let (cpus, source) = cpus_of(&[0, 1], Some(&dir)).unwrap();
        assert_eq!(
            topology.fit(&cpus, source, 1),
            Some(Fit {
                local: 0,
                total: 2,
                cpus: CpuSource::Exclusive
            })
        );
        let (cpus, source) = cpus_of(&[], Some(&dir)).unwrap();
        assert_eq!(
            topology.fit(&cpus, source, 1),
            Some(Fit {
                local: 2,
                total: 3,
                cpus: CpuSource::Cpuset
            })
        );
        // Neither known: no fit, rather than a guess.
        assert_eq!(cpus_of(&[], None), None);
        assert_eq!(Topology::default().fit(&[0], CpuSource::Exclusive, 0), None);
    }
}
