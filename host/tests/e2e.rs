//! End to end, on the newest kernel, x86_64's and arm64's: a pod's DRM
//! ioctls become Prometheus series. In the VM, the agent runs as on a
//! node, and a private containerd runs pod `default/drm-demo` with two containers created through CRI by
//! kubenpu-pods acting as kubelet; each container runs the workload with
//! its own mix of submit, alloc and wait ioctls on virtio-gpu and vgem. On
//! the host, a real Prometheus scrapes the agent through a forwarded port.
//!
//! The steps also show what operators rely on: the runtime absent when the
//! agent starts, a removed pod's series kept with its final counts across
//! an agent killed and restarted, then dropped after the grace period, the
//! runtime killed mid-run, and a device unplugged and plugged again.
//! Only the hardware is emulated: qemu's virtio-gpu and the vgem module.

#[macro_use]
mod support;

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use kubenpu_prometheus::{Prometheus, check_metrics};
use kubenpu_vm::Kernel;
use serde_json::Value;
use support::steps::{Host, wait_until};

const POD_UID: &str = "0d6f1e5a-3c2b-4a19-9e7d-5b8c4f2a1e30";
const GRACE_SECONDS: u64 = 60;

/// (container, device, vendor, kind) -> calls.
type Series = BTreeMap<(String, String, String, String), u64>;

/// The guest script; `step NAME` waits for the test's checks.
fn script() -> String {
    let render = "$VIRTIO_RENDER:0x42:400 $VIRTIO_RENDER:0x44:120 $VIRTIO_RENDER:0x48:300 $VIRTIO_RENDER:0x43:77 $VGEM_CARD:0xb2:50";
    let encode = "$VGEM_CARD:0x41:700 $VGEM_CARD:0xb2:90 $VIRTIO_CARD:0x48:30 $VIRTIO_CARD:0x42:15";
    format!(
        r#"
        echo e2e > /proc/sys/kernel/hostname
        # The runtime is absent when the agent starts.
        start_agent --cri-socket /run/kubenpu-cri/containerd.sock --series-grace {GRACE_SECONDS}s --rescan-interval 1s
        start_containerd
        SANDBOX=$(kubenpu-pods pod --dir "$CRI_DIR" --pod default/drm-demo/{POD_UID} --image "$WORKLOAD_IMAGE" \
          --device "$VIRTIO_CARD" --device "$VIRTIO_RENDER" --device "$VGEM_CARD" --mount /shared:/out \
          --container "render=kubenpu-workload {render} > /out/render.json && exec sleep 1000000" \
          --container "encode=kubenpu-workload {encode} > /out/encode.json && exec sleep 1000000") \
          || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run the pod"; }}
        wait_file /shared/render.json
        wait_file /shared/encode.json
        kubenpuctl devices --json > /shared/devices.json
        kubenpuctl plugins --json > /shared/plugins.json
        step counted

        kubenpu-pods remove --dir "$CRI_DIR" "$SANDBOX" || fail "cannot remove the pod"
        step removed

        # The runtime no longer knows the pod: the restarted agent names
        # its cgroups from the pinned OWNERS map.
        kill -KILL $AGENT_PID
        wait $AGENT_PID || true
        start_agent --cri-socket /run/kubenpu-cri/containerd.sock --series-grace {GRACE_SECONDS}s --rescan-interval 1s
        step restarted

        kill -KILL $(pidof containerd)
        issue - $VGEM_CARD:0x41:33
        step runtime-killed

        vgem=$(grep vgem /lib/modules/load-order)
        rmmod vgem
        step unplugged
        insmod /lib/modules/$vgem
        step plugged

        stop_agent
        kill -TERM $PODS_PID
        cp $AGENT_LOG /shared/agent.log
        "#
    )
}

on_kernels!([sid => Sid, sid_arm64 => SidArm64]: a_pods_ioctls_become_prometheus_series);

