//! Discovery and vendor matching against sysfs trees shaped like real
//! machines', compared row by row with what `kubenpuctl devices --json`
//! must print.

mod support;

use std::{process::Command, sync::OnceLock};

use kubenpu::{
    device_table::DeviceTable,
    discovery::discover,
    plugins::{PluginHost, Vendors},
};
use serde_json::{Value, json};
use support::sysfs::Sysfs;

/// The built-in vendors, loaded once for all tests.
fn builtins() -> Vendors {
    static VENDORS: OnceLock<Vendors> = OnceLock::new();
    VENDORS
        .get_or_init(|| {
            let empty = tempfile::tempdir().unwrap();
            PluginHost::new(empty.path()).unwrap().scan().unwrap()
        })
        .clone()
}

/// What `kubenpuctl devices` prints for the fixture tree, with the
/// built-in vendors only.
fn kubenpuctl_devices(sysfs: &Sysfs, json: bool) -> String {
    let no_plugins = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubenpuctl"));
    cmd.arg("devices")
        .arg("--sysfs-root")
        .arg(sysfs.path().join("sys"))
        .arg("--dev-root")
        .arg(sysfs.path().join("dev"))
        .arg("--plugins-dir")
        .arg(no_plugins.path());
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rows `kubenpuctl devices --json` prints; discovery skipped nothing
/// and every claiming plugin answered.
fn rows(sysfs: &Sysfs) -> Value {
    let found = discover(&sysfs.roots(), &[]);
    assert_eq!(found.skipped, Vec::<String>::new());
    let table = DeviceTable::build(found.devices, builtins());
    assert_eq!(table.problems, Vec::<String>::new());
    serde_json::from_str(&kubenpuctl_devices(sysfs, true)).unwrap()
}

fn row(
    driver: &str,
    pci_id: Option<&str>,
    address: &str,
    nodes: &[&str],
    vendor: Option<&str>,
    numa: Option<u32>,
    subsystem: &str,
) -> Value {
    json!({
        "driver": driver, "pci_id": pci_id, "address": address, "nodes": nodes,
        "vendor": vendor, "numa_node": numa, "subsystem": subsystem,
    })
}

/// A device with no PCI id and no NUMA node: a platform or device-tree
/// device, as on SoCs.
fn platform_row(
    driver: &str,
    address: &str,
    nodes: &[&str],
    vendor: Option<&str>,
    subsystem: &str,
) -> Value {
    row(driver, None, address, nodes, vendor, None, subsystem)
}

/// Drops the optional product name so rows compare on the contract's keys.
fn without_products(mut rows: Value) -> Value {
    for row in rows.as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("product");
    }
    rows
}

#[test]
fn intel_laptop_with_connectors_and_an_npu() {
    let sysfs = Sysfs::new();
    let igpu = sysfs.intel_gpu_and_npu();
    sysfs.connector(&igpu, "card0", "eDP-1");
    sysfs.connector(&igpu, "card0", "HDMI-A-1");

    let rows = rows(&sysfs);
    assert_eq!(rows[0]["product"], "UHD Graphics 620");
    assert_eq!(
        without_products(rows),
        json!([
            row(
                "i915",
                Some("8086:5917"),
                "0000:00:02.0",
                &["226:0", "226:128"],
                Some("i915"),
                None,
                "drm"
            ),
            row(
                "intel_vpu",
                Some("8086:7d1d"),
                "0000:00:0b.0",
                &["261:0"],
                Some("ivpu"),
                None,
                "accel"
            ),
        ])
    );
}

#[test]
fn gpus_behind_bridges_on_two_numa_nodes_one_unclaimed() {
    let sysfs = Sysfs::new();
    let amd = sysfs.pci(
        "pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0",
        "1002:744C",
        Some("amdgpu"),
        1,
    );
    sysfs.node(&amd, "drm", "card1", 226, 1);
    sysfs.node(&amd, "drm", "renderD129", 226, 129);
    sysfs.connector(&amd, "card1", "DP-1");
    let nvidia = sysfs.pci(
        "pci0000:40/0000:40:01.1/0000:41:00.0",
        "10DE:2684",
        Some("nouveau"),
        0,
    );
    sysfs.node(&nvidia, "drm", "card0", 226, 0);
    sysfs.node(&nvidia, "drm", "renderD128", 226, 128);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            row(
                "amdgpu",
                Some("1002:744c"),
                "0000:03:00.0",
                &["226:1", "226:129"],
                Some("amdgpu"),
                Some(1),
                "drm"
            ),
            row(
                "nouveau",
                Some("10de:2684"),
                "0000:41:00.0",
                &["226:0", "226:128"],
                None,
                Some(0),
                "drm"
            ),
        ])
    );
}

