//! Follows a directory: every add, replace (including a rename over an
//! old file, as an editor or a ConfigMap update does) or delete calls the
//! handler once things settle. Reads are not changes: a handler reads the
//! files it follows, and taking its reads as changes would call it
//! forever.

use std::{
    path::Path,
    sync::mpsc,
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use notify::{RecursiveMode, Watcher as _};

/// Changes arriving within this window are handled by one call (an
/// editor's write + rename, a `cp` of several files).
const SETTLE: Duration = Duration::from_millis(100);
/// The longest a change waits for the directory to settle: one that
/// never does is still handled this often.
const SETTLE_AT_MOST: Duration = Duration::from_secs(1);

/// A running watch; dropping it stops the watch and its thread.
pub struct DirWatch {
    watcher: Option<notify::RecommendedWatcher>,
    thread: Option<JoinHandle<()>>,
}

impl DirWatch {
    /// Watches `dir`, which must exist, and calls `on_change` on its own
    /// thread after every change.
    pub fn spawn(dir: &Path, mut on_change: impl FnMut() + Send + 'static) -> notify::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if !event.is_ok_and(|e| e.kind.is_access()) {
                    let _ = tx.send(());
                }
            })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        let thread = thread::spawn(move || {
            while rx.recv().is_ok() {
                let first = Instant::now();
                while first.elapsed() < SETTLE_AT_MOST && rx.recv_timeout(SETTLE).is_ok() {}
                on_change();
            }
        });
        Ok(Self {
            watcher: Some(watcher),
            thread: Some(thread),
        })
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        // Dropping the notify watcher closes the channel, which ends the thread.
        self.watcher.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
