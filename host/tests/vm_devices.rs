//! `kubenpuctl devices` inside real kernels, against real sysfs: qemu's
//! virtio-gpu (a PCI function) and the vgem module (a platform device on
//! older kernels, a faux device on newer ones), and where the kernel has
//! them (6.12 on) the character devices outside DRM that built-in
//! plugins claim: the system DMA heap (a class of its own) and udmabuf (a
//! misc device).

use std::{collections::BTreeSet, fs};

use kubenpu_vm::{Kernel, Vm};
use serde_json::Value;

fn devices_in(kernel: Kernel, vgem_address: &str, char_devices: bool) {
    let shared = tempfile::tempdir().unwrap();
    let outcome = Vm::new(kernel)
        .binary(env!("CARGO_BIN_EXE_kubenpuctl"))
        .shared_dir(shared.path())
        .run(
            "kubenpuctl devices --json > devices.json && \
             for n in /sys/class/drm/card[0-9] /sys/class/drm/renderD* /sys/class/dma_heap/* /sys/class/misc/udmabuf; do \
               [ ! -e $n/dev ] || cat $n/dev; done > sysfs-devs",
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    let rows: Value =
        serde_json::from_slice(&fs::read(shared.path().join("devices.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), if char_devices { 4 } else { 2 }, "{rows:?}");

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
    assert_eq!(listed.len(), if char_devices { 6 } else { 4 });
    if !char_devices {
        return;
    }
    for (driver, address) in [
        ("dma_heap", "virtual/dma_heap/system"),
        ("udmabuf", "virtual/misc/udmabuf"),
    ] {
        let row = rows
            .iter()
            .find(|r| r["driver"] == driver)
            .unwrap_or_else(|| panic!("no {driver} row: {rows:?}"));
        assert_eq!(row["address"], address);
        assert_eq!(row["vendor"], driver);
        assert_eq!(row["subsystem"], "char");
        assert_eq!(row["pci_id"], Value::Null);
    }
}

#[test]
fn devices_on_bookworm() {
    devices_in(Kernel::Bookworm, "platform/vgem", false);
}

#[test]
fn devices_on_bookworm_backports() {
    devices_in(Kernel::BookwormBackports, "platform/vgem", true);
}

#[test]
fn devices_on_sid() {
    devices_in(Kernel::Sid, "faux/vgem", true);
}
