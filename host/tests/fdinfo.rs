//! The fdinfo reader against `/proc` fixture trees: each driver's fdinfo
//! text in its real format (`tests/fixtures/fdinfo/<driver>/<n>`, taken
//! from what the kernel's sources print), read as sequences of samples,
//! with the exact busy seconds and bytes per pod checked; and the races a
//! real `/proc` has.
//!
//! The device nodes are `/dev/null` and `/dev/zero`, standing in for a
//! GPU's nodes (accelerator hardware cannot exist here): the reader knows
//! devices by number, and these exist on every machine.

use std::{
    collections::BTreeMap,
    fs,
    os::unix::fs::{MetadataExt as _, symlink},
    path::{Path, PathBuf},
    time::Duration,
};

use kubenpu::{
    attribution::Owner,
    discovery::DevNum,
    fdinfo::{DeviceLabels, FdinfoView, Reader, Targets, scan},
    plugins::PluginHost,
};

/// A fixture `/proc` and cgroup hierarchy.
struct Node {
    dir: tempfile::TempDir,
    targets: Targets,
    owners: BTreeMap<u64, Owner>,
}

const GPU: &str = "/dev/null";
const OTHER_GPU: &str = "/dev/zero";

impl Node {
    /// `/dev/null` claimed as device `0000:03:00.0` of `vendor`, and
    /// `/dev/zero` as `0000:04:00.0`.
    fn new(vendor: &str) -> Self {
        let mut targets = Targets::default();
        for (node, device) in [(GPU, "0000:03:00.0"), (OTHER_GPU, "0000:04:00.0")] {
            let rdev = fs::metadata(node).unwrap().rdev();
            targets.devices.insert(
                DevNum::from_st_rdev(rdev).unwrap(),
                DeviceLabels {
                    device: device.into(),
                    vendor: vendor.into(),
                },
            );
        }
        Self {
            dir: tempfile::tempdir().unwrap(),
            targets,
            owners: BTreeMap::new(),
        }
    }

