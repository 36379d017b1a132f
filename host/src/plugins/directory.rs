//! Reads the plugins directory through a capability: only regular files
//! inside it are opened, never anything a link points outside it to, and
//! never more than the size limit. Links within it are followed, because a
//! Kubernetes ConfigMap volume is made of them (`acme.wasm` ->
//! `..data/acme.wasm`, `..data` -> a timestamped directory swapped
//! atomically on update).

use std::{io::Read as _, path::Path};

use cap_std::{ambient_authority, fs::Dir};
use sha2::{Digest as _, Sha256};

use super::PluginError;

/// Largest plugin file accepted. Built-in plugins are about 10 KiB.
pub const SIZE_LIMIT: u64 = 4 << 20;

/// One `*.wasm` file of the directory, read whole.
pub struct PluginFile {
    /// Its file name.
    pub name: String,
    /// Its content, or why it could not be read.
    pub bytes: Result<Vec<u8>, PluginError>,
    /// The content's SHA-256 (of what was read, or of the size for a file
    /// too large to read) so an unchanged file is not loaded twice.
    pub sha256: String,
}

/// The `*.wasm` files in `path`, sorted by name; an absent directory has
/// none.
pub fn read(path: &Path) -> std::io::Result<Vec<PluginFile>> {
    let dir = match Dir::open_ambient_dir(path, ambient_authority()) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // Links are followed through the capability; one that leads
        // outside fails to open and is reported like any unreadable file.
        if !name.ends_with(".wasm") || dir.metadata(&name).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        files.push(read_file(&dir, name));
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Reads one file from `dir` (which must contain it), size-limited.
pub fn read_file(dir: &Dir, name: String) -> PluginFile {
    let mut bytes = Vec::new();
    let read = dir.open(&name).and_then(|file| {
        file.take(SIZE_LIMIT + 1).read_to_end(&mut bytes)?;
        Ok(())
    });
    let sha256 = sha256_hex(&bytes);
    let bytes = match read {
        Err(e) => Err(PluginError::Io(e.to_string())),
        Ok(()) if bytes.len() as u64 > SIZE_LIMIT => {
            Err(PluginError::TooLarge { limit: SIZE_LIMIT })
        }
        Ok(()) => Ok(bytes),
    };
    PluginFile {
        name,
        bytes,
        sha256,
    }
}

/// The SHA-256 of `bytes` in lower-case hex, as plugins are identified.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
