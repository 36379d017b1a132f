//! The guest's root filesystem: busybox, the kernel modules in load order,
//! the binaries under test with the shared libraries they link, the init
//! script and the command to run.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{command::run, cpio::Archive, modules, userland::Userland};

/// Template of the guest's `/init`.
const INIT: &str = include_str!("init.sh");

/// Where the command to run is written in the guest (not under `/run`,
/// which init mounts over).
pub const COMMAND_PATH: &str = "/etc/kubenpu-vm/command.sh";

/// Everything that goes into the guest's initramfs.
pub struct Contents<'a> {
    /// Where busybox and the binaries' libraries come from.
    pub userland: &'a Userland,
    /// Module files in load order.
    pub modules: &'a [PathBuf],
    /// Executables of the guest's architecture: (host path, guest path).
    pub binaries: &'a [(PathBuf, String)],
    /// Other files: (guest path, mode, bytes).
    pub files: &'a [(String, u32, Vec<u8>)],
    /// The shell command to run.
    pub command: &'a str,
    /// The marker the init prints before its status lines.
    pub nonce: &'a str,
    /// When init dumps the tasks of a command still running: shortly
    /// before the host's timeout.
    pub dump_after: std::time::Duration,
}

/// Builds the initramfs as newc cpio bytes.
pub fn build(contents: &Contents<'_>) -> Result<Vec<u8>> {
    let mut archive = Archive::default();
    let userland = contents.userland;
    add_executable(&mut archive, userland, &userland.busybox()?, "/bin/busybox")?;
    archive.file(
        "/init",
        0o755,
        INIT.replace("@NONCE@", contents.nonce)
            .replace("@DUMP_AFTER@", &contents.dump_after.as_secs().to_string())
            .as_bytes(),
    );
    archive.file(COMMAND_PATH, 0o644, contents.command.as_bytes());

    let mut order = String::new();
    for path in contents.modules {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .context("module file name")?;
        let name = name.split(".ko").next().unwrap_or(name).to_owned() + ".ko";
        archive.file(
            &format!("/lib/modules/{name}"),
            0o644,
            &modules::read_module(path)?,
        );
        order.push_str(&name);
        order.push('\n');
    }
    archive.file("/lib/modules/load-order", 0o644, order.as_bytes());

    for (host, guest) in contents.binaries {
        add_executable(&mut archive, userland, host, guest)?;
    }
    for (guest, mode, bytes) in contents.files {
        archive.file(guest, *mode, bytes);
    }
    Ok(archive.finish())
}

/// Adds an executable, stripped of symbols and debug information (a debug
/// build of the agent is ten times its stripped size, and guest memory is
/// small), and the shared libraries and loader it links, from `userland`.
fn add_executable(
    archive: &mut Archive,
    userland: &Userland,
    host: &Path,
    guest: &str,
) -> Result<()> {
    // Its libraries first: that checks its architecture too.
    let libraries = userland.libraries(host)?;
    archive.file(guest, 0o755, &stripped(host, userland.arch().strip())?);
    for (library, guest) in libraries {
        let bytes = fs::read(&library).with_context(|| format!("reading {}", library.display()))?;
        archive.file(&guest, 0o755, &bytes);
    }
    Ok(())
}

/// An ELF file's bytes without symbols, by the `strip` that reads its
/// architecture; other files (scripts) as they are.
fn stripped(path: &Path, strip: &str) -> Result<Vec<u8>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if !bytes.starts_with(b"\x7fELF") {
        return Ok(bytes);
    }
    let out = tempfile::NamedTempFile::new()?;
    run(Command::new(strip).arg("-o").arg(out.path()).arg(path))?;
    Ok(fs::read(out.path())?)
}
