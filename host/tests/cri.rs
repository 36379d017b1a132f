//! Attribution against a real containerd (Debian's, private root and
//! socket, cgroupfs driver), the test acting as kubelet: each container's
//! cgroup id is named with its namespace, pod and container, and the
//! runtime may be absent at start, appear later, or die mid-run.
//!
//! Needs root (containerd and runc), as CI runs it.

use std::{
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use kubenpu::attribution::{
    Attributor, Owner,
    cri::{Cri, CriError},
    index::CgroupIndex,
    mount,
    resolver::{self, Ask, Report},
};
use kubenpu_pods::{ContainerSpec, Containerd, Kubelet, PodSpec, image::Image};
use tokio::sync::mpsc;

const BUSYBOX_IMAGE: &str = "localhost/kubenpu/busybox:test";
const POD_UID: &str = "5b3c1d2e-7f8a-4b9c-8d0e-1f2a3b4c5d6e";

/// A pod `default/drm-demo` with containers `render` and `encode`, running.
struct Pod {
    containerd: Containerd,
    /// (container name, its cgroup id).
    cgroups: Vec<(String, u64)>,
    /// Removed after containerd has stopped (fields drop in order).
    _dir: tempfile::TempDir,
}

fn cgroup_root() -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    mount::cgroup2_mount(&mounts).expect("cgroup2 is mounted")
}

async fn start_pod() -> Pod {
    assert!(
        nix_is_root(),
        "this test runs containerd and runc: run it as root"
    );
    let dir = tempfile::Builder::new()
        .prefix("kubenpu-cri")
        .tempdir()
        .unwrap();
    let containerd = Containerd::start(&dir.path().join("containerd")).unwrap();
    Image::pause().import(&containerd, dir.path()).unwrap();
    Image::busybox(BUSYBOX_IMAGE, &["/bin/sleep", "3600"])
        .import(&containerd, dir.path())
        .unwrap();
    let mut kubelet = Kubelet::connect(&containerd.socket()).await.unwrap();
    let pod = PodSpec {
        namespace: "default".into(),
        name: "drm-demo".into(),
        uid: POD_UID.into(),
        privileged: false,
    };
    let sandbox = kubelet.run_pod(&pod).await.unwrap();
    let mut cgroups = Vec::new();
    for name in ["render", "encode"] {
        let container = ContainerSpec {
            name: name.into(),
            image: BUSYBOX_IMAGE.into(),
            command: vec!["/bin/sleep".into(), "3600".into()],
            devices: vec![],
            mounts: vec![],
        };
        let id = kubelet
            .run_container(&sandbox, &pod, &container)
            .await
            .unwrap();
        cgroups.push((name.to_owned(), cgroup_of(&containerd, &id)));
    }
    Pod {
        containerd,
        cgroups,
        _dir: dir,
    }
}

fn nix_is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The cgroup2 id of a running container: the inode of the cgroup its
/// process is in, as `bpf_get_current_cgroup_id` reports it.
fn cgroup_of(containerd: &Containerd, container: &str) -> u64 {
    let tasks = containerd.ctr(&["tasks", "list"]).unwrap();
    let pid = tasks
        .lines()
        .find(|line| line.starts_with(container))
        .and_then(|line| line.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("no task for {container} in\n{tasks}"));
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let path = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .expect("the container is in the unified hierarchy");
    assert!(
        path.contains(&format!("/kubepods/besteffort/pod{POD_UID}/{container}")),
        "cgroupfs layout expected, got {path}"
    );
    std::fs::metadata(cgroup_root().join(path.trim_start_matches('/')))
        .unwrap()
        .ino()
}

fn owner(container: &str) -> Owner {
    Owner {
        namespace: "default".into(),
        pod: "drm-demo".into(),
        container: container.into(),
    }
}

/// The agent's attribution loop, reduced to what these tests drive.
struct Naming {
    attributor: Attributor,
    asks: mpsc::UnboundedSender<Ask>,
    reports: mpsc::UnboundedReceiver<Report>,
    /// Health changes seen so far.
    health: Vec<Report>,
}

