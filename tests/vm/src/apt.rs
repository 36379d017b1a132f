//! A private apt: package lists for any Debian suite, kept in our own cache
//! directory, so fetching a kernel from another suite never touches the
//! host's sources, lists or installed packages.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use crate::{
    Arch, cache,
    command::{output, run},
};

/// Where the Debian archives are, as configured on this host (a local
/// mirror is honoured), or as set by `KUBENPU_DEBIAN_MIRROR` and
/// `KUBENPU_DEBIAN_SECURITY_MIRROR`.
#[derive(Debug, Clone)]
pub struct Mirrors {
    /// The main archive (suites such as `bookworm`, `sid`).
    pub archive: String,
    /// The security archive (`bookworm-security`).
    pub security: String,
}

impl Mirrors {
    /// Reads the mirrors from the environment or from the host's apt sources.
    pub fn from_host() -> Result<Self> {
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let configured = host_repositories()?;
        let find = |suite: &str| {
            configured
                .iter()
                .find(|(_, s)| s == suite)
                .map(|(uri, _)| uri.clone())
        };
        let archive = env("KUBENPU_DEBIAN_MIRROR").or_else(|| find("bookworm"));
        let security = env("KUBENPU_DEBIAN_SECURITY_MIRROR").or_else(|| find("bookworm-security"));
        match (archive, security) {
            (Some(archive), Some(security)) => Ok(Self { archive, security }),
            _ => bail!(
                "the host's apt sources name no Debian bookworm and bookworm-security archives: \
                 set KUBENPU_DEBIAN_MIRROR and KUBENPU_DEBIAN_SECURITY_MIRROR to their URIs"
            ),
        }
    }
}

/// `(uri, suite)` of every repository the host's apt is configured with,
/// whatever the format of its sources files.
fn host_repositories() -> Result<Vec<(String, String)>> {
    let out = output(Command::new("apt-get").args([
        "indextargets",
        "--no-release-info",
        "--format",
        "$(REPO_URI) $(RELEASE)",
    ]))?;
    Ok(out
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(uri, suite)| (uri.to_owned(), suite.to_owned()))
        .collect())
}

/// apt confined to one directory: its own sources, lists and archives,
/// for one architecture.
pub struct PrivateApt {
    dir: PathBuf,
    arch: Arch,
}

impl PrivateApt {
    /// Sets up `dir` with a sources list of `(uri, suite)` repositories
    /// (component `main`), for packages of `arch`.
    pub fn create(dir: &Path, repositories: &[(&str, &str)], arch: Arch) -> Result<Self> {
        for sub in ["lists/partial", "archives/partial", "sources.list.d"] {
            fs::create_dir_all(dir.join(sub))?;
        }
        let sources: String = repositories
            .iter()
            .map(|(uri, suite)| format!("deb {uri} {suite} main\n"))
            .collect();
        fs::write(dir.join("sources.list"), sources)?;
        Ok(Self {
            dir: dir.to_owned(),
            arch,
        })
    }

    fn command(&self, program: &str) -> Command {
        let d = |sub: &str| self.dir.join(sub).display().to_string();
        let mut cmd = Command::new(program);
        for (key, value) in [
            ("Dir::State", d("")),
            ("Dir::State::Lists", d("lists")),
            ("Dir::State::status", "/dev/null".into()),
            ("Dir::Cache", d("")),
            ("Dir::Cache::Archives", d("archives")),
            ("Dir::Etc::SourceList", d("sources.list")),
            ("Dir::Etc::SourceParts", d("sources.list.d")),
            ("Debug::NoLocking", "1".into()),
            ("APT::Architecture", self.arch.debian().into()),
            ("APT::Architectures", self.arch.debian().into()),
            ("APT::Sandbox::User", "root".into()),
            ("Acquire::Languages", "none".into()),
            (
                "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled",
                "false".into(),
            ),
        ] {
            cmd.arg("-o").arg(format!("{key}={value}"));
        }
        cmd
    }

