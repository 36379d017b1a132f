//! What a kernel counter means to operators: the labels of its
//! `kubenpu_ioctl_total` series (and of the duration histogram's), from
//! the device it was counted on and the vendor table that counted it.

use std::{collections::HashMap, sync::Arc};

use kubenpu_sdk::Kind;

use crate::attribution::Owner;
use crate::device_table::DeviceTable;

/// The labels of one `kubenpu_ioctl_total` series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Series {
    /// Who called.
    pub owner: Owner,
    /// The device's stable name (PCI address or sysfs path).
    pub device: Arc<str>,
    /// The vendor whose table counted it.
    pub vendor: Arc<str>,
    /// What the calls do.
    pub kind: Kind,
}

/// The labels of one `kubenpu_ioctl_duration_seconds` histogram: no pod,
/// so its cardinality is bounded by the node's devices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceKind {
    /// The device's stable name.
    pub device: Arc<str>,
    /// The vendor whose table counted it.
    pub vendor: Arc<str>,
    /// What the calls do.
    pub kind: Kind,
}

/// The kind the kernel program stores (see [`kubenpu_ebpf::kind`]).
pub fn kind_of_code(code: u32) -> Option<Kind> {
    match code {
        kubenpu_ebpf::kind::SUBMIT => Some(Kind::Submit),
        kubenpu_ebpf::kind::ALLOC => Some(Kind::Alloc),
        kubenpu_ebpf::kind::WAIT => Some(Kind::Wait),
        _ => None,
    }
}

/// The code the kernel program stores for `kind`.
pub fn code_of_kind(kind: Kind) -> u32 {
    match kind {
        Kind::Submit => kubenpu_ebpf::kind::SUBMIT,
        Kind::Alloc => kubenpu_ebpf::kind::ALLOC,
        Kind::Wait => kubenpu_ebpf::kind::WAIT,
    }
}

/// What a kernel (device number, ioctl key) pair means. Devices that
/// leave the table are remembered, so counts made on them before they
/// went keep their labels.
#[derive(Debug, Default)]
pub struct Catalog {
    devices: HashMap<u32, DeviceLabels>,
}

#[derive(Debug)]
struct DeviceLabels {
    device: Arc<str>,
    vendor: Arc<str>,
    kinds: HashMap<u32, Kind>,
}

impl Catalog {
    /// Takes in the devices `table` counts on.
    pub fn learn(&mut self, table: &DeviceTable) {
        for (device, vendor) in table.claimed() {
            let name: Arc<str> = device.name.as_str().into();
            let vendor_name: Arc<str> = vendor.name().into();
            let Some(table) = vendor.table_for(device) else {
                continue;
            };
            let kinds: HashMap<u32, Kind> =
                table.rows.iter().map(|row| (row.key, row.kind)).collect();
            for node in &device.nodes {
                self.devices.insert(
                    node.dev.kernel_dev_t(),
                    DeviceLabels {
                        device: name.clone(),
                        vendor: vendor_name.clone(),
                        kinds: kinds.clone(),
                    },
                );
            }
        }
    }

    /// The series of a call by `owner` of ioctl `nr` on device node `dev`
    /// (kernel dev_t), if `dev` was ever counted on.
    pub fn series(&self, owner: &Owner, dev: u32, nr: u32) -> Option<Series> {
        let DeviceKind {
            device,
            vendor,
            kind,
        } = self.device_kind_of_nr(dev, nr)?;
        Some(Series {
            owner: owner.clone(),
            device,
            vendor,
            kind,
        })
    }

    /// The device, vendor and kind of ioctl `nr` on device node `dev`.
    pub fn device_kind_of_nr(&self, dev: u32, nr: u32) -> Option<DeviceKind> {
        let labels = self.devices.get(&dev)?;
        Some(DeviceKind {
            device: labels.device.clone(),
            vendor: labels.vendor.clone(),
            kind: *labels.kinds.get(&nr)?,
        })
    }

    /// The device and vendor of device node `dev`, if it was ever counted
    /// on.
    pub fn device(&self, dev: u32) -> Option<(Arc<str>, Arc<str>)> {
        let labels = self.devices.get(&dev)?;
        Some((labels.device.clone(), labels.vendor.clone()))
    }

    /// The histogram labels of calls of kind `code` (as the kernel stores
    /// it) on device node `dev`, if `dev` was ever counted on.
    pub fn device_kind(&self, dev: u32, code: u32) -> Option<DeviceKind> {
        let labels = self.devices.get(&dev)?;
        Some(DeviceKind {
            device: labels.device.clone(),
            vendor: labels.vendor.clone(),
            kind: kind_of_code(code)?,
        })
    }
}
