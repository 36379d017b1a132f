//! Allocation against use, in the VM on the newest kernel, against a real
//! containerd and real DRM devices: which devices kubelet gave each
//! container, which holders are idle, which calls went to a device
//! nobody gave the caller, exactly, and where each holder's CPUs are
//! against the device's NUMA node.
//!
//! kubelet cannot be installed here, so `kubenpu-pods podresources`
//! stands in for its PodResources server: the real protocol, from the
//! agent's vendored `api.proto`, on kubelet's socket path, answering from
//! a state file this test rewrites. Everything else is real: the pods run
//! on containerd through CRI, and their calls go to the VM's bochs
//! display, which the `bochs-alloc` test plugin claims and gives made-up
//! allocators (no real device plugin hands out bochs displays).

#[macro_use]
mod support;

use std::{collections::BTreeMap, path::Path, time::Duration};

use kubenpu_prometheus::check_metrics;
use kubenpu_vm::Kernel;
use serde_json::{Value, json};
use support::{
    exposition::{counter, ioctls, label, per_pod, value},
    steps::{Host, wait_until},
};

/// The pods that run, by name, with the calls their one container makes
/// (dumb buffer creations on the bochs display; 0 for none). `done`
/// finishes after the first checks: its sandbox is stopped, and kubelet
/// still lists it, as older kubelets list terminal pods.
const PODS: [(&str, u64); 9] = [
    ("idle", 0),
    ("share-a", 300),
    ("share-b", 200),
    ("debug", 500),
    ("monitor", 100),
    ("dra", 70),
    ("dra-named", 30),
    ("unknown", 40),
    ("done", 20),
];

/// The vCPU a pod's workload is pinned to: `share-a` to node 0's, away
/// from the display on node 1, so every call of it is remote; `share-b`
/// to node 1's, so none is.
fn pinned_cpu(pod: &str) -> Option<u32> {
    match pod {
        "share-a" => Some(0),
        "share-b" => Some(1),
        _ => None,
    }
}

