//! Whether BPF LSM is active: the kernel may have it built in
//! (`CONFIG_BPF_LSM=y`) and still not run it, when `lsm=` on its command
//! line (or `CONFIG_LSM`) leaves `bpf` out. Programs then attach, and
//! never run: a policy that checks nothing. Only securityfs says.

use std::{io, path::Path};

/// Whether BPF LSM is among the active LSMs that securityfs, under
/// `sysfs_root`, lists; else why not, and what to do, in one line.
pub fn active(sysfs_root: &Path) -> Result<(), String> {
    let path = sysfs_root.join("kernel/security/lsm");
    match std::fs::read_to_string(&path) {
        Ok(list) => listed(list.trim()).map_err(|list| {
            format!(
                "BPF LSM is not active on this kernel ({} lists {list}): boot it with lsm={list},bpf (every LSM the node uses, and bpf)",
                path.display()
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
            "cannot tell whether BPF LSM is active: {} does not exist (mount securityfs there: mount -t securityfs securityfs {}/kernel/security)",
            path.display(),
            sysfs_root.display()
        )),
        Err(e) => Err(format!(
            "cannot tell whether BPF LSM is active: cannot read {}: {e}",
            path.display()
        )),
    }
}

/// `Ok` if the comma-separated `list` has `bpf`; else the list, for the
/// message.
fn listed(list: &str) -> Result<(), &str> {
    if list.split(',').any(|lsm| lsm == "bpf") {
        Ok(())
    } else {
        Err(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn securityfs(list: Option<&str>) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        if let Some(list) = list {
            std::fs::create_dir_all(root.path().join("kernel/security")).unwrap();
            std::fs::write(root.path().join("kernel/security/lsm"), list).unwrap();
        }
        root
    }

    #[test]
    fn bpf_must_be_listed_among_the_active_lsms() {
        let on = securityfs(Some(
            "lockdown,capability,landlock,yama,apparmor,tomoyo,bpf\n",
        ));
        assert_eq!(active(on.path()), Ok(()));

        let off = securityfs(Some("lockdown,capability,yama,apparmor"));
        let why = active(off.path()).unwrap_err();
        assert!(
            why.contains("not active") && why.contains("lsm=lockdown,capability,yama,apparmor,bpf"),
            "{why}"
        );
        // A name that merely contains bpf is not bpf.
        assert!(active(securityfs(Some("capability,notbpf")).path()).is_err());

        let unmounted = securityfs(None);
        let why = active(unmounted.path()).unwrap_err();
        assert!(why.contains("mount -t securityfs"), "{why}");
    }
}
