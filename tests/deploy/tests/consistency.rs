//! Helm, kustomize and Tanka install the same agent: with equivalent
//! settings their DaemonSets run the same pod (containers, arguments,
//! security context, mounts, ports, volumes, scheduling), and their Service
//! and ServiceMonitor are the same.

use kubenpu_deploy::{
    Object, Tools, all_options, config_map_with, daemon_set, helm, kind, kustomize, tanka,
};
use serde_json::{Value, json};

/// What must agree: the pod spec whole, and the DaemonSet's selector.
fn agent(objects: &[Object]) -> Value {
    let spec = &daemon_set(objects).unwrap()["spec"];
    json!({
        "selector": spec["selector"],
        "updateStrategy": spec["updateStrategy"],
        "pod": spec["template"]["spec"],
        "podLabels": spec["template"]["metadata"]["labels"],
    })
}

fn spec_of(objects: &[Object], kind_name: &str) -> Value {
    match kind(objects, kind_name)[..] {
        [one] => one["spec"].clone(),
        ref all => panic!("{} {kind_name}s rendered", all.len()),
    }
}

/// Each of `others` runs the same agent as `helm` and renders the same
/// spec for each of `kinds`.
fn assert_same_as_helm(helm: &[Object], others: &[(&str, &[Object])], kinds: &[&str]) {
    for &(name, other) in others {
        assert_same("the agent", ("helm", &agent(helm)), (name, &agent(other)));
        for kind_name in kinds {
            assert_same(
                kind_name,
                ("helm", &spec_of(helm, kind_name)),
                (name, &spec_of(other, kind_name)),
            );
        }
    }
}

/// Equal, or a failure that names the first differing path.
fn assert_same(what: &str, left: (&str, &Value), right: (&str, &Value)) {
    if left.1 != right.1 {
        panic!(
            "{what} differs between {} and {}: {}",
            left.0,
            right.0,
            first_difference(left.1, right.1, String::new())
        );
    }
}

fn first_difference(a: &Value, b: &Value, path: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let (l, r) = (
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                );
                if l != r {
                    return first_difference(l, r, format!("{path}.{key}"));
                }
            }
            unreachable!()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let i = (0..x.len()).find(|&i| x[i] != y[i]).unwrap();
            first_difference(&x[i], &y[i], format!("{path}[{i}]"))
        }
        _ => {
            let short = |v: &Value| v.to_string().chars().take(200).collect::<String>();
            format!("{path}: {} vs {}", short(a), short(b))
        }
    }
}

#[test]
fn defaults_install_the_same_agent_everywhere() {
    let tools = Tools::find().unwrap();
    let helm = helm(&tools, &[]).unwrap();
    let kustomize = kustomize(&tools, &[]).unwrap();
    let tanka = tanka(&json!({})).unwrap();
    assert_same_as_helm(
        &helm,
        &[("kustomize", &kustomize), ("tanka", &tanka)],
        &["Service"],
    );
}

#[test]
fn the_options_install_the_same_agent_everywhere() {
    let tools = Tools::find().unwrap();
    let helm = helm(
        &tools,
        &[
            "--set",
            "serviceMonitor.enabled=true",
            "--set",
            "accel.enabled=true",
            "--set",
            "policy.mode=audit",
            "--set",
            "fdinfo.enabled=true",
            "--set",
            "energy.enabled=true",
        ],
    )
    .unwrap();
    let kustomize = kustomize(
        &tools,
        &["servicemonitor", "accel", "policy", "fdinfo", "energy"],
    )
    .unwrap();
    let tanka = tanka(&json!({
        "serviceMonitor": {"enabled": true},
        "accel": {"enabled": true},
        "policy": {"mode": "audit"},
        "fdinfo": {"enabled": true},
        "energy": {"enabled": true},
    }))
    .unwrap();
    assert_same_as_helm(
        &helm,
        &[("kustomize", &kustomize), ("tanka", &tanka)],
        &["ServiceMonitor"],
    );
    let pod = &agent(&helm)["pod"];
    let args = pod["containers"][0]["args"].as_array().unwrap();
    for arg in [
        "--policy=audit",
        "--policy-lease=5m",
        "--policy-file=/etc/kubenpu/policy/policy.yaml",
        "--fdinfo",
        "--energy",
    ] {
        assert!(args.contains(&json!(arg)), "{arg}: {pod}");
    }
    let tolerations = &pod["tolerations"];
    assert_eq!(tolerations.as_array().unwrap().len(), 3, "{tolerations}");
    // fdinfo: the host's pid namespace and CAP_SYS_PTRACE, nothing more.
    assert_eq!(pod["hostPID"], true);
    let capabilities = &pod["containers"][0]["securityContext"]["capabilities"]["add"];
    assert_eq!(
        capabilities,
        &json!(["BPF", "PERFMON", "SYS_NICE", "SYS_ADMIN", "SYS_PTRACE"])
    );
}

