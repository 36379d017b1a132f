//! The plugins directory is followed while the host runs: adding,
//! replacing (by rename) and removing a plugin changes the vendors and the
//! device table, and a bad replacement leaves the previous version in force.

mod support;

use std::{fs, path::Path, sync::mpsc, time::Duration};

use kubenpu::{
    device_table::DeviceTable,
    discovery::discover,
    plugins::{BUILTIN, PluginHost, Source, Vendors, Watcher},
};
use support::{builtin_wasm, sysfs::Sysfs, test_plugin};

/// Atomically puts `bytes` at `dir/name`, as a package manager or
/// `kubectl cp` followed by `mv` would.
fn install(dir: &Path, name: &str, bytes: &[u8]) {
    let staging = dir.join(format!(".{name}.partial"));
    fs::write(&staging, bytes).unwrap();
    fs::rename(staging, dir.join(name)).unwrap();
}

/// Waits for the watcher to report vendors satisfying `done`.
fn wait_for(
    updates: &mpsc::Receiver<Vendors>,
    what: &str,
    done: impl Fn(&Vendors) -> bool,
) -> Vendors {
    let mut last = None;
    while let Ok(vendors) = updates.recv_timeout(Duration::from_secs(20)) {
        if done(&vendors) {
            return vendors;
        }
        last = Some(vendors);
    }
    panic!("timed out waiting for {what}; last state: {last:?}");
}

fn vendor_of(vendors: &Vendors, name: &str) -> Option<Source> {
    vendors
        .plugins
        .iter()
        .find(|p| p.name() == name)
        .map(|p| p.source.clone())
}

#[test]
fn the_device_table_follows_the_plugins_directory() {
    let sysfs = Sysfs::new();
    let acme_device = sysfs.other("platform/acme-npu.0", Some(("platform", "acme_drv")), "");
    sysfs.node(&acme_device, "accel", "accel0", 261, 0);
    let devices = discover(&sysfs.roots(), &[]).devices;
    let claimant = |vendors: &Vendors| {
        let table = DeviceTable::build(devices.clone(), vendors.clone());
        table.entries[0]
            .vendor
            .as_ref()
            .map(|v| v.name().to_owned())
    };

    let dir = tempfile::tempdir().unwrap();
    let mut host = PluginHost::new(dir.path()).unwrap();
    let initial = host.scan().unwrap();
    assert_eq!(claimant(&initial), None);
    let (tx, updates) = mpsc::channel();
    let _watcher = Watcher::spawn(host, move |vendors| {
        let _ = tx.send(vendors.unwrap());
    })
    .unwrap();

    // Add: a new vendor claims the device.
    install(
        dir.path(),
        "acme.wasm",
        &fs::read(test_plugin("acme")).unwrap(),
    );
    let vendors = wait_for(&updates, "acme to load", |v| vendor_of(v, "acme").is_some());
    assert_eq!(claimant(&vendors).as_deref(), Some("acme"));
    // The rescan reads the file; reading is no change, so no rescan follows.
    let echo = updates.recv_timeout(Duration::from_secs(2));
    assert!(echo.is_err(), "a rescan with nothing changed: {echo:?}");

    // Replace by rename: the file now provides vgem, overriding the built-in,
    // and nothing claims the device any more.
    let vgem = builtin_wasm("vgem");
    install(dir.path(), "acme.wasm", vgem);
    let vendors = wait_for(&updates, "the replacement", |v| {
        vendor_of(v, "acme").is_none()
    });
    assert!(matches!(
        vendor_of(&vendors, "vgem"),
        Some(Source::File { .. })
    ));
    assert_eq!(claimant(&vendors), None);

    // A broken replacement: rejected, the previous version stays in force.
    install(dir.path(), "acme.wasm", &vgem[..vgem.len() / 3]);
    let vendors = wait_for(&updates, "the rejection", |v| !v.rejected.is_empty());
    assert!(matches!(
        vendor_of(&vendors, "vgem"),
        Some(Source::File { .. })
    ));
    let line = vendors.rejected[0].to_string();
    assert!(
        line.contains("not a valid component") && line.contains("keeping the previous version"),
        "{line}"
    );

    // Remove: back to the built-ins alone.
    fs::remove_file(dir.path().join("acme.wasm")).unwrap();
    let vendors = wait_for(&updates, "the removal", |v| {
        v.rejected.is_empty() && v.plugins.iter().all(|p| p.source == Source::Builtin)
    });
    assert_eq!(vendors.plugins.len(), BUILTIN.len());
}

/// Makes `dir` hold `files` the way the kubelet writes a ConfigMap volume:
/// the files in a timestamped directory, `..data` linked to it (swapped by
/// a rename), and each name a link through `..data`.
fn configmap_update(dir: &Path, version: u32, files: &[(&str, &[u8])]) {
    let data = format!("..2026_11_29_00_00_0{version}.000000000");
    fs::create_dir(dir.join(&data)).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(&data).join(name), bytes).unwrap();
        let link = dir.join(name);
        if fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(format!("..data/{name}"), link).unwrap();
        }
    }
    std::os::unix::fs::symlink(&data, dir.join("..data_tmp")).unwrap();
    fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
}

#[test]
fn a_configmap_volume_is_read_and_followed() {
    let dir = tempfile::tempdir().unwrap();
    let acme = fs::read(test_plugin("acme")).unwrap();
    configmap_update(dir.path(), 1, &[("acme.wasm", &acme)]);
    let mut host = PluginHost::new(dir.path()).unwrap();
    let vendors = host.scan().unwrap();
    assert!(vendors.rejected.is_empty(), "{:?}", vendors.rejected);
    assert!(matches!(
        vendor_of(&vendors, "acme"),
        Some(Source::File { .. })
    ));

    let (tx, updates) = mpsc::channel();
    let _watcher = Watcher::spawn(host, move |vendors| {
        let _ = tx.send(vendors.unwrap());
    })
    .unwrap();
    // The ConfigMap is edited: acme.wasm now holds the vgem vendor.
    let vgem = builtin_wasm("vgem");
    configmap_update(dir.path(), 2, &[("acme.wasm", vgem)]);
    let vendors = wait_for(&updates, "the ConfigMap's update", |v| {
        vendor_of(v, "acme").is_none()
    });
    assert!(matches!(
        vendor_of(&vendors, "vgem"),
        Some(Source::File { .. })
    ));

    // A link out of the directory is refused, in one line naming it.
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("outside.wasm")).unwrap();
    let vendors = wait_for(&updates, "the refusal", |v| !v.rejected.is_empty());
    let line = vendors.rejected[0].to_string();
    assert!(line.contains("outside.wasm"), "{line}");
    assert_eq!(line.lines().count(), 1, "{line}");
}
