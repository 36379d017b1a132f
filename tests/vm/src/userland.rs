//! The guest's userland: busybox, and the Debian programs a test carries in
//! (containerd, runc) with the shared libraries they link. An x86_64 guest
//! takes them from this host, which runs Debian 12; an arm64 guest from
//! Debian 12's arm64 packages, unpacked into the cache (never installed).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{
    Arch,
    apt::{Mirrors, PrivateApt},
    cache,
    command::{output, run},
    elf::{interpreter, parse_list},
    kernel::cache_dir,
};

/// The arm64 packages unpacked for a guest: busybox, and the container
/// runtime with the libraries its programs link.
const PACKAGES: [&str; 5] = [
    "busybox-static",
    "containerd",
    "runc",
    "libc6",
    "libseccomp2",
];

/// Marks a completed unpack; holds the suite.
const SUITE_FILE: &str = "suite";

/// The suite the arm64 userland comes from: the host's own.
const SUITE: &str = "bookworm";

/// A root directory holding the guest architecture's programs and libraries.
pub struct Userland {
    arch: Arch,
    root: PathBuf,
}

impl Userland {
    /// The userland for `arch`: this host's own for its architecture, else
    /// Debian's packages, downloaded and unpacked first if they are not
    /// cached yet.
    pub fn of(arch: Arch) -> Result<Self> {
        if arch == Arch::host()? {
            return Ok(Self {
                arch,
                root: "/".into(),
            });
        }
        let dir = cache_dir()?.join("userland").join(arch.debian());
        cache::fill_once(
            &dir,
            SUITE_FILE,
            &format!("Debian's {} userland", arch.debian()),
            |dir| unpack(arch, dir).map(|()| SUITE.to_owned()),
        )?;
        Ok(Self {
            arch,
            root: dir.join("root"),
        })
    }

    /// The architecture of its programs.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Its root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The host file holding `guest`, an absolute path in this userland.
    pub fn path(&self, guest: &str) -> PathBuf {
        self.root.join(guest.trim_start_matches('/'))
    }

    /// busybox, statically linked.
    pub fn busybox(&self) -> Result<PathBuf> {
        if self.root == Path::new("/") {
            return which("busybox");
        }
        let path = self.path("/bin/busybox");
        anyhow::ensure!(path.is_file(), "{} is missing", path.display());
        Ok(path)
    }

    /// The shared libraries and loader the executable `binary` (a host
    /// file) links, as (host file, guest path); none for a static one or a
    /// script. The binary's own loader lists them, under qemu's user-mode
    /// emulation for another architecture, where the loader finds them
    /// under this userland's root.
    pub fn libraries(&self, binary: &Path) -> Result<Vec<(PathBuf, String)>> {
        let bytes = fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
        let Some(loader) = interpreter(&bytes) else {
            return Ok(Vec::new());
        };
        let mut list = match self.arch {
            Arch::Amd64 => Command::new(&loader),
            Arch::Arm64 => {
                let mut cmd = Command::new("qemu-aarch64-static");
                cmd.arg("-L").arg(&self.root).arg(self.path(&loader));
                cmd
            }
        };
        let text = output(list.arg("--list").arg(binary))?;
        // Under emulation, the loader names itself by the host path it ran
        // from, and what it loaded by its guest path.
        Ok(parse_list(&text)
            .into_iter()
            .map(|listed| match Path::new(&listed).strip_prefix(&self.root) {
                Ok(inside) if self.root != Path::new("/") => {
                    format!("/{}", inside.display())
                }
                _ => listed,
            })
            .map(|guest| (self.path(&guest), guest))
            .collect())
    }
}

/// Downloads the packages into `dir`/root.
fn unpack(arch: Arch, dir: &Path) -> Result<()> {
    let mirrors = Mirrors::from_host()?;
    let apt = PrivateApt::create(
        &dir.join("apt"),
        &[
            (&mirrors.archive, SUITE),
            (&mirrors.security, "bookworm-security"),
        ],
        arch,
    )?;
    apt.update()?;
    let debs = dir.join("debs");
    let packages = PACKAGES.map(str::to_owned);
    apt.download(&packages, &debs)?;
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    for deb in fs::read_dir(&debs)? {
        run(Command::new("dpkg").arg("-x").arg(deb?.path()).arg(&root))?;
    }
    fs::remove_dir_all(&debs)?;
    Ok(())
}

fn which(program: &str) -> Result<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .with_context(|| format!("{program} is not on PATH: run scripts/setup"))
}
