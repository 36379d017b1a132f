//! A writer for the `newc` cpio format, the one the kernel unpacks as an
//! initramfs. Small enough to own, and it spares the host a `cpio` binary
//! and a staging directory.

use std::collections::BTreeSet;

const TRAILER: &str = "TRAILER!!!";

/// An initramfs archive being built in memory.
#[derive(Default)]
pub struct Archive {
    bytes: Vec<u8>,
    next_inode: u32,
    dirs: BTreeSet<String>,
}

impl Archive {
    /// Adds a regular file, creating its parent directories.
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) {
        self.parents(path);
        self.entry(path, 0o100000 | mode, data);
    }

    /// Adds a directory and its parents (once each).
    pub fn dir(&mut self, path: &str) {
        let path = path.trim_matches('/');
        if path.is_empty() || self.dirs.contains(path) {
            return;
        }
        self.parents(path);
        self.dirs.insert(path.to_owned());
        self.entry(path, 0o040755, &[]);
    }

    fn parents(&mut self, path: &str) {
        if let Some((parent, _)) = path.trim_matches('/').rsplit_once('/') {
            self.dir(parent);
        }
    }

    fn entry(&mut self, path: &str, mode: u32, data: &[u8]) {
        let name = path.trim_start_matches('/');
        self.next_inode += 1;
        let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        let fields = [
            self.next_inode,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            u32::try_from(data.len()).expect("initramfs entries stay below 4 GiB"),
            0, // dev major
            0, // dev minor
            0, // rdev major
            0, // rdev minor
            u32::try_from(name.len() + 1).expect("short name"),
            0, // check
        ];
        self.bytes.extend_from_slice(b"070701");
        for field in fields {
            self.bytes
                .extend_from_slice(format!("{field:08x}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    /// Closes the archive and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry(TRAILER, 0, &[]);
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::Archive;
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    /// GNU cpio (installed by scripts/setup) is the reference reader.
    #[test]
    fn gnu_cpio_lists_what_was_written() {
        let mut archive = Archive::default();
        archive.file("/usr/local/bin/tool", 0o755, b"#!/bin/sh\n");
        archive.file("/init", 0o755, b"");
        let bytes = archive.finish();
        assert_eq!(&bytes[..6], b"070701");
        assert!(bytes.len().is_multiple_of(4));
        let mut cpio = Command::new("cpio")
            .args(["-t", "--quiet"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("GNU cpio is installed (scripts/setup)");
        cpio.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = cpio.wait_with_output().unwrap();
        assert!(out.status.success());
        let listed = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            listed.lines().collect::<Vec<_>>(),
            [
                "usr",
                "usr/local",
                "usr/local/bin",
                "usr/local/bin/tool",
                "init"
            ]
        );
    }
}
