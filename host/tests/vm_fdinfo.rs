//! The fdinfo reader against the real `/proc` of a containerd pod, on the
//! newest kernel: virtio-gpu prints no DRM keys in fdinfo, so the reader
//! finds the pod's DRM fd, reads it, and exports no busy or memory series,
//! without errors. The agent runs without CAP_SYS_PTRACE, as a chart
//! without `fdinfo.enabled` would grant: another user's process holding a
//! DRM fd gives one log line, however many times it is visited. Only the
//! hardware is emulated.

mod support;

use kubenpu_vm::Kernel;

const UID: &str = "8e3f2d1c-4b5a-4c6d-9e7f-1a2b3c4d5e6f";

#[test]
fn the_reader_visits_pods_drm_fds_and_says_once_what_it_may_not_read() {
    let dir = tempfile::tempdir().unwrap();
    // util-linux's setpriv (busybox's cannot change uids), under a name
    // busybox's applet does not take.
    let setpriv = dir.path().join("caps-setpriv");
    std::fs::copy("/usr/bin/setpriv", &setpriv).expect("util-linux's setpriv");
    let vm = support::guest::with_containerd(support::guest::vm(Kernel::Sid, dir.path()))
        .binary(&setpriv);
    // Each workload holds its fd open for about 3 s of waits (150 × 20 ms),
    // while the reader visits every 200 ms.
    let outcome = vm
        .run(&format!(
            r#". /drm.sh && . /agent.sh && . /pods.sh
             start_containerd
             chmod 666 "$VIRTIO_RENDER"
             AGENT_WRAPPER='caps-setpriv --bounding-set -sys_ptrace --'
             start_agent --cri-socket /run/kubenpu-cri/containerd.sock --fdinfo --fdinfo-interval 200ms
             AGENT_WRAPPER=
             grep CapEff /proc/$AGENT_PID/status > /shared/agent.caps
             in_cgroup other caps-setpriv --reuid 1000 --regid 1000 --clear-groups \
               kubenpu-workload syncobj-wait:$VIRTIO_RENDER:150:20 > /shared/other.json &
             # While it runs, a visit counts it as denied.
             tries=0
             until busybox wget -q -O /shared/metrics-denied http://127.0.0.1:8080/metrics \
                   && grep -qx 'kubenpu_fdinfo_denied_processes 1' /shared/metrics-denied; do
               tries=$((tries + 1)); [ "$tries" -lt 300 ] || fail "no visit counted the other user's process"
               sleep 0.1
             done
             kubenpu-pods pod --dir "$CRI_DIR" --pod "gfx/holder/{UID}" \
               --image "$WORKLOAD_IMAGE" --device "$VIRTIO_RENDER" --mount /shared:/out \
               --container "hold=kubenpu-workload syncobj-wait:$VIRTIO_RENDER:150:20 > /out/hold.json" > /dev/null \
               || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run the pod"; }}
             wait_file /shared/hold.json
             wait_file /shared/other.json
             busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics
             stop_agent
             kill -TERM $PODS_PID
             cp $AGENT_LOG /shared/agent.log"#
        ))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let (metrics, log) = (read("metrics"), read("agent.log"));
    // CAP_SYS_PTRACE is bit 19.
    let caps = read("agent.caps");
    let effective = u64::from_str_radix(caps.split_whitespace().last().unwrap(), 16).unwrap();
    assert_eq!(
        effective & (1 << 19),
        0,
        "the agent had CAP_SYS_PTRACE: {caps}"
    );

    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    // The pod's container held its fd through many visits, each a read.
    let files = value("kubenpu_fdinfo_files_read_total");
    assert!(files >= 3.0, "{files} fdinfo files read\n{log}");
    assert!(value("kubenpu_fdinfo_scrape_seconds") > 0.0);
    assert!(
        metrics.contains(r#"kubenpu_ioctl_total{pod="holder",namespace="gfx",container="hold""#),
        "the pod was not named:\n{metrics}"
    );
    for family in [
        "kubenpu_engine_busy_seconds_total{",
        "kubenpu_device_memory_bytes{",
    ] {
        assert!(
            !metrics.lines().any(|l| l.starts_with(family)),
            "virtio-gpu publishes no usage, yet {family} in\n{metrics}"
        );
    }
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("kubenpu_agent_errors_total{")),
        "{metrics}"
    );
    let denied: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("may not read the open files of process"))
        .collect();
    assert_eq!(
        denied.len(),
        1,
        "one line for the other user's process:\n{log}"
    );
    assert!(denied[0].contains("CAP_SYS_PTRACE"), "{}", denied[0]);
    eprintln!("{files} fdinfo files read; {}", denied[0]);
}
