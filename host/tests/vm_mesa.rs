//! Real, unmodified GPU applications: Debian's Mesa clients (kmscube,
//! glmark2) render through a 3D virtio-gpu (virgl, drawn by the host's
//! Mesa) in pods under containerd, each under strace. What the agent
//! counted for each container, per device and ioctl number, must be what
//! strace saw the container's processes call that the vendor's table
//! counts, exactly: no call more or less, no number the table does not
//! list, and their failures, busy and timed-out waits alike.

#[macro_use]
mod support;

use std::collections::BTreeMap;

use kubenpu_strace::{Row, Tables, parse, tally};
use kubenpu_vm::Kernel;
use serde_json::Value;
use support::guest::{run_with, with_containerd};

on_kernels!([bookworm_backports => BookwormBackports, sid => Sid]: mesa_clients_in_pods_are_counted_as_strace_saw_them);

/// (device, nr) -> (calls, failed, busy, timed_out) of one container.
type Counted = BTreeMap<(String, u64), [u64; 4]>;

/// The clients, one pod each, in turn (the first to open the card node
/// is its DRM master, which kmscube needs to set the mode): kmscube's 30
/// frames, and two of glmark2's scenes rendered off screen.
const CLIENTS: [(&str, &str, &str); 2] = [
    ("kmscube", "cube", "kmscube -D $VIRTIO_CARD -c 30"),
    (
        "glmark2",
        "bench",
        "glmark2-es2-drm --off-screen -s 320x240 -b build:duration=1 -b shading:duration=1",
    ),
];

fn mesa_clients_in_pods_are_counted_as_strace_saw_them(kernel: Kernel) {
    let pods: String = CLIENTS
        .iter()
        .enumerate()
        .map(|(i, (pod, container, client))| {
            format!(
                r#"kubenpu-pods pod --dir "$CRI_DIR" --pod "gfx/{pod}/7c1e2f3a-4b5d-4e6f-8a9b-0c1d2e3f4a{i:02}" \
                   --image "$WORKLOAD_IMAGE" --device "$VIRTIO_CARD" --device "$VIRTIO_RENDER" \
                   --mount /mesa:/mesa --mount /shared:/out --container "$(traced {container} {client})" > /dev/null \
                   || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod {pod}"; }}
                 wait_file /shared/{container}.rc 300
                 "#
            )
        })
        .collect();
    let results = run_with(
        kernel,
        |vm| with_containerd(vm).gpu_3d(true),
        &format!(
            r#". /pods.sh
             start_containerd
             start_agent --cri-socket "$CRI_SOCKET"
             {pods}
             wait_metrics "the containers were not named" 'container="cube"' 'container="bench"'
             kubenpuctl counts --json > /shared/final.counts.json
             kubenpuctl devices --json > /shared/devices.json
             kubenpuctl plugins --json > /shared/plugins.json
             stop_agent
             kill -TERM $PODS_PID
             cp $AGENT_LOG /shared/agent.log"#
        ),
    );
    let tables =
        Tables::from_json(&results.file("devices.json"), &results.file("plugins.json")).unwrap();
    let counts: Value = serde_json::from_str(&results.file("final.counts.json")).unwrap();
    let metrics = results.file("metrics");
    for (pod, container, _) in CLIENTS {
        let log = results.file(&format!("{container}.log"));
        assert_eq!(
            results.file(&format!("{container}.rc")).trim(),
            "0",
            "{log}"
        );
        assert!(
            log.contains("virgl"),
            "{container} did not render on virgl:\n{log}"
        );
        let record = parse(&results.file(&format!("{container}.trace"))).unwrap();
        let rows = tally(&record, &tables);
        let traced = traced(&rows);
        eprintln!("{kernel} {pod}/{container}: {traced:?}");
        let counted = counted(&counts, results.cgroup_id(container));
        assert_counted_as_traced(&counted, &traced);
        // And named: the pod's series by kind add up to the same calls.
        for kind in ["submit", "alloc", "wait"] {
            let calls: u64 = rows
                .iter()
                .filter(|r| r.counted.as_ref().is_some_and(|(_, k)| k == kind))
                .map(|r| r.calls)
                .sum();
            let prefix = format!(
                "kubenpu_ioctl_total{{pod=\"{pod}\",namespace=\"gfx\",container=\"{container}\","
            );
            let series: u64 = metrics
                .lines()
                .filter(|l| l.starts_with(&prefix) && l.contains(&format!("kind=\"{kind}\"")))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
                .sum();
            assert_eq!(
                series, calls,
                "{kernel} {pod}/{container} {kind}:\n{metrics}"
            );
        }
    }
    // kmscube flipped its 30 frames (DRM_IOCTL_MODE_PAGE_FLIP, which no
    // table counts), and submitted each by EXECBUFFER.
    let cube = tally(&parse(&results.file("cube.trace")).unwrap(), &tables);
    let calls = |nr| {
        cube.iter()
            .filter(|r| r.nr == nr)
            .map(|r| r.calls)
            .sum::<u64>()
    };
    assert_eq!(calls(0xb0), 30, "{cube:?}");
    assert!(calls(0x42) >= 30, "{cube:?}");
    let (_, losses) = results.counts("final");
    assert!(losses.values().all(|&n| n == 0), "{kernel}: {losses:?}");
}

/// What the tables count of a container's traced calls: (calls, failed,
/// busy, timed_out) per (device, nr).
fn traced(rows: &[Row]) -> Counted {
    rows.iter()
        .filter(|r| r.counted.is_some())
        .map(|r| {
            assert_eq!(r.unfinished, 0, "{r:?}");
            let key = (r.device.clone(), u64::from(r.nr));
            (key, [r.calls, r.failed, r.busy, r.timed_out])
        })
        .collect()
}

/// The agent's counters of cgroup `id`.
fn counted(counts: &Value, id: u64) -> Counted {
    counts["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cgroup_id"].as_u64() == Some(id))
        .map(|c| {
            let n = |field: &str| c[field].as_u64().unwrap();
            let key = (c["device"].as_str().unwrap().to_owned(), n("nr"));
            (key, [n("calls"), n("failed"), n("busy"), n("timed_out")])
        })
        .collect()
}

/// The agent counted exactly what strace saw that the tables count.
fn assert_counted_as_traced(counted: &Counted, traced: &Counted) {
    assert!(!traced.is_empty(), "strace saw no counted call");
    assert_eq!(
        counted, traced,
        "counted (left) against traced (right): (device, nr) -> [calls, failed, busy, timed out]"
    );
}

/// The comparison fails when one number is off by one.
#[test]
#[should_panic(expected = "counted (left) against traced (right)")]
fn a_count_off_by_one_fails() {
    let traced: Counted = [(("226:0".to_owned(), 0x42), [31, 0, 0, 0])].into();
    let counted: Counted = [(("226:0".to_owned(), 0x42), [30, 0, 0, 0])].into();
    assert_counted_as_traced(&counted, &traced);
}