#[test]
fn accel_npus_without_their_control_nodes() {
    let sysfs = Sysfs::new();
    let qaic = sysfs.pci(
        "pci0000:00/0000:00:03.0/0000:05:00.0",
        "17CB:A100",
        Some("qaic"),
        0,
    );
    sysfs.node(&qaic, "accel", "accel0", 261, 0);
    let gaudi = sysfs.pci(
        "pci0000:80/0000:80:02.0/0000:81:00.0",
        "1DA3:1020",
        Some("habanalabs"),
        1,
    );
    sysfs.node(&gaudi, "accel", "accel1", 261, 1);
    sysfs.accel_control_node("accel_controlD1", 509, 1);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            row(
                "qaic",
                Some("17cb:a100"),
                "0000:05:00.0",
                &["261:0"],
                Some("qaic"),
                Some(0),
                "accel"
            ),
            row(
                "habanalabs",
                Some("1da3:1020"),
                "0000:81:00.0",
                &["261:1"],
                Some("habanalabs"),
                Some(1),
                "accel"
            ),
        ])
    );
}

#[test]
fn virtual_machine_with_virtio_gpu_and_platform_vgem() {
    let sysfs = Sysfs::new();
    let virtio = sysfs.pci(
        "pci0000:00/0000:00:02.0",
        "1AF4:1050",
        Some("virtio-pci"),
        -1,
    );
    sysfs.virtio_child(&virtio, "virtio0", "virtio_gpu");
    sysfs.node(&virtio, "drm", "card0", 226, 0);
    sysfs.node(&virtio, "drm", "renderD128", 226, 128);
    sysfs.connector(&virtio, "card0", "Virtual-1");
    let vgem = sysfs.other("platform/vgem", None, "MODALIAS=platform:vgem\n");
    sysfs.node(&vgem, "drm", "card1", 226, 1);
    sysfs.node(&vgem, "drm", "renderD129", 226, 129);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            row(
                "virtio_gpu",
                Some("1af4:1050"),
                "0000:00:02.0",
                &["226:0", "226:128"],
                Some("virtio_gpu"),
                None,
                "drm"
            ),
            platform_row(
                "vgem",
                "platform/vgem",
                &["226:1", "226:129"],
                Some("vgem"),
                "drm"
            ),
        ])
    );
}

#[test]
fn newer_kernels_faux_vgem_and_older_kernels_virtio_child_cards() {
    let sysfs = Sysfs::new();
    // Before 5.19, virtio-gpu's nodes hung below the virtio child.
    let virtio = sysfs.pci(
        "pci0000:00/0000:00:04.0",
        "1AF4:1050",
        Some("virtio-pci"),
        0,
    );
    let child = sysfs.virtio_child(&virtio, "virtio1", "virtio_gpu");
    sysfs.node(&child, "drm", "card0", 226, 0);
    // Since the faux bus, vgem is bound to faux_driver.
    let vgem = sysfs.other("faux/vgem", Some(("faux", "faux_driver")), "");
    sysfs.node(&vgem, "drm", "card1", 226, 1);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            row(
                "virtio_gpu",
                Some("1af4:1050"),
                "0000:00:04.0",
                &["226:0"],
                Some("virtio_gpu"),
                Some(0),
                "drm"
            ),
            platform_row("vgem", "faux/vgem", &["226:1"], Some("vgem"), "drm"),
        ])
    );
}

