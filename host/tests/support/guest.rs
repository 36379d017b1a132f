//! Runs the agent, kubenpuctl and the workload inside the test VM and
//! reads back what they wrote to the shared directory: what the workloads
//! issued, per cgroup, and what the agent counted.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use kubenpu_vm::{Arch, Kernel, Vm};
use serde_json::Value;
use tempfile::TempDir;

use super::test_plugin;

/// (cgroup id, device `major:minor`, ioctl nr) -> calls.
pub type Counts = BTreeMap<(u64, String, u64), u64>;

/// The programs a guest runs, built for its architecture.
struct GuestBinaries {
    agent: PathBuf,
    kubenpuctl: PathBuf,
    workload: PathBuf,
    /// kubenpu-pods, which runs containerd and pods in the guest.
    pods: PathBuf,
}

fn cargo(root: &Path, args: &[&str]) {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["build", "--quiet", "--locked"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "cargo build {args:?} failed");
}

/// The guest programs for `arch`, built once per test run. For this host's
/// architecture, `cargo test`'s own debug build of the agent and
/// kubenpuctl, and the other crates' test binaries built beside them. For
/// arm64, static release builds: the agent and kubenpuctl exactly as
/// `deploy/image/build` builds them (so one build serves the tests and the
/// image), then the test binaries.
fn binaries(arch: Arch) -> &'static GuestBinaries {
    static HOST: OnceLock<GuestBinaries> = OnceLock::new();
    static ARM64: OnceLock<GuestBinaries> = OnceLock::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let test_crates = ["-p", "kubenpu-workload", "-p", "kubenpu-pods"];
    if arch == Arch::host().unwrap() {
        return HOST.get_or_init(|| {
            cargo(root, &test_crates);
            let dir = root.join("target/debug");
            GuestBinaries {
                agent: env!("CARGO_BIN_EXE_kubenpu-agent").into(),
                kubenpuctl: env!("CARGO_BIN_EXE_kubenpuctl").into(),
                workload: dir.join("kubenpu-workload"),
                pods: dir.join("kubenpu-pods"),
            }
        });
    }
    assert_eq!(arch, Arch::Arm64);
    ARM64.get_or_init(|| {
        let target = ["--release", "--target", arch.musl_target()];
        let feature = ["--features", "kubenpu/cross-precompile"];
        let agent = [
            "-p",
            "kubenpu",
            "--bin",
            "kubenpu-agent",
            "--bin",
            "kubenpuctl",
        ];
        cargo(root, &[&target[..], &feature, &agent].concat());
        cargo(root, &[&target[..], &feature, &test_crates].concat());
        let dir = root.join("target").join(arch.musl_target()).join("release");
        GuestBinaries {
            agent: dir.join("kubenpu-agent"),
            kubenpuctl: dir.join("kubenpuctl"),
            workload: dir.join("kubenpu-workload"),
            pods: dir.join("kubenpu-pods"),
        }
    })
}

/// The workload built for i386 (static), whose ioctls an x86_64 kernel
/// takes through its compat path (`compat_ioctl`, and the
/// `file_ioctl_compat` LSM hook); built once per test run.
pub fn workload32() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let target = "i686-unknown-linux-musl";
        cargo(root, &["--target", target, "-p", "kubenpu-workload"]);
        root.join("target")
            .join(target)
            .join("debug/kubenpu-workload")
    })
}

/// A host example binary, built by `cargo test` along with the tests.
pub fn example(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let path = root.join("target/debug/examples").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run the tests with cargo test",
        path.display()
    );
    path
}

/// What one guest run left in the shared directory.
pub struct Results {
    dir: TempDir,
    /// The command's console output (the agent's log on failure).
    pub output: String,
}

/// Boots `kernel` with virtio-gpu, vgem and a bochs display (a DRM device
/// no vendor claims), the agent, kubenpuctl and the workload, and runs
/// `script` after the guest helpers; the script must succeed.
pub fn run(kernel: Kernel, script: &str) -> Results {
    run_with(kernel, |vm| vm, script)
}

