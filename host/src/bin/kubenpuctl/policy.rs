//! `kubenpuctl policy`: the rules a running agent's checks hold, and why
//! one pod's calls on one device are refused or allowed.

use std::fmt::Write as _;

use kubenpu::server::{GrantRow, PolicyReport, RuledRow};

use crate::report::{Format, aligned, holder_cells, json};

/// The rules in force: each ruled container's grants, then what was
/// audited or refused.
pub fn table(report: &PolicyReport, format: Format) -> String {
    if format == Format::Json {
        return json(report);
    }
    let mut out = headline(report);
    let rows = report.ruled.iter().flat_map(|c| {
        let who = [&c.namespace, &c.pod, &c.container, &c.mode].map(|s| s.to_string());
        let grants: Vec<Vec<String>> = if c.grants.is_empty() {
            vec![
                ["-", "-", "-", "nothing allocated or allowed"]
                    .map(str::to_owned)
                    .to_vec(),
            ]
        } else {
            c.grants
                .iter()
                .map(|g| {
                    vec![
                        g.device.clone(),
                        words(&g.allows),
                        words(&g.denies),
                        g.because.clone(),
                    ]
                })
                .collect()
        };
        grants
            .into_iter()
            .map(move |grant| [who.to_vec(), grant].concat())
    });
    out.push_str(&aligned(
        &[
            "NAMESPACE",
            "POD",
            "CONTAINER",
            "MODE",
            "DEVICE",
            "ALLOWS",
            "DENIES",
            "BECAUSE",
        ],
        rows,
    ));
    out.push_str("every other device is refused to a ruled container (allocated-only)\n");
    if !report.refusals.is_empty() {
        out.push_str("\naudited or refused:\n");
        let rows = report.refusals.iter().map(|r| {
            let verdict = [&r.kind, &r.hook, &r.rule, &r.action].map(|s| s.to_string());
            [
                holder_cells(&r.holder),
                verdict.to_vec(),
                vec![r.calls.to_string()],
            ]
            .concat()
        });
        out.push_str(&aligned(
            &[
                "NAMESPACE",
                "POD",
                "CONTAINER",
                "DEVICE",
                "KIND",
                "HOOK",
                "RULE",
                "ACTION",
                "CALLS",
            ],
            rows,
        ));
    }
    out
}

/// Why `namespace/pod`'s calls on `device` (of `container`, or of each
/// of its containers) are refused or allowed, one line a container.
pub fn why(
    report: &PolicyReport,
    pod: (&str, &str),
    device: &str,
    container: Option<&str>,
) -> String {
    let (namespace, name) = pod;
    if !report.present {
        return "the agent runs no policy (it runs with --no-allocation): nothing is refused\n"
            .into();
    }
    if report.mode == "off" {
        return format!(
            "the node's policy is off (asked: {}): nothing is refused\n",
            report.asked
        );
    }
    if !report.checked.iter().any(|d| d == device) {
        return format!(
            "{device} is not a device the policy checks (it checks {}): nothing on it is refused; kubenpuctl devices names them\n",
            words(&report.checked)
        );
    }
    let ruled: Vec<&RuledRow> = report
        .ruled
        .iter()
        .filter(|c| c.namespace == namespace && c.pod == name)
        .filter(|c| container.is_none_or(|wanted| c.container == wanted))
        .collect();
    if ruled.is_empty() {
        return format!(
            "{namespace}/{name}{}: not ruled, so never refused (kubelet has not described it recently, its namespace's mode is off, or it does not run on this node)\n",
            container.map(|c| format!(" ({c})")).unwrap_or_default()
        );
    }
    let mut out = String::new();
    for c in ruled {
        let refusing = if c.mode == "enforce" {
            "refused"
        } else {
            "audited (let through)"
        };
        let decision = match c.grants.iter().find(|g| g.device == device) {
            None => format!(
                "{refusing} by allocated-only: kubelet did not allocate {device} to it, and no rule of the policy file allows it"
            ),
            Some(GrantRow { rule, .. }) if rule == "deny-device" => {
                format!("{refusing} by deny-device: the policy file denies it {device}")
            }
            Some(g) if !g.denies.is_empty() => format!(
                "{} {refusing} by deny-kind: the policy file denies it; {} allowed ({})",
                words(&g.denies),
                words(&g.allows),
                g.because
            ),
            Some(g) => format!("allowed ({})", g.because),
        };
        let counted: u64 = report
            .refusals
            .iter()
            .filter(|r| {
                (
                    r.holder.namespace.as_str(),
                    r.holder.pod.as_str(),
                    r.holder.container.as_str(),
                    r.holder.device.as_str(),
                ) == (namespace, name, c.container.as_str(), device)
            })
            .map(|r| r.calls)
            .sum();
        let _ = writeln!(
            out,
            "{namespace}/{name} ({}) on {device}, {}: {decision}; {counted} call(s) audited or refused so far",
            c.container, c.mode
        );
    }
    out
}

/// The mode line, and the policy file's state.
fn headline(report: &PolicyReport) -> String {
    if !report.present {
        return "the agent runs no policy (it runs with --no-allocation)\n".into();
    }
    let lsm = if report.lsm_available {
        "active"
    } else {
        "not active"
    };
    let file = match report.file_valid {
        None => "no policy file",
        Some(true) => "policy file in force",
        Some(false) => "policy file refused (the rules before it stay; see the agent's log)",
    };
    format!(
        "policy: {} (asked: {}); BPF LSM {lsm}; {file}\n",
        report.mode, report.asked
    )
}

