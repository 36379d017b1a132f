//! The agent's life: check the kernel, build the device table, load and
//! attach the probe, then keep the kernel's tables in step with devices,
//! plugins, pods and policy until SIGTERM. The program stays attached and
//! counting when the agent stops; the next agent adopts it.
//!
//! - [`preflight`]: what the flags and the kernel must offer, each gap one
//!   line with its remedy, before anything is loaded;
//! - [`startup`]: the phases that lead to the `ready:` line, each timed;
//! - [`arms`]: the loop, one arm per capability behind one small
//!   interface, and what each does with what it waits for;
//! - [`tables`]: the device table in force and its upload, which several
//!   arms change.
//!
//! Data flows one way: the arms hand events to [`Agent`], which owns the
//! probe and every capability's state and writes the kernel's maps.

mod arms;
mod preflight;
mod startup;
mod tables;

use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::{
    admission::Admissions,
    allocation::Allocation,
    attribution::resolver::Ask,
    config::AgentConfig,
    device_table::DeviceTable,
    energy,
    faults::Faults,
    fdinfo,
    placement::Placement,
    policy::Policy,
    probe::{self, Probe},
    usage::Usage,
};

/// Runs the agent until SIGTERM or SIGINT.
pub async fn run(config: AgentConfig) -> anyhow::Result<()> {
    if config.cleanup {
        probe::cleanup(&config.pin_path)?;
        info!(
            "removed {} (programs and policy checks detached, counts gone)",
            config.pin_path.display()
        );
        return Ok(());
    }
    let startup::Started {
        mut agent,
        mut arms,
        serving,
    } = startup::start(&config).await?;
    arms::run(&mut agent, &mut arms).await;
    serving.unready();
    agent.placement.stop();
    if agent.admissions.is_some() {
        // Hooks find no agent at once, and let their containers start.
        let _ = std::fs::remove_file(&config.admission_socket);
    }
    // Scrapes waiting on the loop get their 503 now.
    drop(arms);
    serving.stop().await;
    info!(
        "stopping; the program stays attached and counting, pinned at {}",
        config.pin_path.display()
    );
    Ok(())
}

/// What the agent's loop owns.
struct Agent {
    probe: Probe,
    usage: Usage,
    /// The devices and vendors in force.
    table: DeviceTable,
    /// Questions for the container runtime.
    asks: mpsc::UnboundedSender<Ask>,
    /// The Kubernetes node, for `kubenpu_device_info`.
    node: String,
    cri_up: bool,
    /// Errors met after start-up, which the agent goes on from.
    faults: Faults,
    /// The fdinfo reader, with `--fdinfo`.
    fdinfo: Option<fdinfo::Reader>,
    /// The energy meter, with `--energy`.
    energy: Option<energy::Meter>,
    /// The allocation join, unless `--no-allocation`.
    allocation: Option<Allocation>,
    /// The policy, which rules what the join classified; none without it.
    policy: Option<Policy>,
    /// Containers the runtime holds at their creation until they are
    /// ruled; none where the admission socket is not served.
    admissions: Option<Admissions>,
    /// Placement: the mode in force, and the scheduler while it runs.
    placement: Placement,
    /// The claimed character devices without nodes here, as last logged.
    absent_char_devices: Vec<String>,
}

/// A warning already formatted (for [`Faults`]).
fn log_line(line: String) {
    warn!("{line}");
}
