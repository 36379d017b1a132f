//! Follows the plugins directory: every add, replace (including a rename
//! over an old file) or delete triggers a rescan, and the vendors then in
//! force are handed on. Reads are not changes: the rescan itself reads
//! every file, and taking its reads as changes would rescan forever.

use std::{
    sync::mpsc,
    thread::{self, JoinHandle},
    time::Duration,
};

use notify::{RecursiveMode, Watcher as _};

use super::{PluginHost, Vendors};

/// Changes arriving within this window are handled by one rescan (an
/// editor's write + rename, a `cp` of several files).
const SETTLE: Duration = Duration::from_millis(100);

/// A running watch; dropping it stops the watch and its thread.
pub struct Watcher {
    watcher: Option<notify::RecommendedWatcher>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Watches `host`'s directory and calls `on_change` with the vendors in
    /// force after every change. The directory must exist.
    pub fn spawn(
        mut host: PluginHost,
        mut on_change: impl FnMut(std::io::Result<Vendors>) + Send + 'static,
    ) -> notify::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if !event.is_ok_and(|e| e.kind.is_access()) {
                    let _ = tx.send(());
                }
            })?;
        watcher.watch(host.dir(), RecursiveMode::NonRecursive)?;
        let thread = thread::spawn(move || {
            while rx.recv().is_ok() {
                while rx.recv_timeout(SETTLE).is_ok() {}
                on_change(host.scan());
            }
        });
        Ok(Self {
            watcher: Some(watcher),
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Dropping the notify watcher closes the channel, which ends the thread.
        self.watcher.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