/// Names joined by spaces; `-` for none.
fn words(names: &[String]) -> String {
    if names.is_empty() {
        "-".into()
    } else {
        names.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use kubenpu::server::{Holder, RefusalRow};

    use super::*;

    fn grant(device: &str, allows: &[&str], denies: &[&str], because: &str) -> GrantRow {
        let rule = match (allows.is_empty(), denies.is_empty()) {
            (true, _) => "deny-device",
            (false, false) => "deny-kind",
            (false, true) => "allocated-only",
        };
        GrantRow {
            device: device.into(),
            allows: allows.iter().map(|s| s.to_string()).collect(),
            denies: denies.iter().map(|s| s.to_string()).collect(),
            rule: rule.into(),
            because: because.into(),
        }
    }

    fn ruled(pod: &str, grants: Vec<GrantRow>) -> RuledRow {
        RuledRow {
            namespace: "ml".into(),
            pod: pod.into(),
            container: "main".into(),
            mode: "enforce".into(),
            grants,
        }
    }

    fn report() -> PolicyReport {
        let all = ["open", "submit", "alloc", "wait"];
        PolicyReport {
            present: true,
            mode: "enforce".into(),
            asked: "enforce".into(),
            lsm_available: true,
            file_valid: Some(true),
            checked: vec!["0000:00:02.0".into(), "faux/vgem".into()],
            ruled: vec![
                ruled(
                    "holder",
                    vec![grant("0000:00:02.0", &all, &[], "allocated")],
                ),
                ruled(
                    "owner",
                    vec![grant(
                        "faux/vgem",
                        &["open", "alloc", "wait"],
                        &["submit"],
                        "allocated",
                    )],
                ),
                ruled("snoop", vec![]),
                ruled(
                    "gone",
                    vec![grant("faux/vgem", &[], &[], "denied by the policy file")],
                ),
            ],
            refusals: vec![RefusalRow {
                holder: Holder {
                    namespace: "ml".into(),
                    pod: "holder".into(),
                    container: "main".into(),
                    device: "faux/vgem".into(),
                    vendor: "vgem".into(),
                },
                kind: "submit".into(),
                hook: "ioctl".into(),
                rule: "allocated-only".into(),
                action: "refused".into(),
                calls: 40,
            }],
        }
    }

    #[test]
    fn the_table_lists_each_grant_and_the_verdicts() {
        assert_eq!(
            table(&report(), Format::Table),
            "policy: enforce (asked: enforce); BPF LSM active; policy file in force
NAMESPACE  POD     CONTAINER  MODE     DEVICE        ALLOWS                  DENIES  BECAUSE
ml         holder  main       enforce  0000:00:02.0  open submit alloc wait  -       allocated
ml         owner   main       enforce  faux/vgem     open alloc wait         submit  allocated
ml         snoop   main       enforce  -             -                       -       nothing allocated or allowed
ml         gone    main       enforce  faux/vgem     -                       -       denied by the policy file
every other device is refused to a ruled container (allocated-only)

audited or refused:
NAMESPACE  POD     CONTAINER  DEVICE     KIND    HOOK   RULE            ACTION   CALLS
ml         holder  main       faux/vgem  submit  ioctl  allocated-only  refused  40
"
        );
        let json: PolicyReport = serde_json::from_str(&table(&report(), Format::Json)).unwrap();
        assert_eq!(json.ruled, report().ruled);
    }

    #[test]
    fn why_names_the_rule_behind_each_decision() {
        let report = report();
        let why = |pod: &str, device: &str| why(&report, ("ml", pod), device, None);
        assert_eq!(
            why("holder", "faux/vgem"),
            "ml/holder (main) on faux/vgem, enforce: refused by allocated-only: kubelet did not allocate faux/vgem to it, and no rule of the policy file allows it; 40 call(s) audited or refused so far\n"
        );
        assert_eq!(
            why("holder", "0000:00:02.0"),
            "ml/holder (main) on 0000:00:02.0, enforce: allowed (allocated); 0 call(s) audited or refused so far\n"
        );
        assert_eq!(
            why("owner", "faux/vgem"),
            "ml/owner (main) on faux/vgem, enforce: submit refused by deny-kind: the policy file denies it; open alloc wait allowed (allocated); 0 call(s) audited or refused so far\n"
        );
        assert!(
            why("gone", "faux/vgem")
                .contains("refused by deny-device: the policy file denies it faux/vgem")
        );
        assert!(
            why("stranger", "faux/vgem").starts_with("ml/stranger: not ruled, so never refused")
        );
        assert_eq!(
            why("holder", "faux/vgme"),
            "faux/vgme is not a device the policy checks (it checks 0000:00:02.0 faux/vgem): nothing on it is refused; kubenpuctl devices names them\n"
        );
        let mut audit = report.clone();
        audit.ruled[0].mode = "audit".into();
        assert!(
            super::why(&audit, ("ml", "holder"), "faux/vgem", Some("main"))
                .contains("audited (let through) by allocated-only")
        );
        assert!(
            super::why(&audit, ("ml", "holder"), "faux/vgem", Some("sidecar"))
                .starts_with("ml/holder (sidecar): not ruled")
        );
        let off = PolicyReport {
            mode: "off".into(),
            asked: "enforce".into(),
            ..report.clone()
        };
        assert_eq!(
            super::why(&off, ("ml", "holder"), "faux/vgem", None),
            "the node's policy is off (asked: enforce): nothing is refused\n"
        );
    }
}
