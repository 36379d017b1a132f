//! `kubenpuctl devices` inside real kernels, against real sysfs: qemu's
//! virtio-gpu (a PCI function) and the vgem module (a platform device on
//! older kernels, a faux device on newer ones).

use std::{collections::BTreeSet, fs};

use kubenpu_vm::{Kernel, Vm};
use serde_json::Value;

fn devices_in(kernel: Kernel, vgem_address: &str) {
    let shared = tempfile::tempdir().unwrap();
    let outcome = Vm::new(kernel)
        .binary(env!("CARGO_BIN_EXE_kubenpuctl"))
        .shared_dir(shared.path())
        .run(
            "kubenpuctl devices --json > devices.json && \
             for n in /sys/class/drm/card[0-9] /sys/class/drm/renderD*; do cat $n/dev; done > sysfs-devs",
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    let rows: Value =
        serde_json::from_slice(&fs::read(shared.path().join("devices.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");

    let virtio = rows
        .iter()
        .find(|r| r["driver"] == "virtio_gpu")
        .expect("a virtio_gpu row");
    assert_eq!(virtio["pci_id"], "1af4:1050");
    assert_eq!(virtio["vendor"], "virtio_gpu");
    assert_eq!(virtio["subsystem"], "drm");
    let address = virtio["address"].as_str().unwrap();
    assert!(
        address.starts_with("0000:00:") && address.ends_with(".0"),
        "{address}"
    );

    let vgem = rows
        .iter()
        .find(|r| r["driver"] == "vgem")
        .expect("a vgem row");
    assert_eq!(vgem["address"], vgem_address);
    assert_eq!(vgem["pci_id"], Value::Null);
    assert_eq!(vgem["vendor"], "vgem");

    // Every card and render node the guest's sysfs lists, and no other.
    let listed: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| {
            r["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap().to_owned())
        })
        .collect();
    let in_sysfs: BTreeSet<String> = fs::read_to_string(shared.path().join("sysfs-devs"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, in_sysfs);
    assert_eq!(listed.len(), 4);
}

#[test]
fn devices_on_bookworm() {
    devices_in(Kernel::Bookworm, "platform/vgem");
}

#[test]
fn devices_on_bookworm_backports() {
    devices_in(Kernel::BookwormBackports, "platform/vgem");
}

#[test]
fn devices_on_sid() {
    devices_in(Kernel::Sid, "faux/vgem");
}
