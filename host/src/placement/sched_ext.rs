//! What the kernel says of sched_ext, in sysfs: whether it is built in,
//! and which BPF scheduler, if any, is in force.

use std::{fs, path::Path};

/// sched_ext's state on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// No `/sys/kernel/sched_ext`: the kernel is built without
    /// `CONFIG_SCHED_CLASS_EXT` (or older than Linux 6.12).
    Absent,
    /// No BPF scheduler: every task is on the kernel's own classes.
    Disabled,
    /// A BPF scheduler is in force (or being switched in or out: the
    /// kernel's `enabling` and `disabling`), named by its ops.
    Loaded {
        /// `root/ops`, the scheduler's name; empty if unreadable.
        ops: String,
        /// The kernel's word: `enabled`, `enabling` or `disabling`.
        state: String,
    },
}

impl State {
    /// Reads `kernel/sched_ext` below `sysfs_root`.
    pub fn read(sysfs_root: &Path) -> Self {
        let dir = sysfs_root.join("kernel/sched_ext");
        let Ok(state) = fs::read_to_string(dir.join("state")) else {
            return State::Absent;
        };
        match state.trim() {
            "disabled" => State::Disabled,
            state => State::Loaded {
                ops: fs::read_to_string(dir.join("root/ops"))
                    .map(|ops| ops.trim().to_owned())
                    .unwrap_or_default(),
                state: state.to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysfs(state: Option<&str>, ops: Option<&str>) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("kernel/sched_ext/root");
        fs::create_dir_all(&dir).unwrap();
        if let Some(state) = state {
            fs::write(root.path().join("kernel/sched_ext/state"), state).unwrap();
        }
        if let Some(ops) = ops {
            fs::write(dir.join("ops"), ops).unwrap();
        }
        root
    }

    #[test]
    fn the_kernels_words_are_read_as_they_are_written() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(State::read(root.path()), State::Absent);
        assert_eq!(
            State::read(sysfs(Some("disabled\n"), None).path()),
            State::Disabled
        );
        assert_eq!(
            State::read(sysfs(Some("enabled\n"), Some("simple\n")).path()),
            State::Loaded {
                ops: "simple".into(),
                state: "enabled".into()
            }
        );
        assert_eq!(
            State::read(sysfs(Some("disabling\n"), None).path()),
            State::Loaded {
                ops: String::new(),
                state: "disabling".into()
            }
        );
    }
}
