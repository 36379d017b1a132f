//! The guest's userland: busybox, and the Debian programs a test carries in
//! (containerd, runc) with the shared libraries they link. An x86_64 guest
//! takes them from this host, which runs Debian 12; an arm64 guest from
//! Debian 12's arm64 packages, unpacked into the cache (never installed).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail, ensure};

use crate::{
    Arch,
    apt::{Selection, cached_root},
    command::output,
    elf,
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

/// Links followed inside a userland before giving up on a loop.
const MAX_LINKS: usize = 40;

/// A root directory holding the guest architecture's programs and libraries.
pub struct Userland {
    arch: Arch,
    root: PathBuf,
    /// Whether its programs run here only under qemu's user-mode emulator.
    emulated: bool,
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
                emulated: false,
            });
        }
        let dir = cache_dir()?.join("userland").join(arch.debian());
        let unpacked = cached_root(
            &dir,
            &format!("Debian's {} userland", arch.debian()),
            arch,
            (&PACKAGES, Selection::Named),
            |_| Ok(()),
        )?;
        // Absolute, as the emulated loader names files by it.
        let root = unpacked
            .canonicalize()
            .with_context(|| format!("{} was not unpacked", unpacked.display()))?;
        Ok(Self {
            arch,
            root,
            emulated: true,
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

    /// The host file holding `guest`, an absolute path in this userland:
    /// symbolic links are followed inside the userland, so an absolute
    /// link never reaches this host's own files.
    pub fn path(&self, guest: &str) -> Result<PathBuf> {
        ensure!(
            guest.starts_with('/') && !guest.split('/').any(|c| c == ".."),
            "{guest:?} is not an absolute path without \"..\""
        );
        let mut path = self.root.join(guest.trim_start_matches('/'));
        if !self.emulated {
            return Ok(path);
        }
        for _ in 0..MAX_LINKS {
            let Ok(target) = fs::read_link(&path) else {
                return Ok(path);
            };
            path = match target.strip_prefix("/") {
                Ok(inside) => self.root.join(inside),
                Err(_) => path.parent().unwrap_or(&self.root).join(target),
            };
        }
        bail!(
            "{guest}: more than {MAX_LINKS} symbolic links in {}",
            self.root.display()
        )
    }

    /// busybox, statically linked.
    pub fn busybox(&self) -> Result<PathBuf> {
        let path = self.path("/bin/busybox")?;
        ensure!(
            path.is_file(),
            "{} is missing: run scripts/setup",
            path.display()
        );
        Ok(path)
    }

    /// The shared libraries and loader the executable `binary` (a host
    /// file of this userland's architecture) links, as (host file, guest
    /// path); none for a static one or a script. The binary's own loader
    /// lists them, under qemu's user-mode emulator for another
    /// architecture, where the loader finds them under this userland's
    /// root.
    pub fn libraries(&self, binary: &Path) -> Result<Vec<(PathBuf, String)>> {
        let bytes = fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
        if let Some(machine) = elf::machine(&bytes) {
            ensure!(
                machine == self.arch.elf_machine(),
                "{} is not an {} executable: the guest needs one built for it",
                binary.display(),
                self.arch.debian()
            );
        }
        let Some(loader) = elf::interpreter(&bytes) else {
            return Ok(Vec::new());
        };
        let mut list = if self.emulated {
            let mut cmd = Command::new(self.arch.user_emulator());
            cmd.arg("-L").arg(&self.root).arg(self.path(&loader)?);
            cmd
        } else {
            Command::new(&loader)
        };
        let text = output(list.arg("--list").arg(binary))?;
        let listed = elf::parse_list(&text)
            .with_context(|| format!("{} cannot run here", binary.display()))?;
        listed
            .into_iter()
            .map(|guest| Ok((self.path(&guest)?, guest)))
            .collect()
    }
}
