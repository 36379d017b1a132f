//! `kubenpu-agent`: the node agent (a DaemonSet's container). Counts
//! accelerator ioctls per cgroup with an eBPF program on `drm_ioctl`.

use std::process::ExitCode;

use clap::Parser;
use kubenpu::{agent, config::AgentConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match agent::run(AgentConfig::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubenpu-agent: {e:#}");
            ExitCode::FAILURE
        }
    }
}
