//! Running host tools with errors that say which command failed and why.

use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// Runs a command, failing with its stderr if it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    output_bytes(cmd).map(drop)
}

/// Runs a command and returns its stdout as text.
pub fn output(cmd: &mut Command) -> Result<String> {
    output_bytes(cmd).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// Runs a command and returns its stdout, failing with its stderr if it fails.
pub fn output_bytes(cmd: &mut Command) -> Result<Vec<u8>> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {program} (is it installed? run scripts/setup)"))?;
    if !out.status.success() {
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        bail!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}
