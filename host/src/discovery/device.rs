//! What discovery reports about a device.

use std::{collections::HashMap, fmt, path::PathBuf, str::FromStr};

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
}

/// A device number as sysfs' `dev` files write it (`226:128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevNum {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl DevNum {
    /// The kernel's internal `dev_t` (`MAJOR << 20 | MINOR`), which is what
    /// `inode->i_rdev` holds; not the userspace `st_rdev` encoding.
    pub fn kernel_dev_t(self) -> u32 {
        self.major << 20 | self.minor
    }

    /// The inverse of [`DevNum::kernel_dev_t`].
    pub fn from_kernel_dev_t(dev: u32) -> Self {
        Self {
            major: dev >> 20,
            minor: dev & 0xf_ffff,
        }
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
        Ok(Self {
            major: number(major)?,
            minor: number(minor)?,
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

/// A DRM or accel device and all its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// A name stable across reboots: the PCI address, else the device's
    /// path below `/sys/devices` (`platform/vgem`, `faux/vgem`,
    /// `platform/fb000000.gpu`); never `cardN`, which follows probe order.
    pub name: String,
    /// Its subsystem.
    pub subsystem: Subsystem,
    /// The DRM/accel driver's name as the kernel reports it.
    pub driver: String,
    /// Its PCI identity, for PCI functions.
    pub pci: Option<Pci>,
    /// Its NUMA node, where the kernel knows one.
    pub numa_node: Option<u32>,
    /// Its nodes, by device number.
    pub nodes: Vec<Node>,
}
