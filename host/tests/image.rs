//! The container image, built the registry-free way (`deploy/image/build`:
//! static binaries from this checkout, the Dockerfile's runtime stage, with
//! podman) and run: the agent's help, `kubenpuctl devices` on a fixture
//! tree mounted in, the one-line refusal of an agent without capabilities,
//! and no shell to fall back on. With both architectures, one local
//! manifest list whose arm64 image holds static arm64 binaries, and whose
//! arm64 kubenpuctl, run under qemu's user-mode emulator, sees the same
//! devices as the host's.

mod support;

use std::{path::Path, process::Command, sync::Mutex};

use kubenpu_vm::elf;
use serde_json::Value;
use support::sysfs::Sysfs;

const IMAGE: &str = "kubenpu/agent:image-test";
/// The two-architecture manifest list.
const IMAGE_LIST: &str = "kubenpu/agent:image-test-list";

/// One test at a time: the two images' amd64 halves are the same image, so
/// one test's clean-up would remove what the other runs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What `kubenpuctl devices` prints for `Sysfs::intel_gpu_and_npu`: the
/// built-in vendors are in the binary, and i915 and ivpu claim these.
const INTEL_DEVICES: &str = "DRIVER     PCI-ID     ADDRESS       NODES          VENDOR\n\
                             i915       8086:5917  0000:00:02.0  226:0,226:128  i915\n\
                             intel_vpu  8086:7d1d  0000:00:0b.0  261:0          ivpu\n";

/// `podman run` with what this machine's podman needs (explicit ulimits)
/// and no network.
fn podman_run(args: &[&str]) -> std::process::Output {
    podman_run_with_input(args, "")
}

/// [`podman_run`], with `input` on the container's stdin.
fn podman_run_with_input(args: &[&str], input: &str) -> std::process::Output {
    use std::{io::Write, process::Stdio};
    let mut child = Command::new("podman")
        .args(["run", "--rm", "-i", "--network", "none"])
        .args([
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("podman runs (scripts/setup installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn podman(args: &[&str]) -> String {
    let out = Command::new("podman").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "podman {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The host's image, as CI builds it.
#[test]
fn the_image_runs_the_agent_and_kubenpuctl_without_a_registry() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    build(&["--arch", "amd64", IMAGE]);
    runs_the_agent_and_kubenpuctl(IMAGE);
    podman(&["rmi", IMAGE]);
}

/// Both architectures, as `deploy/image/build` makes them by default: one
/// manifest list, which podman resolves to the host's image, and whose
/// arm64 image holds static arm64 binaries. The arm64 VM tests build the
/// agent and kubenpuctl with the same profile, target and features, so in
/// a whole run cargo builds them once.
#[test]
fn the_two_architecture_image_is_one_manifest_list() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    build(&[IMAGE_LIST]);
    runs_the_agent_and_kubenpuctl(IMAGE_LIST);
    arm64_image_holds_static_arm64_binaries(IMAGE_LIST);
    podman(&["manifest", "rm", IMAGE_LIST]);
}

/// `deploy/image/build ARGS...`, which prints the image's name last.
fn build(args: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let build = Command::new(root.join("deploy/image/build"))
        .args(args)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build.stderr));
    assert_eq!(text(&build.stdout).trim(), *args.last().unwrap());
}

/// The agent's help, `kubenpuctl devices` on a fixture tree, the agent's
/// refusal without capabilities, and no shell.
fn runs_the_agent_and_kubenpuctl(image: &str) {
    let help = podman_run(&[image, "--help"]);
    assert!(help.status.success(), "{}", text(&help.stderr));
    for flag in [
        "--hook",
        "--cri-socket",
        "--cgroup-root",
        "--pin-path",
        "--listen",
    ] {
        assert!(text(&help.stdout).contains(flag), "{}", text(&help.stdout));
    }

    let sysfs = Sysfs::new();
    sysfs.intel_gpu_and_npu();
    let volume = format!("{}:/fixture:ro", sysfs.path().display());
    let devices = podman_run(&[
        "--volume",
        &volume,
        "--entrypoint",
        "/usr/bin/kubenpuctl",
        image,
        "devices",
        "--sysfs-root",
        "/fixture/sys",
        "--dev-root",
        "/fixture/dev",
    ]);
    assert!(devices.status.success(), "{}", text(&devices.stderr));
    assert_eq!(text(&devices.stdout), INTEL_DEVICES);

    // podman's default set has neither CAP_BPF nor CAP_SYS_ADMIN.
    let agent = podman_run(&["--cap-drop", "all", image]);
    assert_eq!(agent.status.code(), Some(1));
    let stderr = text(&agent.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs CAP_BPF and CAP_PERFMON"), "{stderr}");

    // The OCI hook, for the node's runtime: without an agent it lets the
    // container start, and says why.
    let state = r#"{"id":"c1","pid":1,"annotations":{}}"#;
    let hook = podman_run_with_input(&["--entrypoint", "/usr/bin/kubenpu-oci-hook", image], state);
    assert!(hook.status.success(), "{}", text(&hook.stderr));
    assert!(
        text(&hook.stderr).contains("no agent at /run/kubenpu/admission.sock"),
        "{}",
        text(&hook.stderr)
    );

    let shell = podman_run(&["--entrypoint", "/bin/sh", image, "-c", "true"]);
    assert!(!shell.status.success(), "the image has a shell");
}

/// The manifest list's arm64 image: its binaries are static arm64
/// executables, and its kubenpuctl lists the fixture's devices exactly as
/// the amd64 one does (the arm64 build's precompiled plugins included).
fn arm64_image_holds_static_arm64_binaries(list_name: &str) {
    let list: Value = serde_json::from_str(&podman(&["manifest", "inspect", list_name])).unwrap();
    let manifests = list["manifests"].as_array().unwrap();
    let arches: Vec<&str> = manifests
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["amd64", "arm64"], "{list}");
    let arm64 = manifests[1]["digest"].as_str().unwrap();
    let container = podman(&["create", &format!("{list_name}@{arm64}")]);
    let container = container.trim();
    let dir = tempfile::tempdir().unwrap();
    for binary in ["kubenpu-agent", "kubenpuctl", "kubenpu-oci-hook"] {
        let copy = dir.path().join(binary);
        podman(&[
            "cp",
            &format!("{container}:/usr/bin/{binary}"),
            copy.to_str().unwrap(),
        ]);
        let bytes = std::fs::read(&copy).unwrap();
        assert_eq!(
            elf::machine(&bytes),
            Some(elf::EM_AARCH64),
            "{binary} is not an arm64 executable"
        );
        assert_eq!(
            elf::interpreter(&bytes),
            None,
            "{binary} names a dynamic loader: it is not static"
        );
    }
    podman(&["rm", container]);
    let sysfs = Sysfs::new();
    sysfs.intel_gpu_and_npu();
    let devices = Command::new("qemu-aarch64-static")
        .arg(dir.path().join("kubenpuctl"))
        .args(["devices", "--sysfs-root"])
        .arg(sysfs.path().join("sys"))
        .arg("--dev-root")
        .arg(sysfs.path().join("dev"))
        .output()
        .expect("qemu-aarch64-static runs (scripts/setup installs qemu-user-static)");
    assert!(devices.status.success(), "{}", text(&devices.stderr));
    assert_eq!(text(&devices.stdout), INTEL_DEVICES);
}
