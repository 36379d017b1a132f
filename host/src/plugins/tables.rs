//! A plugin's ioctl tables as the kernel program keys them: one for its
//! DRM and accel drivers, keyed on `cmd & 0xff`, and one per character
//! device, keyed on the bits its plugin names. Each has a slot of its own
//! in the kernel's IOCTLS map, so the keys of two tables never meet.

use kubenpu_ebpf::{DRM_COMMAND_MASK, vendor_slot};
use kubenpu_sdk::{CharDeviceSpec, FieldSpec, Kind, SizeSpec};

use super::Plugin;
use crate::discovery::{Device, Subsystem};

/// One table.
#[derive(Debug)]
pub struct Table<'a> {
    /// The name its slot is hashed from: the vendor's (DRM), or
    /// `vendor/driver` (a character device), which no vendor's name can
    /// be: vendor names have no `/`.
    pub name: String,
    /// Its slot in the IOCTLS map.
    pub slot: u32,
    /// The bits of a command that pick a row.
    pub cmd_mask: u32,
    /// Its rows, aliases included.
    pub rows: Vec<Row<'a>>,
}

/// One counted ioctl of a table.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// `cmd & cmd_mask`.
    pub key: u32,
    /// The uAPI macro.
    pub name: &'a str,
    /// What it does.
    pub kind: Kind,
    /// For an alloc: where its size is.
    pub size: Option<&'a SizeSpec>,
    /// The field and values that make a call of it count, for a
    /// classified command.
    pub only_when: Option<(&'a FieldSpec, &'a [u64])>,
}

impl Plugin {
    /// Its tables: the DRM one, if it claims DRM drivers, then one per
    /// character device.
    pub fn tables(&self) -> Vec<Table<'_>> {
        let drm = (!self.description.drivers.is_empty()).then(|| self.drm_table());
        drm.into_iter()
            .chain(
                self.description
                    .char_devices
                    .iter()
                    .map(|d| self.char_table(d)),
            )
            .collect()
    }

    /// The table that counts on `device`, which it claims.
    pub fn table_for(&self, device: &Device) -> Option<Table<'_>> {
        match device.subsystem {
            Subsystem::Char => self.char_device(&device.driver).map(|d| self.char_table(d)),
            Subsystem::Drm | Subsystem::Accel => Some(self.drm_table()),
        }
    }

    /// Its character device of that driver name.
    pub fn char_device(&self, driver: &str) -> Option<&CharDeviceSpec> {
        self.description
            .char_devices
            .iter()
            .find(|d| d.driver == driver)
    }

    /// The slots of its tables, with the names they are hashed from.
    pub fn slots(&self) -> Vec<(u32, String)> {
        self.tables()
            .into_iter()
            .map(|t| (t.slot, t.name))
            .collect()
    }

    fn drm_table(&self) -> Table<'_> {
        Table {
            name: self.name().to_owned(),
            slot: vendor_slot(self.name()),
            cmd_mask: DRM_COMMAND_MASK,
            rows: self
                .description
                .ioctls
                .iter()
                .map(|entry| Row {
                    key: u32::from(entry.nr),
                    name: &entry.name,
                    kind: entry.kind,
                    size: entry.size.as_ref(),
                    only_when: None,
                })
                .collect(),
        }
    }

    fn char_table<'a>(&'a self, device: &'a CharDeviceSpec) -> Table<'a> {
        let cmd_mask = device.key.mask();
        let name = format!("{}/{}", self.name(), device.driver);
        Table {
            slot: vendor_slot(&name),
            name,
            cmd_mask,
            rows: device
                .commands
                .iter()
                .map(|command| Row {
                    key: command.cmd & cmd_mask,
                    name: &command.name,
                    kind: command.kind,
                    size: command.size.as_ref(),
                    only_when: command
                        .only_when
                        .as_ref()
                        .map(|(field, values)| (field, values.as_slice())),
                })
                .collect(),
        }
    }
}
