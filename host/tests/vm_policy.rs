//! Allow or block, in the VM on the newest kernel, against a real
//! containerd and real DRM devices: the policy's BPF LSM checks audit,
//! then refuse, what a container calls on a device kubelet did not give
//! it, at the open and at the ioctl of a file it already held, while its
//! allowed calls, and a host process's, go on and are counted exactly;
//! the checks hold while the agent is down, are adopted by the next one,
//! follow the policy file within a second of each change (a kind denied,
//! a device allowed; a file that does not parse is refused in one line),
//! refuse nothing once no agent has renewed their lease for its length,
//! and are gone after `--cleanup`.
//!
//! kubelet cannot be installed here, so `kubenpu-pods podresources`
//! stands in for its PodResources server (the real protocol, on kubelet's
//! socket path). Both pods are given the virtio-gpu render node through a
//! DRA claim, resolved through a real CDI spec, and both also have the
//! vgem render node, as a hostPath mount would give it; a third, given
//! vgem, passes its open vgem file over a unix socket to the first, whose
//! calls on it are refused: a call is checked by its caller's cgroup, not
//! by who opened the file. On x86_64 the holder and one of given's runs
//! are the workload's 32-bit build: the holder's calls are refused at
//! `file_ioctl_compat`, and given's allowed ones counted exactly through
//! the compat path.

#[macro_use]
mod support;

use std::{path::Path, time::Duration};

use kubenpu_prometheus::check_metrics;
use kubenpu_vm::{Arch, Kernel};
use serde_json::{Value, json};
use support::{
    exposition::{counter, ioctls, label},
    steps::{Host, wait_until},
};

/// Calls each workload makes: on the device a pod was given (virtio-gpu's
/// EXECBUFFER, 0x42), and on the one it was not (vgem's FENCE_ATTACH,
/// 0x41), both submits.
const GIVEN_CALLS: u64 = 100;
const AUDITED_CALLS: u64 = 50;
const HELD_CALLS: u64 = 40;
const REFUSED_OPEN_CALLS: u64 = 30;
const HOST_CALLS: u64 = 20;
/// Calls the vgem owner makes on its own device, and the receiver of its
/// file makes on it.
const OWNER_CALLS: u64 = 60;
const PASSED_CALLS: u64 = 25;
/// Calls `owner` and `given` each make on vgem under the policy file.
const FILE_CALLS: u64 = 35;
/// The checks' lease: long enough to cover an agent's restart under TCG.
const LEASE_SECONDS: u64 = 10;