/// [`run`], with the VM amended by `amend` (more binaries or files).
pub fn run_with(kernel: Kernel, amend: impl FnOnce(Vm) -> Vm, script: &str) -> Results {
    let dir = tempfile::tempdir().unwrap();
    let outcome = amend(vm(kernel, dir.path()))
        .device("bochs-display")
        .module("bochs")
        .run(&format!(". /drm.sh && . /agent.sh && {script}"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        outcome.status, 0,
        "the guest script failed on {kernel}:\n{}",
        outcome.output
    );
    Results {
        dir,
        output: outcome.output,
    }
}

/// A VM booting `kernel` with virtio-gpu and vgem, the agent, kubenpuctl,
/// the workload and the guest helpers (`/drm.sh`, `/agent.sh`), sharing
/// `shared` at /shared, with ten minutes to finish.
pub fn vm(kernel: Kernel, shared: &Path) -> Vm {
    let binaries = binaries(kernel.arch());
    Vm::new(kernel)
        // Under TCG, beside the other tests of a run, a guest script can
        // take several times what it takes alone.
        .timeout(std::time::Duration::from_secs(600))
        .binary(&binaries.agent)
        .binary(&binaries.kubenpuctl)
        .binary(&binaries.workload)
        .file(
            "/drm.sh",
            0o644,
            include_str!("../../../tests/vm/guest/drm.sh"),
        )
        .file("/agent.sh", 0o644, include_str!("../guest/agent.sh"))
        .file(
            "/vgem-alt.wasm",
            0o644,
            fs::read(test_plugin("vgem-alt")).unwrap(),
        )
        .shared_dir(shared)
}

/// `vm` with kubenpu-pods, the test support that also loads someone
/// else's sched_ext scheduler.
fn with_pods_tool(vm: Vm) -> Vm {
    let pods = &binaries(vm.kernel().arch()).pods;
    vm.binary(pods)
}

/// `vm` with a private containerd and kubenpu-pods (which acts as
/// kubelet), and the pod helpers at `/pods.sh`.
pub fn with_containerd(vm: Vm) -> Vm {
    with_pods_tool(vm)
        .system_binary("/usr/bin/containerd")
        .system_binary("/usr/bin/containerd-shim-runc-v2")
        .system_binary("/usr/bin/runc")
        .system_binary("/usr/bin/ctr")
        .file("/pods.sh", 0o644, include_str!("../guest/pods.sh"))
}

impl Results {
    /// A file the guest script wrote to the shared directory.
    pub fn file(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", self.output))
    }

    fn json(&self, name: &str) -> Value {
        serde_json::from_str(&self.file(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The cgroup id of a workload cgroup (`-` is the root cgroup).
    pub fn cgroup_id(&self, name: &str) -> u64 {
        self.file("cgroups")
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no cgroup {name}"))
            .parse()
            .unwrap()
    }

    /// The counters and losses of snapshot `name`.
    pub fn counts(&self, name: &str) -> (Counts, BTreeMap<String, u64>) {
        let json = self.json(&format!("{name}.counts.json"));
        let counts = json["counters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let key = (
                    c["cgroup_id"].as_u64().unwrap(),
                    c["device"].as_str().unwrap().to_owned(),
                    c["nr"].as_u64().unwrap(),
                );
                (key, c["calls"].as_u64().unwrap())
            })
            .collect();
        let losses = json["losses"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        (counts, losses)
    }

    /// The calls of cgroup `cgroup` that snapshot `name` counts as made
    /// from another NUMA node than their device's.
    pub fn remote(&self, name: &str, cgroup: &str) -> u64 {
        let id = self.cgroup_id(cgroup);
        self.json(&format!("{name}.counts.json"))["counters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cgroup_id"].as_u64() == Some(id))
            .map(|c| c["remote"].as_u64().unwrap())
            .sum()
    }

    /// What the workloads in `cgroups` issued, as (cgroup, device, nr) -> calls.
    pub fn issued(&self, cgroups: &[&str]) -> Vec<(String, String, u64, u64)> {
        self.file("issued")
            .lines()
            .filter_map(|line| {
                let (cgroup, json) = line.split_once(' ')?;
                cgroups.contains(&cgroup).then(|| {
                    let v: Value = serde_json::from_str(json).unwrap();
                    let device = v["device"].as_str().unwrap().to_owned();
                    (
                        cgroup.to_owned(),
                        device,
                        v["nr"].as_u64().unwrap(),
                        v["calls"].as_u64().unwrap(),
                    )
                })
            })
            .collect()
    }

    /// The vendor claiming the device with node `device`, per kubenpuctl.
    pub fn vendor_of(&self, device: &str) -> Option<String> {
        let devices = self.json("devices.json");
        let row = devices
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["nodes"].as_array().unwrap().iter().any(|n| n == device))?;
        row["vendor"].as_str().map(str::to_owned)
    }

    /// What the agent should have counted for `cgroups`: every issued call
    /// on a claimed device whose vendor's table (in snapshot `name`) lists
    /// its number.
    pub fn expected(&self, name: &str, cgroups: &[&str]) -> Counts {
        let plugins = self.json(&format!("{name}.plugins.json"));
        let tracked = |vendor: &str, nr: u64| {
            plugins.as_array().unwrap().iter().any(|p| {
                p["name"] == vendor
                    && p["ioctls"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|i| i["nr"] == nr)
            })
        };
        let mut expected = Counts::new();
        for (cgroup, device, nr, calls) in self.issued(cgroups) {
            if self
                .vendor_of(&device)
                .is_some_and(|vendor| tracked(&vendor, nr))
            {
                *expected
                    .entry((self.cgroup_id(&cgroup), device, nr))
                    .or_default() += calls;
            }
        }
        expected
    }

    /// The agent's log lines matching `pattern`, as the script saved them.
    pub fn log_lines(&self, pattern: &str) -> Vec<String> {
        self.file("agent.log")
            .lines()
            .filter(|l| l.contains(pattern))
            .map(str::to_owned)
            .collect()
    }
}