/// A Rockchip RK3588 board: the Mali GPU (panthor) on its device-tree
/// device, the NPU's accel node on the driverless `rknn` device the rocket
/// module registers (its three cores, bound to `rocket`, have no nodes),
/// and the display subsystem, which no vendor claims.
#[test]
fn rk3588_board_with_panthor_gpu_rocket_npu_and_an_unclaimed_display() {
    let sysfs = Sysfs::new();
    let gpu = sysfs.other(
        "platform/fb000000.gpu",
        Some(("platform", "panthor")),
        "OF_NAME=gpu\nOF_FULLNAME=/gpu@fb000000\nOF_COMPATIBLE_0=rockchip,rk3588-mali\n\
         OF_COMPATIBLE_1=arm,mali-valhall-csf\nOF_COMPATIBLE_N=2\nMODALIAS=of:NgpuT(null)Crockchip,rk3588-maliCarm,mali-valhall-csf\n",
    );
    sysfs.node(&gpu, "drm", "card1", 226, 1);
    sysfs.node(&gpu, "drm", "renderD128", 226, 128);
    let display = sysfs.other(
        "platform/display-subsystem",
        Some(("platform", "rockchip-drm")),
        "OF_NAME=display-subsystem\n",
    );
    sysfs.node(&display, "drm", "card0", 226, 0);
    sysfs.connector(&display, "card0", "HDMI-A-1");
    for core in ["fdab0000.npu", "fdac0000.npu", "fdad0000.npu"] {
        sysfs.device_tree(
            &format!("platform/{core}"),
            Some("rocket"),
            "rockchip,rk3588-rknn-core",
        );
    }
    let npu = sysfs.other("platform/rknn", None, "MODALIAS=platform:rknn\n");
    sysfs.node(&npu, "accel", "accel0", 261, 0);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            platform_row(
                "rockchip-drm",
                "platform/display-subsystem",
                &["226:0"],
                None,
                "drm"
            ),
            platform_row(
                "panthor",
                "platform/fb000000.gpu",
                &["226:1", "226:128"],
                Some("panthor"),
                "drm"
            ),
            platform_row("rknn", "platform/rknn", &["261:0"], Some("rocket"), "accel"),
        ])
    );
}

/// An NXP i.MX93 board: the Ethos-U65 NPU (ethosu) with an accel node,
/// and the LCD controller, which no vendor claims.
#[test]
fn imx93_board_with_an_ethos_u65_npu() {
    let sysfs = Sysfs::new();
    let npu = sysfs.device_tree(
        "platform/soc@0/4a900000.npu",
        Some("ethosu"),
        "fsl,imx93-npu",
    );
    sysfs.node(&npu, "accel", "accel0", 261, 0);
    let lcdif = sysfs.device_tree(
        "platform/soc@0/4ae30000.display-controller",
        Some("imx-lcdif"),
        "fsl,imx93-lcdif",
    );
    sysfs.node(&lcdif, "drm", "card0", 226, 0);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            platform_row(
                "ethosu",
                "platform/soc@0/4a900000.npu",
                &["261:0"],
                Some("ethosu"),
                "accel"
            ),
            platform_row(
                "imx-lcdif",
                "platform/soc@0/4ae30000.display-controller",
                &["226:0"],
                None,
                "drm"
            ),
        ])
    );
}

/// Qualcomm boards: with a display, the msm DRM device (GPU included) sits
/// on the display controller bound to `msm_dpu`; headless, on the Adreno
/// GPU's own device bound to `adreno`. msm claims both.
#[test]
fn qualcomm_boards_adreno_behind_the_display_controller_or_headless() {
    let with_display = Sysfs::new();
    with_display.device_tree("platform/soc@0/3d00000.gpu", Some("adreno"), "qcom,adreno");
    let dpu = with_display.device_tree(
        "platform/soc@0/ae00000.display-subsystem/ae01000.display-controller",
        Some("msm_dpu"),
        "qcom,sc7280-dpu",
    );
    with_display.node(&dpu, "drm", "card0", 226, 0);
    with_display.node(&dpu, "drm", "renderD128", 226, 128);
    with_display.connector(&dpu, "card0", "DP-1");
    assert_eq!(
        without_products(rows(&with_display)),
        json!([platform_row(
            "msm_dpu",
            "platform/soc@0/ae00000.display-subsystem/ae01000.display-controller",
            &["226:0", "226:128"],
            Some("msm"),
            "drm"
        )])
    );

    let headless = Sysfs::new();
    let gpu = headless.device_tree("platform/soc@0/3d00000.gpu", Some("adreno"), "qcom,adreno");
    headless.node(&gpu, "drm", "card0", 226, 0);
    headless.node(&gpu, "drm", "renderD128", 226, 128);
    assert_eq!(
        without_products(rows(&headless)),
        json!([platform_row(
            "adreno",
            "platform/soc@0/3d00000.gpu",
            &["226:0", "226:128"],
            Some("msm"),
            "drm"
        )])
    );
}