    fn proc(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    /// Container `container` of pod `pod`, as cgroup `id` holding `pids`.
    fn pod(&mut self, id: u64, pod: &str, container: &str, pids: &[u32]) {
        let dir = self.dir.path().join(format!("cgroup/{id}"));
        fs::create_dir_all(&dir).unwrap();
        let procs: String = pids.iter().map(|p| format!("{p}\n")).collect();
        fs::write(dir.join("cgroup.procs"), procs).unwrap();
        self.targets.cgroups.push((id, dir));
        self.owners.insert(
            id,
            Owner {
                namespace: "ml".into(),
                pod: pod.into(),
                container: container.into(),
            },
        );
    }

    /// Process `pid` opens `node` as `fd`, whose fdinfo reads `text`.
    fn open(&self, pid: u32, fd: u32, node: &str, text: &str) {
        let process = self.proc().join(pid.to_string());
        for dir in ["fd", "fdinfo"] {
            fs::create_dir_all(process.join(dir)).unwrap();
        }
        let link = process.join("fd").join(fd.to_string());
        let _ = fs::remove_file(&link);
        symlink(node, link).unwrap();
        self.write(pid, fd, text);
    }

    /// `pid`'s `fd` now reads `text`.
    fn write(&self, pid: u32, fd: u32, text: &str) {
        let path = self.proc().join(format!("{pid}/fdinfo/{fd}"));
        fs::write(path, text).unwrap();
    }

    /// `pid` exits.
    fn exit(&self, pid: u32) {
        fs::remove_dir_all(self.proc().join(pid.to_string())).unwrap();
    }

    /// One scan, at `at` seconds.
    fn read(&self, reader: &mut Reader, at: u64) -> FdinfoView {
        let scan = scan(&self.proc(), &self.targets);
        reader.take(scan, Duration::from_millis(1), Duration::from_secs(at));
        reader.view(|id| self.owners.get(&id))
    }
}

/// A reader past its first scan, taken before any client opened, so the
/// clients a test opens are new to it and credited all they used (a
/// client already open at an agent's first scan is only a baseline: see
/// `clients_open_when_the_agent_starts_are_a_baseline`).
fn reader(node: &Node) -> Reader {
    let mut reader = Reader::new(node.proc());
    let nothing_open = tempfile::tempdir().unwrap();
    reader.take(
        scan(nothing_open.path(), &node.targets),
        Duration::from_millis(1),
        Duration::ZERO,
    );
    reader
}

/// Busy seconds per (pod, device, engine).
fn busy(view: &FdinfoView) -> BTreeMap<(String, String, String), f64> {
    view.engines
        .iter()
        .map(|(s, &secs)| {
            let key = (
                s.owner.pod.clone(),
                s.device.device.to_string(),
                s.engine.clone(),
            );
            (key, secs)
        })
        .collect()
}

/// Bytes per (pod, region, state).
fn memory(view: &FdinfoView) -> BTreeMap<(String, String, String), u64> {
    view.memory
        .iter()
        .map(|(s, &bytes)| {
            let key = (
                s.owner.pod.clone(),
                s.region.clone(),
                s.state.name().to_owned(),
            );
            (key, bytes)
        })
        .collect()
}

fn key(pod: &str, second: &str, third: &str) -> (String, String, String) {
    (pod.into(), second.into(), third.into())
}

/// A minimal client in i915's format.
fn i915(client: u64, render_ns: u64, resident_kib: u64) -> String {
    format!(
        "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1044\ndrm-driver:\ti915\n\
         drm-client-id:\t{client}\ndrm-pdev:\t0000:03:00.0\n\
         drm-total-system0:\t{resident_kib} KiB\ndrm-resident-system0:\t{resident_kib} KiB\n\
         drm-engine-render:\t{render_ns} ns\ndrm-engine-copy:\t0 ns\n"
    )
}

#[test]
fn a_client_shared_by_two_processes_of_a_pod_counts_once() {
    let mut node = Node::new("i915");
    node.pod(100, "train", "main", &[10, 11]);
    // fork: both processes hold the same open file, so the same client.
    node.open(10, 5, GPU, &i915(3, 2_000_000_000, 64));
    node.open(11, 5, GPU, &i915(3, 2_000_000_000, 64));
    let mut reader = reader(&node);
    let view = node.read(&mut reader, 10);
    assert_eq!(busy(&view)[&key("train", "0000:03:00.0", "render")], 2.0);
    assert_eq!(
        memory(&view)[&key("train", "system0", "resident")],
        64 << 10
    );
    assert_eq!(view.files_read, 2);
}

#[test]
fn clients_open_when_the_agent_starts_are_a_baseline() {
    // A restarted agent: its predecessor credited the 90 s this client
    // had used, and Prometheus has them.
    let mut node = Node::new("i915");
    node.pod(100, "train", "main", &[10]);
    node.open(10, 5, GPU, &i915(3, 90_000_000_000, 8));
    let mut reader = Reader::new(node.proc());
    let render = |view: &FdinfoView| busy(view)[&key("train", "0000:03:00.0", "render")];
    assert_eq!(render(&node.read(&mut reader, 10)), 0.0);
    node.write(10, 5, &i915(3, 91_500_000_000, 8));
    assert_eq!(render(&node.read(&mut reader, 20)), 1.5);
}

#[test]
fn the_same_fd_listed_twice_counts_once() {
    let mut node = Node::new("i915");
    // A process listed twice in cgroup.procs (it moved away and back
    // while the file was read), and a dup'd fd of the same client.
    node.pod(100, "train", "main", &[10, 10]);
    node.open(10, 5, GPU, &i915(3, 1_000_000_000, 8));
    node.open(10, 6, GPU, &i915(3, 1_000_000_000, 8));
    let mut reader = reader(&node);
    let view = node.read(&mut reader, 10);
    assert_eq!(busy(&view)[&key("train", "0000:03:00.0", "render")], 1.0);
    assert_eq!(memory(&view)[&key("train", "system0", "resident")], 8 << 10);
    assert_eq!(
        view.files_read, 2,
        "each fd once, though the pid is listed twice"
    );
}

#[test]
fn a_process_that_exits_between_listing_and_reading_is_skipped() {
    let mut node = Node::new("i915");
    // 12 is listed but already gone; 13's fd closed after it was listed.
    node.pod(100, "train", "main", &[10, 12, 13]);
    node.open(10, 5, GPU, &i915(3, 1_000_000_000, 8));
    node.open(13, 4, GPU, &i915(4, 5_000_000_000, 8));
    fs::remove_file(node.proc().join("13/fdinfo/4")).unwrap();
    let mut reader = reader(&node);
    let view = node.read(&mut reader, 10);
    assert_eq!(busy(&view)[&key("train", "0000:03:00.0", "render")], 1.0);
    assert_eq!(view.files_read, 1);
}

#[test]
fn counters_that_step_back_never_make_the_total_fall() {
    let mut node = Node::new("i915");
    node.pod(100, "train", "main", &[10]);
    node.open(10, 5, GPU, &i915(3, 3_000_000_000, 8));
    let mut reader = reader(&node);
    let render = |view: &FdinfoView| busy(view)[&key("train", "0000:03:00.0", "render")];
    assert_eq!(render(&node.read(&mut reader, 10)), 3.0);
    node.write(10, 5, &i915(3, 2_500_000_000, 8));
    assert_eq!(render(&node.read(&mut reader, 20)), 3.0);
    node.write(10, 5, &i915(3, 3_250_000_000, 8));
    assert_eq!(render(&node.read(&mut reader, 30)), 3.25);
    // The process exits: its time stays with the pod, its memory goes.
    node.exit(10);
    let view = node.read(&mut reader, 40);
    assert_eq!(render(&view), 3.25);
    assert!(view.memory.is_empty(), "{:?}", view.memory);
}

#[test]
fn each_pod_gets_its_own_clients_on_each_device() {
    let mut node = Node::new("i915");
    node.pod(100, "train", "main", &[10]);
    node.pod(200, "serve", "main", &[20]);
    node.open(10, 5, GPU, &i915(1, 1_000_000_000, 4));
    node.open(10, 6, OTHER_GPU, &i915(1, 2_000_000_000, 4));
    node.open(20, 5, GPU, &i915(2, 4_000_000_000, 16));
    // Not a claimed device: never read.
    node.open(20, 7, "/dev/full", &i915(9, 9_000_000_000, 9));
    let mut reader = reader(&node);
    let view = node.read(&mut reader, 10);
    assert_eq!(
        busy(&view),
        BTreeMap::from([
            (key("serve", "0000:03:00.0", "copy"), 0.0),
            (key("serve", "0000:03:00.0", "render"), 4.0),
            (key("train", "0000:03:00.0", "copy"), 0.0),
            (key("train", "0000:03:00.0", "render"), 1.0),
            (key("train", "0000:04:00.0", "copy"), 0.0),
            (key("train", "0000:04:00.0", "render"), 2.0),
        ])
    );
    assert_eq!(view.files_read, 3);
}

#[test]
fn files_without_drm_keys_give_no_series() {
    // virtio-gpu, vgem, qaic, habanalabs...: only the generic lines.
    let mut node = Node::new("virtio_gpu");
    node.pod(100, "render", "main", &[10]);
    node.open(
        10,
        5,
        GPU,
        "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1044\n",
    );
    let mut reader = reader(&node);
    let view = node.read(&mut reader, 10);
    assert_eq!(view.files_read, 1);
    assert!(
        view.engines.is_empty() && view.memory.is_empty(),
        "{view:?}"
    );
}

#[test]
fn processes_of_another_pid_namespace_are_noticed() {
    let mut node = Node::new("i915");
    // As cgroup.procs shows them to a reader outside their pid namespace:
    // as 0, or not at all while the cgroup is populated.
    node.pod(100, "zeroes", "main", &[0, 0]);
    node.pod(200, "hidden", "main", &[]);
    let hidden = node.dir.path().join("cgroup/200");
    let only = |i: usize| Targets {
        cgroups: vec![node.targets.cgroups[i].clone()],
        ..node.targets.clone()
    };
    assert!(scan(&node.proc(), &only(0)).foreign);
    fs::write(hidden.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
    let found = scan(&node.proc(), &only(1));
    assert_eq!((found.foreign, found.hiding), (false, vec![200]));
    // An empty cgroup is just empty.
    fs::write(hidden.join("cgroup.events"), "populated 0\nfrozen 0\n").unwrap();
    let found = scan(&node.proc(), &only(1));
    assert_eq!((found.foreign, found.hiding), (false, vec![]));
}

/// Where each driver's fixture samples are.
fn fixture(driver: &str, sample: u32) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fdinfo")
        .join(driver)
        .join(sample.to_string());
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads `driver`'s two samples, ten seconds apart, in one pod's process.
fn two_samples(driver: &str) -> FdinfoView {
    two_samples_as(driver, Node::new(driver))
}

/// [`two_samples`] on `node`.
fn two_samples_as(driver: &str, mut node: Node) -> FdinfoView {
    node.pod(100, "job", "main", &[10]);
    node.open(10, 5, GPU, &fixture(driver, 1));
    let mut reader = reader(&node);
    node.read(&mut reader, 100);
    node.write(10, 5, &fixture(driver, 2));
    node.read(&mut reader, 110)
}

/// Busy seconds per engine after the second sample.
fn engines(view: &FdinfoView) -> BTreeMap<String, f64> {
    busy(view)
        .into_iter()
        .map(|((_, _, engine), secs)| (engine, secs))
        .collect()
}

/// Bytes per (region, state) after the second sample.
fn regions(view: &FdinfoView) -> BTreeMap<(String, String), u64> {
    memory(view)
        .into_iter()
        .map(|((_, region, state), bytes)| ((region, state), bytes))
        .collect()
}

/// `(engine, busy seconds)` and `((region, state), bytes)` after `driver`'s
/// two samples.
type Expected = (
    &'static str,
    &'static [(&'static str, f64)],
    &'static [(&'static str, &'static str, u64)],
);

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// What each fixture must give. Engine time: the second sample's ns (the
/// client is first seen with the first, so all of it is credited),
/// divided by the class's capacity; xe's from cycles: busy cycles over
/// elapsed cycles, times the 10 s between the samples, over capacity.
const DRIVERS: &[Expected] = &[
    (
        "i915",
        &[
            ("copy", 0.0),
            ("render", 2.530189765),
            ("video", 0.014330563 / 2.0),
            ("video-enhance", 0.0),
        ],
        &[
            ("stolen-system0", "active", 0),
            ("stolen-system0", "purgeable", 0),
            ("stolen-system0", "resident", 0),
            ("stolen-system0", "shared", 0),
            ("stolen-system0", "total", 0),
            ("system0", "active", 0),
            ("system0", "purgeable", 1792 * KIB),
            ("system0", "resident", 53420 * KIB),
            ("system0", "shared", 2 * MIB),
            ("system0", "total", 53420 * KIB),
        ],
    ),
    (
        "xe",
        // rcs: 20,000,000 of 500,000,000 cycles over 10 s; ccs: 1.6 of 4
        // engines busy over 10 s.
        &[
            ("bcs", 0.0),
            ("ccs", 4.0),
            ("rcs", 0.4),
            ("vcs", 0.0),
            ("vecs", 0.0),
        ],
        &[
            ("gtt", "active", 0),
            ("gtt", "resident", 192 * KIB),
            ("gtt", "shared", 0),
            ("gtt", "total", 192 * KIB),
            ("stolen", "active", 0),
            ("stolen", "resident", 0),
            ("stolen", "shared", 0),
            ("stolen", "total", 0),
            ("system", "active", 0),
            ("system", "purgeable", 0),
            ("system", "resident", 0),
            ("system", "shared", 0),
            ("system", "total", 0),
            ("vram0", "active", 0),
            ("vram0", "resident", 23992 * KIB),
            ("vram0", "shared", 16 * MIB),
            ("vram0", "total", 23992 * KIB),
        ],
    ),
    (
        "amdgpu",
        &[("dma", 0.04811352), ("gfx", 19.291217545)],
        &[
            ("cpu", "purgeable", 0),
            ("cpu", "resident", 0),
            ("cpu", "shared", 0),
            ("cpu", "total", 0),
            ("doorbell", "purgeable", 0),
            ("doorbell", "resident", 0),
            ("doorbell", "shared", 0),
            ("doorbell", "total", 0),
            ("gds", "purgeable", 0),
            ("gds", "resident", 0),
            ("gds", "shared", 0),
            ("gds", "total", 0),
            ("gtt", "purgeable", 0),
            ("gtt", "resident", 20 * MIB),
            ("gtt", "shared", 0),
            ("gtt", "total", 20 * MIB),
            ("gws", "purgeable", 0),
            ("gws", "resident", 0),
            ("gws", "shared", 0),
            ("gws", "total", 0),
            ("mmioremap", "purgeable", 0),
            ("mmioremap", "resident", 0),
            ("mmioremap", "shared", 0),
            ("mmioremap", "total", 0),
            ("oa", "purgeable", 0),
            ("oa", "resident", 0),
            ("oa", "shared", 0),
            ("oa", "total", 0),
            ("vram", "purgeable", 0),
            ("vram", "resident", 155068 * KIB),
            ("vram", "shared", 13584 * KIB),
            ("vram", "total", 155068 * KIB),
        ],
    ),
    (
        // Only the legacy keys: resident memory.
        "amdgpu-6.1",
        &[("compute", 2.0), ("gfx", 0.75)],
        &[
            ("cpu", "resident", 0),
            ("gtt", "resident", 2 * MIB),
            ("vram", "resident", 8 * MIB),
        ],
    ),
    (
        // Cycles without total cycles: the ns key alone counts.
        "msm",
        &[("gpu", 2.190367552)],
        &[
            ("memory", "active", 4 * MIB),
            ("memory", "purgeable", 768 * KIB),
            ("memory", "resident", 67352 * KIB),
            ("memory", "shared", 12 * MIB),
            ("memory", "total", 67352 * KIB),
        ],
    ),
    (
        // Profiling switched on between the samples.
        "panfrost",
        &[("fragment", 1.84658488), ("vertex-tiler", 0.071932239)],
        &[
            ("memory", "active", 20 * MIB),
            ("memory", "purgeable", 128 * KIB),
            ("memory", "resident", 36496 * KIB),
            ("memory", "shared", 0),
            ("memory", "total", 290 * MIB),
        ],
    ),
    (
        "panthor",
        &[("panthor", 111.11095275)],
        &[
            ("memory", "active", 16200 * KIB),
            ("memory", "resident", 16480 * KIB),
            ("memory", "shared", 0),
            ("memory", "total", 16480 * KIB),
        ],
    ),
    (
        "v3d",
        &[
            ("bin", 0.004916187),
            ("cache_clean", 0.0),
            ("cpu", 0.0),
            ("csd", 0.0),
            ("render", 0.154563573),
            ("tfu", 0.000010574),
        ],
        &[
            ("memory", "resident", 15168 * KIB),
            ("memory", "shared", 9336 * KIB),
            ("memory", "total", 15168 * KIB),
        ],
    ),
    (
        "etnaviv",
        &[],
        &[
            ("memory", "resident", 9216 * KIB),
            ("memory", "shared", MIB),
            ("memory", "total", 9216 * KIB),
        ],
    ),
    (
        "ivpu",
        &[],
        &[
            ("memory", "resident", 70660 * KIB),
            ("memory", "shared", 0),
            ("memory", "total", 137 * MIB),
        ],
    ),
    (
        "amdxdna",
        &[],
        &[("memory", "shared", 0), ("memory", "total", 76 * MIB)],
    ),
];

