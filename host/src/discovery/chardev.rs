//! Finds the character devices outside DRM that vendor plugins claim
//! (`dma_heap`, `udmabuf`, `nvidia`, ...), where each plugin says they
//! are: a sysfs class, one misc device, or a major number that
//! `/proc/devices` names, for drivers whose nodes have no sysfs device
//! (NVIDIA's are made with `mknod`).
//!
//! A node with a parent device (a PCI function) is grouped under it, as
//! DRM nodes are, and named by its PCI address; a virtual one is named by
//! its path below `/sys/devices` (`virtual/dma_heap/system`); a node found
//! by its major alone by its path below `/dev` (`nvidia0`).

use std::{
    collections::BTreeMap,
    fs,
    os::unix::fs::{FileTypeExt as _, MetadataExt as _},
    path::{Path, PathBuf},
};

use kubenpu_sdk::NodesSpec;

use super::{DevNum, Device, Discovery, Node, Pci, Roots, Subsystem, sysfs};

/// A plugin's claim on character devices: the driver name it gives them
/// and where their nodes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharClaim {
    /// The driver name, as the metrics show it.
    pub driver: String,
    /// Where the nodes are.
    pub nodes: NodesSpec,
}

/// How deep below `/dev` nodes found by major are looked for
/// (`/dev/nvidia0`, `/dev/tenstorrent/0`).
const DEV_DEPTH: usize = 2;

/// The devices of every claim found under `roots`, and what could not be
/// read. `/proc/devices` is read, and `/dev` walked, once for all the
/// claims by major.
pub fn discover(roots: &Roots, claims: &[CharClaim], found: &mut Discovery) {
    let mut by_major = Vec::new();
    for claim in claims {
        match &claim.nodes {
            NodesSpec::Class(class) => {
                let dir = roots.sysfs.join("class").join(class);
                let entries = sysfs::entries(&dir);
                in_sysfs(roots, claim, &entries, found);
            }
            NodesSpec::Misc(name) => {
                let entry = roots.sysfs.join("class/misc").join(name);
                if entry.exists() {
                    in_sysfs(roots, claim, &[entry], found);
                }
            }
            NodesSpec::Major(name) => by_major.push((claim, name.as_str())),
        }
    }
    if !by_major.is_empty() {
        in_dev(roots, &by_major, found);
    }
}

/// Nodes listed in sysfs, grouped by their parent device where they have
/// one.
fn in_sysfs(roots: &Roots, claim: &CharClaim, entries: &[PathBuf], found: &mut Discovery) {
    let mut by_device: BTreeMap<PathBuf, Vec<Node>> = BTreeMap::new();
    for entry in entries {
        let dev_file = entry.join("dev");
        if !dev_file.exists() {
            continue;
        }
        match read_node(roots, entry) {
            Ok((place, node)) => by_device.entry(place).or_default().push(node),
            Err(e) => found.skipped.push(format!("{}: {e}", entry.display())),
        }
    }
    for (place, mut nodes) in by_device {
        nodes.sort_by_key(|n| n.dev);
        let pci = Pci::from_uevent(&sysfs::uevent(&place.join("uevent")));
        let name = match &pci {
            Some(pci) => pci.address.clone(),
            None => sysfs::stable_name(&roots.sysfs, &place),
        };
        found.devices.push(Device {
            name,
            subsystem: Subsystem::Char,
            driver: claim.driver.clone(),
            numa_node: sysfs::read_trimmed(&place.join("numa_node"))
                .ok()
                .and_then(|n| n.parse().ok()),
            pci,
            nodes,
        });
    }
}

/// One class entry's node, and the device it belongs to: its parent
/// device, or itself where it has none (a virtual device).
fn read_node(roots: &Roots, entry: &Path) -> std::io::Result<(PathBuf, Node)> {
    let dev: DevNum = sysfs::read_trimmed(&entry.join("dev"))?
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("dev: {e}")))?;
    let name = entry
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    let dev_name = sysfs::uevent(&entry.join("uevent"))
        .get("DEVNAME")
        .cloned()
        .unwrap_or_else(|| name.clone());
    let parent = entry.join("device");
    let place = if parent.exists() {
        parent.canonicalize()?
    } else {
        entry.canonicalize()?
    };
    Ok((
        place,
        Node {
            name,
            dev,
            path: roots.dev.join(dev_name),
        },
    ))
}

/// Every character node under `/dev` whose major `/proc/devices` gives
/// one of the `claims`' names, each a device of its own.
fn in_dev(roots: &Roots, claims: &[(&CharClaim, &str)], found: &mut Discovery) {
    let proc_devices = fs::read_to_string(roots.proc.join("devices")).unwrap_or_default();
    let majors: Vec<(&CharClaim, u32)> = claims
        .iter()
        .filter_map(|&(claim, name)| Some((claim, char_major(&proc_devices, name)?)))
        .collect();
    if majors.is_empty() {
        return;
    }
    let mut nodes = Vec::new();
    char_nodes(&roots.dev, DEV_DEPTH, &mut nodes);
    for (path, rdev) in nodes {
        let Some(dev) = DevNum::from_st_rdev(rdev) else {
            continue;
        };
        let Some((claim, _)) = majors.iter().find(|(_, major)| *major == dev.major()) else {
            continue;
        };
        let relative = path
            .strip_prefix(&roots.dev)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        found.devices.push(Device {
            name: relative.clone(),
            subsystem: Subsystem::Char,
            driver: claim.driver.clone(),
            pci: None,
            numa_node: None,
            nodes: vec![Node {
                name: relative,
                dev,
                path,
            }],
        });
    }
}

/// The major `/proc/devices` lists `name` under among character devices.
fn char_major(proc_devices: &str, name: &str) -> Option<u32> {
    proc_devices
        .lines()
        .skip_while(|line| !line.starts_with("Character devices:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .find_map(|line| {
            let (major, listed) = line.trim().split_once(' ')?;
            (listed.trim() == name).then(|| major.parse().ok())?
        })
}

/// Character nodes below `dir`, `depth` levels down, with their `st_rdev`.
fn char_nodes(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, u64)>) {
    for path in sysfs::entries(dir) {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_char_device() {
            out.push((path, meta.rdev()));
        } else if meta.is_dir() && depth > 1 {
            char_nodes(&path, depth - 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::char_major;

    #[test]
    fn majors_are_read_from_the_character_section_only() {
        let text = "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-uvm\n\nBlock devices:\n195 nvidia-uvm\n";
        assert_eq!(char_major(text, "nvidia"), Some(195));
        assert_eq!(char_major(text, "nvidia-uvm"), Some(234));
        assert_eq!(char_major(text, "mem"), Some(1));
        assert_eq!(char_major(text, "nvidia-frontend"), None);
    }
}
