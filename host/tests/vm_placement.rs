//! Placement, in a real kernel with sched_ext (the newest): two NUMA
//! nodes of two CPUs, virtio-gpu on node 1, a pod on containerd whose
//! four threads alternate 3 ms of CPU work with an allocation on it and a
//! wait for it (which sleeps until the host has made it), beside a pod
//! with a busy loop on every CPU; neither has exclusive CPUs.
//!
//! - Under the kernel's scheduler (`--placement off`) and under the
//!   agent's (`sched-ext`), the share of calls made from node 0 is
//!   reported; under `sched-ext` it must be at most a fifth of the
//!   calls and a quarter of the kernel's scheduler's (the goal, 10 %, is
//!   BENCHMARKS.md's to report).
//! - A thread confined to node 0 never runs on node 1 while it calls the
//!   node-1 device: every one of its calls is remote, and its CPU,
//!   sampled, is always on node 0.
//! - No task starves: a busy task of nice 19 among four busy tasks per
//!   vCPU runs, and the scheduler stays in force through it.
//! - cgroups' `cpu.weight` holds through the hierarchy: busy loops in
//!   cgroups of different weights, with different numbers of threads,
//!   get the fair class's shares of one CPU, and cgroups that go leave
//!   no runnable weight counted in them.
//! - Safety: a killed agent leaves its scheduler running and the node
//!   working, and the next agent takes over, leaving the node on the
//!   kernel's scheduler for less than the watchdog's 5 s; a SysRq reset
//!   is logged with the kernel's reason and counted, and the agent stays
//!   on hints without loading the scheduler again; SIGTERM and
//!   `--cleanup` leave the node on the kernel's scheduler; a scheduler
//!   someone else loaded is never replaced.
//! - Counting stays exact throughout.
//!
//! Cost: one guest of about 250 to 310 s alone (containerd and four pods
//! under one host thread).

mod support;

use kubenpu_vm::Kernel;
use support::{
    exposition,
    guest::{run_with, with_containerd},
};

/// The busy pod's command: a busy loop per vCPU, each adding its
/// iterations to `/out/NAME.hogs` once the accelerator pod has written
/// `/out/NAME.json` (looked for every 20,000 iterations).
const BUSY: &str = r#"for cpu in 1 2 3 4; do
  sh -c 'i=0; while :; do i=$((i + 1)); if [ $((i % 20000)) = 0 ] && [ -e /out/'$1'.json ]; then echo $i >> /out/'$1'.hogs; exit; fi; done' &
done
wait
# Alive until removed, as a pod's container is: one that exits on its
# own while the test removes the pod races containerd's shim.
exec sleep 1000000
"#;

/// Rounds per thread (an allocation and a wait each), and threads, of
/// the measured workload.
const ROUNDS: u64 = 750;
const THREADS: u64 = 4;

