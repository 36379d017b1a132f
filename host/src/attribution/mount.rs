//! Where the cgroup v2 hierarchy is mounted: `/sys/fs/cgroup` on a pure v2
//! node, `/sys/fs/cgroup/unified` on a hybrid one. The kernel program's
//! cgroup ids are inode numbers in this hierarchy.

use std::path::PathBuf;

/// The cgroup2 mount point in `mountinfo` (the text of
/// `/proc/self/mountinfo`), preferring one that shows the whole hierarchy
/// (mount root `/`), and among those `/sys/fs/cgroup`.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (mount, filesystem) = line.split_once(" - ")?;
            if filesystem.split(' ').next()? != "cgroup2" {
                return None;
            }
            // Fields: id parent major:minor root mount-point ...
            let mut fields = mount.split(' ').skip(3);
            let root = fields.next()?;
            let point = unescape(fields.next()?);
            let rank = (root != "/", point != "/sys/fs/cgroup");
            Some((rank, point))
        })
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, point)| PathBuf::from(point))
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn hybrid_nodes_use_the_unified_mount() {
        assert_eq!(
            cgroup2_mount(HYBRID),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn pure_v2_prefers_the_standard_place_and_the_whole_tree() {
        let mounts = "\
25 1 0:22 /kubepods/pod1 /host/cgroup rw - cgroup2 cgroup2 rw
26 1 0:22 / /mnt/cgroup\\040two rw - cgroup2 cgroup2 rw
27 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
";
        assert_eq!(cgroup2_mount(mounts), Some(PathBuf::from("/sys/fs/cgroup")));
        let elsewhere = &mounts[..mounts.rfind("27 1").unwrap()];
        assert_eq!(
            cgroup2_mount(elsewhere),
            Some(PathBuf::from("/mnt/cgroup two"))
        );
    }

    #[test]
    fn v1_only_has_none() {
        assert_eq!(
            cgroup2_mount(&HYBRID[..HYBRID.find("41 31").unwrap()]),
            None
        );
    }
}
