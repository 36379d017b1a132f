//! Finds the node's DRM and accel devices in sysfs: one [`Device`] per
//! underlying device (a PCI function, a platform or virtual device), with
//! every node it exposes, the driver behind it and where it sits; and the
//! other character devices vendor plugins claim ([`chardev`]).
//!
//! Pitfalls this handles, measured on real kernels: `/sys/class/drm` also
//! lists connectors (`card0-eDP-1`) and a `version` file; a virtio-gpu
//! card's device is the PCI function, bound to `virtio-pci`, while the DRM
//! driver (`virtio_gpu`) is bound to its virtio child; vgem is a platform
//! device without a driver link on older kernels and a faux device bound
//! to `faux_driver` on newer ones; device-tree GPUs have no PCI identity;
//! uevent values may contain `=`.

mod chardev;
mod device;
pub mod sysfs;

pub use chardev::CharClaim;
pub use device::{DevNum, Device, Node, Pci, Subsystem};

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

/// Where sysfs and /dev are; tests point these at fixture trees.
#[derive(Debug, Clone)]
pub struct Roots {
    /// sysfs, normally `/sys`.
    pub sysfs: PathBuf,
    /// The device directory, normally `/dev`.
    pub dev: PathBuf,
    /// procfs, normally `/proc`: `devices` names the majors of drivers
    /// without sysfs devices.
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Self {
            sysfs: "/sys".into(),
            dev: "/dev".into(),
            proc: "/proc".into(),
        }
    }
}

/// What a walk found, and what it had to skip.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Devices, sorted by name.
    pub devices: Vec<Device>,
    /// One line per entry that could not be read.
    pub skipped: Vec<String>,
}

/// The device classes walked, with the node names each may hold.
const CLASSES: [(&str, Subsystem, &[&str]); 2] = [
    ("drm", Subsystem::Drm, &["card", "renderD"]),
    ("accel", Subsystem::Accel, &["accel"]),
];

/// Walks `/sys/class/drm` and `/sys/class/accel` under `roots`, and
/// finds the character devices of `claims`.
pub fn discover(roots: &Roots, claims: &[CharClaim]) -> Discovery {
    let mut found = Discovery::default();
    // Canonical device directory -> its nodes and subsystem.
    let mut by_device: BTreeMap<PathBuf, (Subsystem, Vec<Node>)> = BTreeMap::new();
    for (class, subsystem, prefixes) in CLASSES {
        let class_dir = roots.sysfs.join("class").join(class);
        for entry in sysfs::entries(&class_dir) {
            let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !is_node_name(name, prefixes) {
                continue;
            }
            match read_node(roots, class, &entry, name) {
                Ok((device_dir, node)) => {
                    let slot = by_device
                        .entry(device_dir)
                        .or_insert((subsystem, Vec::new()));
                    // A device with any accel node is an accelerator.
                    if subsystem == Subsystem::Accel {
                        slot.0 = Subsystem::Accel;
                    }
                    slot.1.push(node);
                }
                Err(e) => found.skipped.push(format!("{}: {e}", entry.display())),
            }
        }
    }
    for (device_dir, (subsystem, mut nodes)) in by_device {
        nodes.sort_by_key(|n| n.dev);
        found
            .devices
            .push(describe_device(&roots.sysfs, &device_dir, subsystem, nodes));
    }
    chardev::discover(roots, claims, &mut found);
    found.devices.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `card0`, `renderD128`, `accel0`: a prefix then digits only, which
/// leaves out connectors (`card0-eDP-1`), `version` and `controlD64`.
fn is_node_name(name: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn read_node(
    roots: &Roots,
    class: &str,
    entry: &Path,
    name: &str,
) -> std::io::Result<(PathBuf, Node)> {
    let dev: DevNum = sysfs::read_trimmed(&entry.join("dev"))?
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("dev: {e}")))?;
    let uevent = sysfs::uevent(&entry.join("uevent"));
    let dev_name = uevent.get("DEVNAME").cloned().unwrap_or_else(|| {
        let dir = if class == "drm" { "dri" } else { class };
        format!("{dir}/{name}")
    });
    let device_dir = entry.join("device").canonicalize()?;
    Ok((
        device_dir,
        Node {
            name: name.to_owned(),
            dev,
            path: roots.dev.join(dev_name),
        },
    ))
}

fn describe_device(
    sysfs_root: &Path,
    dir: &Path,
    subsystem: Subsystem,
    nodes: Vec<Node>,
) -> Device {
    // Kernels before 5.19 put virtio-gpu's nodes under the virtio child
    // rather than the PCI function; the function is what has an address.
    let pci_of = |d: &Path| Pci::from_uevent(&sysfs::uevent(&d.join("uevent")));
    let (place, pci) = match pci_of(dir) {
        Some(pci) => (dir, Some(pci)),
        None => match dir.parent().filter(|_| sysfs::is_virtio_child(dir)) {
            Some(parent) => (parent, pci_of(parent)),
            None => (dir, None),
        },
    };
    let name = match &pci {
        Some(pci) => pci.address.clone(),
        None => sysfs::stable_name(sysfs_root, dir),
    };
    Device {
        name,
        subsystem,
        driver: sysfs::drm_driver(dir),
        pci,
        numa_node: sysfs::read_trimmed(&place.join("numa_node"))
            .ok()
            .and_then(|n| n.parse().ok()),
        nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::is_node_name;

    #[test]
    fn only_numbered_nodes_count() {
        let drm = &["card", "renderD"];
        for yes in ["card0", "card12", "renderD128"] {
            assert!(is_node_name(yes, drm), "{yes}");
        }
        for no in [
            "card0-eDP-1",
            "card",
            "version",
            "controlD64",
            "renderD",
            "card1-HDMI-A-1",
        ] {
            assert!(!is_node_name(no, drm), "{no}");
        }
    }
}
