//! `kubenpuctl`: what the KubeNPU agent would see on this node, read from
//! sysfs and the plugins, without privileges.

use std::{io::IsTerminal, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kubenpu::{
    device_table::DeviceTable,
    discovery::{self, Roots},
    http,
    plugins::{self, PluginHost},
    server,
};
use report::Format;

mod energy;
mod placement;
mod policy;
mod report;

#[derive(Parser)]
#[command(version, about = "Inspect what the KubeNPU agent sees on this node")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct PluginsDir {
    /// Directory of vendor plugins (*.wasm) that add to or replace the built-ins.
    #[arg(long, default_value = plugins::DEFAULT_DIR)]
    plugins_dir: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// List DRM and accel devices and the vendor that claims each.
    Devices {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Read sysfs from here instead of /sys (e.g. a fixture tree).
        #[arg(long, default_value = "/sys")]
        sysfs_root: PathBuf,
        /// Read device nodes from here instead of /dev.
        #[arg(long, default_value = "/dev")]
        dev_root: PathBuf,
        #[command(flatten)]
        plugins: PluginsDir,
    },
    /// Raw per-cgroup counters of the agent's program, read from its pinned
    /// maps (needs root; works while the agent is stopped, too).
    Counts {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The agent's --pin-path.
        #[arg(long, default_value = "/sys/fs/bpf/kubenpu")]
        pin_path: PathBuf,
    },
    /// Per-container ioctl rates from a running agent, refreshed.
    Top {
        /// The agent's address (its --listen).
        #[arg(long, default_value = "127.0.0.1:8080")]
        agent: String,
        /// Time between readings.
        #[arg(long, default_value = "2s", value_parser = kubenpu::config::parse_duration)]
        interval: Duration,
        /// Stop after this many tables (0: until interrupted).
        #[arg(long, default_value_t = 0)]
        count: u32,
    },
    /// Devices kubelet allocated to each running container, idle or used,
    /// and calls on devices nobody allocated to the caller, from a running
    /// agent.
    Allocations {
        /// The agent's address (its --listen).
        #[arg(long, default_value = "127.0.0.1:8080")]
        agent: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The policy's rules a running agent's checks hold: each ruled
    /// container's grants and why, and what was audited or refused; with
    /// --why, why one pod's calls on one device are refused or allowed.
    Policy {
        /// The agent's address (its --listen).
        #[arg(long, default_value = "127.0.0.1:8080")]
        agent: String,
        /// Print JSON instead of a table.
        #[arg(long, conflicts_with = "why")]
        json: bool,
        /// Explain the decision for one pod, NAMESPACE/POD.
        #[arg(long, value_name = "NAMESPACE/POD", requires = "device")]
        why: Option<String>,
        /// With --why: the device, as kubenpu_device_info's device label
        /// names it.
        #[arg(long, requires = "why")]
        device: Option<String>,
        /// With --why: only this container of the pod.
        #[arg(long, requires = "why")]
        container: Option<String>,
    },
    /// The placement a running agent keeps in force, what its scheduler
    /// did, and per allocated container and device its calls from another
    /// NUMA node, its CPUs against the device's node, and what would fix
    /// it.
    Placement {
        /// The agent's address (its --listen).
        #[arg(long, default_value = "127.0.0.1:8080")]
        agent: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Each device's energy as a running agent measures it (--energy),
    /// with how it is read and divided, and each container's joules on
    /// it: active (by its use) and idle (its share as a holder).
    Energy {
        /// The agent's address (its --listen).
        #[arg(long, default_value = "127.0.0.1:8080")]
        agent: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the vendor plugins in force, or check one plugin file.
    Plugins {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        plugins: PluginsDir,
        #[command(subcommand)]
        check: Option<PluginsCommand>,
    },
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Validate one plugin file as the agent would; print its table or why it is rejected.
    Check {
        /// The .wasm file.
        file: PathBuf,
    },
}

/// The agent's JSON answer at `path`.
fn ask<T: serde::de::DeserializeOwned>(agent: &str, path: &str) -> anyhow::Result<T> {
    let (status, body) = http::get(agent, path, Duration::from_secs(5)).map_err(|e| {
        anyhow::anyhow!(
            "cannot reach the agent at {agent}: {e} (is it running? give its address with --agent)"
        )
    })?;
    if status == 404 {
        anyhow::bail!("the agent at {agent} has no {path}: it is older than this kubenpuctl");
    }
    if status != 200 {
        anyhow::bail!("the agent at {agent} answered {status}: {}", body.trim());
    }
    serde_json::from_str(&body)
        .map_err(|e| anyhow::anyhow!("the agent at {agent} sent bad JSON: {e}"))
}

/// The agent's per-series totals.
fn usage(agent: &str) -> anyhow::Result<server::UsageReport> {
    ask(agent, "/api/v1/usage")
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kubenpuctl: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Devices {
            json,
            sysfs_root,
            dev_root,
            plugins,
        } => {
            let vendors = load_vendors(plugins.plugins_dir)?;
            let roots = Roots {
                sysfs: sysfs_root,
                dev: dev_root,
                ..Roots::default()
            };
            let found = discovery::discover(&roots, &vendors.char_claims());
            for skipped in &found.skipped {
                eprintln!("kubenpuctl: skipped {skipped}");
            }
            let table = DeviceTable::build(found.devices, vendors);
            for problem in &table.problems {
                eprintln!("kubenpuctl: {problem}");
            }
            print!("{}", report::devices(&table, Format::json_if(json)));
        }
        Command::Counts { json, pin_path } => {
            let reading = kubenpu::probe::read_pinned(&pin_path)?;
            print!("{}", report::counts(&reading, Format::json_if(json)));
        }
        Command::Top {
            agent,
            interval,
            count,
        } => {
            let clear = std::io::stdout().is_terminal();
            let mut before = usage(&agent)?;
            for shown in 1.. {
                std::thread::sleep(interval);
                let after = usage(&agent)?;
                if clear {
                    print!("\x1b[H\x1b[2J");
                }
                print!("{}", report::top(&before, &after, interval.as_secs_f64()));
                if shown == count {
                    break;
                }
                before = after;
            }
        }
        Command::Allocations { agent, json } => {
            let report: server::AllocationsReport = ask(&agent, "/api/v1/allocations")?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            print!(
                "{}",
                report::allocations(&report, now, Format::json_if(json))
            );
        }
        Command::Policy {
            agent,
            json,
            why,
            device,
            container,
        } => {
            let report: server::PolicyReport = ask(&agent, "/api/v1/policy")?;
            match (why, device) {
                (Some(pod), Some(device)) => {
                    let pod = pod.split_once('/').ok_or_else(|| {
                        anyhow::anyhow!("--why takes NAMESPACE/POD, e.g. ml/trainer-0, not {pod:?}")
                    })?;
                    print!(
                        "{}",
                        policy::why(&report, pod, &device, container.as_deref())
                    );
                }
                _ => print!("{}", policy::table(&report, Format::json_if(json))),
            }
        }
        Command::Placement { agent, json } => {
            let report: server::PlacementReport = ask(&agent, "/api/v1/placement")?;
            print!("{}", placement::table(&report, Format::json_if(json)));
        }
        Command::Energy { agent, json } => {
            let report: server::EnergyReport = ask(&agent, "/api/v1/energy")?;
            print!("{}", energy::table(&report, Format::json_if(json)));
        }
        Command::Plugins {
            json,
            plugins,
            check: None,
        } => {
            let vendors = load_vendors(plugins.plugins_dir)?;
            print!(
                "{}",
                report::plugins(&vendors.plugins, Format::json_if(json))
            );
        }
        Command::Plugins {
            json,
            check: Some(PluginsCommand::Check { file }),
            ..
        } => {
            let sandbox = plugins::Sandbox::new()?;
            match plugins::load_file(&sandbox, &file) {
                Ok(plugin) => {
                    let plugins = [std::sync::Arc::new(plugin)];
                    print!("{}", report::plugins(&plugins, Format::json_if(json)));
                }
                Err(e) => {
                    eprintln!("kubenpuctl: {} rejected: {e}", file.display());
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Built-ins plus the directory's plugins; rejections are reported on stderr.
fn load_vendors(dir: PathBuf) -> anyhow::Result<plugins::Vendors> {
    let mut host = PluginHost::new(&dir)?;
    let vendors = host
        .scan()
        .map_err(|e| anyhow::anyhow!("cannot read the plugins directory {}: {e}", dir.display()))?;
    for rejection in &vendors.rejected {
        eprintln!("kubenpuctl: {rejection}");
    }
    Ok(vendors)
}
