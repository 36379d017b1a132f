//! Energy per pod (`--energy`) in the loop. Not an arm of its own: the
//! devices' sensors are read on the fdinfo scan's thread right after the
//! scan, so that an interval's energy and its engine time cover one span
//! ([`super::fdinfo`]); here are what that read is given, and what the
//! meter is given with its readings.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use kubenpu_sdk::Kind;

use crate::{
    agent::{Agent, log_line},
    allocation::Allocation,
    energy, fdinfo,
};

impl Agent {
    /// The claimed devices whose vendors name an energy sensor.
    pub(super) fn energy_targets(&self, meter: &energy::Meter) -> Vec<energy::Target> {
        self.table
            .claimed()
            .filter(|(_, vendor)| !vendor.description.energy.sensors.is_empty())
            .map(|(device, vendor)| {
                let d = &vendor.description;
                let mut kinds = d.ioctls.iter().map(|i| i.kind).chain(
                    d.char_devices
                        .iter()
                        .flat_map(|c| c.commands.iter().map(|command| command.kind)),
                );
                energy::Target {
                    device: fdinfo::DeviceLabels {
                        device: device.name.as_str().into(),
                        vendor: vendor.name().into(),
                    },
                    dir: device.sysfs_dir(meter.sysfs_root()),
                    energy: Arc::new(d.energy.clone()),
                    submits: kinds.any(|kind| kind == Kind::Submit),
                }
            })
            .collect()
    }

    /// Divides the intervals the devices' `readings` (made at `at`)
    /// close: by the engine time the scan just taken credited, or the
    /// counted call time, and among the holders the join knows now.
    pub(super) fn take_energy(
        &mut self,
        readings: Vec<(energy::Target, energy::Reading)>,
        at: Duration,
    ) {
        let Some(meter) = &mut self.energy else {
            return;
        };
        // No claimed device has a sensor: nothing to divide.
        if readings.is_empty() {
            return;
        }
        if let Some(reader) = &self.fdinfo {
            meter.add_engine_time(reader.credited(|id| self.usage.owner(id)));
        }
        let counters = self.faults.check("energy", self.probe.counters(), log_line);
        if let Some(counters) = &counters {
            let mut call_ns: HashMap<(u64, Arc<str>), u64> = HashMap::new();
            let mut devices = BTreeMap::new();
            for counter in counters {
                let Some(series) = self.usage.series(counter) else {
                    continue;
                };
                if matches!(series.kind, Kind::Submit | Kind::Wait) {
                    *call_ns
                        .entry((counter.key.cgroup_id, series.device.clone()))
                        .or_default() += counter.value.ns;
                }
                devices.insert(
                    series.device.clone(),
                    fdinfo::DeviceLabels {
                        device: series.device,
                        vendor: series.vendor,
                    },
                );
            }
            let owner = |id| self.usage.owner(id).cloned().unwrap_or_default();
            meter.add_call_time(call_ns, &devices, owner);
        }
        let holders = self
            .allocation
            .as_ref()
            .map(Allocation::holding)
            .unwrap_or_default();
        for failure in meter.take(readings, at, &holders, counters.is_some()) {
            log_line(failure);
        }
    }
}
