//! Offline validation: Kubernetes' own kinds with kubernetes-validate
//! (strict: an unknown field is an error), prometheus-operator's with the
//! validators generated from its Go API types (types, enums and required
//! fields; they accept unknown fields), PromQL with promtool.

use std::{
    io::Write as _,
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

use crate::{Object, tools::Tools, tools::run};

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
            faults.push(e.to_string());
        }
    }
    if !monitoring.is_empty()
        && let Err(e) = validate_monitoring(tools, &monitoring)
    {
        faults.push(e.to_string());
    }
    if !faults.is_empty() {
        bail!("{}", faults.join("\n"));
    }
    Ok(())
}

/// Each object through the model class of its kind.
const MODELS: &str = r#"
const objects = JSON.parse(require("fs").readFileSync(0, "utf8"));
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
    let mut child = Command::new("node")
        .current_dir(&tools.node_models)
        .args(["--input-type=module", "-e"])
        .arg(format!(
            "import {{ createRequire }} from 'module'; const require = createRequire(process.cwd() + '/'); {MODELS}"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run node (scripts/setup installs nodejs)")?;
    child
        .stdin
        .take()
        .context("node's stdin")?
        .write_all(serde_json::to_string(objects)?.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "prometheus-operator objects did not validate: {}{}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// `promtool ARGS...`: its output, or an error with what it said.
pub fn promtool(args: &[&str]) -> Result<String> {
    run(Command::new("promtool").args(args))
}
