//! Where the deploy tools are: helm and kubectl (with kustomize) and the
//! validators under the cache's `tools/`, jsonnet and promtool on PATH.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

/// Paths of the tools, each checked to exist.
pub struct Tools {
    /// `helm` (v4).
    pub helm: PathBuf,
    /// `kubectl`, for `kubectl kustomize`.
    pub kubectl: PathBuf,
    /// `kubernetes-validate` in its virtualenv.
    pub kubernetes_validate: PathBuf,
    /// The directory whose `node_modules` holds prometheus-operator's models.
    pub node_models: PathBuf,
}

impl Tools {
    /// Finds the tools `scripts/setup` installs; one line naming what is
    /// missing otherwise.
    pub fn find() -> Result<Self> {
        let tools = kubenpu_vm::cache_dir()?.join("tools");
        let this = Self {
            helm: tools.join("bin/helm"),
            kubectl: tools.join("bin/kubectl"),
            kubernetes_validate: tools.join("venv/bin/kubernetes-validate"),
            node_models: tools.join("node"),
        };
        let models = this
            .node_models
            .join("node_modules/@kubernetes-models/prometheus-operator/package.json");
        for path in [
            &this.helm,
            &this.kubectl,
            &this.kubernetes_validate,
            &models,
        ] {
            if !path.is_file() {
                bail!("{} is missing: run scripts/setup", path.display());
            }
        }
        Ok(this)
    }
}

/// Runs `command`; its stdout if it succeeds, else an error with all it
/// said (some tools report faults on stdout).
pub fn run(command: &mut Command) -> Result<String> {
    run_with_input(command, &[])
}

/// [`run`], with `input` on the command's stdin.
pub fn run_with_input(command: &mut Command, input: &[u8]) -> Result<String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {command:?}"))?;
    child.stdin.take().context("stdin")?.write_all(input)?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        let said = [&output.stdout, &output.stderr]
            .map(|text| String::from_utf8_lossy(text).trim().to_owned())
            .join("\n");
        bail!(
            "{:?} failed ({}): {}",
            command.get_program(),
            output.status,
            said.trim()
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// `path` relative to `base`, both absolute (kustomize refuses absolute
/// paths to bases and components).
pub fn relative(path: &Path, base: &Path) -> PathBuf {
    let path: Vec<_> = path.components().collect();
    let base: Vec<_> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    out.extend(&path[common..]);
    out
}
