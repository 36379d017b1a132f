//! Builds sysfs trees shaped like real kernels': devices under
//! `/sys/devices` at their bus paths, class entries as relative links into
//! them, `dev` and `uevent` files, driver links into `/sys/bus`, and the
//! distractions real trees have (connectors, `version`, control nodes).

use std::{
    fs,
    os::unix::fs::symlink,
    path::{Component, Path, PathBuf},
};

use kubenpu::discovery::Roots;
use tempfile::TempDir;

/// A fixture root holding `sys/` and `dev/`.
pub struct Sysfs {
    dir: TempDir,
}

/// A device directory below `sys/devices`.
#[derive(Clone)]
pub struct DeviceDir(PathBuf);

impl Sysfs {
    /// An empty tree with the DRM class's `version` file.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let this = Self { dir };
        this.write("sys/class/drm/version", "drm 1.1.0 20060810\n");
        fs::create_dir_all(this.sys().join("class/accel")).unwrap();
        fs::create_dir_all(this.path().join("dev")).unwrap();
        this
    }

    /// The roots to discover from.
    pub fn roots(&self) -> Roots {
        Roots {
            sysfs: self.sys(),
            dev: self.path().join("dev"),
            proc: self.path().join("proc"),
        }
    }

    /// The fixture's top directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn sys(&self) -> PathBuf {
        self.path().join("sys")
    }

    /// Writes `content` to `relative` (below the tree's root), with its
    /// directories.
    pub fn write(&self, relative: &str, content: &str) {
        let path = self.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    /// A PCI function at `bus_path` below `/sys/devices` (bridges
    /// included, e.g. `pci0000:00/0000:00:01.1/0000:01:00.0`), with id
    /// `VVVV:DDDD` (upper case, as the kernel writes it), bound to `driver`.
    pub fn pci(&self, bus_path: &str, id: &str, driver: Option<&str>, numa_node: i32) -> DeviceDir {
        let dir = self.sys().join("devices").join(bus_path);
        let slot = bus_path.rsplit('/').next().unwrap();
        let (vendor, device) = id.split_once(':').unwrap();
        let mut uevent = String::new();
        if let Some(driver) = driver {
            uevent += &format!("DRIVER={driver}\n");
            self.bind(&dir, "pci", driver);
        }
        uevent += &format!(
            "PCI_CLASS=30000\nPCI_ID={id}\nPCI_SUBSYS_ID=17AA:225D\nPCI_SLOT_NAME={slot}\n\
             MODALIAS=pci:v0000{vendor}d0000{device}sv000017AAsd0000225Dbc03sc00i00\n"
        );
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("uevent"), uevent).unwrap();
        fs::write(dir.join("vendor"), format!("0x{}\n", vendor.to_lowercase())).unwrap();
        fs::write(dir.join("device"), format!("0x{}\n", device.to_lowercase())).unwrap();
        fs::write(dir.join("numa_node"), format!("{numa_node}\n")).unwrap();
        DeviceDir(dir)
    }

    /// A non-PCI device at `bus_path` below `/sys/devices` (`platform/vgem`,
    /// `faux/vgem`, `platform/fb000000.gpu`), bound to `driver` on `bus`
    /// if given, with extra uevent lines.
    pub fn other(&self, bus_path: &str, driver: Option<(&str, &str)>, uevent: &str) -> DeviceDir {
        let dir = self.sys().join("devices").join(bus_path);
        fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        if let Some((bus, driver)) = driver {
            text += &format!("DRIVER={driver}\n");
            self.bind(&dir, bus, driver);
        }
        text += uevent;
        fs::write(dir.join("uevent"), text).unwrap();
        DeviceDir(dir)
    }

    /// A device-tree platform device at `bus_path` below `/sys/devices`
    /// (`platform/soc@0/3d00000.gpu`), bound to platform driver `driver`
    /// if given, with the uevent lines of its `compatible` string.
    pub fn device_tree(&self, bus_path: &str, driver: Option<&str>, compatible: &str) -> DeviceDir {
        self.other(
            bus_path,
            driver.map(|driver| ("platform", driver)),
            &format!("OF_COMPATIBLE_0={compatible}\nOF_COMPATIBLE_N=1\n"),
        )
    }

    /// A virtio child device of a PCI function, bound to `driver`.
    pub fn virtio_child(&self, parent: &DeviceDir, name: &str, driver: &str) -> DeviceDir {
        let dir = parent.0.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("uevent"),
            format!("DRIVER={driver}\nMODALIAS=virtio:d00000010v00001AF4\n"),
        )
        .unwrap();
        fs::write(dir.join("vendor"), "0x1af4\n").unwrap();
        fs::write(dir.join("device"), "0x0010\n").unwrap();
        self.bind(&dir, "virtio", driver);
        DeviceDir(dir)
    }

    /// `device/driver -> /sys/bus/<bus>/drivers/<driver>`.
    fn bind(&self, device: &Path, bus: &str, driver: &str) {
        let driver_dir = self
            .sys()
            .join("bus")
            .join(bus)
            .join("drivers")
            .join(driver);
        fs::create_dir_all(&driver_dir).unwrap();
        fs::create_dir_all(device).unwrap();
        link(&device.join("driver"), &driver_dir);
    }

    /// An Intel laptop's GPU (i915: `card0`, `renderD128`) and NPU
    /// (intel_vpu: `accel0`); returns the GPU.
    pub fn intel_gpu_and_npu(&self) -> DeviceDir {
        let igpu = self.pci("pci0000:00/0000:00:02.0", "8086:5917", Some("i915"), -1);
        self.node(&igpu, "drm", "card0", 226, 0);
        self.node(&igpu, "drm", "renderD128", 226, 128);
        let npu = self.pci(
            "pci0000:00/0000:00:0b.0",
            "8086:7D1D",
            Some("intel_vpu"),
            -1,
        );
        self.node(&npu, "accel", "accel0", 261, 0);
        igpu
    }

    /// A device node of `class` (`drm` or `accel`) under `device`, with its
    /// class link, `dev`, `uevent` and the matching file under `dev/`.
    pub fn node(&self, device: &DeviceDir, class: &str, name: &str, major: u32, minor: u32) {
        let dir = device.0.join(class).join(name);
        let (dev_dir, devtype) = if class == "drm" {
            ("dri", "drm_minor")
        } else {
            ("accel", "accel_minor")
        };
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("dev"), format!("{major}:{minor}\n")).unwrap();
        fs::write(
            dir.join("uevent"),
            format!("MAJOR={major}\nMINOR={minor}\nDEVNAME={dev_dir}/{name}\nDEVTYPE={devtype}\n"),
        )
        .unwrap();
        link(&dir.join("device"), &device.0);
        link(&self.sys().join("class").join(class).join(name), &dir);
        self.write(&format!("dev/{dev_dir}/{name}"), "");
    }

    /// A character device node of class `class`, named `name` in sysfs
    /// and `dev_name` under `/dev`: below `parent` (with a `device` link
    /// to it) where given, else a virtual device of its own
    /// (`/sys/devices/virtual/<class>/<name>`, as the DMA heaps and misc
    /// devices are).
    pub fn char_node(
        &self,
        parent: Option<&DeviceDir>,
        class: &str,
        name: &str,
        dev_name: &str,
        (major, minor): (u32, u32),
    ) {
        let dir = match parent {
            Some(parent) => parent.0.join(class).join(name),
            None => self.sys().join("devices/virtual").join(class).join(name),
        };
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("dev"), format!("{major}:{minor}\n")).unwrap();
        fs::write(
            dir.join("uevent"),
            format!("MAJOR={major}\nMINOR={minor}\nDEVNAME={dev_name}\n"),
        )
        .unwrap();
        if let Some(parent) = parent {
            link(&dir.join("device"), &parent.0);
        }
        link(&self.sys().join("class").join(class).join(name), &dir);
    }

    /// A connector of `card` (`card0-eDP-1`): listed in the class, no `dev`.
    pub fn connector(&self, device: &DeviceDir, card: &str, connector: &str) {
        let name = format!("{card}-{connector}");
        let dir = device.0.join("drm").join(card).join(&name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("uevent"), "DEVTYPE=drm_connector\n").unwrap();
        fs::write(dir.join("status"), "connected\n").unwrap();
        link(&self.sys().join("class/drm").join(&name), &dir);
    }

    /// habanalabs' control node: in the accel class, but a virtual device
    /// with no parent, no `device` link and a dynamic major.
    pub fn accel_control_node(&self, name: &str, major: u32, minor: u32) {
        let dir = self.sys().join("devices/virtual/accel").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("dev"), format!("{major}:{minor}\n")).unwrap();
        fs::write(
            dir.join("uevent"),
            format!("MAJOR={major}\nMINOR={minor}\nDEVNAME=accel/{name}\n"),
        )
        .unwrap();
        link(&self.sys().join("class/accel").join(name), &dir);
    }
}

/// A relative symlink at `at` pointing to `target`, as sysfs makes them.
fn link(at: &Path, target: &Path) {
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(relative(at.parent().unwrap(), target), at).unwrap();
}

fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}
