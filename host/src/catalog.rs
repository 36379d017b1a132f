//! What a kernel counter means to operators: the labels of its
//! `kubenpu_ioctl_total` series, from the device it was counted on and the
//! vendor table that counted it.

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

/// What a kernel (device number, ioctl number) pair means. Devices that
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
            let kinds: HashMap<u32, Kind> = vendor
                .description
                .ioctls
                .iter()
                .map(|entry| (u32::from(entry.nr), entry.kind))
                .collect();
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
        let labels = self.devices.get(&dev)?;
        Some(Series {
            owner: owner.clone(),
            device: labels.device.clone(),
            vendor: labels.vendor.clone(),
            kind: *labels.kinds.get(&nr)?,
        })
    }
}
