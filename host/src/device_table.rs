//! The join of discovery and plugins: which device belongs to which
//! vendor, and each vendor's ioctl table. This is what the kernel program's
//! maps are filled from and what `kubenpuctl devices` prints.

use std::{collections::BTreeSet, sync::Arc};

use crate::{
    discovery::{Device, Subsystem},
    plugins::{Plugin, Vendors},
};

/// A device and the vendor whose table applies to it, if any.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The device.
    pub device: Device,
    /// The vendor claiming it; `None` for a device no plugin claims (or
    /// whose claiming plugin declined it).
    pub vendor: Option<Arc<Plugin>>,
    /// The vendor's product name for it, if it knows one.
    pub product: Option<String>,
}

/// Every device with its vendor, plus the vendors in force.
#[derive(Debug, Clone, Default)]
pub struct DeviceTable {
    /// Devices in discovery order.
    pub entries: Vec<Entry>,
    /// The vendors the table was built with.
    pub vendors: Vendors,
    /// Plugin calls that failed while matching devices, one line each.
    pub problems: Vec<String>,
}

impl DeviceTable {
    /// Assigns each device to the vendor that claims its driver (or, for
    /// a character device, the device) and accepts it.
    pub fn build(devices: Vec<Device>, vendors: Vendors) -> Self {
        let mut problems = Vec::new();
        let entries = devices
            .into_iter()
            .map(|device| {
                let mut report = |what: &str, plugin: &Plugin, e: &dyn std::fmt::Display| {
                    problems.push(format!(
                        "vendor {} ({}) {what} {}: {e}",
                        plugin.name(),
                        plugin.source,
                        device.name
                    ));
                };
                let vendor = vendors.for_device(&device).filter(|plugin| {
                    plugin.matches(&device).unwrap_or_else(|e| {
                        report("failed to match", plugin, &e);
                        false
                    })
                });
                let product = match (vendor, &device.pci) {
                    (Some(plugin), Some(pci)) => plugin.product_name(pci.id).unwrap_or_else(|e| {
                        report("failed to name", plugin, &e);
                        None
                    }),
                    _ => None,
                };
                Entry {
                    vendor: vendor.cloned(),
                    product,
                    device,
                }
            })
            .collect();
        Self {
            entries,
            vendors,
            problems,
        }
    }

    /// The kernel functions the claimed character devices' drivers take
    /// ioctls through.
    pub fn char_entries(&self) -> BTreeSet<String> {
        self.claimed()
            .filter_map(|(device, vendor)| vendor.char_device(&device.driver))
            .map(|d| d.entry.clone())
            .collect()
    }

    /// The character devices the vendors claim that have no nodes here,
    /// each with where they were looked for: `dma_heap (class dma_heap)`.
    pub fn absent_char_devices(&self) -> Vec<String> {
        self.vendors
            .plugins
            .iter()
            .flat_map(|p| &p.description.char_devices)
            .filter(|claim| {
                !self.entries.iter().any(|e| {
                    e.device.subsystem == Subsystem::Char && e.device.driver == claim.driver
                })
            })
            .map(|claim| format!("{} ({})", claim.driver, claim.nodes))
            .collect()
    }

    /// The claimed character devices no allocator hands out (their vendor
    /// names none: the DMA heaps, udmabuf), by stable name. Nothing can
    /// say a container was not given them: the allocation join never
    /// counts their calls as unallocated, and the policy never refuses
    /// them as such (a deny rule still can).
    pub fn open_to_all(&self) -> BTreeSet<Arc<str>> {
        self.claimed()
            .filter(|(device, vendor)| {
                let allocators = &vendor.description.allocators;
                device.subsystem == Subsystem::Char
                    && allocators.device_plugins.is_empty()
                    && allocators.dra_drivers.is_empty()
            })
            .map(|(device, _)| Arc::from(device.name.as_str()))
            .collect()
    }

    /// The devices some vendor claims.
    pub fn claimed(&self) -> impl Iterator<Item = (&Device, &Arc<Plugin>)> {
        self.entries
            .iter()
            .filter_map(|e| Some((&e.device, e.vendor.as_ref()?)))
    }
}
