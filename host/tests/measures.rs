//! How long and how much, in real kernels: the exit programs' time,
//! failures and bytes per counted call, against what the workload itself
//! measured. virtio-gpu and vgem are the devices (only the hardware is
//! emulated); the waits run in a containerd pod and are read from
//! `/metrics` under the pod's labels.

#[macro_use]
mod support;

use std::collections::BTreeMap;

use kubenpu_vm::Kernel;
use serde_json::Value;
use support::guest::{Results, run};

// Syncobjs on virtio-gpu: 6.12 and newer (6.1's has none).
on_kernels!([bookworm_backports => BookwormBackports, sid => Sid]: waits_in_a_pod_are_timed_and_time_out);
on_kernels!(
    [bookworm => Bookworm, bookworm_backports => BookwormBackports, sid => Sid]:
    failed_calls_are_counted_exactly,
    allocations_count_the_bytes_the_kernel_reported,
);

/// Waits per container, and their timeout: each blocks for about 20 ms
/// and times out (ETIME).
const WAITS: u64 = 25;
const TIMEOUT_MS: u64 = 20;

/// One pod, two containers: `steady` waits undisturbed; `signalled` waits
/// with a SIGALRM every 3 ms, whose SA_RESTART handler makes the kernel
/// restart each wait several times unseen by the workload. Each container
/// is one series: its calls, timeouts and seconds must be the workload's,
/// and a timeout is not a failure.
fn waits_in_a_pod_are_timed_and_time_out(kernel: Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let vm = support::guest::with_containerd(support::guest::vm(kernel, dir.path()));
    let wait = |flags: &str, name: &str| {
        format!(
            "{name}=kubenpu-workload {flags} syncobj-wait:$VIRTIO_RENDER:{WAITS}:{TIMEOUT_MS} > /out/{name}.json"
        )
    };
    let outcome = vm
        .run(&format!(
            r#". /drm.sh && . /agent.sh && . /pods.sh
             start_containerd
             start_agent --cri-socket /run/kubenpu-cri/containerd.sock
             kubenpu-pods pod --dir "$CRI_DIR" --pod "ml/waiter/7d2f0c1e-3b4a-4c5d-8e6f-0a1b2c3d4e5f" \
               --image "$WORKLOAD_IMAGE" --device "$VIRTIO_RENDER" --mount /shared:/out \
               --container "{}" --container "{}" > /dev/null \
               || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run the pod"; }}
             wait_file /shared/steady.json
             wait_file /shared/signalled.json
             wait_metrics "the containers were not named" 'container="signalled"' 'container="steady"'
             kubenpuctl counts --json > /shared/counts.json
             stop_agent
             kill -TERM $PODS_PID
             cp $AGENT_LOG /shared/agent.log"#,
            wait("", "steady"),
            wait("--signals 3", "signalled"),
        ))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    let metrics = std::fs::read_to_string(dir.path().join("metrics")).unwrap();
    let mut histogram_calls = 0;
    let mut wait_ns = 0;
    for container in ["steady", "signalled"] {
        let issued: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{container}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(issued["calls"], WAITS, "{issued}");
        assert_eq!(issued["failed"], WAITS, "every wait times out: {issued}");
        assert_eq!(issued["timed_out"], WAITS, "with ETIME: {issued}");
        // A wait of 20 ms sees several of the signals 3 ms apart, each
        // taken by the waiting thread inside its call (the workload's
        // main thread holds them off): more than one per wait.
        let signals = issued["signals"].as_u64().unwrap();
        if container == "signalled" {
            assert!(signals > WAITS, "the waits were not interrupted: {issued}");
        } else {
            assert_eq!(signals, 0, "{issued}");
        }
        let measured = issued["call_ns"].as_u64().unwrap() as f64 / 1e9;
        let series = |metric: &str, tail: &str| {
            let prefix =
                format!("{metric}{{pod=\"waiter\",namespace=\"ml\",container=\"{container}\",");
            let line = metrics
                .lines()
                .find(|l| l.starts_with(&prefix) && l.contains(&format!(r#"kind="wait"{tail}}}"#)))
                .unwrap_or_else(|| panic!("no {metric} for {container} in\n{metrics}"));
            line.rsplit(' ').next().unwrap().parse::<f64>().unwrap()
        };
        assert_eq!(
            series("kubenpu_ioctl_total", ""),
            WAITS as f64,
            "a restarted wait is one call"
        );
        assert_eq!(
            series("kubenpu_ioctl_not_ready_total", r#",reason="timed_out""#),
            WAITS as f64
        );
        assert_eq!(
            series("kubenpu_ioctl_not_ready_total", r#",reason="busy""#),
            0.0
        );
        assert_eq!(series("kubenpu_ioctl_failed_total", ""), 0.0);
        let seconds = series("kubenpu_ioctl_seconds_total", "");
        eprintln!(
            "{kernel} {container}: {seconds:.4} s in the kernel, {measured:.4} s measured by the workload"
        );
        // Each run inside drm_ioctl lies within the workload's timing of
        // its call, so the kernel's sum is never more; what the workload
        // adds (syscall entry, signal delivery, handlers) grows when the
        // host is busy, but never to half: a wait that lost its earlier
        // runs would keep only its last, at most 3 of its 20 ms.
        assert!(
            (0.5 * measured..=measured).contains(&seconds),
            "{kernel} {container}: {seconds} s counted, {measured} s measured"
        );
        assert!(
            measured >= WAITS as f64 * TIMEOUT_MS as f64 / 1000.0 * 0.9,
            "{measured}"
        );
        histogram_calls += WAITS;
        wait_ns += (seconds * 1e9).round() as u64;
    }
    // The histogram has every wait, none under the timeout's bucket.
    let counts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("counts.json")).unwrap())
            .unwrap();
    let waits: Vec<(u64, u64)> = counts["durations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "wait")
        .map(|d| (d["bucket"].as_u64().unwrap(), d["calls"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        waits.iter().map(|(_, n)| n).sum::<u64>(),
        histogram_calls,
        "{waits:?}"
    );
    // One entry per wait, restarts summed: the histogram's entries, each
    // in [2^bucket, 2^(bucket+1)) ns, must add up to the nanoseconds the
    // counters summed run by run. A wait's own duration is no fixed bound
    // (its deadline is absolute, so a thread held up between taking the
    // clock and entering the kernel waits less), but entries that dropped
    // their earlier runs (a run between two signals, 3 ms apart, is bucket
    // 21) or counted them twice cannot add up.
    let at_least: u64 = waits.iter().map(|&(bucket, n)| n << bucket).sum();
    assert!(
        (at_least..2 * at_least).contains(&wait_ns),
        "{kernel}: {wait_ns} ns counted, the histogram holds {at_least} to {} ns: {waits:?}",
        2 * at_least
    );
    let count = metrics
        .lines()
        .find(|l| {
            l.starts_with("kubenpu_ioctl_duration_seconds_count{") && l.contains(r#"kind="wait""#)
        })
        .unwrap_or_else(|| panic!("no wait histogram in\n{metrics}"));
    assert!(count.ends_with(&format!(" {histogram_calls}")), "{count}");
    assert_eq!(counts["unmeasured"]["unmeasured"], 0, "{counts}");
}

/// What one counter measured, or what one workload item saw of its calls:
/// `failed` holds every error the workload saw, but only the kernel's
/// failures in a counter (its waits' busy and timed-out ones apart).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Measured {
    calls: u64,
    failed: u64,
    busy: u64,
    timed_out: u64,
    bytes: u64,
}

impl Measured {
    /// The fields of `json`, a counter or a workload line.
    fn of(json: &Value) -> Self {
        let n = |field: &str| json[field].as_u64().unwrap();
        Self {
            calls: n("calls"),
            failed: n("failed"),
            busy: n("busy"),
            timed_out: n("timed_out"),
            bytes: n("bytes"),
        }
    }

    /// What the kernel counts of the calls a workload item saw, if they
    /// are waits (DRM's syncobj waits, virtio-gpu's 0x48) or not: a
    /// wait's busy and timed-out errors apart from its failures; every
    /// error of another call a failure.
    fn counted(self, nr: u64) -> Self {
        let wait = [0x48, 0xc3, 0xca].contains(&nr);
        let (busy, timed_out) = if wait {
            (self.busy, self.timed_out)
        } else {
            (0, 0)
        };
        Self {
            failed: self.failed - busy - timed_out,
            busy,
            timed_out,
            ..self
        }
    }
}

/// Counters by (cgroup, device, nr).
type Counters = BTreeMap<(u64, String, u64), Measured>;

/// Counters of a snapshot by (cgroup, device, nr).
fn measured(results: &Results, name: &str) -> Counters {
    let json: Value = serde_json::from_str(&results.file(&format!("{name}.counts.json"))).unwrap();
    json["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let key = (
                c["cgroup_id"].as_u64().unwrap(),
                c["device"].as_str().unwrap().to_owned(),
                c["nr"].as_u64().unwrap(),
            );
            (key, Measured::of(c))
        })
        .collect()
}

/// The counter of `cgroup` for what the workload issued on `device` (its
/// number `nr`); zeros if the kernel counted none of it.
fn counter_of(counters: &Counters, cgroup: u64, device: &str, nr: u64) -> Measured {
    counters
        .get(&(cgroup, device.to_owned(), nr))
        .copied()
        .unwrap_or_default()
}

/// Whether an item's counter is whole. On a kernel that preempts kernel
/// code (sid), a kprobe-type hook skips the calls that come while the
/// agent's own bpf(2) map access on that CPU is preempted: each is counted
/// as a `recursion` loss, never silently. An item short of calls is
/// checked against those losses (`short` adds up its shortfall), not
/// field by field; one counted more often than called is always wrong.
fn whole(calls: u64, counted: u64, short: &mut u64) -> bool {
    assert!(counted <= calls, "{counted} counted of {calls} calls");
    *short += calls - counted;
    counted == calls
}

/// Every call short of its counter was skipped by the kernel and counted
/// as such, and nothing else was lost. Under a kprobe session (`auto` on
/// sid) `recursion` also counts skipped returns, whose calls were counted
/// and whose measurements show as `unmeasured`: there it bounds the
/// shortfall from above.
fn shortfall_is_counted(kernel: Kernel, short: u64, losses: &BTreeMap<String, u64>) {
    let session = kernel.suite() == "sid";
    if session {
        assert!(short <= losses["recursion"], "{kernel}: {losses:?}");
    } else {
        assert_eq!(short, losses["recursion"], "{kernel}: {losses:?}");
    }
    assert!(
        losses.iter().all(|(reason, &n)| n == 0
            || reason == "recursion"
            || (session && reason == "unmeasured")),
        "{kernel}: {losses:?}"
    );
}

/// What one workload item reported: its device, its number and its
/// calls.
type Reported = (String, u64, Measured);

/// What the workload items run in `cgroup` reported.
fn reported(results: &Results, cgroup: &str) -> Vec<Reported> {
    results
        .file("issued")
        .lines()
        .filter_map(|line| line.strip_prefix(&format!("{cgroup} ")))
        .map(|json| {
            let v: Value = serde_json::from_str(json).unwrap();
            (
                v["device"].as_str().unwrap().to_owned(),
                v["nr"].as_u64().unwrap(),
                Measured::of(&v),
            )
        })
        .collect()
}

/// Runs the workload with `plan` in one cgroup under the agent (`auto`);
/// returns the counters, the losses, the cgroup's id and what the
/// workload reported.
fn issue_in_a_cgroup(
    kernel: Kernel,
    plan: &str,
) -> (Counters, BTreeMap<String, u64>, u64, Vec<Reported>) {
    let results = run(
        kernel,
        &format!(
            "start_agent
             issue w {plan}
             snapshot final
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    (
        measured(&results, "final"),
        results.counts("final").1,
        results.cgroup_id("w"),
        reported(&results, "w"),
    )
}

/// Calls that fail (a zero handle, a bad size) are counted as failed,
/// exactly as many as the workload saw fail, under every hook `auto`
/// picks, on every kernel: syncobjs are not needed. Polls, no-block
/// waits of which those that find the device busy return EBUSY, are
/// busy, not failed: exactly as many as the workload saw busy.
fn failed_calls_are_counted_exactly(kernel: Kernel) {
    let (counters, losses, id, items) = issue_in_a_cgroup(
        kernel,
        "$VIRTIO_RENDER:0x48:500 $VGEM_CARD:0x41:300 $VIRTIO_CARD:0x42:200 create-poll:$VIRTIO_CARD:100",
    );
    assert_eq!(items.len(), 4);
    let (mut failures, mut short) = (0, 0);
    for (device, nr, issued) in &items {
        let counted = counter_of(&counters, id, device, *nr);
        if whole(issued.calls, counted.calls, &mut short) {
            assert_eq!(counted, issued.counted(*nr), "{kernel} {device} {nr:#x}");
        }
        failures += issued.failed;
    }
    shortfall_is_counted(kernel, short, &losses);
    assert!(
        failures >= 500,
        "the zero-handle waits must fail: {failures}"
    );
    let polls = &items[3].2;
    eprintln!("{kernel}: {} polls, {} busy", polls.calls, polls.busy);
    assert!(
        polls.busy > 0 && polls.busy == polls.failed,
        "the polls must find resources busy, and fail only so: {polls:?}"
    );
}

/// Dumb buffers and virtio-gpu resources of sizes the test picks: the
/// bytes counted are the sum of the sizes the kernel reported (dumb
/// buffers: `size`, out) or was asked for (resources: `size`, in);
/// failed allocations (a zero-sized dumb buffer; a blob resource, which
/// this virtio-gpu does not offer) add none.
fn allocations_count_the_bytes_the_kernel_reported(kernel: Kernel) {
    let (counters, losses, id, items) = issue_in_a_cgroup(
        kernel,
        "dumb:$VIRTIO_CARD:64x64x32,100x30x32,0x0x32 dumb:$VGEM_CARD:640x480x32,33x7x8 \
         resource:$VIRTIO_RENDER:4096,65536,12288 blob:$VIRTIO_RENDER:4096,8192",
    );
    assert_eq!(items.len(), 4);
    let (mut total, mut short) = (0, 0);
    for (device, nr, issued) in &items {
        let counted = counter_of(&counters, id, device, *nr);
        eprintln!(
            "{kernel} {device} {nr:#x}: {} bytes counted, {} reported",
            counted.bytes, issued.bytes
        );
        if whole(issued.calls, counted.calls, &mut short) {
            assert_eq!(counted, issued.counted(*nr), "{kernel} {device} {nr:#x}");
        }
        total += issued.bytes;
    }
    shortfall_is_counted(kernel, short, &losses);
    // The zero-sized dumb buffer failed and added nothing (virtio-gpu
    // takes 32 bits per pixel only).
    assert_eq!(items[0].2.failed, 1, "{items:?}");
    // Dumb buffers: at least width × height × bpp/8 each.
    assert!(items[0].2.bytes >= 64 * 64 * 4 + 100 * 30 * 4, "{items:?}");
    assert!(items[1].2.bytes >= 640 * 480 * 4 + 33 * 7, "{items:?}");
    assert_eq!(items[2].2.bytes, 4096 + 65536 + 12288, "{items:?}");
    assert!(total > 0);
}
