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
    Arch,
    apt::{Mirrors, PrivateApt},
    cache,
    command::run,
};

/// A Debian kernel, named by the suite that ships it, for x86_64 unless
/// its name says arm64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Debian 12's own kernel (6.1).
    Bookworm,
    /// Debian 12's backports kernel (6.12).
    BookwormBackports,
    /// Debian unstable's newest kernel.
    Sid,
    /// Debian 12's own kernel (6.1) for arm64.
    BookwormArm64,
    /// Debian unstable's newest kernel for arm64.
    SidArm64,
}

impl Kernel {
    /// Every kernel the tests run on, x86_64's oldest first, then arm64's.
    pub const ALL: [Kernel; 5] = [
        Kernel::Bookworm,
        Kernel::BookwormBackports,
        Kernel::Sid,
        Kernel::BookwormArm64,
        Kernel::SidArm64,
    ];

    /// The name used on the command line and in the cache.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Bookworm => "bookworm",
            Kernel::BookwormBackports => "bookworm-backports",
            Kernel::Sid => "sid",
            Kernel::BookwormArm64 => "bookworm-arm64",
            Kernel::SidArm64 => "sid-arm64",
        }
    }

    /// The Debian suite that ships it.
    pub fn suite(self) -> &'static str {
        match self {
            Kernel::Bookworm | Kernel::BookwormArm64 => "bookworm",
            Kernel::BookwormBackports => "bookworm-backports",
            Kernel::Sid | Kernel::SidArm64 => "sid",
        }
    }

    /// The architecture it is built for, and the VM emulates.
    pub fn arch(self) -> Arch {
        match self {
            Kernel::Bookworm | Kernel::BookwormBackports | Kernel::Sid => Arch::Amd64,
            Kernel::BookwormArm64 | Kernel::SidArm64 => Arch::Arm64,
        }
    }

    fn repositories(self, mirrors: &Mirrors) -> Vec<(&str, &'static str)> {
        match self.suite() {
            "bookworm" => vec![
                (mirrors.archive.as_str(), "bookworm"),
                (mirrors.security.as_str(), "bookworm-security"),
            ],
            suite => vec![(mirrors.archive.as_str(), suite)],
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
        cache::filled(&dir, RELEASE_FILE)?
            .map(|release| locate(self, &dir.join("root"), &release))
            .transpose()
    }

    /// The kernel, downloaded and unpacked first if it is not cached yet.
    /// Safe to call from concurrent tests: one fetches, the others wait.
    pub fn fetch(self) -> Result<KernelImage> {
        let dir = self.dir()?;
        let release = cache::fill_once(
            &dir,
            RELEASE_FILE,
            None,
            &format!("the {self} kernel"),
            // Marked done only once it is known to boot: image and modules.
            |dir| {
                let release = self.download_and_unpack(dir)?;
                locate(self, &dir.join("root"), &release)?;
                Ok(release)
            },
        )?;
        locate(self, &dir.join("root"), &release)
    }

    /// Downloads and unpacks the kernel into `dir`; returns its release.
    fn download_and_unpack(self, dir: &Path) -> Result<String> {
        let mirrors = Mirrors::from_host()?;
        let apt = PrivateApt::create(&dir.join("apt"), &self.repositories(&mirrors), self.arch())?;
        apt.update()?;
        // linux-image-<arch> -> linux-image-<release>; since 7.x that package
        // is a shell whose linux-binary-/linux-modules- dependencies carry
        // the image and modules.
        let meta = format!("linux-image-{}", self.arch().debian());
        let image = apt
            .depends(&meta)?
            .into_iter()
            .find(|dep| dep.starts_with("linux-image-"))
            .with_context(|| format!("{meta} depends on no linux-image-<release>"))?;
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
        Ok(release)
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
