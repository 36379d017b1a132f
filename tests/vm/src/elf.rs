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

/// The absolute paths in `ld.so --list` output (which is what `ldd`
/// prints): the libraries and the loader, not the vDSO.
pub fn parse_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let resolved = line.split_once("=>").map_or(line, |(_, r)| r);
            resolved
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/'))
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{EM_X86_64, interpreter, machine, parse_list};

    #[test]
    fn the_loaders_list_yields_libraries_and_loader_but_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_list(text),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }

    #[test]
    fn a_dynamic_executable_names_its_loader_and_a_script_none() {
        let sh = std::fs::read("/bin/sh").unwrap();
        assert!(
            interpreter(&sh).is_some_and(|l| l.starts_with('/') && l.contains("ld-linux")),
            "{:?}",
            interpreter(&sh)
        );
        assert_eq!(machine(&sh), Some(EM_X86_64));
        assert_eq!(interpreter(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(machine(b"#!/bin/sh\necho hi\n"), None);
    }
}