/// Without the allocation join (here beside fdinfo, whose arguments come
/// after its), the three paths mount neither kubelet's directory nor the
/// CDI directories, and say --no-allocation; with it, both are read only.
#[test]
fn without_the_allocation_join_nothing_of_kubelets_is_mounted() {
    let tools = Tools::find().unwrap();
    let helm_off = helm(
        &tools,
        &[
            "--set",
            "allocation.enabled=false",
            "--set",
            "fdinfo.enabled=true",
        ],
    )
    .unwrap();
    let kustomize = kustomize(&tools, &["no-allocation", "fdinfo"]).unwrap();
    let tanka =
        tanka(&json!({"allocation": {"enabled": false}, "fdinfo": {"enabled": true}})).unwrap();
    assert_same_as_helm(
        &helm_off,
        &[("kustomize", &kustomize), ("tanka", &tanka)],
        &["Service"],
    );
    let pod = &agent(&helm_off)["pod"];
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&json!("--no-allocation")), "{pod}");
    for absent in ["pod-resources", "cdi", "kubelet"] {
        assert!(!pod.to_string().contains(absent), "{absent} in {pod}");
    }
    // The policy rules what the join classifies: without it, a policy is
    // one line from both.
    let refused = helm(
        &tools,
        &[
            "--set",
            "allocation.enabled=false",
            "--set",
            "policy.mode=audit",
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("policy.mode needs allocation.enabled"),
        "{refused}"
    );
    let refused = kubenpu_deploy::tanka(
        &json!({"allocation": {"enabled": false}, "policy": {"mode": "audit"}}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("policy.mode needs allocation.enabled"),
        "{refused}"
    );
    // The energy meter divides by the fdinfo reader's engine time: alone,
    // it is one line from both.
    let refused = helm(&tools, &["--set", "energy.enabled=true"])
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("energy.enabled needs fdinfo.enabled"),
        "{refused}"
    );
    let refused = kubenpu_deploy::tanka(&json!({"energy": {"enabled": true}}))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("energy.enabled needs fdinfo.enabled"),
        "{refused}"
    );
    let pod = &agent(&helm(&tools, &[]).unwrap())["pod"];
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    for name in ["pod-resources", "cdi-0", "cdi-1"] {
        let mount = mounts
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {pod}"));
        assert_eq!(mount["readOnly"], true, "{mount}");
    }
}

/// Every option of the chart has the same effect in Tanka's `_config`.
#[test]
fn every_option_means_the_same_in_helm_and_tanka() {
    let tools = Tools::find().unwrap();
    let (file, settings) = all_options();
    let helm = helm(&tools, &["--values", &file]).unwrap();
    let tanka = tanka(&settings).unwrap();
    assert_same_as_helm(
        &helm,
        &[("tanka", &tanka)],
        &[
            "Service",
            "ServiceMonitor",
            "PrometheusRule",
            "NetworkPolicy",
        ],
    );
    let dashboard = |objects: &[Object]| -> Value {
        let text = config_map_with(objects, "kubenpu.json").unwrap()["data"]["kubenpu.json"]
            .as_str()
            .unwrap();
        serde_json::from_str(text).unwrap()
    };
    assert_same(
        "the dashboard",
        ("helm", &dashboard(&helm)),
        ("tanka", &dashboard(&tanka)),
    );
    // Labels of the optional objects come from the settings in both.
    for objects in [&helm, &tanka] {
        for kind_name in ["ServiceMonitor", "PrometheusRule"] {
            assert_eq!(
                kind(objects, kind_name)[0]["metadata"]["labels"]["release"],
                "prometheus"
            );
        }
    }
}

/// A namespace the policy file sets to enforce, with the node's mode off:
/// the agent gets the file, its lease and the admission socket's
/// directory, as it does with the node's mode on, from Helm and Tanka
/// alike; a namespace set to off alone asks for nothing.
#[test]
fn a_namespace_mode_alone_gives_the_agent_its_policy_file() {
    let tools = Tools::find().unwrap();
    let enforced = helm(&tools, &["--set", "policy.namespaces.ml=enforce"]).unwrap();
    let by_tanka = tanka(&json!({"policy": {"namespaces": {"ml": "enforce"}}})).unwrap();
    assert_same_as_helm(&enforced, &[("tanka", &by_tanka)], &[]);
    let pod = &agent(&enforced)["pod"];
    let args = pod["containers"][0]["args"].as_array().unwrap();
    for arg in [
        "--policy=off",
        "--policy-file=/etc/kubenpu/policy/policy.yaml",
    ] {
        assert!(args.contains(&json!(arg)), "{arg}: {pod}");
    }
    let mounts = pod["containers"][0]["volumeMounts"].to_string();
    for path in ["/etc/kubenpu/policy", "/run/kubenpu"] {
        assert!(mounts.contains(path), "{path}: {mounts}");
    }
    let file =
        config_map_with(&enforced, "policy.yaml").unwrap()["data"]["policy.yaml"].to_string();
    assert!(file.contains("ml") && file.contains("enforce"), "{file}");

    let off = helm(&tools, &["--set", "policy.namespaces.ml=off"]).unwrap();
    let pod = &agent(&off)["pod"];
    assert!(!pod.to_string().contains("--policy-file"), "{pod}");
}