/// A Raspberry Pi 4: the V3D GPU (v3d) renders, the vc4 display driver,
/// which no vendor claims, scans out.
#[test]
fn raspberry_pi_4_with_v3d_and_an_unclaimed_vc4_display() {
    let sysfs = Sysfs::new();
    let vc4 = sysfs.device_tree("platform/gpu", Some("vc4-drm"), "brcm,bcm2711-vc5");
    sysfs.node(&vc4, "drm", "card1", 226, 1);
    sysfs.connector(&vc4, "card1", "HDMI-A-1");
    let v3d = sysfs.device_tree("platform/v3dbus/fec00000.v3d", Some("v3d"), "brcm,2711-v3d");
    sysfs.node(&v3d, "drm", "card0", 226, 0);
    sysfs.node(&v3d, "drm", "renderD128", 226, 128);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            platform_row("vc4-drm", "platform/gpu", &["226:1"], None, "drm"),
            platform_row(
                "v3d",
                "platform/v3dbus/fec00000.v3d",
                &["226:0", "226:128"],
                Some("v3d"),
                "drm"
            ),
        ])
    );
}

/// An NXP i.MX8M Plus: etnaviv's DRM device is the virtual `etnaviv`
/// platform device it registers and binds; the GPU and NPU cores are
/// separate device-tree devices bound to `etnaviv-gpu`, without nodes.
#[test]
fn imx8mp_board_with_etnaviv_on_its_virtual_device() {
    let sysfs = Sysfs::new();
    for (core, compatible) in [
        ("38000000.gpu", "vivante,gc"),
        ("38008000.gpu", "vivante,gc"),
        ("38500000.npu", "vivante,gc"),
    ] {
        sysfs.device_tree(
            &format!("platform/soc@0/{core}"),
            Some("etnaviv-gpu"),
            compatible,
        );
    }
    let etnaviv = sysfs.other(
        "platform/etnaviv",
        Some(("platform", "etnaviv")),
        "MODALIAS=platform:etnaviv\n",
    );
    sysfs.node(&etnaviv, "drm", "card1", 226, 1);
    sysfs.node(&etnaviv, "drm", "renderD128", 226, 128);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([platform_row(
            "etnaviv",
            "platform/etnaviv",
            &["226:1", "226:128"],
            Some("etnaviv"),
            "drm"
        )])
    );
}

/// A Rockchip RK3399 board: the Mali-T860 (panfrost) beside the display
/// subsystem, which no vendor claims.
#[test]
fn rk3399_board_with_a_panfrost_gpu() {
    let sysfs = Sysfs::new();
    let gpu = sysfs.device_tree(
        "platform/ff9a0000.gpu",
        Some("panfrost"),
        "rockchip,rk3399-mali",
    );
    sysfs.node(&gpu, "drm", "card1", 226, 1);
    sysfs.node(&gpu, "drm", "renderD128", 226, 128);
    let display = sysfs.device_tree(
        "platform/display-subsystem",
        Some("rockchip-drm"),
        "rockchip,display-subsystem",
    );
    sysfs.node(&display, "drm", "card0", 226, 0);

    assert_eq!(
        without_products(rows(&sysfs)),
        json!([
            platform_row(
                "rockchip-drm",
                "platform/display-subsystem",
                &["226:0"],
                None,
                "drm"
            ),
            platform_row(
                "panfrost",
                "platform/ff9a0000.gpu",
                &["226:1", "226:128"],
                Some("panfrost"),
                "drm"
            ),
        ])
    );
}

