//! Faults a user can cause while the agent runs, in a real kernel (the
//! newest): a policy asked for on a kernel booted without BPF LSM in its
//! `lsm=` list, plugins whose names share a kernel table slot, more
//! plugins than the table holds, and a device unplugged while /metrics is
//! being scraped. Each gives one log line; the agent keeps counting
//! exactly and /healthz stays up.

mod support;

use kubenpu_vm::Kernel;
use support::{guest::run_with, numbered_plugin};

/// Distinct names with one FNV-1a hash: one kernel table slot.
const COLLIDING: [&str; 2] = ["collide-azunwxyz", "collide-a2wbaxyz"];
const MANY: usize = 70;

#[test]
fn rejected_plugins_and_an_unplugged_device_leave_the_agent_counting() {
    let results = run_with(
        Kernel::Sid,
        |mut vm| {
            // Every LSM Debian's kernel starts but bpf.
            vm = vm.kernel_arg("lsm=landlock,lockdown,yama,loadpin,safesetid,integrity,apparmor");
            for (i, name) in COLLIDING.iter().enumerate() {
                vm = vm.file(&format!("/colliding/c{i}.wasm"), 0o644, numbered_plugin(name));
            }
            for i in 0..MANY {
                let name = format!("vendor-{i:09}");
                vm = vm.file(&format!("/many/n-{i:03}.wasm"), 0o644, numbered_plugin(&name));
            }
            vm
        },
        "mkdir -p /plugins
         PLUGINS_DIR=/plugins
         start_agent --plugins-dir /plugins --rescan-interval 250ms --policy enforce
         issue before $VIRTIO_RENDER:0x48:100 $VGEM_RENDER:0x41:100
         cp /colliding/*.wasm /plugins/
         wait_log 'hashes to the kernel table slot' 1 60
         cp /many/*.wasm /plugins/
         wait_log 'holds 64 vendor tables' 29 120
         issue after $VIRTIO_RENDER:0x48:100 $VGEM_RENDER:0x41:100
         scrapes() {
           for i in $(seq 40); do
             busybox wget -q -O /dev/null http://127.0.0.1:8080/metrics || echo \"scrape $i failed\" >> /shared/scrape-errors
           done
         }
         scrapes &
         SCRAPES=$!
         rmmod vgem
         wait $SCRAPES
         issue unplugged $VIRTIO_RENDER:0x48:100
         busybox wget -q -O /shared/healthz http://127.0.0.1:8080/healthz || fail '/healthz did not answer'
         busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics || fail '/metrics did not answer'
         snapshot final
         stop_agent
         touch /shared/scrape-errors
         cp $AGENT_LOG /shared/agent.log",
    );
    let (counts, losses) = results.counts("final");
    assert!(losses.values().all(|&n| n == 0), "{losses:?}");
    // Counting went on throughout: virtio-gpu in every phase, vgem until
    // it was unplugged.
    let virtio: u64 = results
        .issued(&["before", "after", "unplugged"])
        .iter()
        .filter(|(_, _, nr, _)| *nr == 0x48)
        .map(|(cgroup, device, nr, calls)| {
            let counted = counts[&(results.cgroup_id(cgroup), device.clone(), *nr)];
            assert_eq!(counted, *calls, "{cgroup}");
            counted
        })
        .sum();
    assert_eq!(virtio, 300);
    let vgem: u64 = counts
        .iter()
        .filter(|((_, _, nr), _)| *nr == 0x41)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(vgem, 200);
    assert_eq!(results.file("scrape-errors"), "", "every scrape answered");
    assert!(!results.file("healthz").is_empty());

    // No BPF LSM: the policy falls back to off, in one line and a metric.
    let policy = results.log_lines("policy enforce falls back to off");
    assert_eq!(policy.len(), 1, "{policy:?}");
    assert!(
        policy[0].contains("BPF LSM is not active on this kernel (/sys/kernel/security/lsm lists ")
            && policy[0]
                .contains(",bpf (every LSM the node uses, and bpf); counting is unaffected"),
        "{}",
        policy[0]
    );
    let metrics = results.file("metrics");
    for series in [
        r#"kubenpu_policy_mode{mode="off",asked="enforce"} 1"#,
        "kubenpu_policy_lsm_available 0",
        "kubenpu_policy_ruled_cgroups 0",
    ] {
        assert!(metrics.contains(series), "{series}:\n{metrics}");
    }

    // One line per rejected plugin, naming the file and the fault.
    let slot = results.log_lines("rejected: its table");
    assert_eq!(slot.len(), 1, "{slot:?}");
    assert!(
        slot[0].ends_with(
            "plugin /plugins/c1.wasm rejected: its table \"collide-a2wbaxyz\" hashes to the kernel table slot of vendor collide-azunwxyz: rename one of them"
        ),
        "{}",
        slot[0]
    );
    // 22 tables of the built-ins (nvidia has two) and one colliding
    // vendor's in force: 41 of 70 more fit.
    let full = results.log_lines("holds 64 vendor tables");
    assert_eq!(full.len(), MANY - 41, "{full:?}");
    for (line, i) in full.iter().zip(41..) {
        assert!(
            line.ends_with(&format!(
                "plugin /plugins/n-{i:03}.wasm rejected: the kernel's ioctl table holds 64 vendor tables (one per vendor and per character device), all in force: remove a plugin first"
            )),
            "{line}"
        );
    }
    assert!(results.log_lines("panicked").is_empty());
}
