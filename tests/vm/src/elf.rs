//! What the tests need to know of an ELF executable: its architecture, the
//! dynamic loader it names (none if static), and what that loader lists as
//! its libraries, which must be carried into a guest or image with it.

/// ELF's machine number for x86_64.
pub const EM_X86_64: u16 = 62;
/// ELF's machine number for arm64.
pub const EM_AARCH64: u16 = 183;

/// A little-endian field of `len` bytes at `at`.
fn field(elf: &[u8], at: usize, len: usize) -> Option<usize> {
    let bytes = elf.get(at..at.checked_add(len)?)?;
    let value = bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    usize::try_from(value).ok()
}

/// Whether `elf` is a 64-bit (class 2) little-endian (data 1) ELF file,
/// the only kind this reads.
fn is_elf64_le(elf: &[u8]) -> bool {
    elf.starts_with(b"\x7fELF\x02\x01")
}

/// The machine a 64-bit little-endian ELF file is for (`EM_*`).
pub fn machine(elf: &[u8]) -> Option<u16> {
    is_elf64_le(elf)
        .then(|| field(elf, 0x12, 2))
        .flatten()
        .and_then(|m| u16::try_from(m).ok())
}

/// The program interpreter (dynamic loader) a 64-bit little-endian ELF
/// executable names; `None` for a static executable or another file.
pub fn interpreter(elf: &[u8]) -> Option<String> {
    const PT_INTERP: usize = 3;
    if !is_elf64_le(elf) {
        return None;
    }
    let phoff = field(elf, 0x20, 8)?;
    let phentsize = field(elf, 0x36, 2)?;
    let phnum = field(elf, 0x38, 2)?;
    (0..phnum).find_map(|i| {
        let header = phoff.checked_add(i.checked_mul(phentsize)?)?;
        if field(elf, header, 4)? != PT_INTERP {
            return None;
        }
        let offset = field(elf, header + 8, 8)?;
        let size = field(elf, header + 32, 8)?;
        let path = elf.get(offset..offset.checked_add(size)?)?;
        let path = path.split(|&b| b == 0).next()?;
        Some(String::from_utf8_lossy(path).into_owned())
    })
}

/// The paths a program asks for, from its loader's `ld.so --list` output
/// (which is what `ldd` prints): its libraries and the loader, not the
/// vDSO. Where a line maps an absolute path to another (the loader, under
/// emulation), the program asks for the first. A library the loader did
/// not find is an error naming it (the loader itself exits 0).
pub fn parse_list(text: &str) -> anyhow::Result<Vec<String>> {
    let mut paths = Vec::new();
    for line in text.lines() {
        let path = match line.split_once("=>") {
            Some((asked, _)) if asked.trim().starts_with('/') => asked,
            Some((library, resolved)) => {
                anyhow::ensure!(
                    resolved.trim() != "not found",
                    "the loader finds no {}",
                    library.trim()
                );
                resolved
            }
            None => line,
        };
        if let Some(path) = path
            .split_whitespace()
            .next()
            .filter(|p| p.starts_with('/'))
        {
            paths.push(path.to_owned());
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::{interpreter, machine, parse_list};
    use crate::Arch;

    #[test]
    fn the_loaders_list_yields_libraries_and_loader_but_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_list(text).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
        // The arm64 loader under qemu-user names where it ran from.
        let emulated = "\tlibc.so.6 => /lib/aarch64-linux-gnu/libc.so.6 (0x55)\n\
                        \t/lib/ld-linux-aarch64.so.1 => /cache/root/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 (0x55)\n";
        assert_eq!(
            parse_list(emulated).unwrap(),
            [
                "/lib/aarch64-linux-gnu/libc.so.6",
                "/lib/ld-linux-aarch64.so.1"
            ]
        );
    }

    #[test]
    fn a_library_the_loader_does_not_find_is_an_error_naming_it() {
        let text = "\tlibseccomp.so.2 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n";
        let error = parse_list(text).unwrap_err().to_string();
        assert!(error.contains("libseccomp.so.2"), "{error}");
    }

    #[test]
    fn this_test_names_its_loader_and_machine_and_a_script_neither() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let loader = interpreter(&exe);
        assert!(
            loader
                .as_ref()
                .is_some_and(|l| l.starts_with('/') && l.contains("ld-")),
            "{loader:?}"
        );
        assert_eq!(machine(&exe), Some(Arch::host().unwrap().elf_machine()));
        assert_eq!(interpreter(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(machine(b"#!/bin/sh\necho hi\n"), None);
    }
}
