//! `kubenpu-agent`: the node agent (a DaemonSet's container). Counts
//! accelerator ioctls per cgroup with an eBPF program on `drm_ioctl`.

use std::process::ExitCode;

use clap::Parser;
use kubenpu::{
    agent,
    config::AgentConfig,
    logging::{self, LogFormat, LogLevel},
};

/// The agent's loop runs on the main thread and owns the kernel maps. The
/// HTTP server and the CRI resolver are tasks on two worker threads, sysfs
/// rescans run on a blocking thread and plugins compile on the watcher's,
/// so none of them waits for the loop's own work (a cgroup walk, rare now
/// that the kernel records cgroup paths), and `/healthz` always answers;
/// a scrape of `/metrics` waits for the loop, which alone reads the maps.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let config = AgentConfig::parse();
    let level = if config.debug {
        LogLevel::Debug
    } else {
        config.log_level
    };
    let format = config.log_format;
    logging::init(format, level);
    match agent::run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, as the chosen format writes it; the text form
            // without the level, since the exit status says it failed.
            match format {
                LogFormat::Text => eprintln!("kubenpu-agent: {e:#}"),
                LogFormat::Json => tracing::error!("{e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}
