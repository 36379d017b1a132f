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

pub use render::{Object, daemon_set, helm, kind, kustomize, parse_yaml, tanka};
pub use tools::Tools;
pub use validate::{promtool, validate};

use std::path::PathBuf;

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}
