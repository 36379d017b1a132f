//! The guest's root filesystem: busybox, the kernel modules in load order,
//! the binaries under test with the shared libraries they link, the init
//! script and the command to run.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{command::run, cpio::Archive, modules};

/// Template of the guest's `/init`.
const INIT: &str = include_str!("init.sh");

/// Where the command to run is written in the guest (not under `/run`,
/// which init mounts over).
pub const COMMAND_PATH: &str = "/etc/kubenpu-vm/command.sh";

/// Everything that goes into the guest's initramfs.
pub struct Contents<'a> {
    /// Module files in load order.
    pub modules: &'a [PathBuf],
    /// Host executables: (host path, guest path).
    pub binaries: &'a [(PathBuf, String)],
    /// Other files: (guest path, mode, bytes).
    pub files: &'a [(String, u32, Vec<u8>)],
    /// The shell command to run.
    pub command: &'a str,
    /// The marker the init prints before its status lines.
    pub nonce: &'a str,
}

/// Builds the initramfs as newc cpio bytes.
pub fn build(contents: &Contents<'_>) -> Result<Vec<u8>> {
    let mut archive = Archive::default();
    let busybox = which("busybox")?;
    add_executable(&mut archive, &busybox, "/bin/busybox")?;
    archive.file(
        "/init",
        0o755,
        INIT.replace("@NONCE@", contents.nonce).as_bytes(),
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
        add_executable(&mut archive, host, guest)?;
    }
    for (guest, mode, bytes) in contents.files {
        archive.file(guest, *mode, bytes);
    }
    Ok(archive.finish())
}

fn which(program: &str) -> Result<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .with_context(|| format!("{program} is not on PATH: run scripts/setup"))
}

/// Adds an executable, stripped of symbols and debug information (a debug
/// build of the agent is ten times its stripped size, and guest memory is
/// small), and, at their host paths, the shared libraries and loader it
/// links.
fn add_executable(archive: &mut Archive, host: &Path, guest: &str) -> Result<()> {
    archive.file(guest, 0o755, &stripped(host)?);
    for library in shared_libraries(host)? {
        let bytes = fs::read(&library).with_context(|| format!("reading {}", library.display()))?;
        archive.file(&library.to_string_lossy(), 0o755, &bytes);
    }
    Ok(())
}

/// An ELF file's bytes without symbols; other files (scripts) as they are.
fn stripped(path: &Path) -> Result<Vec<u8>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if !bytes.starts_with(b"\x7fELF") {
        return Ok(bytes);
    }
    let out = tempfile::NamedTempFile::new()?;
    run(Command::new("strip").arg("-o").arg(out.path()).arg(path))?;
    Ok(fs::read(out.path())?)
}

/// The shared libraries `ldd` resolves for `binary`; none for a static one.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .context("running ldd")?;
    if !out.status.success() {
        // ldd fails on static executables ("not a dynamic executable").
        return Ok(Vec::new());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(parse_ldd(&text))
}

fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let resolved = line.split_once("=>").map_or(line, |(_, r)| r);
            resolved
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/'))
        })
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_ldd;
    use std::path::PathBuf;

    #[test]
    fn ldd_output_yields_libraries_and_loader_but_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
    }
}
