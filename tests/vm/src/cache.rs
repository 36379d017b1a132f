//! Directories of the cache that are filled once (a download and unpack)
//! and then only read, by any number of concurrent tests.

use std::{fs, io::ErrorKind, path::Path};

use anyhow::{Context as _, Result};

/// What `dir` was filled with, as its marker file says; `None` if it was
/// never filled completely.
pub fn filled(dir: &Path, marker: &str) -> Result<Option<String>> {
    match fs::read_to_string(dir.join(marker)) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

/// What `dir` holds, filled first by `fill` (which returns what to write
/// into the marker) if it was not yet, or if `want` is given and the
/// marker says otherwise (what is to be fetched changed). Concurrent
/// callers take turns: one fills, the others wait and read. The marker is
/// written last, and whole, so a fill that fails leaves none.
pub fn fill_once(
    dir: &Path,
    marker: &str,
    want: Option<&str>,
    what: &str,
    fill: impl FnOnce(&Path) -> Result<String>,
) -> Result<String> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = fs::File::create(dir.join(".lock"))?;
    lock.lock()?;
    if let Some(done) = filled(dir, marker)?
        && want.is_none_or(|want| want == done)
    {
        return Ok(done);
    }
    let _ = fs::remove_file(dir.join(marker));
    eprintln!("kubenpu-vm: fetching {what} into {}", dir.display());
    let done = fill(dir).with_context(|| format!("fetching {what}"))?;
    let staged = dir.join(format!("{marker}.new"));
    fs::write(&staged, &done)?;
    fs::rename(&staged, dir.join(marker))?;
    Ok(done)
}