#[test]
fn every_drivers_format_gives_exact_busy_seconds_and_bytes() {
    for &(driver, want_engines, want_regions) in DRIVERS {
        let view = two_samples(driver);
        let got = engines(&view);
        let names: Vec<&str> = got.keys().map(String::as_str).collect();
        let want: Vec<&str> = want_engines.iter().map(|(e, _)| *e).collect();
        assert_eq!(names, want, "{driver}: engines");
        for &(engine, seconds) in want_engines {
            let busy = got[engine];
            assert!(
                (busy - seconds).abs() < 1e-9,
                "{driver}: {engine} busy {busy} s, not {seconds} s"
            );
        }
        let want: BTreeMap<(String, String), u64> = want_regions
            .iter()
            .map(|&(region, state, bytes)| ((region.into(), state.into()), bytes))
            .collect();
        assert_eq!(regions(&view), want, "{driver}: memory");
    }
}

/// The built-in vendors rename engines and regions to the names operators
/// use across drivers: the kernel's names go through the plugins' WIT
/// export into the series.
#[test]
fn the_built_in_vendors_names_are_the_ones_shown() {
    let no_plugins = tempfile::tempdir().unwrap();
    let vendors = PluginHost::new(no_plugins.path()).unwrap().scan().unwrap();
    let named = |driver: &str| {
        let plugin = vendors.plugins.iter().find(|p| p.name() == driver).unwrap();
        let mut node = Node::new(driver);
        node.targets
            .names
            .insert(driver.into(), plugin.description.usage_names.clone());
        two_samples_as(driver, node)
    };
    let xe = named("xe");
    let xe_engines: Vec<(String, f64)> = engines(&xe).into_iter().collect();
    assert_eq!(
        xe_engines,
        [
            ("compute".to_owned(), 4.0),
            ("copy".to_owned(), 0.0),
            ("render".to_owned(), 0.4),
            ("video".to_owned(), 0.0),
            ("video-enhance".to_owned(), 0.0),
        ]
    );
    let amdgpu = named("amdgpu");
    let amdgpu_engines: Vec<String> = engines(&amdgpu).into_keys().collect();
    assert_eq!(amdgpu_engines, ["copy", "render"]);
    assert_eq!(regions(&amdgpu)[&("system".into(), "total".into())], 0);
    assert!(!regions(&amdgpu).contains_key(&("cpu".into(), "total".into())));
    let panthor: Vec<String> = engines(&named("panthor")).into_keys().collect();
    assert_eq!(panthor, ["gpu"]);
    let v3d: Vec<String> = engines(&named("v3d")).into_keys().collect();
    assert_eq!(
        v3d,
        ["bin", "cache_clean", "compute", "cpu", "render", "tfu"]
    );
    let i915 = regions(&named("i915"));
    assert_eq!(i915[&("system".into(), "resident".into())], 53420 * KIB);
    assert_eq!(i915[&("stolen".into(), "total".into())], 0);
}
