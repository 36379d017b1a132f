//! cgroup id → cgroup path. The kernel program keys counts by cgroup id,
//! which is the inode number of the cgroup's directory in the cgroup2
//! hierarchy; the path is what says which pod it is.
//!
//! Ids are learnt by walking the hierarchy. A walk happens when an id is
//! not known yet (a pod created after the last walk is then named within
//! one event), at most once per `min_interval` so a stream of unknown ids
//! cannot make the agent walk the tree on every event. An id that a walk
//! begun after it was seen did not find is gone for good: cgroup ids are
//! never reused, so that answer is final and cached.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// What the index knows of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The cgroup's path, relative to the hierarchy's root.
    Path(PathBuf),
    /// No such cgroup any more (it was removed).
    Gone,
    /// Not known yet, and the rate limit holds the next walk back: ask
    /// again later.
    Later,
}

/// The id → path index over one cgroup2 hierarchy.
#[derive(Debug)]
pub struct CgroupIndex {
    root: PathBuf,
    paths: HashMap<u64, PathBuf>,
    last_walk: Option<Instant>,
    min_interval: Duration,
    walks: u64,
}

impl CgroupIndex {
    /// An empty index over the hierarchy mounted at `root`; the first
    /// lookup walks it.
    pub fn new(root: impl Into<PathBuf>, min_interval: Duration) -> Self {
        Self {
            root: root.into(),
            paths: HashMap::new(),
            last_walk: None,
            min_interval,
            walks: 0,
        }
    }

    /// The hierarchy's mount point.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many times the index was rebuilt by walking the hierarchy.
    pub fn rebuilds(&self) -> u64 {
        self.walks
    }

    /// Where cgroup `id` is, given that it was first seen at `seen`.
    pub fn lookup(&mut self, id: u64, seen: Instant) -> Lookup {
        if let Some(path) = self.paths.get(&id) {
            return Lookup::Path(path.clone());
        }
        if self.last_walk.is_some_and(|walk| walk >= seen) {
            return Lookup::Gone;
        }
        let now = Instant::now();
        if self
            .last_walk
            .is_some_and(|walk| now.duration_since(walk) < self.min_interval)
        {
            return Lookup::Later;
        }
        self.rebuild(now);
        match self.paths.get(&id) {
            Some(path) => Lookup::Path(path.clone()),
            None => Lookup::Gone,
        }
    }

    /// Whether cgroup `id` still exists: its directory is there and is
    /// still the same cgroup (a path can be reused by a new cgroup, never
    /// an id).
    pub fn exists(&self, id: u64) -> bool {
        self.paths.get(&id).is_some_and(|path| {
            std::fs::metadata(self.root.join(path)).is_ok_and(|meta| meta.ino() == id)
        })
    }

    /// Where cgroup `id` was last known to be, relative to the root,
    /// without walking.
    pub fn path(&self, id: u64) -> Option<&Path> {
        self.paths.get(&id).map(PathBuf::as_path)
    }

    /// Takes cgroup `id`'s path from elsewhere (the kernel's record), so
    /// it is known without a walk, and whether it still exists is one
    /// `stat` away.
    pub fn learn(&mut self, id: u64, path: PathBuf) {
        self.paths.insert(id, path);
    }

    /// Forgets a removed cgroup.
    pub fn forget(&mut self, id: u64) {
        self.paths.remove(&id);
    }

    fn rebuild(&mut self, now: Instant) {
        self.last_walk = Some(now);
        self.walks += 1;
        self.paths.clear();
        if let Ok(meta) = std::fs::metadata(&self.root) {
            self.paths.insert(meta.ino(), PathBuf::new());
        }
        let mut pending = vec![PathBuf::new()];
        while let Some(dir) = pending.pop() {
            // A cgroup removed during the walk is simply not listed.
            let Ok(entries) = std::fs::read_dir(self.root.join(&dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_dir() {
                    let path = dir.join(entry.file_name());
                    self.paths.insert(meta.ino(), path.clone());
                    pending.push(path);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ino(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().ino()
    }

    #[test]
    fn finds_new_cgroups_by_walking_again_and_knows_removed_ones() {
        let root = tempfile::tempdir().unwrap();
        let pod = root.path().join("kubepods/besteffort/pod1");
        std::fs::create_dir_all(&pod).unwrap();
        let mut index = CgroupIndex::new(root.path(), Duration::ZERO);

        assert_eq!(
            index.lookup(ino(root.path()), Instant::now()),
            Lookup::Path("".into())
        );
        assert_eq!(index.rebuilds(), 1);
        assert_eq!(
            index.lookup(ino(&pod), Instant::now()),
            Lookup::Path("kubepods/besteffort/pod1".into())
        );
        assert_eq!(index.rebuilds(), 1, "a known id needs no walk");

        let container = pod.join("abc");
        std::fs::create_dir(&container).unwrap();
        let id = ino(&container);
        assert_eq!(
            index.lookup(id, Instant::now()),
            Lookup::Path("kubepods/besteffort/pod1/abc".into())
        );
        assert_eq!(index.rebuilds(), 2);
        assert!(index.exists(id));

        std::fs::remove_dir(&container).unwrap();
        assert!(!index.exists(id));
        index.forget(id);
        assert_eq!(index.lookup(id, Instant::now()), Lookup::Gone);
        assert_eq!(
            index.lookup(id, Instant::now() - Duration::from_secs(1)),
            Lookup::Gone
        );
        assert_eq!(
            index.rebuilds(),
            3,
            "a gone id seen before the last walk needs none"
        );
    }

    #[test]
    fn unknown_ids_do_not_walk_more_often_than_the_limit() {
        let root = tempfile::tempdir().unwrap();
        let mut index = CgroupIndex::new(root.path(), Duration::from_secs(3600));
        assert_eq!(index.lookup(u64::MAX, Instant::now()), Lookup::Gone);
        for id in 0..1000 {
            // Seen after the walk, so the walk's answer does not cover them.
            let seen = Instant::now();
            assert_eq!(index.lookup(u64::MAX - 1 - id, seen), Lookup::Later);
        }
        assert_eq!(index.rebuilds(), 1);
    }

    #[test]
    fn a_reused_path_is_a_different_cgroup() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("job");
        std::fs::create_dir(&dir).unwrap();
        let mut index = CgroupIndex::new(root.path(), Duration::ZERO);
        let first = ino(&dir);
        assert!(matches!(
            index.lookup(first, Instant::now()),
            Lookup::Path(_)
        ));
        // The old directory lives on elsewhere, so its inode cannot be
        // handed to the new one.
        std::fs::rename(&dir, root.path().join("old")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert!(!index.exists(first));
    }
}