/// The guest script; `step NAME` waits for the test's checks. `workload`
/// runs the holder's calls and given's second allowed ones: the 32-bit
/// build on x86_64, whose ioctls take the compat path.
fn script(workload: &str) -> String {
    // Each pod waits for /out/NAME before each phase: the test moves it on.
    let wait = |file: &str| format!("until [ -e /out/{file} ]; do sleep 0.2; done");
    let given = [
        format!("kubenpu-workload $VIRTIO_RENDER:0x42:{GIVEN_CALLS} > /out/given-1.json"),
        wait("go-audit"),
        format!("kubenpu-workload $VGEM_RENDER:0x41:{AUDITED_CALLS} > /out/given-2.json"),
        wait("go-enforce"),
        format!(
            "kubenpu-workload $VGEM_RENDER:0x41:{REFUSED_OPEN_CALLS} 2> /out/given-3.err; echo \\$? > /out/given-3.rc"
        ),
        format!("{workload} $VIRTIO_RENDER:0x42:{GIVEN_CALLS} > /out/given-4.json"),
        format!("kubenpu-workload recv-fd:/sock/fd:0x41:{PASSED_CALLS} > /out/given-passed.json"),
        wait("go-down"),
        format!(
            "kubenpu-workload $VGEM_RENDER:0x41:{REFUSED_OPEN_CALLS} 2> /out/given-5.err; echo \\$? > /out/given-5.rc"
        ),
        wait("go-file"),
        format!("kubenpu-workload $VGEM_RENDER:0x41:{FILE_CALLS} > /out/given-file.json"),
        wait("go-lapsed"),
        format!(
            "kubenpu-workload $VGEM_RENDER:0x41:{REFUSED_OPEN_CALLS} > /out/given-6.json 2> /out/given-6.err; echo \\$? > /out/given-6.rc"
        ),
        wait("go-clean"),
        format!(
            "kubenpu-workload $VGEM_RENDER:0x41:{REFUSED_OPEN_CALLS} > /out/given-7.json 2> /out/given-7.err; echo \\$? > /out/given-7.rc"
        ),
        "exec sleep 1000000".into(),
    ]
    .join("; ");
    let lapse = LEASE_SECONDS + 1;
    // The owner of vgem calls on it, then hands its file to `given`.
    let owner = [
        format!("kubenpu-workload $VGEM_RENDER:0x41:{OWNER_CALLS} > /out/owner.json"),
        wait("go-enforce"),
        "kubenpu-workload send-fd:/sock/fd:$VGEM_RENDER > /out/owner-sent.json".into(),
        wait("go-file"),
        format!("kubenpu-workload $VGEM_RENDER:0x41:{FILE_CALLS} > /out/owner-file.json"),
        "exec sleep 1000000".into(),
    ]
    .join("; ");
    // The holder opens vgem at once, and calls on it only once the policy
    // enforces.
    let holder = format!(
        "{workload} --after /out/go-enforce $VGEM_RENDER:0x41:{HELD_CALLS} > /out/holder.json; exec sleep 1000000"
    );
    format!(
        r#"
        # The agent's log where the test reads it as it goes.
        AGENT_LOG=/shared/agent.log
        : > $AGENT_LOG
        echo policy > /proc/sys/kernel/hostname
        mkdir -p /etc/cdi
        echo '{{"cdiVersion":"0.6.0","kind":"kubenpu.test/gpu","devices":[{{"name":"virtio0","containerEdits":{{"deviceNodes":[{{"path":"/dev/dri/renderD128","hostPath":"'$VIRTIO_RENDER'"}}]}}}},{{"name":"vgem0","containerEdits":{{"deviceNodes":[{{"path":"/dev/dri/renderD129","hostPath":"'$VGEM_RENDER'"}}]}}}}]}}' > /etc/cdi/gpu.json
        mkdir -p /tmp/sock
        SOCKET=/var/lib/kubelet/pod-resources/kubelet.sock
        kubenpu-pods podresources --socket $SOCKET --state /shared/state.json --calls /shared/calls > /tmp/kubelet.log 2>&1 &
        run_pod() {{
          kubenpu-pods pod --dir "$CRI_DIR" --pod ml/$1/$2 --image "$WORKLOAD_IMAGE" \
            --mount /shared:/out --mount /tmp/sock:/sock --container "main=$3" \
            --device "$VIRTIO_RENDER" --device "$VGEM_RENDER" \
            > /tmp/$1.sandbox || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod $1"; }}
        }}
        step booted
        start_containerd
        # The policy file's directory, as the chart mounts its ConfigMap;
        # no file in it yet.
        mkdir -p /etc/kubenpu/policy
        POLICY_FILE=/etc/kubenpu/policy/policy.yaml
        AGENT_ARGS="--cri-socket $CRI_SOCKET --allocation-interval 1s --rescan-interval 1s --policy-lease {LEASE_SECONDS}s --policy-file $POLICY_FILE"
        start_agent $AGENT_ARGS --policy audit
        run_pod given 00000000-0000-4000-8000-000000000001 "{given}"
        run_pod holder 00000000-0000-4000-8000-000000000002 "{holder}"
        run_pod owner 00000000-0000-4000-8000-000000000003 "{owner}"
        wait_file /shared/given-1.json
        wait_file /shared/owner.json
        step audit

        stop_agent
        start_agent $AGENT_ARGS --policy enforce
        step enforce

        kubenpu-workload $VGEM_RENDER:0x41:{HOST_CALLS} > /shared/host.json
        kill -KILL $AGENT_PID
        wait $AGENT_PID || true
        touch /shared/go-down
        wait_file /shared/given-5.rc
        kubenpu-workload $VGEM_RENDER:0x41:{HOST_CALLS} > /shared/host-down.json
        start_agent $AGENT_ARGS --policy enforce
        step restarted

        # The file denies the owner its submits, and allows given vgem:
        # written beside and renamed over, as an editor does; in force
        # within a second.
        VGEM_NAME=$(cat /shared/vgem-device)
        printf 'rules:\n- {{pod: owner, denyKinds: [submit]}}\n- {{namespace: ml, pod: given, allow: ["%s"]}}\n' "$VGEM_NAME" > $POLICY_FILE.next
        mv $POLICY_FILE.next $POLICY_FILE
        sleep 1
        touch /shared/go-file
        wait_file /shared/owner-file.json
        wait_file /shared/given-file.json
        step filed

        # A rule that does nothing: refused in one line, the rules stay.
        echo 'rules: [{{pod: owner}}]' > $POLICY_FILE.next
        mv $POLICY_FILE.next $POLICY_FILE
        sleep 1
        step rejected

        stop_agent
        # The last renewal's lease runs out: nothing refuses.
        sleep {lapse}
        touch /shared/go-lapsed
        wait_file /shared/given-6.rc
        [ "$(cat /shared/given-6.rc)" = 0 ] || {{ cat /shared/given-6.err; fail "the lease ran out and the pod still cannot open vgem"; }}
        step lapsed

        kubenpu-agent --cleanup >> $AGENT_LOG 2>&1
        ls /sys/fs/bpf | grep -c kubenpu > /shared/pins || true
        touch /shared/go-clean
        wait_file /shared/given-7.rc
        [ "$(cat /shared/given-7.rc)" = 0 ] || {{ cat /shared/given-7.err; fail "the pod still cannot open vgem"; }}
        step cleaned
        kill -TERM $PODS_PID
        "#
    )
}

