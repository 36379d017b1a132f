//! Follows the plugins directory: every change triggers a rescan, and the
//! vendors then in force are handed on.

use super::{PluginHost, Vendors};
use crate::watch::DirWatch;

/// A running watch; dropping it stops the watch and its thread.
pub struct Watcher {
    _watch: DirWatch,
}

impl Watcher {
    /// Watches `host`'s directory and calls `on_change` with the vendors in
    /// force after every change. The directory must exist.
    pub fn spawn(
        mut host: PluginHost,
        mut on_change: impl FnMut(std::io::Result<Vendors>) + Send + 'static,
    ) -> notify::Result<Self> {
        let dir = host.dir().to_owned();
        let watch = DirWatch::spawn(&dir, move || on_change(host.scan()))?;
        Ok(Self { _watch: watch })
    }
}
