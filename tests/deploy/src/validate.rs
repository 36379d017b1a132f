//! Offline validation: Kubernetes' own kinds with kubernetes-validate
//! (strict: an unknown field is an error), prometheus-operator's with the
//! validators generated from its Go API types (types, enums and required
//! fields; they accept unknown fields), PromQL with promtool.

use std::{io::Write as _, process::Command};

use anyhow::{Context as _, Result, bail};

use crate::{
    Object,
    tools::{Tools, run, run_with_input},
};

/// The API group whose kinds are prometheus-operator's.
const MONITORING: &str = "monitoring.coreos.com/";

/// Validates every object against Kubernetes `version`'s schemas or, for
/// prometheus-operator's kinds, its models; all faults in one error.
pub fn validate(tools: &Tools, objects: &[Object], version: &str) -> Result<()> {
    let (monitoring, core): (Vec<&Object>, Vec<&Object>) = objects.iter().partition(|o| {
        o["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with(MONITORING))
    });
    let mut faults = Vec::new();
    if !core.is_empty() {
        let mut file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
        for object in &core {
            writeln!(file, "---\n{object}")?;
        }
        if let Err(e) = run(Command::new(&tools.kubernetes_validate)
            .args(["--strict", "--quiet", "--kubernetes-version", version])
            .arg(file.path()))
        {
            faults.push(format!("{e:#}"));
        }
    }
    if !monitoring.is_empty()
        && let Err(e) = validate_monitoring(tools, &monitoring)
    {
        faults.push(format!("{e:#}"));
    }
    if !faults.is_empty() {
        bail!("{}", faults.join("\n"));
    }
    Ok(())
}

/// Each object, from a JSON array on stdin, through the model class of
/// its kind.
const MODELS: &str = r#"
import { readFileSync } from "fs";
const objects = JSON.parse(readFileSync(0, "utf8"));
let faults = 0;
for (const object of objects) {
  const kind = object.kind;
  const module = `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}`;
  try {
    const model = (await import(module))[kind];
    new model(object).validate();
  } catch (e) {
    console.log(`${kind}/${object.metadata?.name}: ${e.message}`);
    faults++;
  }
}
process.exit(faults ? 1 : 0);
"#;

fn validate_monitoring(tools: &Tools, objects: &[&Object]) -> Result<()> {
    run_with_input(
        Command::new("node").current_dir(&tools.node_models).args([
            "--input-type=module",
            "-e",
            MODELS,
        ]),
        serde_json::to_string(objects)?.as_bytes(),
    )
    .context("prometheus-operator objects did not validate")?;
    Ok(())
}

/// `promtool ARGS...`: its output, or an error with what it said.
pub fn promtool(args: &[&str]) -> Result<String> {
    run(Command::new("promtool").args(args))
}