fn a_pods_ioctls_become_prometheus_series(kernel: Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().to_owned();
    let vm = support::guest::with_containerd(support::guest::vm(kernel, &shared));
    let host = Host::boot(vm, shared.clone(), script());
    let prometheus_dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(
        prometheus_dir.path(),
        std::slice::from_ref(&host.agent),
        Duration::from_millis(500),
    )
    .unwrap();

    // The pod's calls, exactly, under its namespace, pod and containers.
    host.step("counted", || {
        let expected = expected(&shared);
        // Both containers are named once containerd has answered.
        wait_until(Duration::from_secs(60), || pod_series(&host.metrics()) == expected);
        let exposition = host.metrics();
        check_metrics(&exposition).unwrap();
        assert_eq!(pod_series(&exposition), expected, "{exposition}");
        // Scrapes read the counters through map iterators, which skip no
        // call (bpf(2) copies would).
        assert!(exposition.contains(r#"reads="iterators""#), "{exposition}");
        let query = r#"sum by (container, device, vendor, kind) (kubenpu_ioctl_total{namespace="default", pod="drm-demo"})"#;
        let deadline = Instant::now() + Duration::from_secs(60);
        let scraped = loop {
            let samples = prometheus.query(query).unwrap();
            let scraped: Series = samples
                .into_iter()
                .map(|(l, v)| ((label(&l, "container"), label(&l, "device"), label(&l, "vendor"), label(&l, "kind")), v as u64))
                .collect();
            if scraped == expected || Instant::now() > deadline {
                break scraped;
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        assert_eq!(scraped, expected, "PromQL: {query}");
        let devices = prometheus.wait_for("kubenpu_device_info", Duration::from_secs(10)).unwrap();
        let rows: Vec<(String, String, String, String)> = devices
            .iter()
            .map(|(l, _)| (label(l, "device"), label(l, "vendor"), label(l, "driver"), label(l, "pci_id")))
            .collect();
        assert!(rows.contains(&(virtio_address(&shared), "virtio_gpu".into(), "virtio_gpu".into(), "1af4:1050".into())), "{rows:?}");
        assert!(rows.contains(&("faux/vgem".into(), "vgem".into(), "vgem".into(), String::new())), "{rows:?}");
        assert!(devices.iter().all(|(l, _)| label(l, "node") == "e2e"), "{devices:?}");

        // kubenpuctl top reads the same totals from the agent.
        let top = std::process::Command::new(env!("CARGO_BIN_EXE_kubenpuctl"))
            .args(["top", "--agent", &host.agent, "--interval", "1s", "--count", "1"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&top.stdout);
        assert!(top.status.success(), "{table}{}", String::from_utf8_lossy(&top.stderr));
        for container in ["render", "encode"] {
            assert!(
                table.lines().any(|l| l.split_whitespace().take(3).eq(["default", "drm-demo", container])),
                "{table}"
            );
        }
    });

    // A removed pod's series stay for the grace period with their final
    // counts, across an agent restart, then go. The guest starts removing
    // the pod only once let past "counted", so no container can be gone
    // before now; the step "removed" comes seconds later, when the runtime
    // has also removed the sandbox, long after the containers' cgroups.
    let removal_started = Instant::now();
    host.step("removed", || {
        assert_eq!(
            pod_series(&host.metrics()),
            expected(&shared),
            "kept during the grace period"
        );
    });
    host.step("restarted", || {
        assert_eq!(
            pod_series(&host.metrics()),
            expected(&shared),
            "kept, with the same counts, by the restarted agent"
        );
        let gone = wait_until(Duration::from_secs(GRACE_SECONDS + 30), || {
            pod_series(&host.metrics()).is_empty()
        });
        assert!(gone, "the removed pod's series outlived the grace period");
        // A second of slack for the two clocks: the agent's is the guest's.
        let kept = removal_started.elapsed();
        assert!(
            kept >= Duration::from_secs(GRACE_SECONDS - 1),
            "dropped {kept:?} after the removal began, before the grace period"
        );
    });

    // The runtime dies: the agent says so once and goes on counting.
    host.step("runtime-killed", || {
        let counted = wait_until(Duration::from_secs(20), || {
            host.metrics().contains(r#"kubenpu_ioctl_total{pod="",namespace="",container="",device="faux/vgem",vendor="vgem",kind="submit"} 33"#)
        });
        assert!(counted, "calls outside pods were not counted while the runtime is down");
        assert!(wait_until(Duration::from_secs(20), || host.metrics().contains("kubenpu_cri_up 0")));
    });

    // A device unplugged and plugged again follows in kubenpu_device_info.
    let vgem_row = r#"kubenpu_device_info{device="faux/vgem",vendor="vgem",driver="vgem""#;
    host.step("unplugged", || {
        assert!(
            wait_until(Duration::from_secs(20), || !host
                .metrics()
                .contains(vgem_row)),
            "vgem still listed"
        );
    });
    host.step("plugged", || {
        assert!(
            wait_until(Duration::from_secs(20), || host
                .metrics()
                .contains(vgem_row)),
            "vgem not listed again"
        );
    });

    host.finish();
    let log = std::fs::read_to_string(shared.join("agent.log")).unwrap();
    let down: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("does not answer"))
        .collect();
    assert_eq!(
        down.len(),
        2,
        "one line when absent at start, one when killed:\n{log}"
    );
    assert!(down.iter().all(|l| l.contains("counting goes on")), "{log}");
    assert_eq!(
        log.matches("CRI: /run/kubenpu-cri/containerd.sock").count(),
        2,
        "once per agent:\n{log}"
    );
    assert_eq!(
        log.matches("restored the names of 2 cgroup(s)").count(),
        1,
        "the restarted agent names the removed pod's containers:\n{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}

/// A label's value; Prometheus leaves out empty labels.
fn label(labels: &BTreeMap<String, String>, name: &str) -> String {
    labels.get(name).cloned().unwrap_or_default()
}

fn json(shared: &Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(shared.join(name)).unwrap()).unwrap()
}

/// The PCI address of the virtio-gpu device, as kubenpuctl saw it.
fn virtio_address(shared: &Path) -> String {
    let devices = json(shared, "devices.json");
    devices
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["driver"] == "virtio_gpu")
        .and_then(|d| d["address"].as_str())
        .unwrap()
        .to_owned()
}

/// What each container's workload reported issuing, as series: every call
/// on a claimed device whose vendor's table lists its number.
fn expected(shared: &Path) -> Series {
    let devices = json(shared, "devices.json");
    let plugins = json(shared, "plugins.json");
    let mut series = Series::new();
    for container in ["render", "encode"] {
        let report = std::fs::read_to_string(shared.join(format!("{container}.json"))).unwrap();
        for line in report.lines() {
            let call: Value = serde_json::from_str(line).unwrap();
            let device = devices
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["nodes"].as_array().unwrap().contains(&call["device"]))
                .unwrap();
            let vendor = device["vendor"].as_str().unwrap();
            let kind = plugins
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == vendor)
                .and_then(|p| {
                    p["ioctls"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|i| i["nr"] == call["nr"])
                })
                .map(|i| i["kind"].as_str().unwrap().to_owned());
            if let Some(kind) = kind {
                let key = (
                    container.to_owned(),
                    device["address"].as_str().unwrap().to_owned(),
                    vendor.to_owned(),
                    kind,
                );
                *series.entry(key).or_default() += call["calls"].as_u64().unwrap();
            }
        }
    }
    series
}

/// The `default/drm-demo` series in an exposition.
fn pod_series(exposition: &str) -> Series {
    exposition
        .lines()
        .filter(|l| {
            l.starts_with("kubenpu_ioctl_total{")
                && l.contains(r#"pod="drm-demo",namespace="default""#)
        })
        .map(|line| {
            let label = |name: &str| {
                let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                line[start..start + line[start..].find('"').unwrap()].to_owned()
            };
            let calls = line.rsplit(' ').next().unwrap().parse().unwrap();
            (
                (
                    label("container"),
                    label("device"),
                    label("vendor"),
                    label("kind"),
                ),
                calls,
            )
        })
        .collect()
}
