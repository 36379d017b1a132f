//! Each install path renders, with its defaults and with every option on,
//! and every object it renders validates offline.

use kubenpu_deploy::{
    Object, Tools, all_options, config_map_with, daemon_set, deploy_dir, helm, kind, kustomize,
    tanka, validate,
};
use serde_json::{Value, json};

/// The oldest Kubernetes the chart supports, and the newest the validator
/// knows; the image volume for plugins needs 1.33.
const OLDEST: &str = "1.30";
const NEWEST: &str = "1.35";

/// The path of `all-options.yaml`, for Helm.
fn all_options_file() -> String {
    all_options().0
}

fn kinds(objects: &[Object]) -> Vec<&str> {
    let mut kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    kinds
}

#[test]
fn helm_lint_is_strictly_clean_with_defaults_and_every_option() {
    let tools = Tools::find().unwrap();
    for extra in [vec![], vec!["--values".to_owned(), all_options_file()]] {
        let out = std::process::Command::new(&tools.helm)
            .args(["lint", "--strict"])
            .arg(deploy_dir().join("helm"))
            .args(&extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("1 chart(s) linted, 0 chart(s) failed"),
            "{text}"
        );
    }
}

#[test]
fn helm_defaults_render_the_agent_and_validate() {
    let tools = Tools::find().unwrap();
    let objects = helm(&tools, &[]).unwrap();
    assert_eq!(kinds(&objects), ["DaemonSet", "Service", "ServiceAccount"]);
    validate(&tools, &objects, OLDEST).unwrap();
    validate(&tools, &objects, NEWEST).unwrap();
}

