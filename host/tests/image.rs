//! The container image, built the registry-free way (`deploy/image/build`:
//! static binaries from this checkout, the Dockerfile's runtime stage, with
//! podman) and run: the agent's help, `kubenpuctl devices` on a fixture
//! tree mounted in, the one-line refusal of an agent without capabilities,
//! and no shell to fall back on.

mod support;

use std::{path::Path, process::Command};

use support::sysfs::Sysfs;

const IMAGE: &str = "kubenpu/agent:image-test";

/// `podman run` with what this machine's podman needs (explicit ulimits)
/// and no network.
fn podman_run(args: &[&str]) -> std::process::Output {
    Command::new("podman")
        .args(["run", "--rm", "--network", "none"])
        .args([
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
        ])
        .args(args)
        .output()
        .expect("podman runs (scripts/setup installs it)")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_image_runs_the_agent_and_kubenpuctl_without_a_registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let build = Command::new(root.join("deploy/image/build"))
        .arg(IMAGE)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build.stderr));
    assert_eq!(text(&build.stdout).trim(), IMAGE);

    let help = podman_run(&[IMAGE, "--help"]);
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
        IMAGE,
        "devices",
        "--sysfs-root",
        "/fixture/sys",
        "--dev-root",
        "/fixture/dev",
    ]);
    assert!(devices.status.success(), "{}", text(&devices.stderr));
    // The built-in vendors are in the binary: i915 and ivpu claim these.
    assert_eq!(
        text(&devices.stdout),
        "DRIVER     PCI-ID     ADDRESS       NODES          VENDOR\n\
         i915       8086:5917  0000:00:02.0  226:0,226:128  i915\n\
         intel_vpu  8086:7d1d  0000:00:0b.0  261:0          ivpu\n"
    );

    // podman's default set has neither CAP_BPF nor CAP_SYS_ADMIN.
    let agent = podman_run(&["--cap-drop", "all", IMAGE]);
    assert_eq!(agent.status.code(), Some(1));
    let stderr = text(&agent.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs CAP_BPF and CAP_PERFMON"), "{stderr}");

    let shell = podman_run(&["--entrypoint", "/bin/sh", IMAGE, "-c", "true"]);
    assert!(!shell.status.success(), "the image has a shell");

    let removed = Command::new("podman")
        .args(["rmi", IMAGE])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{}", text(&removed.stderr));
}