#[test]
fn threads_run_near_their_device_and_the_node_is_never_left_without_a_scheduler() {
    let results = run_with(
        Kernel::Sid,
        |vm| {
            with_containerd(vm)
                .file("/busy.sh", 0o755, BUSY)
                .system_binary("/usr/bin/nice")
                .cpus(4)
                .numa_nodes(2)
        },
        "NODE0=$(cat /sys/devices/system/node/node0/cpulist)
         [ \"$(cat /sys/class/drm/$(basename $VIRTIO_RENDER)/device/numa_node)\" = 1 ] || fail 'virtio-gpu is not on node 1'
         state() { cat /sys/kernel/sched_ext/state; }
         ops() { cat /sys/kernel/sched_ext/root/ops 2>/dev/null || true; }
         # expect_state STATE [OPS]: sched_ext says so within 10 s.
         expect_state() {
           tries=0
           until [ \"$(state)\" = \"$1\" ] && [ \"$(ops)\" = \"${2:-}\" ]; do
             tries=$((tries + 1))
             [ \"$tries\" -lt 100 ] || fail \"sched_ext is $(state) with ops '$(ops)', not $1 '${2:-}'\"
             sleep 0.1
           done
         }
         # measure NAME N: in pods on containerd, made through CRI as
         # kubelet makes them: acc-NAME runs the accelerator threads, and
         # busy-NAME a busy loop per vCPU, whose iterations go to
         # /shared/NAME.hogs once acc-NAME is done.
         measure() {
           kubenpu-pods pod --dir \"$CRI_DIR\" --pod ml/busy-$1/00000000-0000-4000-8000-00000000000$2 --image \"$WORKLOAD_IMAGE\" \\
             --mount /shared:/out --container \"main=sh /out/busy.sh $1\" > /tmp/busy-$1.sandbox \\
             || fail \"cannot run pod busy-$1\"
           kubenpu-pods pod --dir \"$CRI_DIR\" --pod ml/acc-$1/00000000-0000-4000-8000-00000000001$2 --image \"$WORKLOAD_IMAGE\" \\
             --mount /shared:/out --device $VIRTIO_RENDER \\
             --container \"main=kubenpu-workload --threads 4 --work-us 3000 create-wait:$VIRTIO_RENDER:750 > /out/$1.part && mv /out/$1.part /out/$1.json\" \\
             > /tmp/acc-$1.sandbox || fail \"cannot run pod acc-$1\"
           wait_file /shared/$1.json 600
           tries=0
           until [ \"$(cat /shared/$1.hogs 2>/dev/null | wc -l)\" -eq 4 ]; do
             tries=$((tries + 1))
             [ \"$tries\" -lt 600 ] || fail \"busy-$1's loops did not all stop\"
             sleep 0.1
           done
           kubenpu-pods remove --dir \"$CRI_DIR\" \"$(cat /tmp/busy-$1.sandbox)\" || fail \"cannot remove pod busy-$1\"
           tries=0
           until busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics \\
             && grep -q \"kubenpu_ioctl_total{pod=.acc-$1.,namespace=.ml.,container=.main.,device=[^,]*,vendor=.virtio_gpu.,kind=.alloc.} 3000\" /shared/metrics \\
             && grep -q \"kubenpu_ioctl_total{pod=.acc-$1.,namespace=.ml.,container=.main.,device=[^,]*,vendor=.virtio_gpu.,kind=.wait.} 3000\" /shared/metrics; do
             tries=$((tries + 1))
             [ \"$tries\" -lt 300 ] || { grep 'ioctl_total' /shared/metrics; cat /shared/$1.json; fail \"acc-$1's calls were not all counted\"; }
             sleep 0.1
           done
           cp /shared/metrics /shared/$1.metrics
         }
         cp /busy.sh /shared/busy.sh
         . /pods.sh
         start_containerd

         start_agent --placement off --cri-socket $CRI_SOCKET
         measure off 1
         stop_agent
         expect_state disabled

         start_agent --placement sched-ext --cri-socket $CRI_SOCKET
         expect_state enabled kubenpu
         measure near 2
         # A thread confined to node 0, calling the node-1 device; its
         # CPU sampled while it runs.
         in_cgroup confined taskset -c $NODE0 kubenpu-workload --threads 1 --work-us 2000 $VIRTIO_RENDER:0x42:500 \\
           | sed 's/^/confined /' >> /shared/issued &
         CONFINED=$!
         while kill -0 $CONFINED 2>/dev/null; do
           cat /proc/[0-9]*/task/*/stat 2>/dev/null | grep ' (kubenpu-worklo' | awk '{print $39}' >> /shared/confined.cpus || true
           sleep 0.05
         done
         # A busy task of nice 19 among four busy tasks per vCPU runs, and
         # the scheduler stays in force: a low weight once held a task
         # back past the watchdog's 5 s, which stopped the scheduler.
         LOOPS=
         for i in $(seq 16); do sh -c 'while :; do :; done' & LOOPS=\"$LOOPS $!\"; done
         nice -n 19 sh -c 'while :; do :; done' &
         NICE=$!
         sleep 12
         awk '{print $14 + $15}' /proc/$NICE/stat > /shared/nice.ticks
         kill $LOOPS $NICE
         expect_state enabled kubenpu
         # cpu.weight holds through the hierarchy, on one CPU: wq (100)
         # beside wp (100), whose children heavy (200) and light (50)
         # share its half, and idle (10000) has no task, so no share.
         CG=/sys/fs/cgroup
         mkdir $CG/wq $CG/wp
         echo +cpu > $CG/wp/cgroup.subtree_control
         mkdir $CG/wp/heavy $CG/wp/light $CG/wp/idle
         echo 200 > $CG/wp/heavy/cpu.weight
         echo 50 > $CG/wp/light/cpu.weight
         echo 10000 > $CG/wp/idle/cpu.weight
         LAST=$(( $(nproc) - 1 ))
         LOOPS=
         for group in wq wp/heavy wp/light wp/light wp/light wp/light; do
           sh -c 'echo $$ > '$CG/$group'/cgroup.procs && exec taskset -c '$LAST' sh -c \"while :; do :; done\"' &
           LOOPS=\"$LOOPS $!\"
         done
         sleep 1
         usage() { for group in wq wp/heavy wp/light; do awk '/^usage_usec/ {print $2}' $CG/$group/cpu.stat; done; }
         usage > /shared/weights.before
         sleep 6
         usage > /shared/weights.after
         kill $LOOPS
         wait $LOOPS 2>/dev/null || true
         # Gone, they must leave no runnable weight counted in them.
         rmdir $CG/wp/heavy $CG/wp/light $CG/wp/idle $CG/wp $CG/wq || fail 'the weight cgroups did not go'
         expect_state enabled kubenpu
         wait_metrics 'no placement series' 'kubenpu_placement_mode{mode=\"sched-ext\",asked=\"sched-ext\"} 1' 'kubenpu_placement_decisions_total{decision=\"queued_near\"}'
         cp /shared/metrics /shared/near.metrics
         kubenpuctl placement > /shared/placement.txt || fail 'kubenpuctl placement failed'
         snapshot near

         # Killed: the scheduler stays, the node runs; the next agent
         # takes over.
         kill -KILL $AGENT_PID
         wait $AGENT_PID || true
         expect_state enabled kubenpu
         issue killed $VIRTIO_RENDER:0x42:200
         # sched_ext's state at every change, with the uptime, polled
         # every 10 ms while the next agent takes over.
         (last=; while :; do
            read now < /sys/kernel/sched_ext/state
            if [ \"$now\" != \"$last\" ]; then read up _ < /proc/uptime; echo \"$up $now\" >> /shared/takeover.states; last=$now; fi
            sleep 0.01
          done) &
         WATCH=$!
         start_agent --placement sched-ext
         expect_state enabled kubenpu
         kill $WATCH

         # Reset by SysRq: logged, counted, hints, never loaded again.
         echo S > /proc/sysrq-trigger
         wait_log 'the kernel stopped the sched_ext scheduler (sysrq'
         wait_metrics 'the stop was not counted' 'kubenpu_placement_scheduler_exits_total{kind=\"sysrq\"} 1' 'kubenpu_placement_mode{mode=\"hints\",asked=\"sched-ext\"} 1'
         sleep 3
         expect_state disabled
         issue reset $VIRTIO_RENDER:0x42:200
         snapshot reset
         stop_agent

         # SIGTERM, then --cleanup after a kill: the kernel's scheduler.
         start_agent --placement sched-ext
         expect_state enabled kubenpu
         stop_agent
         expect_state disabled
         start_agent --placement sched-ext
         expect_state enabled kubenpu
         kill -KILL $AGENT_PID
         wait $AGENT_PID || true
         kubenpu-agent --cleanup >> $AGENT_LOG 2>&1 || fail '--cleanup failed'
         expect_state disabled

         # Someone else's scheduler: never replaced.
         kubenpu-pods scheduler --name other > /tmp/other.log 2>&1 &
         OTHER=$!
         expect_state enabled other
         start_agent --placement sched-ext
         wait_log 'another sched_ext scheduler (\"other\", enabled) is in force'
         issue beside $VIRTIO_RENDER:0x42:200
         expect_state enabled other
         stop_agent
         expect_state enabled other
         kill -TERM $OTHER
         wait $OTHER || true
         expect_state disabled
         snapshot final
         cp $AGENT_LOG /shared/agent.log",
    );
    // Counted exactly under every scheduler (--cleanup removes the counts:
    // each snapshot holds those since the last). The pods' calls are
    // checked by the metrics the script waited for: all 3,000 allocations
    // and 3,000 waits each.
    for (snapshot, cgroups) in [
        ("near", &["confined"][..]),
        ("reset", &["killed", "reset"]),
        ("final", &["beside"]),
    ] {
        let (counts, losses) = results.counts(snapshot);
        assert!(losses.values().all(|&n| n == 0), "{snapshot}: {losses:?}");
        for (cgroup, device, nr, calls) in results.issued(cgroups) {
            let counted = counts.get(&(results.cgroup_id(&cgroup), device.clone(), nr));
            assert_eq!(
                counted,
                Some(&calls),
                "{cgroup} on {device}: counted exactly"
            );
        }
    }
    let issued = THREADS * ROUNDS * 2;
    let pod = |name: &str, family: &str| {
        let metrics = results.file(&format!("{name}.metrics"));
        exposition::per_pod(&metrics, family)
            .get(&format!("acc-{name}"))
            .copied()
            .unwrap_or(0)
    };
    for name in ["off", "near"] {
        assert_eq!(pod(name, "kubenpu_ioctl_total{"), issued, "acc-{name}");
    }
    let remote = |name: &str| pod(name, "kubenpu_remote_numa_ioctl_total{");
    let (off, near) = (remote("off"), remote("near"));
    println!(
        "remote calls: {off} of {issued} under the kernel's scheduler, {near} of {issued} under sched-ext"
    );
    // The goal is at most 10 %: 8 to 31 of 6,000 in this test's runs, 5
    // to 75 of 3,000 waits in a script of the same shape (BENCHMARKS.md). The test
    // fails well above that and well below the kernel's scheduler alone,
    // so that a loaded CI machine does not fail it by chance.
    assert!(
        near * 5 <= issued && near * 4 <= off,
        "{near} of {issued} calls were remote under sched-ext, {off} under the kernel's scheduler"
    );
    // Every call of the confined thread came from node 0, and it was
    // never seen on node 1's CPUs (2 and 3).
    assert_eq!(results.remote("near", "confined"), 500);
    let cpus = results.file("confined.cpus");
    assert!(
        !cpus.trim().is_empty(),
        "the confined thread was never sampled"
    );
    for cpu in cpus.split_whitespace() {
        assert!(
            matches!(cpu, "0" | "1"),
            "the confined thread ran on CPU {cpu}"
        );
    }
    // Reported, not asserted: under TCG, rates vary from run to run (see
    // BENCHMARKS.md for repeated runs).
    for name in ["off", "near"] {
        let workload: serde_json::Value =
            serde_json::from_str(&results.file(&format!("{name}.json"))).unwrap();
        let seconds = workload["elapsed_ns"].as_u64().unwrap() as f64 / 1e9;
        let loops: u64 = results
            .file(&format!("{name}.hogs"))
            .split_whitespace()
            .map(|n| n.parse::<u64>().unwrap())
            .sum();
        println!(
            "{name}: {:.0} accelerator iterations/s, {:.0} busy-loop iterations/s",
            (THREADS * ROUNDS) as f64 / seconds,
            loops as f64 / seconds
        );
    }
    // The takeover leaves the node without the scheduler for less than
    // one watchdog period (5 s): from the first state other than enabled
    // to enabled again.
    let states: Vec<(f64, String)> = results
        .file("takeover.states")
        .lines()
        .map(|line| {
            let (up, state) = line.split_once(' ').unwrap();
            (up.parse().unwrap(), state.to_string())
        })
        .collect();
    assert_eq!(
        states.first().map(|s| s.1.as_str()),
        Some("enabled"),
        "{states:?}"
    );
    assert_eq!(
        states.last().map(|s| s.1.as_str()),
        Some("enabled"),
        "{states:?}"
    );
    // The agent replaces the scheduler (it switches its predecessor's
    // out): a takeover not seen at all would be a scheduler left in place.
    let left = states
        .iter()
        .position(|s| s.1 != "enabled")
        .unwrap_or_else(|| panic!("no takeover was seen: {states:?}"));
    let gap = states[left + 1..]
        .iter()
        .find(|s| s.1 == "enabled")
        .map(|back| back.0 - states[left].0)
        .unwrap();
    assert!(
        gap < 5.0,
        "the takeover left the node without the scheduler for {gap:.2} s: {states:?}"
    );
    println!("takeover: {gap:.2} s without the scheduler (polled every 10 ms)");
    let nice_ticks: u64 = results.file("nice.ticks").trim().parse().unwrap();
    // 48 ticks by hand with the lead of five slices (128 to 139 with one
    // slice); a task held back for seconds would have next to none.
    assert!(
        nice_ticks >= 10,
        "the task of nice 19 ran {nice_ticks} ticks in 12 s"
    );
    println!("nice 19 among 16 busy tasks: {nice_ticks} ticks of CPU in 12 s");
    // CPU time of wq, wp/heavy and wp/light on one CPU: the fair class's
    // shares are half, 40 % and 10 % (3.02, 2.40 and 0.64 s of 6 s
    // measured). Weighed per task instead, heavy/light would be 0.25 and
    // wq/wp 0.2; counting the idle cgroup, wp would get next to nothing.
    let usage = |file: &str| -> Vec<f64> {
        results
            .file(file)
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let (before, after) = (usage("weights.before"), usage("weights.after"));
    let used: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let (wq, heavy, light) = (used[0], used[1], used[2]);
    println!(
        "cpu.weight on one CPU: wq {wq:.0} µs, wp/heavy {heavy:.0} µs, wp/light {light:.0} µs"
    );
    assert!(
        (2.5..=6.0).contains(&(heavy / light)),
        "heavy/light {:.2}, not about 4",
        heavy / light
    );
    assert!(
        (0.6..=1.6).contains(&(wq / (heavy + light))),
        "wq/wp {:.2}, not about 1",
        wq / (heavy + light)
    );
    // Every cgroup that went (the busy pod's, the weight check's) had no
    // runnable weight left counted in it, and every one was kept.
    let near = results.file("near.metrics");
    for fault in ["untracked", "miscounted"] {
        let series = format!("kubenpu_placement_cgroup_faults_total{{fault=\"{fault}\"}} 0");
        assert!(near.contains(&series), "not {series}");
    }
    let placement = results.file("placement.txt");
    assert!(
        placement.starts_with(
            "placement: sched-ext (asked sched-ext); sched_ext enabled, scheduler kubenpu\nscheduler: "
        ),
        "{placement}"
    );
    assert!(placement.contains("queued_near "), "{placement}");
    assert_eq!(
        results.log_lines("placement stays on hints").len(),
        2,
        "{}",
        results.output
    );
}
