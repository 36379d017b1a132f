//! The kernel program and the agent in real kernels (Debian 12's 6.1,
//! bookworm-backports' 6.12, sid's newest), with qemu's virtio-gpu and the
//! vgem module as the accelerators and a bochs display as a DRM device no
//! vendor claims. Each test runs on every x86_64 kernel, and the ones that
//! show exactness also on arm64's (Debian 12's 6.1 and sid's newest).

#[macro_use]
mod support;

use kubenpu_vm::{Arch, Kernel};
use support::guest::{Counts, Results, example, run, run_with};

/// Declares `$test` once per x86_64 kernel.
macro_rules! on_every_x86_64_kernel {
    ($($test:ident),* $(,)?) => {
        on_kernels!(
            [bookworm => Bookworm, bookworm_backports => BookwormBackports, sid => Sid]:
            $($test),*
        );
    };
}

// The oldest and the newest kernel: kprobe, and a kprobe session on a
// kernel that preempts kernel code.
on_kernels!([bookworm => Bookworm, sid => Sid]: every_vcpu_counts_into_the_same_keys_and_the_scrape_is_exact);

// kprobe.multi needs fprobe: Debian's 6.12 and newer, not 6.1.
on_kernels!([bookworm_backports => BookwormBackports, sid => Sid]: exact_counts_with_kprobe_multi);

// On arm64 too, on an emulated CPU slower than x86's, so only these: exact
// counts under every hook the kernel offers, with and without preemption;
// the tracked and untracked calls of several cgroups; an agent killed in
// the middle of a workload.
on_kernels!(
    [
        bookworm => Bookworm,
        bookworm_backports => BookwormBackports,
        sid => Sid,
        bookworm_arm64 => BookwormArm64,
        sid_arm64 => SidArm64
    ]:
    every_thread_is_counted_under_every_hook,
    exact_counts_with_auto,
    counts_survive_an_agent_killed_mid_workload,
);

on_every_x86_64_kernel!(
    exact_counts_with_kprobe,
    exact_counts_with_fentry,
    a_full_counter_map_counts_as_map_full,
    a_plugin_added_while_running_changes_what_is_counted,
    counting_resumes_after_drm_is_reloaded,
    an_incompatible_layout_is_replaced_and_cleanup_removes_everything,
);

// Two NUMA nodes with virtio-gpu on the second: x86_64's pc machine.
on_kernels!([sid => Sid]: calls_from_another_numa_node_are_counted_as_remote);

