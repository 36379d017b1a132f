//! What one interval of energy per pod costs the agent, with 8 devices
//! and 100 pods sharing them: reading the devices' sensors (the sysfs
//! files their built-in plugins name: xe's labelled counters, i915's
//! counter, amdgpu's power, in a fixture sysfs on tmpfs or disk) and
//! dividing the interval among the pods (their engine time, the holders,
//! the apportionment). The counters map read that gives the call time is
//! the `map_read` benchmark.

use std::{
    collections::BTreeMap, fs, hint::black_box, os::unix::fs::symlink, sync::Arc, time::Duration,
};

use criterion::{Criterion, criterion_main};
use kubenpu::{
    attribution::Owner,
    energy::{self, Meter, Reading, Target},
    fdinfo::DeviceLabels,
    plugins::{BUILTIN, Sandbox},
};

const DEVICES: usize = 8;
const PODS: usize = 100;

/// The devices: vendor, and the hwmon files its driver prints.
fn device(i: usize) -> (&'static str, Vec<(&'static str, &'static str)>) {
    match i % 4 {
        0 | 1 => (
            "xe",
            vec![
                ("energy1_input", "123456789\n"),
                ("energy1_label", "card\n"),
                ("energy2_input", "98765432\n"),
                ("energy2_label", "pkg\n"),
            ],
        ),
        2 => ("i915", vec![("energy1_input", "123456789\n")]),
        _ => ("amdgpu", vec![("power1_average", "35000000\n")]),
    }
}

/// A sysfs with the devices' PCI functions and hwmon directories, and the
/// targets the agent would read.
fn fixture() -> (tempfile::TempDir, Vec<Target>) {
    let root = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new().unwrap();
    let mut specs = BTreeMap::new();
    fs::create_dir_all(root.path().join("class/hwmon")).unwrap();
    fs::create_dir_all(root.path().join("bus/pci/devices")).unwrap();
    let targets = (0..DEVICES)
        .map(|i| {
            let (vendor, files) = device(i);
            let address = format!("0000:{:02x}:00.0", 0x10 + i);
            let function = root.path().join("devices/pci0000:00").join(&address);
            let hwmon = function.join(format!("hwmon/hwmon{i}"));
            fs::create_dir_all(&hwmon).unwrap();
            symlink("../..", hwmon.join("device")).unwrap();
            symlink(&hwmon, root.path().join(format!("class/hwmon/hwmon{i}"))).unwrap();
            fs::write(hwmon.join("name"), format!("{vendor}\n")).unwrap();
            for (file, text) in files {
                fs::write(hwmon.join(file), text).unwrap();
            }
            let dir = root.path().join("bus/pci/devices").join(&address);
            symlink(&function, &dir).unwrap();
            let energy = specs.entry(vendor).or_insert_with(|| {
                let builtin = BUILTIN.iter().find(|b| b.name == vendor).unwrap();
                Arc::new(builtin.load(&sandbox).unwrap().description.energy.clone())
            });
            Target {
                device: DeviceLabels {
                    device: address.into(),
                    vendor: vendor.into(),
                },
                dir,
                energy: energy.clone(),
                submits: true,
            }
        })
        .collect();
    (root, targets)
}

fn bench(c: &mut Criterion) {
    let (root, targets) = fixture();
    let readings = energy::read(root.path(), &targets);
    assert!(
        readings.iter().all(|(_, r)| matches!(r, Reading::Read(_))),
        "every device reads: {readings:?}"
    );
    let mut group = c.benchmark_group("energy");
    group.bench_function(format!("read/{DEVICES}"), |b| {
        b.iter(|| energy::read(black_box(root.path()), black_box(&targets)))
    });

    // Each pod uses one device and holds it; the devices' counters grow.
    let owners: Vec<Owner> = (0..PODS)
        .map(|i| Owner {
            namespace: format!("team-{}", i / 25),
            pod: format!("inference-{i}"),
            container: "worker".into(),
        })
        .collect();
    let mut holders: BTreeMap<Arc<str>, Vec<Owner>> = BTreeMap::new();
    for (i, owner) in owners.iter().enumerate() {
        let device = targets[i % DEVICES].device.device.clone();
        holders.entry(device).or_default().push(owner.clone());
    }
    let mut meter = Meter::new(root.path().to_owned(), Duration::from_secs(300));
    let mut interval = 0u64;
    group.bench_function(format!("divide/{PODS}"), |b| {
        b.iter(|| {
            interval += 1;
            meter.add_engine_time(owners.iter().enumerate().map(|(i, owner)| {
                let device = targets[i % DEVICES].device.clone();
                (owner.clone(), device, 0.5 + (i % 7) as f64)
            }));
            let readings = targets
                .iter()
                .map(|target| {
                    let sample = energy::Sample::Counter {
                        microjoules: interval * 1_000_000_000,
                        wraps_at: None,
                    };
                    (target.clone(), Reading::Read(sample))
                })
                .collect();
            meter.take(
                readings,
                Duration::from_secs(interval * 10),
                black_box(&holders),
                true,
            )
        })
    });
    group.finish();
}

/// criterion's generated group, private (it has no doc comment).
mod group {
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
