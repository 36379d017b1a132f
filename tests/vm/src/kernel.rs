//! The Debian kernels the VM boots, fetched as packages into a cache and
//! unpacked there, never installed on the host.

use std::{
    fmt, fs,
    path::{Path, PathBuf},
    process::Command,
    str::FromStr,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    apt::{Mirrors, PrivateApt},
    command::run,
};

/// A Debian kernel, named by the suite that ships it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Debian 12's own kernel (6.1).
    Bookworm,
    /// Debian 12's backports kernel (6.12).
    BookwormBackports,
    /// Debian unstable's newest kernel.
    Sid,
}

impl Kernel {
    /// Every kernel the tests run on, oldest first.
    pub const ALL: [Kernel; 3] = [Kernel::Bookworm, Kernel::BookwormBackports, Kernel::Sid];

    /// The name used on the command line and in the cache.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Bookworm => "bookworm",
            Kernel::BookwormBackports => "bookworm-backports",
            Kernel::Sid => "sid",
        }
    }

    fn repositories(self, mirrors: &Mirrors) -> Vec<(&str, &'static str)> {
        match self {
            Kernel::Bookworm => vec![
                (mirrors.archive.as_str(), "bookworm"),
                (mirrors.security.as_str(), "bookworm-security"),
            ],
            Kernel::BookwormBackports => vec![(mirrors.archive.as_str(), "bookworm-backports")],
            Kernel::Sid => vec![(mirrors.archive.as_str(), "sid")],
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kernel {
    type Err = anyhow::Error;

    fn from_str(name: &str) -> Result<Self> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .with_context(|| {
                let names: Vec<_> = Kernel::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown kernel {name:?}: choose one of {}",
                    names.join(", ")
                )
            })
    }
}

/// A kernel unpacked in the cache, ready to boot.
#[derive(Debug, Clone)]
pub struct KernelImage {
    /// Which kernel this is.
    pub kernel: Kernel,
    /// Its release string, as `uname -r` prints it in the guest.
    pub release: String,
    /// The bootable image.
    pub vmlinuz: PathBuf,
    /// `lib/modules/<release>`, with `modules.dep` generated.
    pub modules: PathBuf,
}

/// The cache directory: `$KUBENPU_CACHE`, else `$XDG_CACHE_HOME/kubenpu`,
/// else `~/.cache/kubenpu`.
pub fn cache_dir() -> Result<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("KUBENPU_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("kubenpu")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/kubenpu")))
        .context("no cache directory: set KUBENPU_CACHE or HOME")
}

/// Marks a completed unpack; holds the kernel release.
const RELEASE_FILE: &str = "release";

impl Kernel {
    fn dir(self) -> Result<PathBuf> {
        Ok(cache_dir()?.join("kernels").join(self.name()))
    }

    /// The kernel from the cache, if it was fetched before.
    pub fn cached(self) -> Result<Option<KernelImage>> {
        let dir = self.dir()?;
        match fs::read_to_string(dir.join(RELEASE_FILE)) {
            Ok(release) => locate(self, &dir.join("root"), release.trim()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).context("reading the kernel cache"),
        }
    }

    /// The kernel, downloaded and unpacked first if it is not cached yet.
    /// Safe to call from concurrent tests: one fetches, the others wait.
    pub fn fetch(self) -> Result<KernelImage> {
        let dir = self.dir()?;
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let lock = fs::File::create(dir.join(".lock"))?;
        lock.lock()?;
        if let Some(image) = self.cached()? {
            return Ok(image);
        }
        eprintln!(
            "kubenpu-vm: fetching the {self} kernel into {}",
            dir.display()
        );
        self.download_and_unpack(&dir)
            .with_context(|| format!("fetching the {self} kernel"))
    }

    fn download_and_unpack(self, dir: &Path) -> Result<KernelImage> {
        let mirrors = Mirrors::from_host()?;
        let apt = PrivateApt::create(&dir.join("apt"), &self.repositories(&mirrors))?;
        apt.update()?;
        // linux-image-amd64 -> linux-image-<release>; since 7.x that package
        // is a shell whose linux-binary-/linux-modules- dependencies carry
        // the image and modules.
        let image = apt
            .depends("linux-image-amd64")?
            .into_iter()
            .find(|dep| dep.starts_with("linux-image-"))
            .context("linux-image-amd64 depends on no linux-image-<release>")?;
        let release = image.trim_start_matches("linux-image-").to_owned();
        let mut packages = vec![image.clone()];
        packages.extend(apt.depends(&image)?.into_iter().filter(|dep| {
            dep == &format!("linux-binary-{release}") || dep == &format!("linux-modules-{release}")
        }));
        let debs = dir.join("debs");
        apt.download(&packages, &debs)?;

        let root = dir.join("root");
        let _ = fs::remove_dir_all(&root);
        for deb in fs::read_dir(&debs)? {
            let deb = deb?.path();
            run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root))?;
        }
        fs::remove_dir_all(&debs)?;
        let modules = modules_dir(&root, &release)?;
        // depmod -b BASE looks in BASE/lib/modules/<release>.
        let base = modules.ancestors().nth(3).context("short modules path")?;
        run(Command::new("depmod").arg("-b").arg(base).arg(&release))?;
        let image = locate(self, &root, &release)?;
        fs::write(dir.join(RELEASE_FILE), &release)?;
        Ok(image)
    }
}

fn modules_dir(root: &Path, release: &str) -> Result<PathBuf> {
    ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| root.join(d).join(release))
        .find(|d| d.join("kernel").is_dir())
        .with_context(|| format!("no modules for {release} under {}", root.display()))
}

fn locate(kernel: Kernel, root: &Path, release: &str) -> Result<KernelImage> {
    let modules = modules_dir(root, release)?;
    let vmlinuz = [
        root.join("boot").join(format!("vmlinuz-{release}")),
        modules.join("vmlinuz"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .with_context(|| format!("no vmlinuz for {release} under {}", root.display()))?;
    if !modules.join("modules.dep").is_file() {
        bail!(
            "{} has no modules.dep: remove {} and fetch again",
            modules.display(),
            root.display()
        );
    }
    Ok(KernelImage {
        kernel,
        release: release.to_owned(),
        vmlinuz,
        modules,
    })
}
