//! Accelerator memory outside DRM, on real kernel devices: the system DMA
//! heap (`/dev/dma_heap/system`, a class of its own) and udmabuf
//! (`/dev/udmabuf`, a misc device), which Debian builds into 6.12 and 7.2.
//! Their built-in plugins claim them and name their ioctl entries
//! (`dma_heap_ioctl`, `udmabuf_ioctl`); the agent hooks those with the
//! same programs as `drm_ioctl`. In one boot per kernel:
//!
//! - a pod in containerd allocates through both, and its `alloc` calls and
//!   bytes are exact per pod; kubelet (the test's PodResources server)
//!   gave it no device, and its calls on vgem count as unallocated, but
//!   not those on the heap and udmabuf, which no allocator hands out;
//! - then eight threads on two vCPUs allocate from the heap, and every
//!   call is counted (or, under a kprobe session, counted as dropped by
//!   reason); their measurements are not checked: before 6.14 the return
//!   probe holds two calls per CPU, and the exits beyond those go
//!   unmeasured (counted as such, as the README says), which is why the
//!   pod's calls, whose measurements are, run before them;
//! - commands the tables do not list, on the claimed nodes, and calls on
//!   an unclaimed misc device are not counted;
//! - allocations made while the agent is stopped are counted by the
//!   programs it left attached, and its successor adopts the links;
//! - a plugin dropped in while it runs classifies the heap's command by
//!   a field of its argument (the length): the kernel program reads it
//!   at each call and counts one-page allocations alone;
//! - under `--hook fentry`, which cannot hook the entries, one line says
//!   so, and the kprobe links on them go.
//!
//! On 6.1, which has neither device, the agent says so in one line.

mod support;

use kubenpu_vm::Kernel;
use support::{
    exposition::counter,
    guest::{Results, run_with, with_containerd},
};

/// The pod's allocations: DMA-heap buffers and udmabufs, and their sizes.
const POD_HEAPS: u64 = 40;
const HEAP_BYTES: u64 = 64 << 10;
const POD_UDMABUFS: u64 = 30;
const UDMABUF_BYTES: u64 = 16 << 10;
/// Threads and allocations per thread: four threads per vCPU.
const THREADS: u64 = 8;
const PER_THREAD: u64 = 2_500;
/// Heap allocations while no agent runs.
const WHILE_DOWN: u64 = 25;
/// Calls the tables leave out, and calls on an unclaimed misc device.
const UNLISTED: u64 = 25;
/// The pod's calls on vgem, a DRM device nobody gave it.
const VGEM_CALLS: u64 = 15;
/// Under the classifying plugin: page allocations, which count, and
/// larger ones, which do not.
const PAGES: u64 = 12;
const LARGER: u64 = 7;

/// `DMA_HEAP_IOCTL_ALLOC`'s key (the number: `dma_heap_ioctl` dispatches
/// on it) and `UDMABUF_CREATE`'s (the whole command).
const HEAP_KEY: u64 = 0x00;
const UDMABUF_KEY: u64 = 0x4018_7542;