on_kernels!([
    sid => Sid,
    bookworm => Bookworm,
    bookworm_backports => BookwormBackports,
    sid_arm64 => SidArm64
]: the_policy_audits_then_refuses_what_kubelet_did_not_give);

fn the_policy_audits_then_refuses_what_kubelet_did_not_give(kernel: Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().to_owned();
    let mut vm = support::guest::with_containerd(support::guest::vm(kernel, &shared));
    // 32-bit callers on x86_64: their ioctls pass file_ioctl_compat.
    let compat = kernel.arch() == Arch::Amd64;
    let (workload, held_hook) = if compat {
        let binary = std::fs::read(support::guest::workload32()).unwrap();
        vm = vm.file("/usr/local/bin/kubenpu-workload32", 0o755, binary);
        ("kubenpu-workload32", "ioctl_compat")
    } else {
        ("kubenpu-workload", "ioctl")
    };
    let host = Host::boot(vm, shared.clone(), script(workload));
    host.step("booted", || write_state(&shared));

    // Audit: the given device's calls are allowed; the other device's are
    // counted, with the open, and let through.
    host.step("audit", || {
        let ruled = wait_until(Duration::from_secs(60), || {
            host.metrics().contains("kubenpu_policy_ruled_cgroups 3")
        });
        let m = host.metrics();
        assert!(ruled, "{m}\n{}", log(&shared));
        check_metrics(&m).unwrap();
        assert!(m.contains("kubenpu_policy_lsm_available 1"), "{m}");
        assert!(
            m.contains(r#"kubenpu_policy_mode{mode="audit",asked="audit"} 1"#),
            "{m}"
        );
        assert!(
            !m.contains("kubenpu_policy_refusals_total{"),
            "the given device is allowed:\n{m}"
        );
        std::fs::write(shared.join("go-audit"), "").unwrap();
        assert!(wait_for(&shared.join("given-2.json")));
        assert_ran(&shared, "given-2.json", AUDITED_CALLS, 0);
        let m = counted(
            &host,
            ("given", "ioctl", "submit", "audited"),
            AUDITED_CALLS,
        );
        assert_eq!(refusals(&m, "given", "open", "other", "audited"), 1, "{m}");
        assert_eq!(
            ioctls(&m).get("given"),
            Some(&(GIVEN_CALLS + AUDITED_CALLS)),
            "audited calls reach the driver and are counted:\n{m}"
        );
    });

    // Enforce: a new agent adopts the checks and rules; the open of the
    // device not given, and the calls on the one the holder already had
    // open, are refused; the given device's calls go on.
    host.step("enforce", || {
        let m = host.metrics();
        assert!(
            m.contains(r#"kubenpu_policy_mode{mode="enforce",asked="enforce"} 1"#),
            "{m}"
        );
        assert!(m.contains("kubenpu_policy_ruled_cgroups 3"), "{m}");
        std::fs::write(shared.join("go-enforce"), "").unwrap();
        assert!(wait_for(&shared.join("holder.json")));
        assert!(wait_for(&shared.join("given-4.json")));
        assert_ran(&shared, "holder.json", HELD_CALLS, HELD_CALLS);
        assert_refused_open(&shared, "given-3");
        assert_ran(&shared, "given-4.json", GIVEN_CALLS, 0);
        // The file vgem's owner passed it: refused at each call.
        // The receiver can finish before its sender writes its own line.
        assert!(wait_for(&shared.join("given-passed.json")));
        assert!(wait_for(&shared.join("owner-sent.json")));
        assert_ran(&shared, "owner-sent.json", 0, 0);
        assert_ran(&shared, "given-passed.json", PASSED_CALLS, PASSED_CALLS);
        counted(&host, ("given", "ioctl", "submit", "refused"), PASSED_CALLS);
        let m = counted(
            &host,
            ("holder", held_hook, "submit", "refused"),
            HELD_CALLS,
        );
        assert_eq!(refusals(&m, "given", "open", "other", "refused"), 1, "{m}");
        // Refused calls never reach the driver: the allowed ones are
        // counted exactly, and the holder has none.
        assert_eq!(
            ioctls(&m).get("given"),
            Some(&(2 * GIVEN_CALLS + AUDITED_CALLS)),
            "{m}"
        );
        assert_eq!(ioctls(&m).get("holder"), None, "{m}");
        assert_eq!(ioctls(&m).get("owner"), Some(&OWNER_CALLS), "{m}");
        assert_eq!(
            refusals(&m, "owner", "ioctl", "submit", "refused"),
            0,
            "{m}"
        );
    });

    // A host process is never refused; while the agent is down the checks
    // hold; the next agent adopts them and counts what they refused.
    host.step("restarted", || {
        for name in ["host.json", "host-down.json"] {
            assert_ran(&shared, name, HOST_CALLS, 0);
        }
        assert_refused_open(&shared, "given-5");
        let m = host.metrics();
        assert_eq!(refusals(&m, "given", "open", "other", "refused"), 2, "{m}");
        assert!(m.contains("kubenpu_policy_ruled_cgroups 3"), "{m}");
        assert_eq!(counter(&m, "kubenpu_policy_verdicts_lost_total"), 0, "{m}");
        assert!(
            m.contains("kubenpu_policy_file_valid 1"),
            "no file is no rules:\n{m}"
        );
        let vgem = vgem_device(&m);
        std::fs::write(shared.join("vgem-device"), vgem).unwrap();
    });

    // The policy file, a second after it changed: the owner's submits on
    // its own device are refused by kind; given's calls on vgem, which
    // kubelet did not give it, are allowed and counted exactly.
    host.step("filed", || {
        assert_ran(&shared, "owner-file.json", FILE_CALLS, FILE_CALLS);
        assert_ran(&shared, "given-file.json", FILE_CALLS, 0);
        let m = counted_by(
            &host,
            ("owner", "ioctl", "submit", "refused", "deny-kind"),
            FILE_CALLS,
        );
        assert_eq!(
            ioctls(&m).get("given"),
            Some(&(2 * GIVEN_CALLS + AUDITED_CALLS + FILE_CALLS)),
            "{m}"
        );
        assert_eq!(ioctls(&m).get("owner"), Some(&OWNER_CALLS), "{m}");
        // kubenpuctl policy names each decision's rule.
        let vgem = vgem_device(&m);
        let why = |pod: &str| host.kubenpuctl(&["policy", "--why", pod, "--device", &vgem]);
        let owner = why("ml/owner");
        assert!(
            owner.contains(&format!("enforce: submit refused by deny-kind: the policy file denies it; open alloc wait allowed (allocated); {FILE_CALLS} call(s)")),
            "{owner}"
        );
        let holder = why("ml/holder");
        assert!(
            holder.contains("enforce: refused by allocated-only: kubelet did not allocate"),
            "{holder}"
        );
        // Its calls, refused; its open came before it was ruled.
        assert!(
            holder.ends_with(&format!("; {HELD_CALLS} call(s) audited or refused so far\n")),
            "{holder}"
        );
        let given = why("ml/given");
        assert!(given.contains(": allowed (allowed by the policy file)"), "{given}");
        let table = host.kubenpuctl(&["policy"]);
        assert!(
            table.starts_with(
                "policy: enforce (asked: enforce); BPF LSM active; policy file in force\n"
            ),
            "{table}"
        );
        assert!(
            log(&shared).contains(
                "policy file /etc/kubenpu/policy/policy.yaml: 0 namespace mode(s), 2 rule(s)"
            ),
            "{}",
            log(&shared)
        );
    });

    // A file that does not parse is refused in one line, and says so.
    host.step("rejected", || {
        let rejected = wait_until(Duration::from_secs(10), || {
            host.metrics().contains("kubenpu_policy_file_valid 0")
        });
        assert!(rejected, "{}", host.metrics());
        let line = "policy file /etc/kubenpu/policy/policy.yaml: rules[0]: neither allows nor denies anything (give allow, deny or denyKinds); the rules in force before it stay";
        assert_eq!(log(&shared).matches(line).count(), 1, "{}", log(&shared));
    });

    // A lease no agent renewed for its length refuses nothing: the open
    // and calls go through and are not counted as refusals (the agent is
    // not there to show them, and the kernel counted none).
    host.step("lapsed", || {
        assert_ran(&shared, "given-6.json", REFUSED_OPEN_CALLS, 0);
    });

    // After --cleanup, nothing refuses.
    host.step("cleaned", || {
        assert_ran(&shared, "given-7.json", REFUSED_OPEN_CALLS, 0);
        let pins = std::fs::read_to_string(shared.join("pins")).unwrap();
        assert_eq!(pins.trim(), "0", "nothing pinned is left");
    });

    host.finish();
    let log = log(&shared);
    // Every kernel here has file_ioctl_compat: 6.8's, and in 6.1.y since
    // it was backported as a fix.
    let attached =
        "policy audit: BPF LSM checks on file_open, file_ioctl, file_ioctl_compat attached";
    assert_eq!(log.matches(attached).count(), 1, "{log}");
    let adopted = "policy enforce: BPF LSM checks on file_open, file_ioctl, file_ioctl_compat adopted the pinned checks with their rules";
    assert_eq!(
        log.matches(adopted).count(),
        2,
        "both enforcing agents adopted:\n{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}

/// kubelet's answers: `given` and `holder` hold the virtio-gpu through a
/// DRA claim, `owner` vgem.
fn write_state(shared: &Path) {
    let claim = |device: &str| {
        json!([{"namespace": "ml", "name": device, "devices": [
            {"driver": "gpu.kubenpu.test", "pool": "node", "device": device, "cdi": [format!("kubenpu.test/gpu={device}")]}
        ]}])
    };
    let pods: Vec<Value> = [
        ("given", "virtio0"),
        ("holder", "virtio0"),
        ("owner", "vgem0"),
    ]
    .iter()
    .map(|(name, device)| {
        json!({"namespace": "ml", "name": name, "containers": [
            {"name": "main", "devices": [], "claims": claim(device)}
        ]})
    })
    .collect();
    let state = json!({"pods": pods, "list": "ok", "get": "ok"});
    std::fs::write(shared.join("state.json"), state.to_string()).unwrap();
}

/// The agents' log so far.
fn log(shared: &Path) -> String {
    std::fs::read_to_string(shared.join("agent.log")).unwrap_or_default()
}

/// Waits for a file a pod writes.
fn wait_for(path: &Path) -> bool {
    wait_until(Duration::from_secs(60), || {
        std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
    })
}

/// The workload run whose line is in `name` made `calls` calls, of which
/// `refused` were refused with EPERM.
fn assert_ran(shared: &Path, name: &str, calls: u64, refused: u64) {
    let text = std::fs::read_to_string(shared.join(name)).unwrap();
    let run: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
    assert_eq!(
        (run["calls"].as_u64(), run["refused"].as_u64()),
        (Some(calls), Some(refused)),
        "{name}: {run}"
    );
}

/// The workload run `name` could not open the device: EPERM.
fn assert_refused_open(shared: &Path, name: &str) {
    assert!(wait_for(&shared.join(format!("{name}.rc"))));
    let rc = std::fs::read_to_string(shared.join(format!("{name}.rc"))).unwrap();
    let err = std::fs::read_to_string(shared.join(format!("{name}.err"))).unwrap();
    assert_eq!(rc.trim(), "1", "{err}");
    assert!(err.contains("Operation not permitted"), "{err}");
}

/// Waits until the agent shows `calls` verdicts of (pod, hook, kind,
/// action) by the allocated-only rule on vgem; returns the exposition
/// then.
fn counted(host: &Host, (pod, hook, kind, action): (&str, &str, &str, &str), calls: u64) -> String {
    counted_by(host, (pod, hook, kind, action, "allocated-only"), calls)
}

/// [`counted`], by `rule`.
fn counted_by(
    host: &Host,
    (pod, hook, kind, action, rule): (&str, &str, &str, &str, &str),
    calls: u64,
) -> String {
    let shown = wait_until(Duration::from_secs(20), || {
        refusals_by(&host.metrics(), (pod, hook, kind, action, rule)) == calls
    });
    let m = host.metrics();
    assert!(shown, "{pod} {hook} {kind} {action} {rule}: {m}");
    m
}

/// The policy's count for one pod's verdicts on vgem by the
/// allocated-only rule.
fn refusals(exposition: &str, pod: &str, hook: &str, kind: &str, action: &str) -> u64 {
    refusals_by(exposition, (pod, hook, kind, action, "allocated-only"))
}

/// [`refusals`], by `rule`.
fn refusals_by(
    exposition: &str,
    (pod, hook, kind, action, rule): (&str, &str, &str, &str, &str),
) -> u64 {
    let vgem = vgem_device(exposition);
    let series = format!(
        r#"kubenpu_policy_refusals_total{{pod="{pod}",namespace="ml",container="main",device="{vgem}",vendor="vgem",kind="{kind}",hook="{hook}",rule="{rule}",action="{action}"}}"#
    );
    counter(exposition, &series)
}

/// The agent's name for vgem: a faux device from 6.15, a platform one
/// before.
fn vgem_device(exposition: &str) -> String {
    exposition
        .lines()
        .find(|l| l.starts_with("kubenpu_device_info{") && l.contains(r#"vendor="vgem""#))
        .map(|l| label(l, "device"))
        .unwrap_or_else(|| panic!("no vgem device: {exposition}"))
}