/// Two NUMA nodes of one vCPU each, virtio-gpu behind an expander bridge
/// on node 1: a workload pinned to node 1's CPU calls the device locally,
/// one pinned to node 0's remotely, each with more threads than its CPU
/// (preempted inside calls on this kernel), each call counted exactly.
fn calls_from_another_numa_node_are_counted_as_remote(kernel: Kernel) {
    const CALLS: u64 = 1500;
    const THREADS: u64 = 4;
    const ISSUED: u64 = 2 * THREADS * CALLS;
    let results = run_with(
        kernel,
        |vm| vm.cpus(2).numa_nodes(2),
        &format!(
            "node=$(cat /sys/class/drm/$(basename $VIRTIO_RENDER)/device/numa_node)
             [ \"$node\" = 1 ] || fail \"virtio-gpu is on NUMA node $node, not 1\"
             start_agent
             for side in near:1 far:0; do
               name=${{side%:*}}
               in_cgroup $name busybox taskset -c ${{side#*:}} kubenpu-workload --threads {THREADS} \
                 $VIRTIO_RENDER:0x48:{CALLS} $VIRTIO_RENDER:0x42:{CALLS} | sed \"s/^/$name /\" >> /shared/issued
             done
             snapshot final
             busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics
             stop_agent"
        ),
    );
    let json: serde_json::Value = serde_json::from_str(&results.file("final.counts.json")).unwrap();
    let per_cgroup = |name: &str| {
        let id = results.cgroup_id(name);
        json["counters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cgroup_id"] == id)
            .fold((0, 0), |(calls, remote), c| {
                (
                    calls + c["calls"].as_u64().unwrap(),
                    remote + c["remote"].as_u64().unwrap(),
                )
            })
    };
    assert_eq!(per_cgroup("near"), (ISSUED, 0), "{json}");
    assert_eq!(per_cgroup("far"), (ISSUED, ISSUED), "{json}");
    // Both cgroups are outside pods: one series per kind, their sum.
    let metrics = results.file("metrics");
    let remote: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("kubenpu_remote_numa_ioctl_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(remote, ISSUED, "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kubenpu_device_info{") && l.contains(r#"numa_node="1""#)),
        "{metrics}"
    );
}

/// Two child cgroups and the root cgroup issue tracked and untracked
/// ioctls on the tracked devices and on the unclaimed bochs device; the
/// counters must equal the tracked calls exactly, and nothing else.
fn exact_counts(kernel: Kernel, hook: &str) -> Results {
    let results = run(
        kernel,
        &format!(
            "BOCHS=$(drm_node bochs-drm card)
             start_agent --hook {hook}
             issue a $VIRTIO_CARD:0x48:3000 $VIRTIO_CARD:0x43:700 $VGEM_CARD:0x41:1500 $VGEM_CARD:0xb2:250 $BOCHS:0xb2:400
             issue b $VIRTIO_RENDER:0x48:2000 $VIRTIO_RENDER:0xc3:60 $VGEM_RENDER:0x41:900 $VGEM_CARD:0x00:300
             issue - $VIRTIO_CARD:0x48:111 $VGEM_CARD:0xb2:222 $BOCHS:0x00:50
             snapshot final
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    let (counts, losses) = results.counts("final");
    let expected = results.expected("final", &["a", "b", "-"]);
    assert_eq!(counts, expected, "{kernel}, --hook {hook}");
    // The checks above must have had something to compare: 3 cgroups,
    // tracked calls on both vendors, untracked ones on every device.
    assert_eq!(expected.len(), 8, "{expected:?}");
    assert_eq!(
        expected.values().sum::<u64>(),
        3000 + 1500 + 250 + 2000 + 60 + 900 + 111 + 222
    );
    let bochs = results
        .issued(&["a"])
        .into_iter()
        .find(|(_, _, nr, calls)| *nr == 0xb2 && *calls == 400)
        .unwrap()
        .1;
    assert_eq!(
        results.vendor_of(&bochs),
        None,
        "the bochs display must be unclaimed"
    );
    assert!(losses.values().all(|&n| n == 0), "{losses:?}");
    results
}

/// Threads issued per vCPU: preemption inside a hook shows only with
/// more busy threads than CPUs.
const THREADS_PER_CPU: u32 = 4;
const CPUS: u32 = 2;
const CALLS_PER_THREAD: u64 = 2500;

/// Eight threads on two vCPUs share one fd in one cgroup, under each hook
/// the kernel offers: every call is counted or counted as dropped, and
/// under `auto` every call is counted (on sid: save rare skips the kernel
/// counts as recursion, see below). fentry's skips (on kernels that
/// preempt kernel code) show as `recursion` losses, never silently.
/// `auto` is the kprobe session where the kernel has them (6.10+).
fn every_thread_is_counted_under_every_hook(kernel: Kernel) {
    // Debian's 6.1 has no fprobe (CONFIG_FPROBE), so no kprobe.multi nor
    // session, and on arm64 no ftrace direct calls (they came in 6.4), so
    // no fentry.
    let hooks: &[&str] = match (kernel.suite(), kernel.arch()) {
        ("bookworm", Arch::Amd64) => &["auto", "kprobe", "fentry"],
        ("bookworm", Arch::Arm64) => &["auto", "kprobe"],
        _ => &["auto", "kprobe", "kprobe-multi", "fentry"],
    };
    // kprobe sessions need fprobe on the function-graph stack (6.14+):
    // on 6.12 auto passes them over, and on 6.1 kprobe.multi too.
    let auto_hook = match kernel.suite() {
        "bookworm" => "kprobe-multi unavailable",
        "bookworm-backports" => "kprobe-multi attached",
        _ => "kprobe-session attached",
    };
    let threads = THREADS_PER_CPU * CPUS;
    let mut runs: Vec<String> = hooks
        .iter()
        .map(|hook| {
            format!(
                "start_agent --hook {hook}
                 issue t-{hook} --threads {threads} $VIRTIO_RENDER:0x48:{CALLS_PER_THREAD}
                 snapshot {hook}
                 stop_agent
                 kubenpu-agent --cleanup"
            )
        })
        .collect();
    // A hook the kernel lacks is refused in one line that names the one to use.
    let no_fentry = !hooks.contains(&"fentry");
    if no_fentry {
        runs.push(
            "! kubenpu-agent --hook fentry > /shared/fentry.err 2>&1 || fail 'fentry attached'"
                .into(),
        );
    }
    let results = run_with(
        kernel,
        // Up to four hooks, 20,000 calls each on eight threads, under TCG:
        // about three minutes alone, more beside other tests.
        |vm| vm.cpus(CPUS).timeout(std::time::Duration::from_secs(900)),
        &format!(
            "{}
             cp $AGENT_LOG /shared/agent.log",
            runs.join("\n")
        ),
    );
    let issued = u64::from(threads) * CALLS_PER_THREAD;
    for hook in hooks {
        let cgroup = format!("t-{hook}");
        let (counts, losses) = results.counts(hook);
        assert_eq!(results.issued(&[&cgroup])[0].3, issued);
        let id = results.cgroup_id(&cgroup);
        let counted: u64 = counts
            .iter()
            .filter(|((cg, _, _), _)| *cg == id)
            .map(|(_, n)| n)
            .sum();
        let dropped: u64 = losses.values().sum();
        eprintln!("{kernel} --hook {hook}: {counted} counted, {losses:?} dropped, of {issued}");
        // A session's one program counts the skips of both its sides: a
        // skipped return adds to `recursion` although its call was counted.
        let session = *hook == "auto" && auto_hook == "kprobe-session attached";
        if session {
            assert!(
                counted <= issued && counted + dropped >= issued,
                "{kernel} --hook {hook}: every call is counted or dropped by reason ({losses:?})"
            );
        } else {
            assert_eq!(
                counted + dropped,
                issued,
                "{kernel} --hook {hook}: every call is counted or dropped by reason ({losses:?})"
            );
        }
        // On a kernel that preempts kernel code (sid), a kprobe-type
        // program is also skipped while a bpf(2) map access on that CPU
        // holds the kernel's per-CPU `bpf_prog_active` and is preempted.
        // The agent's scrapes and sweeps read through map iterators, which
        // do not; its look-up of a new cgroup's path and the write of its
        // owner still do: rarely, counted as recursion, never silently.
        let may_skip = *hook == "fentry" || kernel.suite() == "sid";
        if !may_skip {
            assert_eq!(dropped, 0, "{kernel} --hook {hook}: {losses:?}");
        }
        assert_eq!(
            dropped, losses["recursion"],
            "{kernel} --hook {hook}: {losses:?}"
        );
    }
    if no_fentry {
        let refusal = results.file("fentry.err");
        assert!(
            refusal.lines().any(|l| l.contains(
                "fentry unavailable: this kernel cannot attach BPF trampolines to kernel functions"
            ) && l.contains("use --hook kprobe")),
            "{refusal}"
        );
    }
    let auto = results.log_lines("hook kprobe");
    assert!(
        auto[0].contains("runs with preemption disabled") && auto[0].contains(auto_hook),
        "{auto:?}"
    );
}

/// vCPUs of the shared-counter test: every one adds to the same keys.
const SPREAD_CPUS: u32 = 8;

/// Sixteen threads, two pinned to each of eight vCPUs, count the same two
/// ioctls on one fd each in one cgroup: every call adds to one of two
/// counters from every CPU at once. What `/metrics` exports is what the
/// kernel counted, and that is every call, or a call the kernel skipped
/// and counted as such.
fn every_vcpu_counts_into_the_same_keys_and_the_scrape_is_exact(kernel: Kernel) {
    let threads = 2 * SPREAD_CPUS;
    let results = run_with(
        kernel,
        |vm| vm.cpus(SPREAD_CPUS).timeout(std::time::Duration::from_secs(600)),
        &format!(
            "[ \"$(nproc)\" = {SPREAD_CPUS} ] || fail \"$(nproc) vCPUs, not {SPREAD_CPUS}\"
             start_agent
             issue spread --threads {threads} --spread $VIRTIO_RENDER:0x48:{CALLS_PER_THREAD} $VGEM_RENDER:0x41:{CALLS_PER_THREAD}
             snapshot final
             # Until the agent has named the cgroup (outside any pod) and
             # exports what the snapshot holds.
             counted=$(kubenpuctl counts | awk '$1 != \"lost\" && $1 != \"unmeasured\" {{s += $4}} END {{print s + 0}}')
             tries=0
             until busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics \\
                   && [ \"$(grep '^kubenpu_ioctl_total{{pod=\"\"' /shared/metrics | awk '{{s += $NF}} END {{print s + 0}}')\" = \"$counted\" ]; do
               tries=$((tries + 1)); [ $tries -lt 300 ] || break
               sleep 0.1
             done
             stop_agent
             cp $AGENT_LOG /shared/agent.log"
        ),
    );
    let (counts, losses) = results.counts("final");
    let issued = 2 * u64::from(threads) * CALLS_PER_THREAD;
    let expected = results.expected("final", &["spread"]);
    assert_eq!(
        expected.values().sum::<u64>(),
        issued,
        "both ioctls are counted ones: {expected:?}"
    );
    assert_eq!(
        counts.len(),
        2,
        "two keys, shared by every vCPU: {counts:?}"
    );
    let counted: u64 = counts.values().sum();
    // Only the kernel's own skips may miss a call: on a kernel that
    // preempts kernel code, while a bpf(2) map access on that CPU holds
    // `bpf_prog_active` (the agent's scrapes and sweeps read through
    // iterators, but a new cgroup's recorded path is still looked up, and
    // its owner written, with bpf(2); see every_thread_is_counted_...).
    assert!(
        losses
            .iter()
            .all(|(reason, &n)| n == 0 || reason == "recursion"),
        "{losses:?}"
    );
    assert_eq!(
        counted + losses["recursion"],
        issued,
        "{kernel}: every call counted or counted as skipped ({losses:?})"
    );
    if kernel.suite() == "bookworm" {
        assert_eq!(counts, expected, "6.1 never preempts kernel code");
    }
    let metrics = results.file("metrics");
    let exported: u64 = metrics
        .lines()
        .filter(|l| l.starts_with(r#"kubenpu_ioctl_total{pod="""#))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        exported, counted,
        "/metrics exports what the kernel counted:\n{metrics}"
    );
    assert!(
        metrics.contains(r#"reads="iterators""#),
        "{kernel}: the agent reads through map iterators:\n{metrics}"
    );
    eprintln!("{kernel}: {counted} of {issued} counted on {SPREAD_CPUS} vCPUs, {losses:?}");
}

fn exact_counts_with_kprobe(kernel: Kernel) {
    let results = exact_counts(kernel, "kprobe");
    assert_eq!(results.log_lines("hook kprobe: kprobe attached").len(), 1);
}

fn exact_counts_with_fentry(kernel: Kernel) {
    let results = exact_counts(kernel, "fentry");
    // Debian builds DRM as a module: fentry goes through its split BTF.
    assert_eq!(
        results
            .log_lines("hook fentry-module: fentry-module attached")
            .len(),
        1
    );
}

/// Also placement: asked for its scheduler where the kernel has no
/// sched_ext (Debian's 6.1 and 6.12), the agent says so in one line and
/// counts exactly on hints; hints alone on the newest (sched-ext there is
/// vm_placement's).
fn exact_counts_with_auto(kernel: Kernel) {
    let sched_ext = kernel.suite().starts_with("sid");
    let placement = if sched_ext { "hints" } else { "sched-ext" };
    let results = exact_counts(kernel, &format!("auto --placement {placement}"));
    assert_eq!(
        results
            .log_lines("placement: this kernel has no sched_ext (it needs CONFIG_SCHED_CLASS_EXT")
            .len(),
        usize::from(!sched_ext),
        "{}",
        results.output
    );
    // A kprobe session where the kernel's fprobe keeps return state per
    // task (6.14+: sid), kprobe.multi where it has fprobe (6.12).
    let expected = match kernel.suite() {
        "bookworm" => "hook kprobe: kprobe attached",
        "bookworm-backports" => "hook kprobe-multi: kprobe-multi attached",
        _ => "hook kprobe-session: kprobe-session attached",
    };
    assert_eq!(
        results.log_lines(expected).len(),
        1,
        "auto should pick the first exact hook the kernel offers"
    );
}

fn exact_counts_with_kprobe_multi(kernel: Kernel) {
    let results = exact_counts(kernel, "kprobe-multi");
    assert_eq!(
        results
            .log_lines("hook kprobe-multi: kprobe-multi attached")
            .len(),
        1
    );
}

fn a_full_counter_map_counts_as_map_full(kernel: Kernel) {
    let results = run(
        kernel,
        "start_agent --max-counters 4
         issue tiny $VIRTIO_CARD:0x48:100 $VIRTIO_CARD:0x44:100 $VIRTIO_CARD:0x47:100 \
                    $VGEM_CARD:0x41:100 $VGEM_CARD:0xb2:100 $VGEM_RENDER:0x41:100
         snapshot final
         stop_agent",
    );
    let (counts, losses) = results.counts("final");
    let counted: u64 = counts.values().sum();
    assert!(counts.len() <= 4, "{counts:?}");
    // No call skipped while the agent writes a new cgroup's owner: its
    // map writes run unpreempted.
    assert_eq!(losses["recursion"], 0, "{losses:?}");
    assert!(losses["map_full"] >= 200, "{losses:?}");
    assert_eq!(
        counted + losses["map_full"],
        600,
        "every call is either counted or lost by reason: {losses:?}"
    );
}

/// A million calls in one cgroup, during which the agent is killed and
/// started again: each call counted, nothing else, and nothing lost.
fn counts_survive_an_agent_killed_mid_workload(kernel: Kernel) {
    let results = run(
        kernel,
        "start_agent
         issue r $VIRTIO_RENDER:0x48:1000000 &
         WORKLOAD=$!
         sleep 1
         kill -0 $WORKLOAD || fail 'the workload ended before the agent was killed'
         kill -KILL $AGENT_PID
         wait $AGENT_PID || true
         start_agent
         wait $WORKLOAD
         snapshot final
         stop_agent
         cp $AGENT_LOG /shared/agent.log",
    );
    let (counts, losses) = results.counts("final");
    let id = results.cgroup_id("r");
    assert_eq!(
        counts.get(&(id, results.issued(&["r"])[0].1.clone(), 0x48)),
        Some(&1_000_000),
        "{kernel}: losses {losses:?}; agent log:\n{}",
        results.file("agent.log")
    );
    // A million calls, every one counted and nothing else.
    assert_eq!(counts, results.expected("final", &["r"]));
    assert!(losses.values().all(|&n| n == 0), "{losses:?}");
    assert_eq!(
        results.log_lines("adopted the pinned").len(),
        1,
        "the second agent must adopt the first's link"
    );
}

fn a_plugin_added_while_running_changes_what_is_counted(kernel: Kernel) {
    let results = run(
        kernel,
        "mkdir -p /plugins
         PLUGINS_DIR=/plugins
         start_agent --plugins-dir /plugins
         issue before $VGEM_CARD:0x41:100 $VGEM_CARD:0x42:100 $VIRTIO_RENDER:0x48:100
         snapshot before
         cp /vgem-alt.wasm /plugins/.vgem-alt.partial
         mv /plugins/.vgem-alt.partial /plugins/vgem-alt.wasm
         wait_log 'vgem 2.0.0-test (/plugins/vgem-alt.wasm)' 1 5
         issue after $VGEM_CARD:0x41:100 $VGEM_CARD:0x42:100 $VIRTIO_RENDER:0x48:100
         snapshot after
         stop_agent",
    );
    let (counts, _) = results.counts("after");
    let (before_only, _) = results.counts("before");
    let mut expected: Counts = results.expected("before", &["before"]);
    expected.extend(results.expected("after", &["after"]));
    assert_eq!(counts, expected);
    assert_eq!(before_only, results.expected("before", &["before"]));
    // The swap is visible: FENCE_ATTACH counted before, FENCE_SIGNAL after,
    // and virtio_gpu counted alike throughout.
    let per_nr = |cgroup: &str, nr: u64| {
        let id = results.cgroup_id(cgroup);
        counts
            .iter()
            .filter(|((cg, _, n), _)| *cg == id && *n == nr)
            .map(|(_, c)| *c)
            .sum::<u64>()
    };
    assert_eq!(
        (
            per_nr("before", 0x41),
            per_nr("before", 0x42),
            per_nr("before", 0x48)
        ),
        (100, 0, 100)
    );
    assert_eq!(
        (
            per_nr("after", 0x41),
            per_nr("after", 0x42),
            per_nr("after", 0x48)
        ),
        (0, 100, 100)
    );
}

fn counting_resumes_after_drm_is_reloaded(kernel: Kernel) {
    // A kprobe does not pin the module (fentry does, so drm cannot be
    // unloaded under it); the agent must notice the reload and re-attach.
    let results = run(
        kernel,
        "start_agent --hook kprobe --rescan-interval 250ms
         issue old $VIRTIO_RENDER:0x48:100
         drm_modules=$(grep -E '^(drm|ttm|virtio[-_]gpu|vgem|bochs)' /lib/modules/load-order)
         for m in $(echo \"$drm_modules\" | tac); do rmmod ${m%.ko}; done
         grep -q '^drm ' /proc/modules && fail 'drm is still loaded'
         for m in $drm_modules; do insmod /lib/modules/$m; done
         wait_log 're-attached after the drm module was reloaded' 1 10
         sleep 1
         VIRTIO_RENDER=$(drm_node virtio_gpu renderD)
         issue new $VIRTIO_RENDER:0x48:100
         snapshot final
         stop_agent
         cp $AGENT_LOG /shared/agent.log",
    );
    let (counts, _) = results.counts("final");
    assert_eq!(counts, results.expected("final", &["old", "new"]));
    assert_eq!(counts.values().sum::<u64>(), 200);
}

fn an_incompatible_layout_is_replaced_and_cleanup_removes_everything(kernel: Kernel) {
    let results = run_with(
        kernel,
        |vm| vm.binary(example("prog_stats")),
        "start_agent
         issue v1 $VIRTIO_RENDER:0x48:100
         stop_agent
         start_agent --max-counters 8192
         issue v2 $VIRTIO_RENDER:0x48:100
         snapshot final
         # Programs are freed after an RCU grace period: give it 5 s. The
         # running agent's map iterators are not hooks.
         settle() { for i in $(seq 50); do [ \"$(prog_stats | grep -vc ^kubenpu_dump)\" -le \"$1\" ] && break; sleep 0.1; done; }
         settle 2
         prog_stats > /shared/programs
         stop_agent
         ls /sys/fs/bpf/kubenpu > /shared/pins
         kubenpu-agent --cleanup
         [ ! -e /sys/fs/bpf/kubenpu ] || fail 'cleanup left /sys/fs/bpf/kubenpu'
         settle 0
         prog_stats > /shared/programs-after-cleanup
         cp $AGENT_LOG /shared/agent.log",
    );
    let (counts, _) = results.counts("final");
    // The old layout's counts went with its maps; the new program counts.
    assert_eq!(counts, results.expected("final", &["v2"]));
    assert_eq!(counts.values().sum::<u64>(), 100);
    assert!(results.log_lines("adopted").is_empty());
    // auto's hook: a pair, or on sid a session, one program for both sides;
    // from 6.12 on, also linked to the DMA heap's and udmabuf's entries.
    let (pins, hook_programs): (&[&str], usize) = match kernel.suite() {
        "sid" => (&["entries", "link", "maps", "program"], 1),
        "bookworm-backports" => (
            &[
                "entries",
                "exit-link",
                "exit-program",
                "link",
                "maps",
                "program",
            ],
            2,
        ),
        _ => (&["exit-link", "exit-program", "link", "maps", "program"], 2),
    };
    assert_eq!(
        results.file("pins").split_whitespace().collect::<Vec<_>>(),
        pins
    );
    let programs = results.file("programs");
    let (iterators, hooks): (Vec<&str>, Vec<&str>) = programs
        .lines()
        .partition(|l| l.starts_with("kubenpu_dump"));
    assert_eq!(
        hooks.len(),
        hook_programs,
        "the replaced programs must be gone, the hook's programs running: {programs}"
    );
    assert_eq!(iterators.len(), 8, "the agent's map iterators: {programs}");
    assert_eq!(results.file("programs-after-cleanup"), "");
}
