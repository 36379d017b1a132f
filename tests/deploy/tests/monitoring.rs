//! The alerts and the dashboard, checked by Prometheus' own tool: the rule
//! file parses and its alerts fire (and stay quiet) as their unit tests
//! say; every dashboard query is valid PromQL over the agent's metrics.

use std::collections::BTreeSet;

use kubenpu_deploy::{deploy_dir, promtool};
use serde_json::Value;

fn path(relative: &str) -> String {
    deploy_dir().join(relative).display().to_string()
}

#[test]
fn alert_rules_parse_and_pass_their_unit_tests() {
    let rules = path("helm/files/kubenpu.rules.yaml");
    let out = promtool(&["check", "rules", &rules]).unwrap();
    assert!(out.contains("SUCCESS: 15 rules found"), "{out}");
    assert_exported(&std::fs::read_to_string(&rules).unwrap());
    let tests = format!("{}/alerts.test.yaml", env!("CARGO_MANIFEST_DIR"));
    let out = promtool(&["test", "rules", &tests]).unwrap();
    assert!(out.contains("SUCCESS"), "{out}");
}

/// Grafana's variables, replaced by values a query can run with.
const VARIABLES: [(&str, &str); 4] = [
    ("$__rate_interval", "5m"),
    ("$namespace", ".*"),
    ("$pod", ".*"),
    ("$kind", "submit"),
];

#[test]
fn every_dashboard_query_is_valid_promql_over_the_agents_metrics() {
    let text = std::fs::read_to_string(path("dashboards/kubenpu.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{target}");
            let mut expr = target["expr"].as_str().unwrap().to_owned();
            for (variable, value) in VARIABLES {
                expr = expr.replace(variable, value);
            }
            queries.push(expr);
        }
    }
    assert_eq!(queries.len(), 29);
    for expr in &queries {
        assert_exported(expr);
    }
    // The per-kind panel is repeated for every kind the agent exports.
    let kind = &dashboard["templating"]["list"][3];
    assert_eq!(kind["query"], "submit,alloc,wait");
    assert_eq!(dashboard["panels"][0]["repeat"], "kind");

    // promtool parses PromQL in rule files: one recording rule a query.
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(
            |(i, expr)| serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": expr}),
        )
        .collect();
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    let groups = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(file.path(), groups.to_string()).unwrap();
    let out = promtool(&["check", "rules", &file.path().display().to_string()]).unwrap();
    assert!(out.contains("SUCCESS: 29 rules found"), "{out}");
}

/// `text` names metrics of the agent's, and only ones it exports.
fn assert_exported(text: &str) {
    let exported = exported_families();
    let used: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("kubenpu_"))
        .collect();
    assert!(!used.is_empty(), "{text}");
    for name in used {
        assert!(
            exported.contains(name),
            "{name} is not a metric the agent exports: {exported:?}"
        );
    }
}

/// The metric names the agent's own exposition declares (`# TYPE` lines,
/// counters with their `_total`, histograms with their series).
fn exported_families() -> BTreeSet<String> {
    // With --fdinfo, --energy, the allocation join, the policy with its
    // file and placement, so their families are declared too.
    let snapshot = kubenpu::metrics::Snapshot {
        fdinfo: Some(kubenpu::fdinfo::FdinfoView::default()),
        energy: Some(kubenpu::energy::EnergyView::default()),
        allocation: Some(kubenpu::allocation::AllocationView::default()),
        policy: Some(kubenpu::policy::PolicyView {
            file_valid: Some(true),
            ..kubenpu::policy::PolicyView::default()
        }),
        placement: Some(kubenpu::placement::PlacementView {
            asked: kubenpu::placement::Mode::SchedExt,
            mode: kubenpu::placement::Mode::Hints,
            sched_ext: "absent".into(),
            ops: String::new(),
            counters: kubenpu::placement::Counters::default(),
            exits: [("sysrq", 1)].into(),
        }),
        ..kubenpu::metrics::Snapshot::default()
    };
    let text = kubenpu::metrics::render(snapshot, kubenpu::metrics::Format::Text);
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .flat_map(|rest| {
            let mut words = rest.split(' ');
            let (name, kind) = (words.next().unwrap(), words.next().unwrap());
            match kind {
                "counter" if !name.ends_with("_total") => vec![format!("{name}_total")],
                "histogram" => ["bucket", "sum", "count"]
                    .iter()
                    .map(|series| format!("{name}_{series}"))
                    .collect(),
                _ => vec![name.to_owned()],
            }
        })
        .collect()
}
