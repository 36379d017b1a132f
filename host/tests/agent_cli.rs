//! Mistakes a user can make with the agent, on this (host) machine: each is
//! one clear line and a non-zero exit, before anything is loaded.

use std::process::{Command, Output};

fn agent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubenpu-agent"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unknown_hook_is_refused_naming_the_choices() {
    let out = agent(&["--hook", "uprobe"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.starts_with("error: invalid value 'uprobe' for '--hook <HOOK>'"),
        "{text}"
    );
    assert!(
        text.contains("[possible values: auto, fentry, kprobe, kprobe-multi, kprobe-session]"),
        "{text}"
    );
}

#[test]
fn a_policy_needs_a_known_mode_and_the_allocation_join() {
    let out = agent(&["--policy", "block"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.starts_with("error: invalid value 'block' for '--policy <POLICY>'")
            && text.contains("[possible values: off, audit, enforce]"),
        "{text}"
    );
    // The policy rules what the join classified: without it, nothing.
    let out = agent(&["--policy", "enforce", "--no-allocation"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.starts_with(
            "error: the argument '--policy <POLICY>' cannot be used with '--no-allocation'"
        ),
        "{text}"
    );
    let out = agent(&[
        "--policy-file",
        "/etc/kubenpu/policy/policy.yaml",
        "--no-allocation",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.starts_with(
            "error: the argument '--policy-file <POLICY_FILE>' cannot be used with '--no-allocation'"
        ),
        "{text}"
    );
    // Each rescan renews the checks' lease: it must outlast two.
    let out = agent(&["--policy", "audit", "--policy-lease", "3s"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains("--policy-lease 3s is shorter than twice --rescan-interval 2s"),
        "{text}"
    );
}

#[test]
fn zero_intervals_and_a_huge_counter_map_are_refused_in_one_line() {
    for (args, says) in [
        (
            ["--drain-interval", "0ms"],
            "\"0ms\" is zero: give a duration above 0",
        ),
        (
            ["--rescan-interval", "0s"],
            "\"0s\" is zero: give a duration above 0",
        ),
        (
            ["--max-counters", "100000000"],
            "100000000 counters would preallocate about",
        ),
    ] {
        let out = agent(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let text = stderr(&out);
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!(
                "error: invalid value '{}' for '{}",
                args[1], args[0]
            )) && first.contains(says),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn without_privileges_it_says_which_capabilities_it_needs() {
    let out = Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_kubenpu-agent"))
        .output()
        .expect("setpriv (util-linux) runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "kubenpu-agent: needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load and attach its program: run it as root or grant them\n"
    );
}

#[test]
fn a_pin_path_outside_bpffs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pins = dir.path().join("pins");
    let out = agent(&[
        "--pin-path",
        pins.to_str().unwrap(),
        "--plugins-dir",
        "/nonexistent",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "cannot create {}: not on a BPF filesystem",
            pins.display()
        )),
        "{text}"
    );
}

#[test]
fn a_taken_port_is_one_line_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = agent(&["--listen", &addr]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with(&format!("kubenpu-agent: cannot listen on {addr}: ")),
        "{text}"
    );
    assert!(
        text.contains("(choose another address with --listen)"),
        "{text}"
    );
}

#[test]
fn a_cgroup_root_that_is_not_cgroup2_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent(&["--cgroup-root", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "kubenpu-agent: --cgroup-root {} is not a cgroup v2 hierarchy (no cgroup.procs in it)\n",
            dir.path().display()
        )
    );
}

#[test]
fn a_proc_root_that_is_not_procfs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent(&["--fdinfo", "--proc-root", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "kubenpu-agent: --proc-root {} is not a proc filesystem (it has no stat file): give the node's /proc for --fdinfo to read\n",
            dir.path().display()
        )
    );
}

#[test]
fn a_listen_address_must_be_host_and_port() {
    let out = agent(&["--listen", "8080"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid value '8080' for '--listen <LISTEN>'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn json_logs_are_one_object_per_line_even_for_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent(&[
        "--log-format",
        "json",
        "--cgroup-root",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(line["level"], "ERROR", "{text}");
    assert_eq!(
        line["message"],
        format!(
            "--cgroup-root {} is not a cgroup v2 hierarchy (no cgroup.procs in it)",
            dir.path().display()
        )
    );
    assert!(line["timestamp"].is_string(), "{text}");
}
