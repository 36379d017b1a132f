//! The Helm chart's least privilege, in real kernels (Debian's, whose
//! `kernel.perf_event_paranoid` is 3 and whose DRM is a module): the agent
//! runs with exactly the capabilities the chart grants and exactly the
//! arguments it renders (so with its mount layout: /host/dev, /host/cgroup,
//! /host/bpf), and counts every call, and a restarted agent adopts its
//! predecessor's program. With CAP_BPF and CAP_PERFMON alone it counts
//! through a kprobe session where the kernel has them (sid); on 6.1 it
//! refuses in one line saying which capability it lacks, and counts with
//! those two alone once `perf_event_paranoid` is 2, as values.yaml says.
//! The policy's BPF LSM checks (in audit) load and attach with either
//! set, and are adopted at each restart; so does placement's sched_ext
//! scheduler where the kernel has sched_ext (sid), and elsewhere the
//! agent says it has none in one line.

mod support;

use kubenpu_deploy::{Tools, daemon_set, helm};
use kubenpu_vm::Kernel;
use support::guest::run_with;

/// The agent container the chart renders with `args`: its capabilities as
/// setpriv's bounding set (`+bpf,+perfmon,...`), and its arguments.
fn chart_agent(args: &[&str]) -> (String, Vec<String>) {
    let tools = Tools::find().unwrap();
    let objects = helm(&tools, args).unwrap();
    let container = &daemon_set(&objects).unwrap()["spec"]["template"]["spec"]["containers"][0];
    let capabilities = &container["securityContext"]["capabilities"];
    assert_eq!(capabilities["drop"], serde_json::json!(["ALL"]));
    let bounding: Vec<String> = capabilities["add"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("+{}", c.as_str().unwrap().to_lowercase()))
        .collect();
    let arguments = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    (bounding.join(","), arguments)
}