/// The guest script; `step NAME` waits for the test's checks.
fn script() -> String {
    let mut pods = String::new();
    for (i, (name, calls)) in PODS.iter().enumerate() {
        let pin =
            pinned_cpu(name).map_or(String::new(), |cpu| format!("busybox taskset -c {cpu} "));
        let work = if *calls == 0 {
            "exec sleep 1000000".to_owned()
        } else {
            format!(
                "{pin}kubenpu-workload $BOCHS:0xb2:{calls} > /out/{name}.json && exec sleep 1000000"
            )
        };
        // The debug pod is privileged: the runtime gives it every device
        // node of the node, the display among them, and kubelet gives it
        // nothing. The others get the display as a device plugin's
        // allocation would pass it.
        let access = if *name == "debug" {
            "--privileged"
        } else {
            "--device $BOCHS"
        };
        pods.push_str(&format!(
            "run_pod {name} 00000000-0000-4000-8000-00000000000{i} \"{work}\" {access}\n"
        ));
    }
    format!(
        r#"
        echo alloc > /proc/sys/kernel/hostname
        BOCHS=$(drm_node bochs-drm card)
        mkdir -p /plugins /etc/cdi
        cp /bochs-alloc.wasm /plugins/
        basename "$BOCHS" > /shared/card
        basename "$(readlink -f /sys/class/drm/$(basename "$BOCHS")/device)" > /shared/address
        # A CDI spec with the display's host path and no numbers: the
        # agent looks the node up.
        echo '{{"cdiVersion":"0.6.0","kind":"kubenpu.test/display","devices":[{{"name":"bochs0","containerEdits":{{"deviceNodes":[{{"path":"/dev/dri/card9","hostPath":"'$BOCHS'"}}]}}}}]}}' > /etc/cdi/display.json
        SOCKET=/var/lib/kubelet/pod-resources/kubelet.sock
        start_kubelet() {{
          kubenpu-pods podresources --socket $SOCKET --state /shared/state.json --calls /shared/calls > /tmp/kubelet.log 2>&1 &
          KUBELET_PID=$!
          tries=0
          until [ -S $SOCKET ]; do
            tries=$((tries + 1))
            [ "$tries" -lt 300 ] || {{ cat /tmp/kubelet.log; fail "the test kubelet did not start"; }}
            sleep 0.1
          done
        }}
        # run_pod NAME UID COMMAND [ACCESS...]: ACCESS defaults to the
        # display as a device node.
        run_pod() {{
          name=$1 uid=$2 command=$3
          shift 3
          [ $# -gt 0 ] || set -- --device "$BOCHS"
          kubenpu-pods pod --dir "$CRI_DIR" --pod ml/$name/$uid --image "$WORKLOAD_IMAGE" \
            --mount /shared:/out --container "main=$command" "$@" > /tmp/$name.sandbox \
            || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod $name"; }}
        }}
        step booted
        start_containerd
        start_kubelet
        AGENT_ARGS="--cri-socket $CRI_SOCKET --plugins-dir /plugins --allocation-interval 1s --rescan-interval 1s"
        start_agent $AGENT_ARGS
        {pods}
        for pod in share-a share-b debug monitor dra dra-named unknown done; do wait_file /shared/$pod.json; done
        step running

        kubenpu-pods stop --dir "$CRI_DIR" "$(cat /tmp/done.sandbox)"
        rm /etc/cdi/display.json
        echo 'kind: [unterminated' > /etc/cdi/broken.yaml
        step cdi-changed

        run_pod late 00000000-0000-4000-8000-000000000010 "sleep 1; kubenpu-workload $BOCHS:0xb2:60 > /out/late.json && exec sleep 1000000"
        wait_file /shared/late.json
        step got

        run_pod later 00000000-0000-4000-8000-000000000011 "sleep 1; kubenpu-workload $BOCHS:0xb2:80 > /out/later.json && exec sleep 1000000"
        wait_file /shared/later.json
        step get-unimplemented

        kill -TERM $KUBELET_PID
        wait $KUBELET_PID || true
        step kubelet-stopped
        kubenpu-pods not-grpc --socket $SOCKET &
        NOT_GRPC_PID=$!
        step not-grpc
        kill -TERM $NOT_GRPC_PID
        wait $NOT_GRPC_PID || true
        start_kubelet
        step kubelet-restarted

        kill -KILL $AGENT_PID
        wait $AGENT_PID || true
        start_agent $AGENT_ARGS
        step agent-restarted

        stop_agent
        kill -TERM $KUBELET_PID $PODS_PID
        cp $AGENT_LOG /shared/agent.log
        "#
    )
}

on_kernels!([sid => Sid]: allocations_join_what_kubelet_gave_with_what_pods_call);

fn allocations_join_what_kubelet_gave_with_what_pods_call(kernel: Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().to_owned();
    // Two NUMA nodes of one vCPU each, the display behind the second's
    // bridge: where each holder's CPUs are against it.
    let vm = support::guest::with_containerd(support::guest::vm(kernel, &shared))
        .numa_nodes(2)
        .on_the_last_node("bochs-display")
        .module("bochs")
        .file(
            "/bochs-alloc.wasm",
            0o644,
            std::fs::read(support::test_plugin("bochs-alloc")).unwrap(),
        );
    let host = Host::boot(vm, shared.clone(), script());

    let display = std::cell::RefCell::new(Display::default());
    host.step("booted", || {
        let read = |name| {
            std::fs::read_to_string(shared.join(name))
                .unwrap()
                .trim()
                .to_owned()
        };
        *display.borrow_mut() = Display {
            card: read("card"),
            address: read("address"),
        };
        write_state(&shared, &state(&display.borrow(), &[], "ok", "ok"));
    });
    let display = display.into_inner();

    // Each pod's calls are counted exactly, with or without the join; the
    // join says who holds what, who is idle, and who calls a device that
    // is not theirs.
    host.step("running", || {
        let settled = wait_until(Duration::from_secs(60), || {
            let m = host.metrics();
            holders(&m).len() == 7 && unallocated(&m).len() == 1
        });
        let m = host.metrics();
        assert!(settled, "{m}");
        check_metrics(&m).unwrap();
        assert_counted(&m, &[]);
        // The pinned workloads: every call of share-a's from the other
        // node, none of share-b's.
        let remote = per_pod(&m, "kubenpu_remote_numa_ioctl_total{");
        assert_eq!(remote.get("share-a"), Some(&300), "{m}");
        assert_eq!(remote.get("share-b").copied().unwrap_or(0), 0, "{m}");
        let rows: Vec<(String, String, String, String)> = holders(&m)
            .into_iter()
            .map(|((pod, device, resource, source), idle)| {
                assert_eq!(device, display.address);
                (pod, resource, source, idle)
            })
            .collect();
        assert_eq!(
            rows,
            [
                row("done", "kubenpu.test/display", "device_plugin", "0"),
                row("dra", "display.kubenpu.test", "dra", "0"),
                row("dra-named", "display.kubenpu.test", "dra", "0"),
                row("idle", "kubenpu.test/display", "device_plugin", "1"),
                row("monitor", "kubenpu.test/monitoring", "device_plugin", "0"),
                row("share-a", "kubenpu.test/display", "device_plugin", "0"),
                row("share-b", "kubenpu.test/display", "device_plugin", "0"),
            ],
            "the finished pod kubelet still lists has no row:\n{m}"
        );
        // The debug pod is privileged and was given nothing: every call
        // counted as unallocated. The pod with an ID no rule resolves is not
        // classified at all.
        assert_eq!(
            unallocated(&m),
            BTreeMap::from([("debug".into(), 500)]),
            "{m}"
        );
        assert!(
            m.contains(r#"kubenpu_allocation_unmapped_ids{resource="squat.ai/display"} 1"#),
            "{m}"
        );
        assert!(m.contains("kubenpu_allocation_up 1"), "{m}");
        assert!(m.contains("kubenpu_allocation_fresh 1"), "{m}");
        assert!(m.contains("kubenpu_allocation_invalid_cdi_specs 0"), "{m}");
        // Placement: share-a's one exclusive CPU is on the other node; the
        // other callers may run on both vCPUs (their cgroups' cpusets),
        // one of them local; the idle holder has neither exclusive CPUs
        // nor a cgroup the agent knows, so no series.
        let cpuset = ("cpuset".to_owned(), 0.5);
        assert_eq!(
            numa_fits(&m),
            BTreeMap::from([
                ("done".to_owned(), cpuset.clone()),
                ("dra".to_owned(), cpuset.clone()),
                ("dra-named".to_owned(), cpuset.clone()),
                ("monitor".to_owned(), cpuset.clone()),
                ("share-a".to_owned(), ("cpu_ids".to_owned(), 0.0)),
                ("share-b".to_owned(), cpuset),
            ]),
            "{m}"
        );

        // kubenpuctl shows the same join, from the agent's API.
        let table = host.kubenpuctl(&["allocations"]);
        let idle: Vec<&str> = table
            .lines()
            .filter(|l| l.split_whitespace().nth(6) == Some("idle"))
            .collect();
        assert_eq!(idle.len(), 1, "{table}");
        assert!(
            idle[0].split_whitespace().eq([
                "ml",
                "idle",
                "main",
                display.address.as_str(),
                "kubenpu.test/display",
                "device_plugin",
                "idle",
                "0",
                "0",
                "-"
            ]),
            "{table}"
        );
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some("share-a")
                    && l.ends_with("0/1 cpu_ids")),
            "{table}"
        );
        assert!(
            table.lines().any(|l| l.split_whitespace().eq([
                "ml",
                "debug",
                "main",
                display.address.as_str(),
                "alloc",
                "500"
            ])),
            "{table}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&host.kubenpuctl(&["allocations", "--json"])).unwrap();
        let allocated = json["allocated"].as_array().unwrap();
        assert_eq!(allocated.len(), 7, "{json}");
        // Each row carries the container's calls on the device.
        for row in allocated {
            let pod = row["pod"].as_str().unwrap();
            let calls = PODS
                .iter()
                .find(|(name, _)| *name == pod)
                .map_or(0, |(_, calls)| *calls);
            assert_eq!(row["calls"], calls, "{pod}: {json}");
        }
        assert_eq!(json["fresh"], true, "{json}");
    });

    // The claim's transient spec is removed while its container runs: it
    // keeps its device. A malformed spec is reported, once.
    host.step("cdi-changed", || {
        assert!(
            wait_until(Duration::from_secs(20), || host
                .metrics()
                .contains("kubenpu_allocation_invalid_cdi_specs 1")),
            "{}",
            host.metrics()
        );
        // The finished pod kubelet still lists has no row once its
        // sandbox stopped; its calls stay counted.
        assert!(
            wait_until(Duration::from_secs(20), || !holders(&host.metrics())
                .keys()
                .any(|k| k.0 == "done")),
            "{}",
            host.metrics()
        );
        let m = host.metrics();
        assert!(holders(&m).keys().any(|k| k.0 == "dra"), "{m}");
        assert_eq!(holders(&m).len(), 6, "{m}");
        assert_eq!(
            unallocated(&m),
            BTreeMap::from([("debug".into(), 500)]),
            "{m}"
        );
        assert_counted(&m, &[]);
        // kubelet rate-limits List from now on; a new pod is asked for with Get.
        write_state(
            &shared,
            &state(&display, &["late"], "resource_exhausted", "ok"),
        );
    });

    // Only Get answers: the new pod is classified from it.
    host.step("got", || {
        let classified = wait_until(Duration::from_secs(20), || {
            unallocated(&host.metrics()).get("late") == Some(&60)
        });
        let m = host.metrics();
        assert!(classified, "{m}");
        assert_counted(&m, &[("late", 60)]);
        assert!(
            calls(&shared).contains(&"Get ml/late ok".to_owned()),
            "{:?}",
            calls(&shared)
        );
        assert!(
            counter(
                &m,
                r#"kubenpu_allocation_errors_total{reason="rate_limited"}"#
            ) >= 1,
            "{m}"
        );
        assert!(
            wait_until(Duration::from_secs(10), || host
                .metrics()
                .contains("kubenpu_allocation_fresh 0")),
            "List has failed for more than three intervals"
        );
        // Get is not implemented now: the agent falls back to List.
        write_state(
            &shared,
            &state(
                &display,
                &["late", "later"],
                "resource_exhausted",
                "unimplemented",
            ),
        );
    });
    host.step("get-unimplemented", || {
        assert!(
            wait_until(Duration::from_secs(20), || calls(&shared)
                .contains(&"Get ml/later unimplemented".to_owned())),
            "{:?}",
            calls(&shared)
        );
        assert_eq!(unallocated(&host.metrics()).get("later"), None);
        write_state(
            &shared,
            &state(&display, &["late", "later"], "ok", "unimplemented"),
        );
        let classified = wait_until(Duration::from_secs(20), || {
            unallocated(&host.metrics()).get("later") == Some(&80)
        });
        let m = host.metrics();
        assert!(classified, "{m}");
        assert_counted(&m, &[("late", 60), ("later", 80)]);
        assert_eq!(
            counter(
                &m,
                r#"kubenpu_allocation_errors_total{reason="unimplemented"}"#
            ),
            1,
            "{m}"
        );
        assert!(m.contains("kubenpu_allocation_fresh 1"), "{m}");
        let gets = calls(&shared)
            .iter()
            .filter(|c| c.starts_with("Get"))
            .count();
        assert_eq!(gets, 2, "Get is not asked again once unimplemented");
    });

    // kubelet restarts: its socket goes and comes back. Meanwhile the rows
    // are withheld; the counts, and the calls already classified, stay.
    let expected = BTreeMap::from([
        ("debug".to_owned(), 500),
        ("late".to_owned(), 60),
        ("later".to_owned(), 80),
    ]);
    host.step("kubelet-stopped", || {
        let stale = wait_until(Duration::from_secs(20), || {
            let m = host.metrics();
            m.contains("kubenpu_allocation_fresh 0") && holders(&m).is_empty()
        });
        let m = host.metrics();
        assert!(stale, "{m}");
        assert!(m.contains("kubenpu_allocation_up 0"), "{m}");
        assert!(
            counter(&m, r#"kubenpu_allocation_errors_total{reason="absent"}"#) >= 1,
            "{m}"
        );
        assert_eq!(unallocated(&m), expected, "{m}");
        assert_counted(&m, &[("late", 60), ("later", 80)]);
    });
    // Something that is not kubelet answers on its socket: counted as
    // unavailable, logged once, and everything else goes on.
    host.step("not-grpc", || {
        let failing = wait_until(Duration::from_secs(20), || {
            counter(
                &host.metrics(),
                r#"kubenpu_allocation_errors_total{reason="unavailable"}"#,
            ) >= 1
        });
        let m = host.metrics();
        assert!(failing, "{m}");
        assert!(m.contains("kubenpu_allocation_up 0"), "{m}");
        assert!(holders(&m).is_empty(), "{m}");
        assert_eq!(unallocated(&m), expected, "{m}");
        assert_counted(&m, &[("late", 60), ("later", 80)]);
    });
    host.step("kubelet-restarted", || {
        let back = wait_until(Duration::from_secs(20), || {
            holders(&host.metrics()).len() == 6
        });
        let m = host.metrics();
        assert!(back, "{m}");
        assert!(m.contains("kubenpu_allocation_up 1"), "{m}");
        assert_eq!(unallocated(&m), expected, "{m}");
        assert_counted(&m, &[("late", 60), ("later", 80)]);
    });

    // A restarted agent classifies the running containers again, from the
    // counts the kernel kept. The claim whose CDI spec went before it
    // started, and whose device name follows no naming it knows, is
    // unmapped now: not guessed.
    host.step("agent-restarted", || {
        let back = wait_until(Duration::from_secs(30), || {
            unallocated(&host.metrics()) == expected
        });
        let m = host.metrics();
        assert!(back, "{m}");
        let pods: Vec<String> = holders(&m).into_keys().map(|k| k.0).collect();
        assert_eq!(
            pods,
            ["dra-named", "idle", "monitor", "share-a", "share-b"],
            "{m}"
        );
        assert!(
            m.contains(r#"kubenpu_allocation_unmapped_ids{resource="display.kubenpu.test"} 1"#),
            "{m}"
        );
        assert_counted(&m, &[("late", 60), ("later", 80)]);
    });

    host.finish();
    let log = std::fs::read_to_string(shared.join("agent.log")).unwrap();
    let broken: Vec<&str> = log.lines().filter(|l| l.contains("broken.yaml")).collect();
    assert_eq!(broken.len(), 2, "once per agent:\n{log}");
    assert!(broken.iter().all(|l| l.contains("left out")), "{log}");
    // An ID no rule resolves is one line per resource and agent; the
    // claim unmapped since its spec went, one for the second agent.
    let unmapped = |resource: &str| {
        log.lines()
            .filter(|l| l.contains(&format!("of {resource} match no vendor's rule")))
            .count()
    };
    assert_eq!(unmapped("squat.ai/display"), 2, "{log}");
    assert_eq!(unmapped("display.kubenpu.test"), 1, "{log}");
    // One line for the socket that is not gRPC, however often it failed.
    let not_grpc: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("did not answer"))
        .collect();
    assert_eq!(not_grpc.len(), 1, "{not_grpc:#?}");
    assert!(!log.contains("panicked"), "{log}");
}

/// The bochs display as the guest found it.
#[derive(Default)]
struct Display {
    /// Its card node's name, `cardN`.
    card: String,
    /// Its PCI address.
    address: String,
}

/// kubelet's answers: every running pod but those not yet created (`late`
/// and `later` join when listed in `new`), a finished pod it still lists,
/// and how List and Get answer.
fn state(display: &Display, new: &[&str], list: &str, get: &str) -> Value {
    let card = &display.card;
    // The DRA driver's naming: the PCI address with dashes, then more.
    let dashed = format!("{}-bochs", display.address.replace([':', '.'], "-"));
    let container = |devices: Value, claims: Value| json!([{"name": "main", "devices": devices, "claims": claims}]);
    let plugin = |id: String| json!([{"resource": "kubenpu.test/display", "ids": [id]}]);
    // Exclusive CPU 0, on the node without the display.
    let pinned = json!([{"name": "main", "devices": plugin(format!("{card}-0")), "cpu_ids": [0]}]);
    let mut pods = vec![
        ("idle", container(plugin(format!("{card}-0")), json!([]))),
        ("share-a", pinned),
        ("share-b", container(plugin(format!("{card}-1")), json!([]))),
        ("debug", container(json!([]), json!([]))),
        (
            "monitor",
            container(
                json!([{"resource": "kubenpu.test/monitoring", "ids": ["all"]}]),
                json!([]),
            ),
        ),
        (
            "dra",
            container(
                json!([]),
                json!([{"namespace": "ml", "name": "display", "devices": [
                    {"driver": "display.kubenpu.test", "pool": "alloc", "device": "bochs0", "cdi": ["kubenpu.test/display=bochs0"]}
                ]}]),
            ),
        ),
        (
            "dra-named",
            container(
                json!([]),
                json!([{"namespace": "ml", "name": "named", "devices": [
                    {"driver": "display.kubenpu.test", "pool": "alloc", "device": dashed}
                ]}]),
            ),
        ),
        (
            "unknown",
            container(
                json!([{"resource": "squat.ai/display", "ids": ["4f1c9e0b"]}]),
                json!([]),
            ),
        ),
        (
            "finished",
            container(plugin(format!("{card}-0")), json!([])),
        ),
        ("done", container(plugin(format!("{card}-1")), json!([]))),
    ];
    for name in new {
        pods.push((name, container(json!([]), json!([]))));
    }
    let pods: Vec<Value> = pods
        .into_iter()
        .map(
            |(name, containers)| json!({"namespace": "ml", "name": name, "containers": containers}),
        )
        .collect();
    json!({"pods": pods, "list": list, "get": get})
}

/// Replaces the state file at once, as the test kubelet reads it per call.
fn write_state(shared: &Path, state: &Value) {
    let next = shared.join("state.json.next");
    std::fs::write(&next, state.to_string()).unwrap();
    std::fs::rename(next, shared.join("state.json")).unwrap();
}

/// The test kubelet's calls so far.
fn calls(shared: &Path) -> Vec<String> {
    std::fs::read_to_string(shared.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn row(pod: &str, resource: &str, source: &str, idle: &str) -> (String, String, String, String) {
    (pod.into(), resource.into(), source.into(), idle.into())
}

/// (pod, device, resource, source) -> idle, from `kubenpu_allocation_idle`
/// rows that have their `kubenpu_allocation_info` row.
fn holders(exposition: &str) -> BTreeMap<(String, String, String, String), String> {
    let info: Vec<(String, String, String, String)> = exposition
        .lines()
        .filter(|l| l.starts_with("kubenpu_allocation_info{"))
        .map(|l| {
            (
                label(l, "pod"),
                label(l, "device"),
                label(l, "resource"),
                label(l, "source"),
            )
        })
        .collect();
    exposition
        .lines()
        .filter(|l| l.starts_with("kubenpu_allocation_idle{"))
        .map(|l| {
            let key = info
                .iter()
                .find(|i| i.0 == label(l, "pod") && i.2 == label(l, "resource"))
                .unwrap_or_else(|| panic!("no info row for {l}"))
                .clone();
            (key, value(l))
        })
        .collect()
}

/// Unallocated calls per pod of namespace ml.
/// pod -> (cpus, share of its CPUs on the display's node), from
/// `kubenpu_allocation_numa_local_cpus_ratio`.
fn numa_fits(exposition: &str) -> BTreeMap<String, (String, f64)> {
    exposition
        .lines()
        .filter(|l| l.starts_with("kubenpu_allocation_numa_local_cpus_ratio{"))
        .map(|l| {
            let share = value(l).parse().unwrap();
            (label(l, "pod"), (label(l, "cpus"), share))
        })
        .collect()
}

fn unallocated(exposition: &str) -> BTreeMap<String, u64> {
    per_pod(exposition, "kubenpu_unallocated_ioctl_total{")
}

/// Every running pod's calls, and `more`, are counted exactly in
/// `kubenpu_ioctl_total`, whatever the join says; `done`'s too while its
/// series lasts (it goes a grace period after its sandbox stopped).
fn assert_counted(exposition: &str, more: &[(&str, u64)]) {
    let counted = ioctls(exposition);
    for (pod, calls) in PODS.iter().chain(more) {
        if *pod == "done" && !counted.contains_key("done") {
            continue;
        }
        assert_eq!(
            counted.get(*pod).copied().unwrap_or(0),
            *calls,
            "{pod}: {exposition}"
        );
    }
}
