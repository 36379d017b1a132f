//! A busy node's churn in a real kernel: cgroups created, counted in and
//! removed by the thousand while the agent runs, each removed the moment
//! its last process exits, with a sweep every 50 ms. The counters of the
//! gone cgroups are merged into one (they share an owner), so the kernel
//! map and the agent's memory return to where they were, and the exported
//! total is every call issued, exactly: no call lands between a read and
//! a delete.

mod support;

use kubenpu_vm::Kernel;
use support::guest::run;

/// How many short-lived cgroups, after a warm-up of `WARM_UP`.
const CHURN: u64 = 1000;
const WARM_UP: u64 = 200;

#[test]
fn a_thousand_short_lived_cgroups_leave_nothing_behind() {
    let results = run(
        Kernel::Sid,
        &format!(
            "start_agent --rescan-interval 50ms --debug
             issue - $VGEM_CARD:0x41:10
             # churn N: N cgroups, each counted in (3 calls) and removed.
             churn() {{
               i=0
               while [ $i -lt $1 ]; do
                 d=/sys/fs/cgroup/churn$i
                 mkdir $d
                 sh -c 'echo $$ > \"$0/cgroup.procs\" && exec kubenpu-workload \"$1:0x41:3\" >/dev/null' $d $VGEM_CARD
                 rmdir $d
                 i=$((i + 1))
               done
             }}
             # settle: until the map holds the root cgroup's counter and
             # the one the gone cgroups were merged into.
             settle() {{
               tries=0
               while [ \"$(kubenpuctl counts --json | grep -c cgroup_id)\" -ne 2 ]; do
                 tries=$((tries + 1))
                 [ $tries -lt 300 ] || fail \"map entries of gone cgroups remain: $(kubenpuctl counts)\"
                 sleep 0.2
               done
             }}
             rss() {{ awk '/VmRSS/ {{ print $2 }}' /proc/$AGENT_PID/status; }}
             churn {WARM_UP}
             settle
             echo \"warm $(rss)\" >> /shared/rss
             churn {CHURN}
             settle
             echo \"after $(rss)\" >> /shared/rss
             snapshot final
             busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    let (counts, losses) = results.counts("final");
    // On a kernel that preempts kernel code (sid), a kprobe-type program
    // is skipped while the agent's own bpf(2) map access on that CPU holds
    // the kernel's per-CPU `bpf_prog_active` and is preempted: such calls
    // are counted as recursion, never silently, and nothing else is lost.
    let skipped = losses["recursion"];
    assert!(
        losses
            .iter()
            .all(|(reason, &n)| n == 0 || reason == "recursion"),
        "{losses:?}"
    );
    let root = results.expected("final", &["-"]);
    let ((_, device, nr), &root_calls) = root.iter().next().unwrap();
    assert!(
        root_calls <= 10 && root_calls + skipped >= 10,
        "{root_calls}"
    );
    let churned = 3 * (WARM_UP + CHURN);
    let merged: Vec<u64> = counts
        .iter()
        .filter(|((cgroup, d, n), _)| *cgroup != 1 && d == device && n == nr)
        .map(|(_, &calls)| calls)
        .collect();
    assert_eq!(
        merged.len(),
        1,
        "one merged counter holds every gone cgroup's calls"
    );
    assert_eq!(
        root_calls + merged[0] + skipped,
        10 + churned,
        "every call counted, or counted as skipped: {losses:?}"
    );
    assert_eq!(counts.len(), 2, "{counts:?}");

    // What Prometheus reads: the series of processes outside pods on vgem.
    let metrics = results.file("metrics");
    let exported: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with(r#"kubenpu_ioctl_total{pod="""#) && l.contains(r#"vendor="vgem""#)
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(exported, root_calls + merged[0], "{metrics}");
    eprintln!(
        "{} calls counted, {skipped} skipped by the kernel",
        root_calls + merged[0]
    );

    let rss: Vec<u64> = results
        .file("rss")
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    let (warm, after) = (rss[0], rss[1]);
    println!("agent RSS: {warm} KiB after {WARM_UP} cgroups, {after} KiB after {CHURN} more");
    assert!(
        after <= warm + 512,
        "the agent's memory grew by {} KiB over {CHURN} gone cgroups",
        after - warm
    );
}