impl Naming {
    fn new(socket: &Path) -> Self {
        let index = CgroupIndex::new(cgroup_root(), Duration::ZERO);
        let (asks, reports) = resolver::spawn(
            Cri::new(Some(socket.to_owned()), Duration::from_secs(2)),
            Duration::from_millis(200),
        );
        Self {
            attributor: Attributor::new(index),
            asks,
            reports,
            health: Vec::new(),
        }
    }

    fn note(&mut self, id: u64) {
        if let Some(ask) = self.attributor.note(id, Instant::now(), || None) {
            self.asks.send(ask).unwrap();
        }
    }

    /// Waits until cgroup `id` is named as `container` of the pod.
    async fn named(&mut self, id: u64, container: &str) {
        let named = self
            .until(Duration::from_secs(20), |n| {
                n.attributor.owner(id).is_some()
            })
            .await;
        assert!(named, "cgroup {id} not named; reports: {:?}", self.health);
        assert_eq!(self.attributor.owner(id), Some(&owner(container)));
    }

    /// Handles reports until `done` or the timeout.
    async fn until(&mut self, timeout: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while !done(self) {
            match tokio::time::timeout_at(deadline, self.reports.recv()).await {
                Ok(Some(Report::Answer(ask, owner))) => self.attributor.answer(ask, owner),
                Ok(Some(health)) => self.health.push(health),
                Ok(None) | Err(_) => return false,
            }
        }
        true
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_containers_cgroup_is_named_by_the_runtime() {
    let pod = start_pod().await;
    let mut naming = Naming::new(&pod.containerd.socket());
    for (_, id) in &pod.cgroups {
        naming.note(*id);
    }
    let named = naming
        .until(Duration::from_secs(20), |n| {
            pod.cgroups
                .iter()
                .all(|(_, id)| n.attributor.owner(*id).is_some())
        })
        .await;
    assert!(named, "not named in 20 s; reports: {:?}", naming.health);
    for (name, id) in &pod.cgroups {
        assert_eq!(
            naming.attributor.owner(*id),
            Some(&owner(name)),
            "cgroup {id}"
        );
    }
    // This test process is outside pods.
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
    let own_id = std::fs::metadata(cgroup_root().join(own.trim_start_matches('/')))
        .unwrap()
        .ino();
    naming.note(own_id);
    assert_eq!(naming.attributor.owner(own_id), Some(&Owner::default()));
}

#[tokio::test(flavor = "current_thread")]
async fn the_runtime_may_be_absent_at_start_and_die_mid_run() {
    let mut pod = start_pod().await;
    let socket = pod.containerd.socket();
    // Absent at start: containerd down, its socket gone.
    pod.containerd.kill().unwrap();
    std::fs::remove_file(&socket).unwrap();
    let mut naming = Naming::new(&socket);
    let (first, first_id) = pod.cgroups[0].clone();
    naming.note(first_id);
    let down = naming
        .until(Duration::from_secs(10), |n| !n.health.is_empty())
        .await;
    assert!(down, "no report that the runtime is absent");
    assert!(
        matches!(&naming.health[0], Report::Down(CriError::Unreachable { socket: s, .. }) if *s == socket),
        "{:?}",
        naming.health
    );
    assert_eq!(
        naming.attributor.owner(first_id),
        None,
        "waits, under its cgroup id"
    );

    // The runtime appears: the waiting cgroup is named, no restart needed.
    pod.containerd.restart().unwrap();
    naming.named(first_id, &first).await;
    assert!(matches!(naming.health.last(), Some(Report::Up(s)) if *s == socket));

    // It dies mid-run: one report, names already known stay, new
    // questions wait.
    pod.containerd.kill().unwrap();
    let before = naming.health.len();
    let (second, second_id) = pod.cgroups[1].clone();
    naming.note(second_id);
    let down = naming
        .until(Duration::from_secs(10), |n| n.health.len() > before)
        .await;
    assert!(down, "no report that the runtime died");
    assert!(matches!(naming.health[before], Report::Down(_)));
    // Pings keep failing; it is still reported once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    naming.until(Duration::from_millis(500), |_| false).await;
    assert_eq!(naming.health.len(), before + 1, "{:?}", naming.health);
    assert_eq!(naming.attributor.owner(first_id), Some(&owner(&first)));
    assert_eq!(naming.attributor.owner(second_id), None);

    pod.containerd.restart().unwrap();
    naming.named(second_id, &second).await;
}
