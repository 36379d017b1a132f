//! What discovery reports about a device.

use std::{
    collections::HashMap,
    fmt,
    path::{Path, PathBuf},
    str::FromStr,
};

use kubenpu_sdk::PciId;
use serde::Serialize;

/// The kernel subsystem a device's nodes belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subsystem {
    /// DRM: `/dev/dri/card*`, `/dev/dri/renderD*`.
    Drm,
    /// Compute accelerators: `/dev/accel/accel*`.
    Accel,
    /// Another driver's character devices, which a vendor plugin claims
    /// (`/dev/dma_heap/system`, `/dev/nvidia0`).
    Char,
}

/// A device number as sysfs' `dev` files write it (`226:128`). Only
/// numbers the kernel's internal `dev_t` can hold (a 12-bit major and a
/// 20-bit minor) are made, so [`DevNum::kernel_dev_t`] never aliases two
/// devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevNum {
    major: u32,
    minor: u32,
}

/// Bits of the minor number in the kernel's `dev_t` (`MINORBITS`).
const MINOR_BITS: u32 = 20;
/// The largest major number the kernel's `dev_t` holds.
const MAX_MAJOR: u32 = (1 << (32 - MINOR_BITS)) - 1;
/// The largest minor number the kernel's `dev_t` holds.
const MAX_MINOR: u32 = (1 << MINOR_BITS) - 1;

impl DevNum {
    /// The kernel's internal `dev_t` (`MAJOR << 20 | MINOR`), which is what
    /// `inode->i_rdev` holds; not the userspace `st_rdev` encoding.
    pub fn kernel_dev_t(self) -> u32 {
        self.major << MINOR_BITS | self.minor
    }

    /// The major number.
    pub fn major(self) -> u32 {
        self.major
    }

    /// The inverse of [`DevNum::kernel_dev_t`].
    pub fn from_kernel_dev_t(dev: u32) -> Self {
        Self {
            major: dev >> MINOR_BITS,
            minor: dev & MAX_MINOR,
        }
    }

    /// A major and minor number, if the kernel's `dev_t` can hold them.
    pub fn new(major: u32, minor: u32) -> Option<Self> {
        (major <= MAX_MAJOR && minor <= MAX_MINOR).then_some(Self { major, minor })
    }

    /// A device number as `stat(2)` gives it (`st_rdev`, userspace's
    /// encoding).
    pub fn from_st_rdev(rdev: u64) -> Option<Self> {
        Self::new(libc::major(rdev), libc::minor(rdev))
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for DevNum {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (major, minor) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not MAJOR:MINOR"))?;
        let number = |n: &str| {
            n.parse::<u32>()
                .map_err(|_| format!("{s:?} is not MAJOR:MINOR"))
        };
        Self::new(number(major)?, number(minor)?).ok_or_else(|| {
            format!(
                "{s:?} is not a kernel device number (majors go to {MAX_MAJOR}, minors to {MAX_MINOR})"
            )
        })
    }
}

impl Serialize for DevNum {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One device node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its sysfs name: `card0`, `renderD128`, `accel0`.
    pub name: String,
    /// Its device number.
    pub dev: DevNum,
    /// Where it should be under the device directory.
    pub path: PathBuf,
}

/// A device's PCI identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pci {
    /// The PCI address, `0000:03:00.0`: stable across reboots.
    pub address: String,
    /// Vendor and device id.
    pub id: PciId,
}

impl Pci {
    /// Reads `PCI_SLOT_NAME` and `PCI_ID` from a device's uevent.
    pub fn from_uevent(uevent: &HashMap<String, String>) -> Option<Self> {
        let address = uevent.get("PCI_SLOT_NAME")?.to_lowercase();
        let (vendor, device) = uevent.get("PCI_ID")?.split_once(':')?;
        let hex = |h: &str| u16::from_str_radix(h, 16).ok();
        Some(Self {
            address,
            id: PciId {
                vendor: hex(vendor)?,
                device: hex(device)?,
            },
        })
    }

    /// `8086:5917`, lower case.
    pub fn id_string(&self) -> String {
        format!("{:04x}:{:04x}", self.id.vendor, self.id.device)
    }
}

/// A DRM, accel or other claimed character device and all its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// A name stable across reboots: the PCI address, else the device's
    /// path below `/sys/devices` (`platform/vgem`, `faux/vgem`,
    /// `platform/fb000000.gpu`); never `cardN`, which follows probe order.
    pub name: String,
    /// Its subsystem.
    pub subsystem: Subsystem,
    /// The DRM/accel driver's name as the kernel reports it; for another
    /// character device, the name its plugin gives the driver.
    pub driver: String,
    /// Its PCI identity, for PCI functions.
    pub pci: Option<Pci>,
    /// Its NUMA node, where the kernel knows one.
    pub numa_node: Option<u32>,
    /// Its nodes, by device number.
    pub nodes: Vec<Node>,
}

impl Device {
    /// Its directory in the sysfs at `sysfs_root`: a PCI function's under
    /// its bus by address, any other device's where its name says, below
    /// `devices`.
    pub fn sysfs_dir(&self, sysfs_root: &Path) -> PathBuf {
        match &self.pci {
            Some(pci) => sysfs_root.join("bus/pci/devices").join(&pci.address),
            None => sysfs_root.join("devices").join(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DevNum;

    #[test]
    fn device_numbers_round_trip_through_the_kernel_encoding() {
        for text in ["226:128", "261:0", "4095:1048575", "0:0"] {
            let dev: DevNum = text.parse().unwrap();
            assert_eq!(DevNum::from_kernel_dev_t(dev.kernel_dev_t()), dev);
            assert_eq!(dev.to_string(), text);
        }
    }

    #[test]
    fn numbers_the_kernel_cannot_hold_are_rejected_not_aliased() {
        for text in ["4096:0", "226:1048576"] {
            let error = text.parse::<DevNum>().unwrap_err();
            assert!(error.contains("not a kernel device number"), "{error}");
        }
        assert!("226".parse::<DevNum>().is_err());
    }

    #[test]
    fn stat_device_numbers_are_read_in_userspace_encoding() {
        let dev = DevNum::from_st_rdev(libc::makedev(226, 128)).unwrap();
        assert_eq!(dev.to_string(), "226:128");
        assert_eq!(DevNum::from_st_rdev(libc::makedev(4096, 0)), None);
    }
}
