//! The VM harness against real Debian kernels: the guest has what the
//! kernel hook needs, and the harness reports the command's status, never a
//! pass for a guest that did not report one.

use std::time::Duration;

use kubenpu_vm::{Arch, Kernel, Vm};

const SMOKE: &str = include_str!("../guest/smoke.sh");
const DRM: &str = include_str!("../guest/drm.sh");

fn smoke(kernel: Kernel) {
    let outcome = Vm::new(kernel)
        .file("/smoke.sh", 0o755, SMOKE)
        .file("/drm.sh", 0o644, DRM)
        .run("sh /smoke.sh")
        .unwrap_or_else(|e| panic!("{e:#}"));
    let output = &outcome.output;
    assert_eq!(
        outcome.status, 0,
        "smoke checks failed on {kernel}:\n{output}"
    );
    let machine = match kernel.arch() {
        Arch::Amd64 => "machine: x86_64",
        Arch::Arm64 => "machine: aarch64",
    };
    for expected in [
        machine,
        "ok: drm_ioctl is in /proc/kallsyms",
        "ok: kernel BTF at /sys/kernel/btf/vmlinux",
        "ok: found virtio_gpu nodes",
        "ok: found vgem nodes",
        "ok: a process in cgroup /kubenpu-smoke sees 0::/kubenpu-smoke",
    ] {
        assert!(
            output.contains(expected),
            "{kernel}: missing {expected:?} in:\n{output}"
        );
    }
    for node in [
        "virtio_gpu /dev/dri/card",
        "virtio_gpu /dev/dri/renderD",
        "vgem /dev/dri/card",
        "vgem /dev/dri/renderD",
    ] {
        assert!(
            output
                .lines()
                .any(|l| l.starts_with(&format!("ok: {node}")) && l.ends_with("as sysfs says")),
            "{kernel}: no checked {node}* node in:\n{output}"
        );
    }
    // Debian builds DRM as a module on every kernel we test.
    assert!(
        output.contains("ok: drm is a module with BTF at /sys/kernel/btf/drm"),
        "{output}"
    );
}

#[test]
fn smoke_bookworm() {
    smoke(Kernel::Bookworm);
}

#[test]
fn smoke_bookworm_backports() {
    smoke(Kernel::BookwormBackports);
}

#[test]
fn smoke_sid() {
    smoke(Kernel::Sid);
}

#[test]
fn smoke_bookworm_arm64() {
    smoke(Kernel::BookwormArm64);
}

#[test]
fn smoke_sid_arm64() {
    smoke(Kernel::SidArm64);
}

/// An arm64 guest gets Debian's arm64 programs with the libraries their
/// loader lists (runc links libseccomp and glibc).
#[test]
fn an_arm64_guest_runs_debians_dynamically_linked_programs() {
    let outcome = Vm::new(Kernel::SidArm64)
        .system_binary("/usr/bin/runc")
        .run("runc --version")
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    assert!(
        outcome.output.contains("libseccomp: 2."),
        "{}",
        outcome.output
    );
}

#[test]
fn the_commands_exit_status_is_the_runs_status() {
    let outcome = Vm::new(Kernel::Bookworm)
        .run("echo before; exit 3")
        .expect("the guest reports a status");
    assert_eq!(outcome.status, 3);
    assert_eq!(outcome.output, "before\n");
}

#[test]
fn a_guest_that_hangs_is_a_timeout_error_with_the_console_tail() {
    let error = Vm::new(Kernel::Bookworm)
        .timeout(Duration::from_secs(40))
        .run("echo hanging; sleep 3600")
        .expect_err("a hung guest must not pass");
    let message = format!("{error:#}");
    assert!(message.contains("timed out"), "{message}");
    assert!(message.contains("last console lines"), "{message}");
}

#[test]
fn a_guest_that_powers_off_without_a_status_is_an_error() {
    let error = Vm::new(Kernel::Bookworm)
        .run("poweroff -f")
        .expect_err("a guest without a status must not pass");
    let message = format!("{error:#}");
    assert!(
        message.contains("without reporting the command's exit status"),
        "{message}"
    );
}

/// A 3D virtio-gpu runs Debian's Mesa clients on the host's Mesa (virgl),
/// and strace in the guest sees their virtio-gpu ioctls: kmscube's bounded
/// run submits its frames by EXECBUFFER (`0x42`), one page flip each.
#[test]
fn a_3d_gpu_runs_debians_mesa_clients_under_strace() {
    let outcome = Vm::new(Kernel::Sid)
        .gpu_3d(true)
        .timeout(Duration::from_secs(300))
        .run(
            "in-mesa strace -f -e trace=ioctl -e raw=ioctl -o kmscube.trace \
             kmscube -D /dev/dri/card0 -c 30 | grep renderer && \
             echo execbuffers: $(grep -c ' 0xc0[0-9a-f][0-9a-f]6442,' kmscube.trace) && \
             echo page flips: $(grep -c ' 0xc01864b0,' kmscube.trace)",
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
    let output = &outcome.output;
    assert_eq!(outcome.status, 0, "{output}");
    assert!(output.contains("renderer: \"virgl"), "{output}");
    assert!(output.contains("page flips: 30\n"), "{output}");
    let execbuffers: u32 = output
        .split("execbuffers: ")
        .nth(1)
        .and_then(|rest| rest.lines().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count of execbuffers in:\n{output}"));
    assert!(execbuffers >= 30, "{output}");
}