fn the_charts_capabilities_are_enough_and_needed(kernel: Kernel) {
    let policy = [
        "--set",
        "policy.mode=audit",
        "--set",
        "placement.mode=sched-ext",
    ];
    let (chart_caps, args) = chart_agent(&policy);
    assert_eq!(chart_caps, "+bpf,+perfmon,+sys_nice,+sys_admin");
    let (minimal_caps, _) =
        chart_agent(&[&policy[..], &["--set-json", "extraCapabilities=[]"]].concat());
    assert_eq!(minimal_caps, "+bpf,+perfmon,+sys_nice");
    let args = args.join(" ");
    // A kprobe session needs no perf_event_open, and its kfunc call needs
    // CAP_BPF, so CAP_BPF and CAP_PERFMON are enough even at
    // perf_event_paranoid 3; Debian's 6.1 has no fprobe, and its kprobe
    // needs CAP_SYS_ADMIN there.
    let (hook, without_sys_admin) = match kernel {
        Kernel::Bookworm => (
            "kprobe",
            "if $AGENT_WRAPPER kubenpu-agent {args} >> $AGENT_LOG 2>&1; then fail 'the agent started without CAP_SYS_ADMIN'; fi
             sysctl -w kernel.perf_event_paranoid=2",
        ),
        _ => ("kprobe-session", ""),
    };
    let without_sys_admin = without_sys_admin.replace("{args}", &args);
    // util-linux's setpriv, under a name busybox's smaller applet does not take.
    let dir = tempfile::tempdir().unwrap();
    let setpriv = dir.path().join("caps-setpriv");
    std::fs::copy("/usr/bin/setpriv", &setpriv).expect("util-linux's setpriv");
    let results = run_with(
        kernel,
        |vm| vm.binary(&setpriv),
        &format!(
            "mkdir -p /host/dev /host/cgroup /host/bpf /host/cri /etc/kubenpu/policy
             mount --bind /dev /host/dev
             mount --bind /sys/fs/cgroup /host/cgroup
             mount --bind /sys/fs/bpf /host/bpf
             grep -q '^CapBnd:.*1ffffffffff' /proc/self/status || fail 'the guest shell lacks capabilities'
             AGENT_WRAPPER='caps-setpriv --bounding-set -all,{chart_caps} --'
             start_agent {args}
             grep CapEff /proc/$AGENT_PID/status > /shared/chart.caps
             issue a $VIRTIO_CARD:0x48:500 $VGEM_CARD:0x41:300
             stop_agent
             start_agent {args}
             issue a $VIRTIO_RENDER:0x48:200
             snapshot chart
             stop_agent
             kubenpu-agent --cleanup {args}
             [ \"$(cat /proc/sys/kernel/perf_event_paranoid)\" -gt 2 ] || fail \"perf_event_paranoid is not Debian's default, 3\"
             AGENT_WRAPPER='caps-setpriv --bounding-set -all,{minimal_caps} --'
             {without_sys_admin}
             start_agent {args}
             issue b $VGEM_RENDER:0x41:100
             stop_agent
             start_agent {args}
             issue b $VIRTIO_CARD:0x48:50
             snapshot minimal
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    // Exactly the chart's set: CAP_SYS_ADMIN (21), CAP_SYS_NICE (23),
    // CAP_PERFMON (38), CAP_BPF (39).
    assert_eq!(
        results.file("chart.caps").trim(),
        "CapEff:\t000000c000a00000"
    );
    // With it, every map write ran unpreempted.
    assert!(
        results
            .log_lines("cannot run map writes as SCHED_FIFO")
            .is_empty(),
        "{}",
        results.output
    );
    for (snapshot, cgroup, calls) in [("chart", "a", 500 + 300 + 200), ("minimal", "b", 100 + 50)] {
        let (counts, losses) = results.counts(snapshot);
        let expected = results.expected(snapshot, &[cgroup]);
        assert_eq!(expected.values().sum::<u64>(), calls);
        assert_eq!(counts, expected, "{kernel}, {snapshot}");
        assert!(losses.values().all(|&n| n == 0), "{losses:?}");
    }
    // Attached once with each capability set, and adopted at each restart,
    // with CAP_BPF and CAP_PERFMON alone too.
    assert_eq!(
        results
            .log_lines(&format!("hook {hook}: {hook} attached"))
            .len(),
        2,
        "{}",
        results.output
    );
    assert_eq!(
        results
            .log_lines(&format!("adopted the pinned {hook} link"))
            .len(),
        2,
        "{}",
        results.output
    );
    // The policy file's directory, as the chart mounts it, is followed;
    // an empty ConfigMap holds no file, and no rules.
    assert!(
        !results
            .log_lines("policy file /etc/kubenpu/policy/policy.yaml does not exist: no rules beyond allocated-only")
            .is_empty(),
        "{}",
        results.output
    );
    assert!(
        results.log_lines("cannot watch").is_empty(),
        "{}",
        results.output
    );
    // The checks need no capability beyond those two either.
    let checks = "policy audit: BPF LSM checks on file_open, file_ioctl, file_ioctl_compat";
    assert_eq!(
        results.log_lines(&format!("{checks} attached")).len(),
        2,
        "{}",
        results.output
    );
    assert_eq!(
        results
            .log_lines(&format!("{checks} adopted the pinned checks"))
            .len(),
        2,
        "{}",
        results.output
    );
    assert!(results.log_lines("falls back to off").is_empty());
    // The scheduler loads with either set, without CAP_SYS_ADMIN, on the
    // kernel with sched_ext; elsewhere one line, and hints.
    let placement = if kernel == Kernel::Bookworm {
        "placement: this kernel has no sched_ext"
    } else {
        "placement: the sched_ext scheduler is in force"
    };
    assert_eq!(results.log_lines(placement).len(), 4, "{}", results.output);
    let refusals = results.log_lines("cannot attach to drm_ioctl");
    if kernel == Kernel::Bookworm {
        assert_eq!(refusals.len(), 1, "{}", results.output);
        assert!(
            refusals[0].contains("need CAP_SYS_ADMIN besides CAP_BPF and CAP_PERFMON"),
            "{}",
            refusals[0]
        );
    } else {
        assert!(refusals.is_empty(), "{refusals:?}");
    }
}

#[test]
fn bookworm() {
    the_charts_capabilities_are_enough_and_needed(Kernel::Bookworm);
}

#[test]
fn sid() {
    the_charts_capabilities_are_enough_and_needed(Kernel::Sid);
}
