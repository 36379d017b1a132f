//! The bpffs layout that lets counts outlive the agent:
//!
//! ```text
//! <pin dir>/link            the attached entry hook (keeps the program
//!                           running)
//! <pin dir>/program         the program it runs (its miss counter is read
//!                           there, by the agent and by kubenpuctl)
//! <pin dir>/exit-link       the attached exit hook (none for a kprobe
//!                           session, whose one program runs on both)
//! <pin dir>/exit-program    the program it runs
//! <pin dir>/maps/<MAP>      the program's maps, adopted by the next agent
//! <pin dir>/maps-replaced   maps of an incompatible older layout, removed
//!                           once the new program is attached
//! ```
//!
//! (bpffs refuses names with dots.)

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use aya::{
    Ebpf,
    maps::{Array, MapData},
};
use kubenpu_ebpf::{LAYOUT_VERSION, Layout, map};

use super::{Config, ProbeError, syscall::Side};

/// Where the maps are pinned.
pub fn maps_dir(pin_dir: &Path) -> PathBuf {
    pin_dir.join("maps")
}

/// Where the link of `side` is pinned.
pub fn link_path(pin_dir: &Path, side: Side) -> PathBuf {
    pin_dir.join(match side {
        Side::Entry => "link",
        Side::Exit => "exit-link",
    })
}

/// Where the attached program of `side` is pinned.
pub fn program_path(pin_dir: &Path, side: Side) -> PathBuf {
    pin_dir.join(match side {
        Side::Entry => "program",
        Side::Exit => "exit-program",
    })
}

fn replaced_dir(pin_dir: &Path) -> PathBuf {
    pin_dir.join("maps-replaced")
}

fn wanted(config: &Config) -> Layout {
    Layout {
        version: LAYOUT_VERSION,
        max_counters: config.max_counters,
    }
}

/// Makes the pin directory ready. Pinned maps of this layout stay to be
/// adopted; maps of another layout are moved aside (the old program keeps
/// running on them until the new one is attached). Returns whether the
/// maps will be new.
pub fn prepare(config: &Config) -> Result<bool, ProbeError> {
    let pin_err = |e: io::Error| ProbeError::PinDir {
        path: config.pin_dir.display().to_string(),
        error: e.to_string(),
    };
    fs::create_dir_all(maps_dir(&config.pin_dir)).map_err(pin_err)?;
    if !on_bpffs(&config.pin_dir) {
        return Err(ProbeError::PinDir {
            path: config.pin_dir.display().to_string(),
            error: "not on a BPF filesystem".into(),
        });
    }
    let pinned = MapData::from_pin(maps_dir(&config.pin_dir).join(map::LAYOUT))
        .ok()
        .and_then(|data| {
            let array: Array<MapData, Layout> =
                Array::try_from(aya::maps::Map::Array(data)).ok()?;
            array.get(&0, 0).ok()
        });
    match pinned {
        Some(layout) if layout == wanted(config) => Ok(false),
        None if !maps_dir(&config.pin_dir).join(map::COUNTS).exists() => Ok(true),
        _ => {
            let replaced = replaced_dir(&config.pin_dir);
            let _ = fs::remove_dir_all(&replaced);
            fs::rename(maps_dir(&config.pin_dir), &replaced).map_err(pin_err)?;
            fs::create_dir_all(maps_dir(&config.pin_dir)).map_err(pin_err)?;
            Ok(true)
        }
    }
}

/// Whether `path` lies on bpffs, the only place BPF objects can be pinned.
fn on_bpffs(path: &Path) -> bool {
    const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the right type.
    let ok = unsafe { libc::statfs(c_path.as_ptr(), stat.as_mut_ptr()) } == 0;
    #[allow(
        clippy::unnecessary_cast,
        reason = "f_type's type differs by architecture"
    )]
    // SAFETY: read only if statfs filled the buffer (it returned 0).
    let f_type = if ok {
        unsafe { stat.assume_init() }.f_type as i64
    } else {
        0
    };
    f_type == BPF_FS_MAGIC
}

/// Records the layout the maps were made with.
pub fn write_layout(ebpf: &mut Ebpf, config: &Config) -> Result<(), ProbeError> {
    let map = ebpf
        .map_mut(map::LAYOUT)
        .ok_or_else(|| ProbeError::Other("no LAYOUT map".into()))?;
    let mut array: Array<&mut MapData, Layout> =
        Array::try_from(map).map_err(|e| ProbeError::Other(e.to_string()))?;
    array
        .set(0, wanted(config), 0)
        .map_err(|e| ProbeError::Other(e.to_string()))
}

/// Drops maps an incompatible older layout left behind.
pub fn forget_replaced(pin_dir: &Path) {
    let _ = fs::remove_dir_all(replaced_dir(pin_dir));
}

/// Removes the link and every pinned map: the program stops and its
/// counts are gone. For uninstalling.
pub fn cleanup(pin_dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(pin_dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