    /// Downloads the package lists.
    pub fn update(&self) -> Result<()> {
        run(self.command("apt-get").args(["-q", "update"]))
    }

    /// The packages `package` directly depends on.
    pub fn depends(&self, package: &str) -> Result<Vec<String>> {
        let out = output(self.command("apt-cache").args(["depends", package]))?;
        Ok(out
            .lines()
            .filter_map(|line| line.trim().strip_prefix("Depends: "))
            .map(|dep| dep.trim_matches(['<', '>']).to_owned())
            .collect())
    }

    /// Downloads the `.deb` files of `packages` into `into`, which then
    /// holds nothing else (the callers unpack everything there): what a
    /// failed earlier download left is removed first.
    pub fn download(&self, packages: &[String], into: &Path) -> Result<()> {
        let _ = fs::remove_dir_all(into);
        fs::create_dir_all(into)?;
        run(self
            .command("apt-get")
            .current_dir(into)
            .arg("-q")
            .arg("download")
            .args(packages))
    }

    /// Downloads the `.deb` files of `packages` and of everything they
    /// depend on, as apt would install them on an empty system (its
    /// resolver picks among alternatives; recommendations are left out),
    /// into `into`, which then holds nothing else.
    pub fn download_closure(&self, packages: &[&str], into: &Path) -> Result<()> {
        let _ = fs::remove_dir_all(into);
        fs::create_dir_all(into.join("partial"))?;
        run(self
            .command("apt-get")
            .arg("-o")
            .arg(format!("Dir::Cache::Archives={}", into.display()))
            .args(["-q", "-y", "--no-install-recommends", "--download-only"])
            .arg("install")
            .args(packages))?;
        fs::remove_dir_all(into.join("partial"))?;
        Ok(())
    }
}

/// The suite a cached root's packages come from: the host's own.
const SUITE: &str = "bookworm";

/// Marks a completed root; holds the suite and packages, so that a change
/// of either unpacks anew.
const CONTENTS_FILE: &str = "contents";

/// Which packages a cached root holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The packages named, and nothing else.
    Named,
    /// Those and everything they depend on, as apt resolves them for an
    /// empty system.
    WithDependencies,
}

/// `dir`/root: Debian 12's `packages` for `arch` (with their security
/// updates), unpacked with `dpkg -x` (never installed) and then amended by
/// `finish`, the first time it is asked for or when the packages change;
/// `what` names it in the one line said while it is fetched.
pub fn cached_root(
    dir: &Path,
    what: &str,
    arch: Arch,
    (packages, selection): (&[&str], Selection),
    finish: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let contents = format!("{SUITE}: {}", packages.join(" "));
    cache::fill_once(dir, CONTENTS_FILE, Some(&contents), what, |dir| {
        let root = dir.join("root");
        unpack(arch, dir, packages, selection, &root)?;
        finish(&root)?;
        Ok(contents.clone())
    })?;
    Ok(dir.join("root"))
}

/// Downloads the packages into `dir`/debs and unpacks them into `root`.
fn unpack(
    arch: Arch,
    dir: &Path,
    packages: &[&str],
    selection: Selection,
    root: &Path,
) -> Result<()> {
    let mirrors = Mirrors::from_host()?;
    let apt = PrivateApt::create(
        &dir.join("apt"),
        &[
            (&mirrors.archive, SUITE),
            (&mirrors.security, &format!("{SUITE}-security")),
        ],
        arch,
    )?;
    apt.update()?;
    let debs = dir.join("debs");
    match selection {
        Selection::Named => {
            let named: Vec<String> = packages.iter().map(|p| p.to_string()).collect();
            apt.download(&named, &debs)?;
        }
        Selection::WithDependencies => apt.download_closure(packages, &debs)?,
    }
    let _ = fs::remove_dir_all(root);
    for deb in fs::read_dir(&debs)? {
        let deb = deb?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            run(Command::new("dpkg").arg("-x").arg(&deb).arg(root))?;
        }
    }
    fs::remove_dir_all(&debs)?;
    Ok(())
}
