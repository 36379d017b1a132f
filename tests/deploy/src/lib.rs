//! The three install paths of `deploy/` rendered as operators would render
//! them (real helm, kubectl's kustomize and jsonnet, no cluster), and
//! checked offline: Kubernetes objects against the API's schemas
//! (kubernetes-validate, strict), prometheus-operator objects against the
//! models generated from its API types, PromQL with promtool.
//!
//! The tools are fetched by `scripts/setup` into the cache.

mod render;
mod tools;
mod validate;

pub use render::{Object, config_map_with, daemon_set, helm, kind, kustomize, parse_yaml, tanka};
pub use tools::Tools;
pub use validate::{promtool, validate};

use std::path::PathBuf;

/// `all-options.yaml`: every option of the chart set away from its default,
/// as a Helm values file (its path) and as Tanka settings (JSON).
pub fn all_options() -> (String, serde_json::Value) {
    let path = format!("{}/all-options.yaml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("all-options.yaml");
    let settings = serde_norway::from_str(&text).expect("all-options.yaml is YAML");
    (path, settings)
}

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}