fn run(kernel: Kernel) -> Results {
    run_with(
        kernel,
        |vm| {
            with_containerd(vm)
                .timeout(std::time::Duration::from_secs(900))
                .file(
                    "/heap-classes.wasm",
                    0o644,
                    std::fs::read(support::test_plugin("heap-classes")).unwrap(),
                )
        },
        &format!(
            r#". /pods.sh
             HEAP=/dev/dma_heap/system
             [ -c $HEAP ] && [ -c /dev/udmabuf ] || fail "no DMA heap or udmabuf in this kernel"
             start_containerd
             # kubelet lists the pod, with no device given.
             SOCKET=/var/lib/kubelet/pod-resources/kubelet.sock
             echo '{{"pods":[{{"namespace":"ml","name":"heaps","containers":[{{"name":"alloc","devices":[],"claims":[]}}]}}],"list":"ok","get":"ok"}}' > /shared/state.json
             kubenpu-pods podresources --socket $SOCKET --state /shared/state.json --calls /tmp/calls > /tmp/kubelet.log 2>&1 &
             KUBELET_PID=$!
             until [ -S $SOCKET ]; do sleep 0.1; done
             mkdir -p /plugins
             AGENT_ARGS="--cri-socket $CRI_SOCKET --allocation-interval 1s --plugins-dir /plugins"
             start_agent $AGENT_ARGS
             kubenpu-pods pod --dir "$CRI_DIR" --pod "ml/heaps/3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f" \
               --image "$WORKLOAD_IMAGE" --device $HEAP --device /dev/udmabuf --device $VGEM_RENDER --mount /shared:/out \
               --container "alloc=kubenpu-workload heap:$HEAP:{POD_HEAPS}:{HEAP_BYTES} udmabuf:/dev/udmabuf:{POD_UDMABUFS}:{UDMABUF_BYTES} $VGEM_RENDER:0x41:{VGEM_CALLS} > /out/pod.json && exec sleep 1000000" \
               > /dev/null || {{ tail -20 "$CRI_DIR/containerd.log"; fail "cannot run the pod"; }}
             # The pod's calls alone, then the threads': before 6.14 the
             # return probe keeps at most two calls per CPU in flight, and
             # the threads' exits beyond that are unmeasured (as counted).
             wait_file /shared/pod.json
             issue threads --threads {THREADS} heap:$HEAP:{PER_THREAD}:4096
             issue unlisted $HEAP:0x01:{UNLISTED} /dev/udmabuf:0x44:{UNLISTED} /dev/cpu_dma_latency:0x42:{UNLISTED}
             stop_agent
             issue down heap:$HEAP:{WHILE_DOWN}:4096
             start_agent $AGENT_ARGS
             wait_metrics "the pod's series never appeared" \
               'pod="heaps".*vendor="udmabuf",kind="alloc"' '^kubenpu_unallocated_ioctl_total{{pod="heaps"'
             cp /heap-classes.wasm /plugins/
             wait_log 'dma_heap 2.0.0-test'
             issue classes heap:$HEAP:{PAGES}:4096 heap:$HEAP:{LARGER}:65536
             snapshot chardev
             stop_agent
             # fentry is verified against drm_ioctl alone: one line, and
             # the kprobe links on the entries go with the hook they ran.
             start_agent $AGENT_ARGS --hook fentry
             [ ! -e /sys/fs/bpf/kubenpu/entries/dma_heap_ioctl ] || fail "an entry's link outlived its hook"
             stop_agent
             kill -TERM $PODS_PID $KUBELET_PID
             cp $AGENT_LOG /shared/agent.log"#
        ),
    )
}

