//! The device table in force, and its upload into the kernel: at start,
//! and whenever a rescan finds other devices or the plugins change.

use tracing::{info, warn};

use super::{Agent, log_line};
use crate::{device_table::DeviceTable, discovery, policy::rules::Step};

impl Agent {
    /// The discovered devices.
    pub(super) fn devices(&self) -> Vec<discovery::Device> {
        self.table
            .entries
            .iter()
            .map(|e| e.device.clone())
            .collect()
    }

    /// Uploads the device table and logs what is counted.
    fn install(&mut self) -> anyhow::Result<()> {
        for problem in &self.table.problems {
            warn!("{problem}");
        }
        // Grants for new device nodes first, so that a node the kernel
        // checks is never without the grants of the containers given it;
        // the grants of nodes no longer claimed go once the kernel no
        // longer checks them.
        self.enforce_upto(Step::Widen);
        self.probe.upload(&self.table)?;
        self.link_entries();
        self.usage.learn(&self.table);
        if let Some(allocation) = &mut self.allocation {
            allocation.resolve(&self.table, &self.usage);
        }
        self.enforce();
        let claimed: Vec<String> = self
            .table
            .claimed()
            .map(|(device, vendor)| format!("{} ({})", device.name, vendor.name()))
            .collect();
        if claimed.is_empty() {
            info!("no accelerator found: idle, watching for devices and plugins");
        } else {
            info!("counting on {}", claimed.join(", "));
        }
        Ok(())
    }

    /// Hooks the ioctl entries of the claimed character devices' drivers,
    /// and says which claimed character devices have no nodes here, when
    /// that changes.
    fn link_entries(&mut self) {
        let wanted = self.table.char_entries();
        let outcome = self.probe.link_entries(&wanted);
        if let Some(changes) = self.faults.check("entries", outcome, log_line)
            && !changes.is_empty()
        {
            info!("character devices: {changes}");
        }
        let absent = self.table.absent_char_devices();
        if !absent.is_empty() && absent != self.absent_char_devices {
            info!(
                "no nodes of the character devices {}: not counted until they appear",
                absent.join(", ")
            );
        }
        self.absent_char_devices = absent;
    }

    /// [`Agent::install`] after start-up: an error is counted and logged,
    /// and the previous tables stay in force in the kernel.
    pub(super) fn reinstall(&mut self) {
        let outcome = self.install();
        self.faults.check("install", outcome, log_line);
    }

    /// Puts `devices` in force, if they differ from those in force.
    pub(super) fn take_devices(&mut self, devices: Vec<discovery::Device>) {
        if devices != self.devices() {
            self.table = DeviceTable::build(devices, self.table.vendors.clone());
            self.reinstall();
        }
    }
}
