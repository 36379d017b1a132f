//! `kubenpu-oci-hook`: an OCI `createRuntime` hook that holds a container
//! at its creation until the KubeNPU agent has ruled it, so that the
//! policy checks its very first call (see the README's "Refused from the
//! first call").
//!
//! The runtime runs it with the container's state on stdin, after the
//! container's cgroup exists and before its process starts. It tells the
//! agent the container's id and cgroup, and waits for the answer. It
//! never stops a container from starting: it exits 0 on every answer, on
//! none within `--timeout`, when no agent listens, and for pod sandboxes,
//! which it does not ask about.

use std::{
    io::{BufReader, Read},
    os::unix::net::UnixStream,
    path::PathBuf,
    process::ExitCode,
    time::Duration,
};

use clap::Parser;
use kubenpu::{
    admission::{
        DEFAULT_SOCKET,
        wire::{self, Answer, Arrival},
    },
    config::parse_duration,
};
use serde::Deserialize;

/// Holds a container at its creation until the KubeNPU agent has ruled it.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The agent's admission socket (its --admission-socket).
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// How long to wait for the agent's answer before the container
    /// starts anyway.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
}

/// The part of the OCI runtime state the hook reads.
#[derive(Deserialize)]
struct State {
    id: String,
    pid: u32,
    #[serde(default)]
    annotations: std::collections::HashMap<String, String>,
}

/// The annotations by which containerd and CRI-O mark a pod's sandbox.
const SANDBOX_MARKS: [&str; 2] = [
    "io.kubernetes.cri.container-type",
    "io.kubernetes.cri-o.ContainerType",
];

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(why) = hold(&cli) {
        // The runtime shows a hook's output only if it fails, which this
        // one never does; the line is for a person running it by hand.
        eprintln!("kubenpu-oci-hook: {why}; the container starts unruled");
    }
    ExitCode::SUCCESS
}

/// Asks the agent about the container on stdin and waits for its answer.
fn hold(cli: &Cli) -> Result<(), String> {
    let mut input = String::new();
    std::io::stdin()
        .take(1 << 20)
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the container's state on stdin: {e}"))?;
    let state: State = serde_json::from_str(&input)
        .map_err(|e| format!("stdin is not an OCI container state: {e}"))?;
    if SANDBOX_MARKS
        .iter()
        .any(|mark| state.annotations.get(*mark).is_some_and(|t| t == "sandbox"))
    {
        return Ok(());
    }
    let cgroups = std::fs::read_to_string(format!("/proc/{}/cgroup", state.pid))
        .map_err(|e| format!("cannot read the cgroup of process {}: {e}", state.pid))?;
    let cgroup = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or_else(|| format!("process {} is in no cgroup v2 hierarchy", state.pid))?;
    let stream = UnixStream::connect(&cli.socket)
        .map_err(|e| format!("no agent at {}: {e}", cli.socket.display()))?;
    let io_error = |e: std::io::Error| format!("the agent at {}: {e}", cli.socket.display());
    stream
        .set_read_timeout(Some(cli.timeout))
        .map_err(io_error)?;
    stream
        .set_write_timeout(Some(cli.timeout))
        .map_err(io_error)?;
    let arrival = Arrival {
        container: state.id,
        cgroup: cgroup.to_owned(),
    };
    wire::write_line(&stream, &arrival).map_err(io_error)?;
    match wire::read_line(BufReader::new(&stream)).map_err(io_error)? {
        Answer::Ruled { .. } => Ok(()),
        Answer::Unruled { why } => Err(format!("the agent does not rule it: {why}")),
    }
}