/// An AMD Ryzen AI laptop (Phoenix): the Radeon iGPU (amdgpu) and the
/// XDNA NPU (amdxdna, an accel node) as functions of one PCI device.
#[test]
fn amd_laptop_with_a_radeon_igpu_and_an_xdna_npu() {
    let sysfs = Sysfs::new();
    let igpu = sysfs.pci(
        "pci0000:00/0000:00:08.1/0000:c5:00.0",
        "1002:15BF",
        Some("amdgpu"),
        -1,
    );
    sysfs.node(&igpu, "drm", "card1", 226, 1);
    sysfs.node(&igpu, "drm", "renderD128", 226, 128);
    let npu = sysfs.pci(
        "pci0000:00/0000:00:08.2/0000:c6:00.1",
        "1022:1502",
        Some("amdxdna"),
        -1,
    );
    sysfs.node(&npu, "accel", "accel0", 261, 0);

    let rows = rows(&sysfs);
    assert_eq!(rows[1]["product"], "Ryzen AI NPU (Phoenix, Hawk Point)");
    assert_eq!(
        without_products(rows),
        json!([
            row(
                "amdgpu",
                Some("1002:15bf"),
                "0000:c5:00.0",
                &["226:1", "226:128"],
                Some("amdgpu"),
                None,
                "drm"
            ),
            row(
                "amdxdna",
                Some("1022:1502"),
                "0000:c6:00.1",
                &["261:0"],
                Some("amdxdna"),
                None,
                "accel"
            ),
        ])
    );
}

/// The table `kubenpuctl devices` prints for device-tree devices: the
/// address column holds their stable sysfs path.
#[test]
fn kubenpuctl_prints_device_tree_npus_and_gpus_with_their_vendors() {
    let sysfs = Sysfs::new();
    let npu = sysfs.device_tree(
        "platform/soc@0/4a900000.npu",
        Some("ethosu"),
        "arm,ethos-u65",
    );
    sysfs.node(&npu, "accel", "accel0", 261, 0);
    let gpu = sysfs.device_tree("platform/ff9a0000.gpu", Some("panfrost"), "arm,mali-t860");
    sysfs.node(&gpu, "drm", "renderD128", 226, 128);
    assert_eq!(
        kubenpuctl_devices(&sysfs, false),
        "DRIVER    PCI-ID  ADDRESS                      NODES    VENDOR\n\
         panfrost  -       platform/ff9a0000.gpu        226:128  panfrost\n\
         ethosu    -       platform/soc@0/4a900000.npu  261:0    ethosu\n"
    );
}

#[test]
fn kubenpuctl_prints_the_table_and_json_for_a_fixture_tree() {
    let sysfs = Sysfs::new();
    let igpu = sysfs.pci("pci0000:00/0000:00:02.0", "8086:5917", Some("i915"), -1);
    sysfs.node(&igpu, "drm", "card0", 226, 0);
    sysfs.node(&igpu, "drm", "renderD128", 226, 128);
    let vgem = sysfs.other("platform/vgem", None, "");
    sysfs.node(&vgem, "drm", "card1", 226, 1);
    let run = |json: bool| kubenpuctl_devices(&sysfs, json);
    assert_eq!(
        run(false),
        "DRIVER  PCI-ID     ADDRESS        NODES          VENDOR\n\
         i915    8086:5917  0000:00:02.0   226:0,226:128  i915\n\
         vgem    -          platform/vgem  226:1          vgem\n"
    );
    let json: Value = serde_json::from_str(&run(true)).unwrap();
    assert_eq!(json[1]["address"], "platform/vgem");
    assert_eq!(json[1]["pci_id"], Value::Null);
    assert_eq!(json[0]["nodes"], json!(["226:0", "226:128"]));
}

#[test]
fn a_missing_sysfs_class_means_no_devices_not_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let found = discover(
        &kubenpu::discovery::Roots {
            sysfs: empty.path().into(),
            dev: empty.path().into(),
            proc: empty.path().into(),
        },
        &[],
    );
    assert!(found.devices.is_empty() && found.skipped.is_empty());
}

