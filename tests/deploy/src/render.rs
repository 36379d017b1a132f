//! Renders each install path to its list of objects, as JSON values.

use std::{path::Path, process::Command};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::{
    deploy_dir,
    tools::{Tools, relative, run},
};

/// One rendered Kubernetes object.
pub type Object = Value;

/// `helm template kubenpu deploy/helm -n kubenpu ARGS...`.
pub fn helm(tools: &Tools, args: &[&str]) -> Result<Vec<Object>> {
    let out = run(Command::new(&tools.helm)
        .args(["template", "kubenpu"])
        .arg(deploy_dir().join("helm"))
        .args(["--namespace", "kubenpu"])
        .args(args))?;
    parse_yaml(&out)
}

/// `kubectl kustomize` of the base with `components` (names under
/// `deploy/kustomize/components`), through an overlay in a temporary
/// directory as an operator would write it.
pub fn kustomize(tools: &Tools, components: &[&str]) -> Result<Vec<Object>> {
    let kustomize = deploy_dir().join("kustomize").canonicalize()?;
    let overlay = tempfile::tempdir()?;
    let path = |p: &Path| relative(p, overlay.path()).display().to_string();
    let mut text = format!("resources:\n  - {}\n", path(&kustomize.join("base")));
    if !components.is_empty() {
        text.push_str("components:\n");
        for component in components {
            let dir = kustomize.join("components").join(component);
            text.push_str(&format!("  - {}\n", path(&dir)));
        }
    }
    std::fs::write(overlay.path().join("kustomization.yaml"), text)?;
    let out = run(Command::new(&tools.kubectl)
        .arg("kustomize")
        .arg(overlay.path()))?;
    parse_yaml(&out)
}

/// The Tanka environment `environments/default` with `settings` merged
/// into its `_config` (a JSON merge patch, as Helm merges a values file),
/// evaluated by jsonnet as `tk` would; the objects found in it, sorted by
/// kind.
pub fn tanka(settings: &Value) -> Result<Vec<Object>> {
    let dir = deploy_dir().join("tanka");
    let out = run(Command::new("jsonnet")
        .current_dir(&dir)
        .args(["-J", "lib", "-e"])
        .arg(format!(
            "(import 'environments/default/main.jsonnet') {{ _config:: std.mergePatch(super._config, {settings}) }}"
        )))?;
    let mut objects = Vec::new();
    collect(serde_json::from_str(&out)?, &mut objects);
    objects.sort_by(|a, b| a["kind"].as_str().cmp(&b["kind"].as_str()));
    Ok(objects)
}

/// Tanka's rule: an object with `apiVersion` and `kind` is a manifest; any
/// other object is searched for manifests.
fn collect(value: Value, objects: &mut Vec<Object>) {
    if let Value::Object(map) = value {
        if map.contains_key("apiVersion") && map.contains_key("kind") {
            objects.push(Value::Object(map));
        } else {
            for (_, child) in map {
                collect(child, objects);
            }
        }
    }
}

/// Every document of a YAML stream, empty ones left out.
pub fn parse_yaml(text: &str) -> Result<Vec<Object>> {
    let mut objects = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document).context("rendered YAML")?;
        if !value.is_null() {
            objects.push(value);
        }
    }
    Ok(objects)
}

/// The objects of `kind`.
pub fn kind<'a>(objects: &'a [Object], kind: &str) -> Vec<&'a Object> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// The ConfigMap among `objects` whose data has `key`.
pub fn config_map_with<'a>(objects: &'a [Object], key: &str) -> Result<&'a Object> {
    kind(objects, "ConfigMap")
        .into_iter()
        .find(|map| map["data"].get(key).is_some())
        .ok_or_else(|| anyhow::anyhow!("no ConfigMap has {key}"))
}

/// The one DaemonSet among `objects`.
pub fn daemon_set(objects: &[Object]) -> Result<&Object> {
    match kind(objects, "DaemonSet")[..] {
        [one] => Ok(one),
        ref all => bail!("{} DaemonSets rendered, not one", all.len()),
    }
}