#[test]
fn helm_with_every_option_renders_and_validates() {
    let tools = Tools::find().unwrap();
    let objects = helm(&tools, &["--values", &all_options_file()]).unwrap();
    assert_eq!(
        kinds(&objects),
        [
            "ConfigMap",
            "ConfigMap",
            "DaemonSet",
            "NetworkPolicy",
            "PrometheusRule",
            "Service",
            "ServiceAccount",
            "ServiceMonitor"
        ]
    );
    validate(&tools, &objects, NEWEST).unwrap();
    // The digest pins the image; the tag is not used.
    let image =
        &daemon_set(&objects).unwrap()["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(
        image,
        "example/kubenpu-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    );
    // Only the scraper's peers reach the metrics port.
    let policy = &kind(&objects, "NetworkPolicy")[0]["spec"];
    assert_eq!(policy["policyTypes"], json!(["Ingress"]));
    assert_eq!(
        policy["ingress"][0]["ports"],
        json!([{"port": "metrics", "protocol": "TCP"}])
    );
    assert_eq!(
        policy["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "observability"
    );
    let dashboard = config_map_with(&objects, "kubenpu.json").unwrap()["data"]["kubenpu.json"]
        .as_str()
        .unwrap();
    let dashboard: Value = serde_json::from_str(dashboard).unwrap();
    assert_eq!(dashboard["uid"], "kubenpu");
}

/// The policy file the chart renders is one the agent reads: the values'
/// namespaces and rules, in the ConfigMap the DaemonSet mounts whole.
#[test]
fn the_policy_file_is_rendered_from_the_values_and_mounted_as_a_directory() {
    let tools = Tools::find().unwrap();
    let objects = helm(&tools, &["--values", &all_options_file()]).unwrap();
    let map = config_map_with(&objects, "policy.yaml").unwrap();
    let text = map["data"]["policy.yaml"].as_str().unwrap();
    let file =
        kubenpu::policy::file::PolicyFile::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let (_, settings) = all_options();
    assert_eq!(
        file.namespaces.len(),
        settings["policy"]["namespaces"].as_object().unwrap().len()
    );
    assert_eq!(
        file.rules.len(),
        settings["policy"]["rules"].as_array().unwrap().len()
    );
    let pod = &daemon_set(&objects).unwrap()["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "policy")
        .unwrap();
    assert_eq!(volume["configMap"]["name"], map["metadata"]["name"]);
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "policy")
        .unwrap();
    assert!(mount.get("subPath").is_none(), "{mount}");
    let args = pod["containers"][0]["args"].to_string();
    let dir = mount["mountPath"].as_str().unwrap();
    assert!(
        args.contains(&format!("--policy-file={dir}/policy.yaml")),
        "{args}"
    );
    // Tanka's renders the same file.
    let tanka = tanka(&settings).unwrap();
    let text = config_map_with(&tanka, "policy.yaml").unwrap()["data"]["policy.yaml"]
        .as_str()
        .unwrap();
    assert_eq!(
        kubenpu::policy::file::PolicyFile::parse(text).unwrap(),
        file
    );
}

#[test]
fn plugins_from_an_image_volume_validate_from_kubernetes_1_33() {
    let tools = Tools::find().unwrap();
    let objects = helm(
        &tools,
        &["--set", "plugins.image.reference=example/plugins:1"],
    )
    .unwrap();
    let volumes = &daemon_set(&objects).unwrap()["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[5]["image"]["reference"], "example/plugins:1");
    validate(&tools, &objects, "1.33").unwrap();
}

#[test]
fn kustomize_base_and_components_render_and_validate() {
    let tools = Tools::find().unwrap();
    let base = kustomize(&tools, &[]).unwrap();
    assert_eq!(
        kinds(&base),
        ["DaemonSet", "Namespace", "Service", "ServiceAccount"]
    );
    validate(&tools, &base, OLDEST).unwrap();
    for object in &base {
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/version"],
            "0.1.0"
        );
    }
    let all = kustomize(&tools, &["servicemonitor", "accel", "policy", "fdinfo"]).unwrap();
    assert_eq!(
        kinds(&all),
        [
            "ConfigMap",
            "DaemonSet",
            "Namespace",
            "Service",
            "ServiceAccount",
            "ServiceMonitor"
        ]
    );
    validate(&tools, &all, NEWEST).unwrap();
    let without_allocation = kustomize(&tools, &["no-allocation"]).unwrap();
    validate(&tools, &without_allocation, OLDEST).unwrap();
}

#[test]
fn tanka_environment_renders_and_validates() {
    let tools = Tools::find().unwrap();
    let default = tanka(&json!({})).unwrap();
    assert_eq!(
        kinds(&default),
        ["DaemonSet", "Namespace", "Service", "ServiceAccount"]
    );
    validate(&tools, &default, OLDEST).unwrap();
    let all = tanka(&all_options().1).unwrap();
    assert_eq!(
        kinds(&all),
        [
            "ConfigMap",
            "ConfigMap",
            "DaemonSet",
            "Namespace",
            "NetworkPolicy",
            "PrometheusRule",
            "Service",
            "ServiceAccount",
            "ServiceMonitor"
        ]
    );
    validate(&tools, &all, NEWEST).unwrap();
}

/// Rules the API server enforces beyond the schemas, which offline
/// validation cannot see: checked here for every render.
#[test]
fn no_render_sets_what_the_api_server_refuses() {
    let tools = Tools::find().unwrap();
    let renders = [
        helm(&tools, &[]).unwrap(),
        helm(&tools, &["--values", &all_options_file()]).unwrap(),
        kustomize(&tools, &["servicemonitor", "accel", "fdinfo"]).unwrap(),
        tanka(&all_options().1).unwrap(),
    ];
    for objects in &renders {
        let container = &daemon_set(objects).unwrap()["spec"]["template"]["spec"]["containers"][0];
        let security = &container["securityContext"];
        let sys_admin = security["capabilities"]["add"]
            .as_array()
            .unwrap()
            .contains(&Value::from("SYS_ADMIN"));
        // "cannot set allowPrivilegeEscalation to false and
        // capabilities.Add CAP_SYS_ADMIN"
        assert_eq!(
            security.get("allowPrivilegeEscalation") == Some(&Value::Bool(false)),
            !sys_admin,
            "{security}"
        );
    }
}

#[test]
fn bad_values_are_refused_in_one_line_each() {
    let tools = Tools::find().unwrap();
    let cases = [
        (vec!["--set", "agent.hook=uprobe"], "/agent/hook"),
        (
            vec!["--set", "agnet.port=1"],
            "additional properties 'agnet' not allowed",
        ),
        (vec!["--set", "cri.runtime=custom"], "/cri/socket"),
        (
            vec!["--set", "agent.seriesGrace=5 minutes"],
            "/agent/seriesGrace",
        ),
        (
            vec![
                "--set",
                "plugins.configMap=a",
                "--set",
                "plugins.image.reference=b",
            ],
            "set configMap or image.reference, not both",
        ),
        (
            vec!["--set", "policy.rules[0].denyKinds[0]=read"],
            "/policy/rules/0/denyKinds/0",
        ),
        (
            vec!["--set", "policy.rules[0].pod=trainer"],
            "/policy/rules/0",
        ),
        (
            vec!["--set", "policy.namespaces.ml=block"],
            "/policy/namespaces/ml",
        ),
        (vec!["--set", "image.digest=latest"], "/image/digest"),
    ];
    for (args, expected) in cases {
        let error = helm(&tools, &args).unwrap_err().to_string();
        assert!(error.contains(expected), "{args:?}: {error}");
    }
}

/// The validators find faults: otherwise every test above would pass
/// whatever was rendered.
#[test]
fn the_validators_refuse_broken_objects() {
    let tools = Tools::find().unwrap();
    let mut objects = helm(&tools, &["--set", "serviceMonitor.enabled=true"]).unwrap();
    let typo = json!({"name": "x", "mountPath": "/x", "readOnlyy": true});
    objects
        .iter_mut()
        .find(|o| o["kind"] == "DaemonSet")
        .unwrap()["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(typo);
    objects
        .iter_mut()
        .find(|o| o["kind"] == "ServiceMonitor")
        .unwrap()["spec"]["endpoints"][0]["port"] = json!(8080);
    let error = validate(&tools, &objects, NEWEST).unwrap_err().to_string();
    assert!(error.contains("'readOnlyy' was unexpected"), "{error}");
    assert!(
        error.contains("ServiceMonitor/kubenpu") && error.contains("port must be string"),
        "{error}"
    );
}
