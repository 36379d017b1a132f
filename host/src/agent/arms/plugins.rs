//! The plugins' arm: a changed plugins directory puts its vendors in
//! force; devices are found anew only where the character devices they
//! claim changed.

use tokio::sync::mpsc;
use tracing::{info, warn};

use super::{Arm, next};
use crate::{
    agent::Agent,
    config::AgentConfig,
    device_table::DeviceTable,
    discovery::{self, Roots},
    plugins::{PluginHost, Vendors, Watcher},
};

/// What the plugins directory's watcher found, and the watcher; none
/// where the directory does not exist.
pub(in crate::agent) struct Plugins {
    updates: Option<mpsc::UnboundedReceiver<std::io::Result<Vendors>>>,
    _watcher: Option<Watcher>,
    roots: Roots,
}

impl Plugins {
    /// Watches the plugins directory with `host`, if it exists.
    pub(in crate::agent) fn watch(
        config: &AgentConfig,
        host: PluginHost,
        roots: Roots,
    ) -> anyhow::Result<Self> {
        if !config.plugins_dir.is_dir() {
            info!(
                "plugins directory {} does not exist: built-in vendors only (create it to add plugins)",
                config.plugins_dir.display()
            );
            return Ok(Self {
                updates: None,
                _watcher: None,
                roots,
            });
        }
        let (tx, updates) = mpsc::unbounded_channel();
        let watcher = Watcher::spawn(host, move |update| {
            let _ = tx.send(update);
        })?;
        Ok(Self {
            updates: Some(updates),
            _watcher: Some(watcher),
            roots,
        })
    }
}

impl Arm for Plugins {
    type Event = std::io::Result<Vendors>;

    async fn next(&mut self) -> std::io::Result<Vendors> {
        next(&mut self.updates).await
    }

    fn take(&mut self, update: std::io::Result<Vendors>, agent: &mut Agent) {
        match update {
            Ok(update) => agent.take_vendors(update, &self.roots),
            Err(e) => warn!("cannot read the plugins directory: {e}"),
        }
    }
}

impl Agent {
    /// Puts the vendors of a changed plugins directory in force. Devices
    /// are found anew only where the character devices claimed changed.
    fn take_vendors(&mut self, update: Vendors, roots: &Roots) {
        report_rejections(&update, &self.table.vendors);
        if summary(&update) != summary(&self.table.vendors) {
            info!("vendors: {}", summary(&update));
        }
        let claims = update.char_claims();
        let devices = if claims == self.table.vendors.char_claims() {
            self.devices()
        } else {
            discovery::discover(roots, &claims).devices
        };
        self.table = DeviceTable::build(devices, update);
        self.reinstall();
    }
}

/// The vendors in force, one line: `name version (source)`, ...
fn summary(vendors: &Vendors) -> String {
    let names: Vec<String> = vendors
        .plugins
        .iter()
        .map(|p| format!("{} {} ({})", p.name(), p.description.version, p.source))
        .collect();
    names.join(", ")
}

/// Logs rejections that are new since `before`.
pub(in crate::agent) fn report_rejections(now: &Vendors, before: &Vendors) {
    for rejection in &now.rejected {
        if !before.rejected.contains(rejection) {
            warn!("{rejection}");
        }
    }
}
