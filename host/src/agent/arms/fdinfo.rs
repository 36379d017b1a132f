//! The fdinfo arm: on a timer, the counted cgroups' DRM clients are read
//! from `/proc` on a blocking thread, one scan at a time, and the reader
//! takes each scan when it is done. With `--energy`, the same thread reads
//! the devices' sensors right after, so each interval's energy is divided
//! by the engine time of the same span ([`crate::energy`]).

use std::time::{Duration, Instant};

use tokio::{sync::mpsc, time};

use super::{Arm, timer};
use crate::{agent::Agent, clock, energy, fdinfo};

/// A scan, how long it took, and the devices' energy read after it.
pub(in crate::agent) struct Scanned {
    scan: fdinfo::Scan,
    took: Duration,
    /// With `--energy`: each device's reading, and when it was made
    /// (CLOCK_BOOTTIME).
    energy: Option<(Vec<(energy::Target, energy::Reading)>, Duration)>,
}

/// The scans' timer and their results; idle without `--fdinfo`.
pub(in crate::agent) struct Scans {
    tick: time::Interval,
    done: mpsc::Sender<Scanned>,
    scanned: mpsc::Receiver<Scanned>,
    /// Scans are made (`--fdinfo`).
    on: bool,
    /// A scan is under way.
    reading: bool,
}

/// A scan is due, or one is done.
pub(in crate::agent) enum ScansEvent {
    Due,
    Done(Scanned),
}

impl Scans {
    /// Scans every `interval`, if `on`.
    pub(in crate::agent) fn new(interval: Duration, on: bool) -> Self {
        let tick = timer(interval);
        let (done, scanned) = mpsc::channel(1);
        Self {
            tick,
            done,
            scanned,
            on,
            reading: false,
        }
    }
}

impl Arm for Scans {
    type Event = ScansEvent;

    async fn next(&mut self) -> ScansEvent {
        tokio::select! {
            _ = self.tick.tick(), if self.on && !self.reading => ScansEvent::Due,
            Some(scanned) = self.scanned.recv() => ScansEvent::Done(scanned),
        }
    }

    fn take(&mut self, event: ScansEvent, agent: &mut Agent) {
        match event {
            ScansEvent::Due => self.reading = agent.read_fdinfo(self.done.clone()),
            ScansEvent::Done(scanned) => {
                self.reading = false;
                if let Some(reader) = &mut agent.fdinfo {
                    reader.take(scanned.scan, scanned.took, clock::boottime());
                }
                if let Some((readings, at)) = scanned.energy {
                    agent.take_energy(readings, at);
                }
            }
        }
    }
}

impl Agent {
    /// Scans the counted cgroups' DRM clients on a blocking thread; the
    /// scan and its duration arrive on `done`. Returns whether it
    /// started one (not without the reader).
    fn read_fdinfo(&self, done: mpsc::Sender<Scanned>) -> bool {
        let Some(reader) = &self.fdinfo else {
            return false;
        };
        let mut targets = fdinfo::Targets {
            cgroups: self.usage.attributor.live(),
            ..fdinfo::Targets::default()
        };
        for (device, vendor) in self.table.claimed() {
            let labels = fdinfo::DeviceLabels {
                device: device.name.as_str().into(),
                vendor: vendor.name().into(),
            };
            let names = &vendor.description.usage_names;
            targets.names.insert(labels.vendor.clone(), names.clone());
            for node in &device.nodes {
                targets.devices.insert(node.dev, labels.clone());
            }
        }
        let proc_root = reader.proc_root().to_owned();
        let energy = self
            .energy
            .as_ref()
            .map(|meter| (meter.sysfs_root().to_owned(), self.energy_targets(meter)));
        tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let scan = fdinfo::scan(&proc_root, &targets);
            let took = start.elapsed();
            let energy = energy.map(|(sysfs_root, targets)| {
                let readings = energy::read(&sysfs_root, &targets);
                (readings, clock::boottime())
            });
            let _ = done.blocking_send(Scanned { scan, took, energy });
        });
        true
    }
}