fn allocations_outside_drm_are_counted_exactly_per_pod(kernel: Kernel) {
    let results = run(kernel);
    let metrics = results.file("metrics");
    let series = |vendor: &str, device: &str| {
        format!(
            r#"{{pod="heaps",namespace="ml",container="alloc",device="{device}",vendor="{vendor}",kind="alloc"}}"#
        )
    };
    let heap = series("dma_heap", "virtual/dma_heap/system");
    let udmabuf = series("udmabuf", "virtual/misc/udmabuf");
    // The pod's own account of its calls, then the agent's, which must
    // match it: no measurement missing, counted or not.
    let pod = results.file("pod.json");
    let lines: Vec<&str> = pod.lines().collect();
    assert!(
        lines[0].contains(&format!(r#""calls":{POD_HEAPS},"#))
            && lines[0].contains(r#""failed":0,"#)
            && lines[0].contains(&format!(r#""bytes":{},"#, POD_HEAPS * HEAP_BYTES)),
        "{pod}"
    );
    assert!(
        lines[1].contains(&format!(r#""calls":{POD_UDMABUFS},"#))
            && lines[1].contains(&format!(r#""bytes":{},"#, POD_UDMABUFS * UDMABUF_BYTES)),
        "{pod}"
    );
    let unmeasured: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("kubenpu_measurements_dropped_total{"))
        .collect();
    for (metric, expected) in [
        (format!("kubenpu_ioctl_total{heap}"), POD_HEAPS),
        (
            format!("kubenpu_alloc_bytes_total{heap}"),
            POD_HEAPS * HEAP_BYTES,
        ),
        (format!("kubenpu_ioctl_total{udmabuf}"), POD_UDMABUFS),
        (
            format!("kubenpu_alloc_bytes_total{udmabuf}"),
            POD_UDMABUFS * UDMABUF_BYTES,
        ),
    ] {
        assert_eq!(
            counter(&metrics, &metric),
            expected,
            "{kernel}: {metric} ({unmeasured:?})"
        );
    }
    // Classified (kubelet gave it nothing): its vgem calls are
    // unallocated, its heap and udmabuf calls are not.
    let unallocated: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("kubenpu_unallocated_ioctl_total{"))
        .collect();
    assert_eq!(unallocated.len(), 1, "{metrics}");
    assert!(
        unallocated[0].contains(r#"pod="heaps""#)
            && unallocated[0].contains(r#"vendor="vgem""#)
            && unallocated[0].ends_with(&format!(" {VGEM_CALLS}")),
        "{}",
        unallocated[0]
    );

    let (counts, losses) = results.counts("chardev");
    let of = |cgroup: &str| -> Vec<(String, u64, u64)> {
        let id = results.cgroup_id(cgroup);
        counts
            .iter()
            .filter(|((cg, _, _), _)| *cg == id)
            .map(|((_, dev, nr), calls)| (dev.clone(), *nr, *calls))
            .collect()
    };
    let heap_dev = results.issued(&["threads"])[0].1.clone();
    // Every thread's allocation, on the heap's node under its key.
    let issued = THREADS * PER_THREAD;
    let threads = of("threads");
    let counted: u64 = threads.iter().map(|(_, _, calls)| calls).sum();
    let dropped: u64 = losses.values().sum();
    eprintln!(
        "{kernel}: {counted} of {issued} heap allocations counted, {losses:?} dropped, {unmeasured:?}"
    );
    assert!(
        threads
            .iter()
            .all(|(dev, nr, _)| *dev == heap_dev && *nr == HEAP_KEY),
        "{threads:?}"
    );
    assert!(
        counted <= issued && counted + dropped >= issued,
        "{kernel}: every call counted or dropped by reason: {counted} + {losses:?} of {issued}"
    );
    // Made while no agent ran: counted by the programs it left attached.
    assert_eq!(of("down"), [(heap_dev.clone(), HEAP_KEY, WHILE_DOWN)]);
    // Classified by their length: the pages alone.
    assert_eq!(of("classes"), [(heap_dev.clone(), HEAP_KEY, PAGES)]);
    assert_eq!(
        results
            .issued(&["classes"])
            .iter()
            .map(|i| i.3)
            .sum::<u64>(),
        PAGES + LARGER
    );
    assert_eq!(losses.get("unclassified"), Some(&0), "{losses:?}");
    // Commands the tables leave out, and an unclaimed misc device: none.
    assert!(of("unlisted").is_empty(), "{:?}", of("unlisted"));
    let unlisted = results.issued(&["unlisted"]);
    assert_eq!(unlisted.len(), 3);
    assert!(unlisted.iter().all(|(_, _, _, calls)| *calls == UNLISTED));
    assert!(
        !metrics.contains("cpu_dma_latency") && !metrics.contains(r#"device="virtual/misc/cpu"#),
        "{metrics}"
    );
    // udmabuf's calls are keyed on the whole command: the pod's, alone.
    let keyed: Vec<u64> = counts
        .iter()
        .filter(|((_, _, nr), _)| *nr == UDMABUF_KEY)
        .map(|(_, calls)| *calls)
        .collect();
    assert_eq!(keyed, [POD_UDMABUFS], "{counts:?}");

    // Linked once, adopted by the restarted agent.
    let linked = results.log_lines("linked to dma_heap_ioctl");
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_eq!(results.log_lines("linked to udmabuf_ioctl").len(), 1);
    assert!(results.log_lines("cannot hook").is_empty());
    let fentry = results.log_lines("entries:");
    assert_eq!(fentry.len(), 1, "{fentry:?}");
    assert!(
        fentry[0].contains("hook is verified against drm_ioctl alone, so dma_heap_ioctl, udmabuf_ioctl (the claimed character devices' ioctl entries) are not hooked and their calls not counted: use a kprobe hook (--hook auto)"),
        "{}",
        fentry[0]
    );
    // The built-ins whose hardware is not here are named once per start.
    let absent = results.log_lines("no nodes of the character devices");
    assert_eq!(absent.len(), 3, "{absent:?}");
    assert!(
        absent[0].ends_with(
            "no nodes of the character devices neuron (class neuron_device), nvidia (major nvidia), nvidia-uvm (major nvidia-uvm), tenstorrent (class tenstorrent): not counted until they appear"
        ),
        "{}",
        absent[0]
    );
}

#[test]
fn allocations_outside_drm_on_bookworm_backports() {
    allocations_outside_drm_are_counted_exactly_per_pod(Kernel::BookwormBackports);
}

#[test]
fn allocations_outside_drm_on_sid() {
    allocations_outside_drm_are_counted_exactly_per_pod(Kernel::Sid);
}

/// Linux 6.1 has neither device (nor this VM any other claimed one): one
/// line says so, nothing fails.
#[test]
fn a_kernel_without_them_gets_one_line() {
    let results = support::guest::run(
        Kernel::Bookworm,
        "start_agent
         [ ! -e /dev/udmabuf ] && [ ! -e /dev/dma_heap ] || fail 'this kernel has them'
         stop_agent
         cp $AGENT_LOG /shared/agent.log",
    );
    let absent = results.log_lines("no nodes of the character devices");
    assert_eq!(absent.len(), 1, "{absent:?}");
    assert!(
        absent[0].ends_with(
            "no nodes of the character devices dma_heap (class dma_heap), neuron (class neuron_device), nvidia (major nvidia), nvidia-uvm (major nvidia-uvm), tenstorrent (class tenstorrent), udmabuf (misc device udmabuf): not counted until they appear"
        ),
        "{}",
        absent[0]
    );
    assert!(results.log_lines("linked to").is_empty());
    assert!(results.log_lines("entries:").is_empty());
}
