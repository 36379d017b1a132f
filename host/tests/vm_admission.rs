//! Refused from the first call, in the VM on the newest kernel and on
//! 6.1, against a real containerd whose every container runs
//! `kubenpu-oci-hook` as its `createRuntime` hook (given in the node's
//! base runtime spec), with containers created and then started at once,
//! as kubelet starts them.
//!
//! Each of these is refused with EPERM at its very first call, the first
//! thing its process does, and counted under its own labels: a container
//! given nothing in a pod given nothing (an open); a sidecar given nothing
//! beside a container given the device (an open); a container whose first
//! call is an ioctl on a file another container passed it; the same from
//! a 32-bit caller (`file_ioctl_compat`). No refusal on a guess: the
//! container given the device, and a container of a pod kubelet does not
//! list, make every call. Then a crowd of containers, each refused at its
//! first call: how many first calls passed (`KUBENPU_ADMISSION_CROWD`
//! containers, 8 by default; the README's figure is from 200). On the
//! newest kernel, then, more refused containers come and go than the
//! kernel's verdicts map holds, and none of their verdicts is lost.
//!
//! kubelet cannot be installed here: `kubenpu-pods podresources` stands
//! in for its PodResources server (the real protocol), listing every pod
//! but `stranger` before its containers are created, as kubelet admits a
//! pod before it creates its containers.

#[macro_use]
mod support;

use std::time::Duration;

use kubenpu_prometheus::check_metrics;
use kubenpu_vm::Kernel;
use serde_json::{Value, json};
use support::exposition::{counter, ioctls, label};

/// Calls the container given vgem makes, and the stranger's.
const GIVEN_CALLS: u64 = 7;
const STRANGER_CALLS: u64 = 3;
/// Calls each receiver of a passed file makes on it.
const PASSED_CALLS: u64 = 4;

/// Containers per pod of the crowd: each pod is removed once its
/// containers ran, since every container holds a copy of the image and
/// the guest's memory holds about 40.
const BATCH: usize = 10;

/// The verdicts map's size in the churn (`--max-counters`), its pods,
/// and the refused containers of each: more than the map holds, in all.
const CHURN_ROOM: usize = 4;
const CHURN_PODS: usize = 3;
const CHURN_BATCH: usize = 2;
const _: () = assert!(CHURN_PODS * CHURN_BATCH > CHURN_ROOM);

/// The crowd's pod of container `i` (from 1).
fn crowd_pod(i: usize) -> String {
    format!("crowd-{}", (i - 1) / BATCH + 1)
}

/// The crowd's size: `KUBENPU_ADMISSION_CROWD`, else 8.
fn crowd() -> usize {
    std::env::var("KUBENPU_ADMISSION_CROWD")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(8)
}

/// kubelet's answers: `sidecar`'s `main` and `passing`'s `owner` hold vgem
/// through a DRA claim; every other container of a listed pod holds
/// nothing. `stranger` is not listed; the crowd's pods are.
fn state(crowd: usize) -> String {
    let vgem = json!([{"namespace": "ml", "name": "vgem", "devices": [
        {"driver": "gpu.kubenpu.test", "pool": "node", "device": "vgem0", "cdi": ["kubenpu.test/gpu=vgem0"]}
    ]}]);
    let nothing = |name: &str| json!({"name": name, "devices": []});
    let pod_in = |namespace: &str, name: &str, containers: Vec<Value>| json!({"namespace": namespace, "name": name, "containers": containers});
    let pod = |name: &str, containers: Vec<Value>| pod_in("ml", name, containers);
    let given = |name: &str| json!({"name": name, "devices": [], "claims": vgem});
    let mut pods = vec![
        pod("empty", vec![nothing("main")]),
        pod("sidecar", vec![given("main"), nothing("side")]),
        pod(
            "passing",
            vec![nothing("recv"), nothing("recv32"), given("owner")],
        ),
        pod("late", vec![nothing("main")]),
        pod_in("dev", "devpod", vec![nothing("main")]),
        pod("after", vec![nothing("main")]),
    ];
    for first in (1..=crowd).step_by(BATCH) {
        let last = (first + BATCH - 1).min(crowd);
        let containers = (first..=last).map(|i| nothing(&format!("c{i}"))).collect();
        pods.push(pod(&crowd_pod(first), containers));
    }
    for n in 1..=CHURN_PODS {
        let containers = (1..=CHURN_BATCH)
            .map(|i| nothing(&format!("c{i}")))
            .collect();
        pods.push(pod(&format!("churn-{n}"), containers));
    }
    json!({"pods": pods, "list": "ok", "get": "ok"}).to_string()
}

