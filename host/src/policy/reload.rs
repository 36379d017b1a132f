//! Follows the policy file: read as the agent starts, and again at every
//! change of its directory, so that a ConfigMap's update (a symbolic link
//! swapped over the old data) or an editor's rename is in force within a
//! second.

use std::path::Path;

use tracing::warn;

use super::file::PolicyFile;
use crate::watch::DirWatch;

/// One reading of the file: its rules, `None` where there is no file, or
/// the one line that says what is wrong with it.
pub type Reading = Result<Option<PolicyFile>, String>;

/// Reads the file at `path` and follows it, handing every later reading
/// to `on_change`. The directory is watched before the first read, so a
/// change in between is not missed. A directory that cannot be watched
/// is said in one line, and the file is then read only now.
pub fn follow(
    path: &Path,
    mut on_change: impl FnMut(Reading) + Send + 'static,
) -> (Reading, Option<DirWatch>) {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let followed = path.to_owned();
    let watch = match DirWatch::spawn(dir, move || on_change(PolicyFile::read(&followed))) {
        Ok(watch) => Some(watch),
        Err(e) => {
            warn!(
                "cannot watch {} for changes of the policy file: {e}; it is read only as the agent starts (create the directory, or mount the ConfigMap there)",
                dir.display()
            );
            None
        }
    };
    (PolicyFile::read(path), watch)
}
