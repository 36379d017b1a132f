//! Pods named from the cgroup names the kernel program records, on the
//! newest kernel with a private containerd (kubenpu-pods acting as
//! kubelet): a container that exits a moment after its first call, whose
//! cgroup is gone before the agent could find it in the hierarchy, and a
//! pod that runs and ends while the agent is stopped. Each is named with
//! its exact count. Only the hardware is emulated.

mod support;

use std::time::Duration;

use kubenpu_vm::Kernel;

const BLINK_UID: &str = "5b0c9a7e-1d2f-4e3a-8b6c-9d0e1f2a3b4c";
const OFFLINE_UID: &str = "6c1d0b8f-2e3a-4f4b-9c7d-0e1f2a3b4c5d";

/// Runs `pod NAME UID CALLS`: a pod of one container, NAME, that issues
/// CALLS counted ioctls and exits.
const POD: &str = r#"
pod() {
  kubenpu-pods pod --dir "$CRI_DIR" --pod "jobs/$1/$2" --image "$WORKLOAD_IMAGE" \
    --device "$VIRTIO_RENDER" --mount /shared:/out \
    --container "$1=kubenpu-workload $VIRTIO_RENDER:0x48:$3 > /out/$1.json" > /dev/null \
    || { tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod $1"; }
  wait_file "/shared/$1.json"
}
# scrape NAME: /metrics once the agent has named NAME's container.
scrape() {
  tries=0
  until busybox wget -q -O "/shared/metrics-$1" http://127.0.0.1:8080/metrics \
        && grep -q "container=\"$1\"" "/shared/metrics-$1"; do
    tries=$((tries + 1))
    [ "$tries" -lt 300 ] || fail "$1 was not named"
    sleep 0.1
  done
}
"#;

#[test]
fn short_lived_and_offline_pods_are_named_with_their_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let agent = "start_agent --cri-socket /run/kubenpu-cri/containerd.sock --rescan-interval 1s";
    let vm = support::guest::with_containerd(support::guest::vm(Kernel::Sid, dir.path()))
        .timeout(Duration::from_secs(600));
    let outcome = vm
        .run(&format!(
            ". /drm.sh && . /agent.sh && . /pods.sh && {POD}
             start_containerd
             {agent}
             pod blink {BLINK_UID} 25
             scrape blink
             stop_agent
             pod offline {OFFLINE_UID} 40
             {agent}
             scrape offline
             stop_agent
             kill -TERM $PODS_PID
             cp $AGENT_LOG /shared/agent.log"
        ))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    for (container, calls) in [("blink", 25), ("offline", 40)] {
        let metrics =
            std::fs::read_to_string(dir.path().join(format!("metrics-{container}"))).unwrap();
        let series: Vec<&str> = metrics
            .lines()
            .filter(|l| {
                l.starts_with("kubenpu_ioctl_total{")
                    && l.contains(&format!(r#"container="{container}""#))
            })
            .collect();
        assert_eq!(
            series,
            [format!(
                r#"kubenpu_ioctl_total{{pod="{container}",namespace="jobs",container="{container}",device="{}",vendor="virtio_gpu",kind="wait"}} {calls}"#,
                virtio_device(&metrics)
            )],
            "{metrics}"
        );
    }
}

/// The virtio-gpu device's label, from its `kubenpu_device_info` row.
fn virtio_device(metrics: &str) -> String {
    metrics
        .lines()
        .find(|l| l.starts_with("kubenpu_device_info{") && l.contains(r#"driver="virtio_gpu""#))
        .and_then(|l| l.split(r#"device=""#).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no virtio_gpu row in\n{metrics}"))
        .to_owned()
}
