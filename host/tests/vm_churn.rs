//! A busy node's churn in a real kernel: cgroups created, counted in and
//! removed by the thousand while the agent runs. Their counts are folded
//! and their map entries deleted, so the kernel map and the agent's memory
//! return to where they were; nothing is lost.

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
            "start_agent --rescan-interval 1s --debug
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
             # settle: until the map holds the root cgroup's counter alone.
             settle() {{
               tries=0
               while [ \"$(kubenpuctl counts --json | grep -c cgroup_id)\" -ne 1 ]; do
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
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    let (counts, losses) = results.counts("final");
    assert_eq!(
        counts,
        results.expected("final", &["-"]),
        "only the root cgroup's counter is left"
    );
    assert!(losses.values().all(|&n| n == 0), "{losses:?}");

    // Every gone cgroup's counter was folded (3 calls each, one counter).
    let folded: u64 = results
        .log_lines("counter(s) folded")
        .iter()
        .map(|line| {
            let counters = line.split(": ").last().unwrap();
            counters.split(' ').next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(folded, WARM_UP + CHURN);

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
