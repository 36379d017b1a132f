//! Small readers for sysfs' conventions.

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
};

/// The entries of a directory, sorted; none if it is absent.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    entries
}

/// A one-value attribute file, trimmed.
pub fn read_trimmed(path: &Path) -> std::io::Result<String> {
    Ok(fs::read_to_string(path)?.trim().to_owned())
}

/// A uevent file's `KEY=VALUE` lines; values may themselves contain `=`.
pub fn uevent(path: &Path) -> HashMap<String, String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Drivers that only glue a device to its bus; the DRM driver is elsewhere.
const BUS_GLUE: [&str; 2] = ["virtio-pci", "faux_driver"];

/// The DRM/accel driver of a device directory: the virtio child's driver
/// for virtio devices, else the device's own driver unless that is bus
/// glue, else the device's name (vgem, which has no driver of its own).
pub fn drm_driver(device_dir: &Path) -> String {
    let bound = |dir: &Path| -> Option<String> {
        let target = fs::read_link(dir.join("driver")).ok()?;
        let name = target.file_name()?.to_str()?.to_owned();
        (!BUS_GLUE.contains(&name.as_str())).then_some(name)
    };
    let virtio_child = entries(device_dir).into_iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("virtio"))
            && p.join("driver").exists()
    });
    virtio_child
        .and_then(|child| bound(&child))
        .or_else(|| bound(device_dir))
        .or_else(|| {
            device_dir
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Whether a device directory is a virtio device (`virtio0`, ...).
pub fn is_virtio_child(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("virtio"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A non-PCI device's path below `<sysfs>/devices`, e.g. `platform/vgem`:
/// fixed by the hardware description, unlike card numbers.
pub fn stable_name(sysfs_root: &Path, device_dir: &Path) -> String {
    let devices = sysfs_root
        .join("devices")
        .canonicalize()
        .unwrap_or_else(|_| sysfs_root.join("devices"));
    device_dir
        .strip_prefix(&devices)
        .unwrap_or(device_dir)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uevent_values_keep_their_equals_signs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("uevent");
        fs::write(
            &path,
            "DRIVER=panthor\nOF_COMPATIBLE_0=vendor,gpu=v2\nNOVALUE\n",
        )
        .unwrap();
        let uevent = uevent(&path);
        assert_eq!(uevent["OF_COMPATIBLE_0"], "vendor,gpu=v2");
        assert_eq!(uevent["DRIVER"], "panthor");
        assert_eq!(uevent.len(), 2);
    }

    #[test]
    fn virtio_children_are_virtio_and_digits() {
        assert!(is_virtio_child(Path::new(
            "/sys/devices/pci0000:00/0000:00:02.0/virtio0"
        )));
        assert!(!is_virtio_child(Path::new("/sys/devices/virtio-pci")));
        assert!(!is_virtio_child(Path::new("/sys/devices/virtio")));
    }
}
