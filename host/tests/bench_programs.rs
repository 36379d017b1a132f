//! The benchmarks' yardsticks are what they claim to be (BENCHMARKS.md
//! compares the counting program with them): on every hook, the per-event
//! variant filters exactly as the agent does and its reader receives one
//! event per counted call, the empty pair (entry and exit) runs once per
//! call, and so do the table variants' lookups. The session's empty pair
//! is one program that runs twice per call. The LSM counting program
//! counts exactly the calls the agent counts, and nothing else.

mod support;

use kubenpu_vm::Kernel;
use support::guest::{example, run_with};

#[test]
fn the_per_event_variant_sees_every_counted_call_and_nothing_else() {
    let results = run_with(
        Kernel::Sid,
        |vm| {
            vm.binary(example("hook_variant"))
                .binary(example("prog_stats"))
        },
        "BOCHS=$(drm_node bochs-drm card)
         echo 1 > /proc/sys/kernel/bpf_stats_enabled
         start_agent
         stop_agent
         rm -f /sys/fs/bpf/kubenpu/link /sys/fs/bpf/kubenpu/program /sys/fs/bpf/kubenpu/exit-link /sys/fs/bpf/kubenpu/exit-program
         rm -rf /sys/fs/bpf/kubenpu/entries
         for i in $(seq 50); do [ -z \"$(prog_stats)\" ] && break; sleep 0.1; done
         [ -z \"$(prog_stats)\" ] || fail \"the agent's program is still loaded\"
         # variant VARIANT HOOK: the workload under it, and what it saw.
         variant() {
           # The last variant's log goes first: the new one truncates it
           # only once it runs, and its 'attached' would be taken for ours.
           rm -f /tmp/in /tmp/err; mkfifo /tmp/in
           hook_variant $1 $2 < /tmp/in > /shared/$1.$2 2> /tmp/err &
           HOLD=$!
           exec 3> /tmp/in
           # Attached (loaded is not enough: the entry side links last).
           for i in $(seq 600); do grep -q attached /tmp/err && break; sleep 0.1; done
           grep -q attached /tmp/err || fail \"hook_variant $1 $2: $(cat /tmp/err)\"
           kubenpu-workload $VIRTIO_RENDER:0x48:3000 $VGEM_CARD:0x41:700 $VIRTIO_RENDER:0x43:500 $BOCHS:0xb2:400 > /dev/null
           prog_stats > /shared/$1.$2.runs
           exec 3>&-
           wait $HOLD || fail \"hook_variant $1 $2 failed: $(cat /tmp/err)\"
           for i in $(seq 50); do [ -z \"$(prog_stats)\" ] && break; sleep 0.1; done
         }
         for hook in fentry kprobe kprobe-multi; do
           for v in per-event empty table-hash table-array; do variant $v $hook; done
         done
         variant empty kprobe-session
         variant count lsm
         cp $AGENT_LOG /shared/agent.log",
    );
    for hook in ["fentry", "kprobe", "kprobe-multi"] {
        // 3000 + 700 counted; the untracked ioctl and the unclaimed device
        // make none.
        assert_eq!(
            results.file(&format!("per-event.{hook}")).trim(),
            "events: 3700"
        );
        assert_eq!(results.file(&format!("empty.{hook}")).trim(), "events: 0");
        // The empty pair, entry and exit, ran for every call (other
        // processes may add a few of their own).
        let runs = results.file(&format!("empty.{hook}.runs"));
        assert_eq!(runs.lines().count(), 2, "{hook}: the empty pair:\n{runs}");
        // The table variants: the filter's lookups alone, on entry.
        for table in ["table-hash", "table-array"] {
            assert_eq!(results.file(&format!("{table}.{hook}")).trim(), "events: 0");
            let table_runs = results.file(&format!("{table}.{hook}.runs"));
            assert_eq!(
                table_runs.lines().count(),
                1,
                "{hook} {table}:\n{table_runs}"
            );
            assert_runs(&table_runs, hook, 1);
        }
        assert_runs(&runs, hook, 1);
    }
    // One program, run at the entry and at the return of every call.
    assert_eq!(results.file("empty.kprobe-session").trim(), "events: 0");
    let session = results.file("empty.kprobe-session.runs");
    assert_eq!(session.lines().count(), 1, "the session:\n{session}");
    assert_runs(&session, "kprobe-session", 2);
    // Every ioctl on the node passes file_ioctl, so the LSM program runs
    // for the untracked call and the unclaimed device too; it counts only
    // the calls the vendor tables keep, per ioctl number.
    assert_eq!(
        results.file("count.lsm").trim(),
        "events: 0\ncounted: 0x41 700 0\ncounted: 0x48 3000 0"
    );
    assert_runs(&results.file("count.lsm.runs"), "lsm", 1);
}

/// Every program in `prog_stats` lines ran `per_call` times per call of
/// the workload (other processes may add a few of their own).
fn assert_runs(stats: &str, hook: &str, per_call: u64) {
    for line in stats.lines() {
        let count: u64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(count >= 4600 * per_call, "{hook}: {line}");
    }
}