/// The churn (`churn` true): an agent whose verdicts map holds
/// [`CHURN_ROOM`] keys, and pods of refused containers each removed once
/// its refusals are shown, then gone from /metrics once swept (no grace),
/// before the next comes.
fn churn_script(churn: bool) -> String {
    if !churn {
        return String::new();
    }
    let refused = (1..=CHURN_BATCH)
        .map(|i| format!("--container \"c{i}=kubenpu-workload $VGEM_RENDER:0x41:1 2> /out/c{i}.err; echo \\$? > /out/c{i}.rc; exec sleep 1000000\""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut text = format!(
        "start_agent --cri-socket $CRI_SOCKET --allocation-interval 1s --policy enforce --admission-wait 30s --max-counters {CHURN_ROOM} --series-grace 0s\n"
    );
    for n in 1..=CHURN_PODS {
        text += &format!(
            r#"
            pod churn-{n} 00000000-0000-4000-8000-2{n:011} '{refused}'
            wait_metrics "churn-{n}'s refusals are not shown" 'kubenpu_policy_refusals_total{{pod="churn-{n}",namespace="ml",container="c{CHURN_BATCH}"'
            cp /shared/metrics /shared/metrics-churn-{n}
            kubenpu-pods remove --dir "$CRI_DIR" $(cat /tmp/churn-{n}.sandbox)
            swept churn-{n}
            "#
        );
    }
    text + "busybox wget -q -O /shared/metrics-churn http://127.0.0.1:8080/metrics\nstop_agent\n"
}

fn script(crowd: usize, churn: bool) -> String {
    // Each container's first accelerator call is the workload's first.
    let run = |name: &str, command: &str| {
        format!(
            "--container \"{name}={command} > /out/{name}.json 2> /out/{name}.err; echo \\$? > /out/{name}.rc; exec sleep 1000000\""
        )
    };
    let open =
        |name: &str, calls: u64| run(name, &format!("kubenpu-workload $VGEM_RENDER:0x41:{calls}"));
    // The crowd, a pod at a time: started, its first calls made, removed.
    let mut crowd_pods = String::new();
    for first in (1..=crowd).step_by(BATCH) {
        let last = (first + BATCH - 1).min(crowd);
        let containers: Vec<String> = (first..=last)
            .map(|i| format!("--container \"c{i}=kubenpu-workload $VGEM_RENDER:0x41:1 2> /out/crowd-c{i}.err; echo \\$? > /out/crowd-c{i}.rc; exec sleep 1000000\""))
            .collect();
        let name = crowd_pod(first);
        crowd_pods += &format!(
            "pod {name} 00000000-0000-4000-8000-1{first:011} '{}'\n",
            containers.join(" ")
        );
        crowd_pods += &format!(
            "for i in $(seq {first} {last}); do wait_file /shared/{name}/crowd-c$i.rc 120; done\n"
        );
        crowd_pods +=
            &format!("kubenpu-pods remove --dir \"$CRI_DIR\" $(cat /tmp/{name}.sandbox)\n");
    }
    let state = state(crowd);
    let sidecar = [open("main", GIVEN_CALLS), open("side", 5)].join(" ");
    let passing = [
        run(
            "recv",
            &format!("kubenpu-workload recv-fd:/sock/a:0x41:{PASSED_CALLS}"),
        ),
        run(
            "recv32",
            &format!("kubenpu-workload32 recv-fd:/sock/b:0x41:{PASSED_CALLS}"),
        ),
        run(
            "owner",
            "kubenpu-workload send-fd:/sock/a:$VGEM_RENDER send-fd:/sock/b:$VGEM_RENDER",
        ),
    ]
    .join(" ");
    let stranger = open("main", STRANGER_CALLS);
    format!(
        r#"
        . /pods.sh
        AGENT_LOG=/shared/agent.log
        : > $AGENT_LOG
        echo admission > /proc/sys/kernel/hostname
        mkdir -p /etc/cdi /tmp/sock
        echo '{{"cdiVersion":"0.6.0","kind":"kubenpu.test/gpu","devices":[{{"name":"vgem0","containerEdits":{{"deviceNodes":[{{"path":"/dev/dri/renderD129","hostPath":"'$VGEM_RENDER'"}}]}}}}]}}' > /etc/cdi/gpu.json
        echo '{state}' > /shared/state.json
        SOCKET=/var/lib/kubelet/pod-resources/kubelet.sock
        kubenpu-pods podresources --socket $SOCKET --state /shared/state.json --calls /shared/calls > /tmp/kubelet.log 2>&1 &
        OCI_HOOK="/usr/local/bin/kubenpu-oci-hook --timeout 60s"
        start_containerd
        # A long grace: a large crowd's first pods are gone for longer
        # than the default 5 minutes by the end, and their series with them.
        start_agent --cri-socket $CRI_SOCKET --allocation-interval 1s --policy enforce --admission-wait 30s --series-grace 60m
        pod() {{
          name=$1 uid=$2
          shift 2
          mkdir -p /shared/$name
          eval kubenpu-pods pod --dir "$CRI_DIR" --pod ${{NS:-ml}}/$name/$uid --image "$WORKLOAD_IMAGE" \
            --mount /shared/$name:/out --mount /tmp/sock:/sock --device "$VGEM_RENDER" "$@" \
            > /tmp/$name.sandbox || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod $name"; }}
        }}
        pod empty 00000000-0000-4000-8000-000000000001 '{empty}'
        pod sidecar 00000000-0000-4000-8000-000000000002 '{sidecar}'
        pod passing 00000000-0000-4000-8000-000000000003 '{passing}'
        pod stranger 00000000-0000-4000-8000-000000000004 '{stranger}'
        start=$(date +%s)
        {crowd_pods}
        echo $(($(date +%s) - start)) > /shared/crowd-seconds
        for rc in empty/main sidecar/main sidecar/side passing/recv passing/recv32 passing/owner stranger/main; do
          wait_file /shared/$rc.rc 120
        done
        wait_metrics "the crowd's refusals are not all shown" 'kubenpu_policy_refusals_total{{pod="{last_pod}",namespace="ml",container="c{crowd}"'
        sleep 1
        busybox wget -q -O /shared/metrics-node http://127.0.0.1:8080/metrics
        stop_agent

        # The node's policy off, and a policy file that enforces in ml
        # alone: the checks are attached for it.
        POLICY=/etc/kubenpu/policy.yaml
        mkdir -p /etc/kubenpu
        echo 'namespaces: {{ml: enforce}}' > $POLICY
        start_agent --cri-socket $CRI_SOCKET --allocation-interval 1s --policy off --policy-file $POLICY --admission-wait 30s
        pod late 00000000-0000-4000-8000-000000000006 '{late}'
        NS=dev pod devpod 00000000-0000-4000-8000-000000000007 '{late}'
        wait_file /shared/late/main.rc 120
        wait_file /shared/devpod/main.rc 120
        # No namespace asks any more: the checks go.
        echo 'namespaces: {{}}' > $POLICY.next
        mv $POLICY.next $POLICY
        wait_log "the checks are detached"
        pod after 00000000-0000-4000-8000-000000000008 '{late}'
        wait_file /shared/after/main.rc 120
        busybox wget -q -O /shared/metrics-file http://127.0.0.1:8080/metrics
        stop_agent

        # swept POD: until POD's refusals are gone from /metrics.
        swept() {{
          tries=0
          while busybox wget -q -O - http://127.0.0.1:8080/metrics | grep -q "kubenpu_policy_refusals_total{{pod=\"$1\""; do
            tries=$((tries + 1))
            [ "$tries" -lt 300 ] || fail "$1's series outlived its grace"
            sleep 0.1
          done
        }}
        {churn}
        kill -TERM $PODS_PID
        "#,
        empty = open("main", 5),
        last_pod = crowd_pod(crowd),
        late = open("main", STRANGER_CALLS),
        churn = churn_script(churn),
    )
}

on_kernels!([
    sid => Sid,
    bookworm => Bookworm
]: each_container_is_refused_from_its_first_call);

fn each_container_is_refused_from_its_first_call(kernel: Kernel) {
    let crowd = crowd();
    let results = support::guest::run_with(
        kernel,
        |vm| {
            let workload32 = std::fs::read(support::guest::workload32()).unwrap();
            // Under TCG a container starts in about 3 s alone, and in
            // several times that beside other guests.
            let timeout = Duration::from_secs(600 + 12 * crowd as u64);
            support::guest::with_containerd(vm)
                .timeout(timeout)
                .binary(env!("CARGO_BIN_EXE_kubenpu-oci-hook"))
                .file("/usr/local/bin/kubenpu-workload32", 0o755, workload32)
        },
        &script(crowd, kernel == Kernel::Sid),
    );
    let m = results.file("metrics-node");
    check_metrics(&m).unwrap();
    let log = results.file("agent.log");
    let refused_open = |name: &str| {
        let (rc, err) = (
            results.file(&format!("{name}.rc")),
            results.file(&format!("{name}.err")),
        );
        assert_eq!(rc.trim(), "1", "{name}: {err}\n{log}");
        assert!(err.contains("Operation not permitted"), "{name}: {err}");
    };
    let ran = |name: &str, calls: u64, refused: u64| {
        let text = results.file(&format!("{name}.json"));
        let run: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
        assert_eq!(
            (run["calls"].as_u64(), run["refused"].as_u64()),
            (Some(calls), Some(refused)),
            "{name}: {run}\n{log}"
        );
    };
    let vgem = m
        .lines()
        .find(|l| l.starts_with("kubenpu_device_info{") && l.contains(r#"vendor="vgem""#))
        .map(|l| label(l, "device"))
        .unwrap_or_else(|| panic!("no vgem device: {m}"));
    let refusals = |pod: &str, container: &str, kind: &str, hook: &str| {
        counter(
            &m,
            &format!(
                r#"kubenpu_policy_refusals_total{{pod="{pod}",namespace="ml",container="{container}",device="{vgem}",vendor="vgem",kind="{kind}",hook="{hook}",rule="allocated-only",action="refused"}}"#
            ),
        )
    };

    // Refused at the open, their first call, under their own labels.
    refused_open("empty/main");
    refused_open("sidecar/side");
    assert_eq!(refusals("empty", "main", "other", "open"), 1, "{m}");
    assert_eq!(refusals("sidecar", "side", "other", "open"), 1, "{m}");
    // Refused at each ioctl on a passed file, the first included, from a
    // 64-bit and a 32-bit caller.
    ran("passing/recv", PASSED_CALLS, PASSED_CALLS);
    ran("passing/recv32", PASSED_CALLS, PASSED_CALLS);
    assert_eq!(
        refusals("passing", "recv", "submit", "ioctl"),
        PASSED_CALLS,
        "{m}"
    );
    assert_eq!(
        refusals("passing", "recv32", "submit", "ioctl_compat"),
        PASSED_CALLS,
        "{m}"
    );
    // No refusal on a guess: the holder of vgem, and the sender of its
    // file, from their first call; a pod kubelet does not list, at all.
    ran("sidecar/main", GIVEN_CALLS, 0);
    ran("stranger/main", STRANGER_CALLS, 0);
    let sent = results.file("passing/owner.rc");
    assert_eq!(sent.trim(), "0", "{}", results.file("passing/owner.err"));
    let counted = ioctls(&m);
    assert_eq!(counted.get("sidecar"), Some(&GIVEN_CALLS), "{m}");
    assert_eq!(counted.get("stranger"), Some(&STRANGER_CALLS), "{m}");
    assert_eq!(counted.get("empty"), None, "{m}");
    assert_eq!(counted.get("passing"), None, "{m}");

    // The crowd: every first call refused, none passed.
    let passed: Vec<usize> = (1..=crowd)
        .filter(|&i| {
            let rc = results.file(&format!("{}/crowd-c{i}.rc", crowd_pod(i)));
            rc.trim() != "1"
        })
        .collect();
    let seconds = results.file("crowd-seconds");
    eprintln!(
        "admission on {kernel}: {} of {crowd} first calls passed; the crowd started in {} s",
        passed.len(),
        seconds.trim()
    );
    assert_eq!(
        passed,
        Vec::<usize>::new(),
        "first calls that passed:\n{log}"
    );
    for i in 1..=crowd {
        assert_eq!(
            refusals(&crowd_pod(i), &format!("c{i}"), "other", "open"),
            1,
            "{m}"
        );
    }

    // Each container of a listed pod was ruled before it started; the
    // stranger's was answered without a wait; sandboxes are not asked.
    let outcome = |o: &str| {
        counter(
            &m,
            &format!(r#"kubenpu_policy_admissions_total{{outcome="{o}"}}"#),
        )
    };
    assert_eq!(outcome("ruled"), 6 + crowd as u64, "{m}\n{log}");
    assert_eq!(outcome("unruled"), 1, "{m}");
    assert_eq!(outcome("expired"), 0, "{m}");
    assert_eq!(counter(&m, "kubenpu_policy_verdicts_lost_total"), 0, "{m}");
    assert!(
        log.contains("admission: containers kubenpu-oci-hook holds are ruled before they start"),
        "{log}"
    );

    // A namespace the policy file enforces, with the node's policy off:
    // its container is refused from its first call; another namespace's
    // is not; once the file asks for nothing, the checks go.
    let m = results.file("metrics-file");
    refused_open("late/main");
    ran("devpod/main", STRANGER_CALLS, 0);
    ran("after/main", STRANGER_CALLS, 0);
    assert!(
        m.contains(r#"kubenpu_policy_mode{mode="off",asked="off"} 1"#),
        "{m}"
    );
    let late = format!(
        r#"kubenpu_policy_refusals_total{{pod="late",namespace="ml",container="main",device="{vgem}",vendor="vgem",kind="other",hook="open",rule="allocated-only",action="refused"}}"#
    );
    assert_eq!(counter(&m, &late), 1, "{m}");
    assert!(
        !m.contains(r#"kubenpu_policy_refusals_total{pod="devpod""#),
        "{m}"
    );
    assert!(
        !m.contains(r#"kubenpu_policy_refusals_total{pod="after""#),
        "{m}"
    );
    assert_eq!(counter(&m, "kubenpu_policy_ruled_cgroups"), 0, "{m}");
    let attached = "policy off but for namespace(s) ml (policy file): BPF LSM checks on file_open, file_ioctl, file_ioctl_compat adopted the pinned checks with their rules";
    assert!(log.contains(attached), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    if kernel == Kernel::Sid {
        churned(&results, &vgem);
    }
}

/// The churn: each pod's containers refused and counted under their own
/// labels though more refused containers came and went than the verdicts
/// map holds; none of their verdicts lost.
fn churned(results: &support::guest::Results, vgem: &str) {
    for n in 1..=CHURN_PODS {
        let m = results.file(&format!("metrics-churn-{n}"));
        for i in 1..=CHURN_BATCH {
            let series = format!(
                r#"kubenpu_policy_refusals_total{{pod="churn-{n}",namespace="ml",container="c{i}",device="{vgem}",vendor="vgem",kind="other",hook="open",rule="allocated-only",action="refused"}}"#
            );
            assert_eq!(counter(&m, &series), 1, "{m}");
        }
        assert_eq!(counter(&m, "kubenpu_policy_verdicts_lost_total"), 0, "{m}");
    }
    let m = results.file("metrics-churn");
    assert_eq!(counter(&m, "kubenpu_policy_verdicts_lost_total"), 0, "{m}");
    assert!(
        !m.contains(r#"kubenpu_policy_refusals_total{pod="churn-"#),
        "{m}"
    );
}
