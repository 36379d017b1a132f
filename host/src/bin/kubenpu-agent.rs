//! `kubenpu-agent`: the node agent (a DaemonSet's container). Counts
//! accelerator ioctls per cgroup with an eBPF program on `drm_ioctl`.

use std::process::ExitCode;

use clap::Parser;
use kubenpu::{agent, config::AgentConfig};

/// The agent's loop runs on the main thread and owns the kernel maps; its
/// cgroup walks, sysfs rescans and BTF reads block that thread. The HTTP
/// server and the CRI resolver are tasks on two worker threads, so
/// `/healthz` and `/readyz` answer and CRI calls go on meanwhile (a scrape
/// of `/metrics` still waits for the loop, which alone reads the maps).
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match agent::run(AgentConfig::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubenpu-agent: {e:#}");
            ExitCode::FAILURE
        }
    }
}