/// Character devices outside DRM, where their plugins say they are: a
/// virtual class device (the DMA heap), a misc device (udmabuf), a class
/// device below its PCI function whose sysfs name is not its node's
/// (`tenstorrent!0`, node `tenstorrent/0`), and nodes found by the major
/// `/proc/devices` names (NVIDIA's, made with mknod, without sysfs);
/// nodes of other majors, classes and misc devices are left alone.
#[test]
fn character_devices_are_found_where_their_plugins_say() {
    use kubenpu::discovery::{CharClaim, Subsystem};
    use kubenpu_sdk::NodesSpec;
    use std::os::unix::fs::FileTypeExt as _;

    let sysfs = Sysfs::new();
    sysfs.char_node(None, "dma_heap", "system", "dma_heap/system", (250, 0));
    sysfs.char_node(None, "misc", "udmabuf", "udmabuf", (10, 258));
    sysfs.char_node(None, "misc", "fuse", "fuse", (10, 229));
    let card = sysfs.pci(
        "pci0000:00/0000:00:03.0",
        "1E52:401E",
        Some("tenstorrent"),
        0,
    );
    sysfs.char_node(
        Some(&card),
        "tenstorrent",
        "tenstorrent!0",
        "tenstorrent/0",
        (240, 0),
    );
    sysfs.write(
        "proc/devices",
        "Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n240 tenstorrent\n\nBlock devices:\n195 nvidia\n",
    );
    let dev = sysfs.path().join("dev");
    for (name, major, minor) in [("nvidia0", 195, 0), ("nvidiactl", 195, 255), ("null", 1, 3)] {
        let path =
            std::ffi::CString::new(dev.join(name).into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; the node is the test's own.
        let made = unsafe {
            libc::mknod(
                path.as_ptr(),
                libc::S_IFCHR | 0o600,
                libc::makedev(major, minor),
            )
        };
        assert_eq!(
            made,
            0,
            "mknod {name} (the tests run as root): {}",
            std::io::Error::last_os_error()
        );
        assert!(
            std::fs::metadata(dev.join(name))
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    let claim = |driver: &str, nodes| CharClaim {
        driver: driver.into(),
        nodes,
    };
    let claims = [
        claim("dma_heap", NodesSpec::Class("dma_heap".into())),
        claim("udmabuf", NodesSpec::Misc("udmabuf".into())),
        claim("tenstorrent", NodesSpec::Class("tenstorrent".into())),
        claim("nvidia", NodesSpec::Major("nvidia".into())),
        claim("absent", NodesSpec::Class("neuron_device".into())),
    ];
    let found = discover(&sysfs.roots(), &claims);
    assert_eq!(found.skipped, Vec::<String>::new());
    /// Name, driver, nodes, their paths below /dev, PCI id.
    type Row = (String, String, Vec<String>, Vec<String>, Option<String>);
    let rows: Vec<Row> = found
        .devices
        .iter()
        .map(|d| {
            assert_eq!(d.subsystem, Subsystem::Char);
            (
                d.name.clone(),
                d.driver.clone(),
                d.nodes.iter().map(|n| n.dev.to_string()).collect(),
                d.nodes
                    .iter()
                    .map(|n| n.path.strip_prefix(&dev).unwrap().display().to_string())
                    .collect(),
                d.pci.as_ref().map(|p| p.id_string()),
            )
        })
        .collect();
    let row = |name: &str, driver: &str, node: &str, path: &str, pci: Option<&str>| {
        (
            name.to_owned(),
            driver.to_owned(),
            vec![node.to_owned()],
            vec![path.to_owned()],
            pci.map(str::to_owned),
        )
    };
    assert_eq!(
        rows,
        [
            row(
                "0000:00:03.0",
                "tenstorrent",
                "240:0",
                "tenstorrent/0",
                Some("1e52:401e")
            ),
            row("nvidia0", "nvidia", "195:0", "nvidia0", None),
            row("nvidiactl", "nvidia", "195:255", "nvidiactl", None),
            row(
                "virtual/dma_heap/system",
                "dma_heap",
                "250:0",
                "dma_heap/system",
                None
            ),
            row("virtual/misc/udmabuf", "udmabuf", "10:258", "udmabuf", None),
        ]
    );
    assert_eq!(found.devices[0].numa_node, Some(0));
}
