//! The Mesa root: Debian 12's OpenGL clients (glmark2, kmscube), the Mesa
//! drivers they load at run time and strace, with everything they link,
//! unpacked into the cache (never installed) as a root directory that a
//! guest with a 3D virtio-gpu mounts read-only at `/mesa`. It is about
//! 290 MB (libLLVM alone is over 100 MB): far too big for the initramfs, which
//! the guest holds in memory.
//!
//! Its `/usr` is merged (`/lib` is a link to `usr/lib`, and so on), so a
//! container can use it by mounting `/mesa/usr` at its own `/usr` beside
//! such links.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    Arch,
    apt::{Selection, cached_root},
    kernel::cache_dir,
};

/// The packages unpacked with their dependencies: the clients, the Mesa
/// drivers they load by name (no package depends on those), strace, and
/// coreutils for `env --chdir` (the guest enters the root by chroot,
/// which leaves the working directory at `/`).
const PACKAGES: [&str; 7] = [
    "glmark2-es2-drm",
    "kmscube",
    "strace",
    "libgl1-mesa-dri",
    "libegl-mesa0",
    "libgbm1",
    "coreutils",
];

/// Where the guest mounts the root.
pub const GUEST_PATH: &str = "/mesa";

/// Directories of the root over which the guest mounts its own `/dev`,
/// `/proc`, `/sys` and `/shared`, and a `/tmp` (the share is read-only,
/// so they must exist in it).
const MOUNT_POINTS: [&str; 6] = ["dev", "proc", "sys", "shared", "tmp", "run"];

/// Top-level directories whose contents Debian 12's packages still ship
/// outside `/usr`.
const MERGED: [&str; 4] = ["bin", "sbin", "lib", "lib64"];

/// The guest's `in-mesa PROGRAM [ARG]...`: runs a program of the root in
/// it, in the current directory (under `/shared` or `/tmp`, which the
/// root shares).
pub const IN_MESA: &str = r#"#!/bin/sh
# in-mesa PROGRAM [ARG]...: runs a program of the Mesa root in it, in the
# current directory (under /shared or /tmp, which the root shares).
exec chroot /mesa /usr/bin/env --chdir="$PWD" HOME=/tmp "$@"
"#;

/// The architecture of its programs: the guests with a 3D virtio-gpu are
/// x86_64 ones.
pub const ARCH: Arch = Arch::Amd64;

/// The Mesa root, downloaded and unpacked first if it is not cached yet.
pub fn root() -> Result<PathBuf> {
    let dir = cache_dir()?.join("mesa").join(ARCH.debian());
    cached_root(
        &dir,
        "Debian's Mesa clients and drivers",
        ARCH,
        (&PACKAGES, Selection::WithDependencies),
        |root| {
            merge_usr(root)?;
            for dir in MOUNT_POINTS {
                fs::create_dir_all(root.join(dir))?;
            }
            Ok(())
        },
    )
}

/// Moves `bin`, `sbin`, `lib` and `lib64` into `usr` and links them there,
/// as Debian 12's installer does.
fn merge_usr(root: &Path) -> Result<()> {
    for dir in MERGED {
        let top = root.join(dir);
        if top.is_symlink() || !top.exists() {
            continue;
        }
        move_into(&top, &root.join("usr").join(dir))?;
        std::os::unix::fs::symlink(format!("usr/{dir}"), &top)?;
    }
    Ok(())
}

/// Moves the entries of the directory `from` into `to`, merging
/// directories both have, and removes `from`.
fn move_into(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if !target.exists() && !target.is_symlink() {
            fs::rename(entry.path(), &target)?;
        } else if kind.is_dir() && target.is_dir() && !target.is_symlink() {
            move_into(&entry.path(), &target)?;
        } else {
            bail!(
                "{} is in both {} and {}: the packages cannot share a merged /usr",
                entry.file_name().to_string_lossy(),
                from.display(),
                to.display()
            );
        }
    }
    fs::remove_dir(from).with_context(|| format!("removing {}", from.display()))
}

#[cfg(test)]
mod tests {
    use std::fs;

    #[test]
    fn merging_usr_moves_the_top_directories_into_it_and_links_them() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        for file in [
            "lib/x86_64-linux-gnu/libc.so.6",
            "usr/lib/x86_64-linux-gnu/libdrm.so.2",
            "bin/ls",
        ] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, file).unwrap();
        }
        super::merge_usr(root).unwrap();
        assert_eq!(
            fs::read_link(root.join("lib")).unwrap().to_str(),
            Some("usr/lib")
        );
        assert_eq!(
            fs::read_link(root.join("bin")).unwrap().to_str(),
            Some("usr/bin")
        );
        assert!(!root.join("sbin").exists());
        for file in ["libc.so.6", "libdrm.so.2"] {
            assert!(root.join("lib/x86_64-linux-gnu").join(file).is_file());
        }
        assert!(root.join("usr/bin/ls").is_file());
    }

    #[test]
    fn merging_usr_refuses_a_file_in_both_places() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        for file in ["bin/sh", "usr/bin/sh"] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, file).unwrap();
        }
        let error = super::merge_usr(root).unwrap_err().to_string();
        assert!(error.contains("sh is in both"), "{error}");
    }
}
