//! The INFLIGHT map, made by the agent: task-local storage (one record per
//! thread, kept in the thread and freed with it), which the kernel creates
//! only with BTF describing its key and value. The object's legacy map
//! definition carries none, so the agent describes them itself, in three
//! types, and pins the map where aya then adopts it by name.

use std::{io, mem::size_of, os::fd::AsFd as _, path::Path};

use kubenpu_ebpf::{Inflight, map};

use super::{ProbeError, Stage, syscall};

/// The key's type in [`btf`]: `int`, as the kernel requires of local
/// storage.
const KEY_TYPE: u32 = 1;
/// A byte, the array's element.
const BYTE_TYPE: u32 = 2;
/// The value's type: an array of as many bytes as a record has.
const VALUE_TYPE: u32 = 3;

/// Creates and pins the map under `maps_dir`, unless it is pinned there
/// already (adopted with the other maps).
pub fn ensure(maps_dir: &Path) -> Result<(), ProbeError> {
    let path = maps_dir.join(map::INFLIGHT);
    if path.exists() {
        return Ok(());
    }
    let value_size = size_of::<Inflight>() as u32;
    let btf = syscall::load_btf(&btf(value_size)).map_err(|e| failure("describe", &e))?;
    let storage =
        syscall::task_storage_map(map::INFLIGHT, value_size, btf.as_fd(), KEY_TYPE, VALUE_TYPE)
            .map_err(|e| failure("create", &e))?;
    syscall::pin(storage.as_fd(), &path).map_err(|e| ProbeError::Pin {
        path: path.display().to_string(),
        error: e.to_string(),
    })
}

/// Why the map could not be described or created, and what to do: a
/// refusal for privilege gets the agent's advice on capabilities, EINVAL
/// or ENOTSUPP (a kernel without task storage for tracing programs, or
/// without its BTF checks) the kernel it needs.
fn failure(what: &str, e: &io::Error) -> ProbeError {
    let hint = match e.raw_os_error() {
        Some(libc::EINVAL | libc::EOPNOTSUPP | syscall::ENOTSUPP) => {
            " (task storage for tracing programs needs Linux 5.13 or newer)"
        }
        _ => "",
    };
    ProbeError::classify(
        e,
        Stage::Load,
        format!("cannot {what} the in-flight calls' task storage map: {e}{hint}"),
        ProbeError::Other,
    )
}

/// Raw BTF of three types: `int` ([`KEY_TYPE`]), `unsigned char`
/// ([`BYTE_TYPE`]) and `unsigned char[value_size]` ([`VALUE_TYPE`]).
pub(super) fn btf(value_size: u32) -> Vec<u8> {
    const MAGIC: u16 = 0xeb9f;
    const HEADER_LEN: u32 = 24;
    const KIND_INT: u32 = 1 << 24;
    const KIND_ARRAY: u32 = 3 << 24;
    const SIGNED: u32 = 1 << 24;
    const STRINGS: &[u8] = b"\0int\0unsigned char\0";
    let types: Vec<u32> = vec![
        // int: name at 1, 4 bytes, 32 signed bits.
        1,
        KIND_INT,
        4,
        SIGNED | 32,
        // unsigned char: name at 5, 1 byte, 8 bits.
        5,
        KIND_INT,
        1,
        8,
        // unsigned char[value_size], indexed by int.
        0,
        KIND_ARRAY,
        0,
        BYTE_TYPE,
        KEY_TYPE,
        value_size,
    ];
    let types_len = (types.len() * 4) as u32;
    let mut blob = Vec::new();
    blob.extend_from_slice(&MAGIC.to_ne_bytes());
    blob.extend_from_slice(&[1, 0]); // version 1, no flags
    for word in [HEADER_LEN, 0, types_len, types_len, STRINGS.len() as u32] {
        blob.extend_from_slice(&word.to_ne_bytes());
    }
    for word in types {
        blob.extend_from_slice(&word.to_ne_bytes());
    }
    blob.extend_from_slice(STRINGS);
    blob
}

#[cfg(test)]
mod tests {
    use aya_obj::btf::{Btf, BtfKind};

    use super::*;

    #[test]
    fn the_description_parses_as_btf_with_the_types_at_their_ids() {
        let blob = btf(72);
        let parsed = Btf::parse(&blob, Default::default()).expect("valid BTF");
        assert_eq!(
            parsed.id_by_type_name_kind("int", BtfKind::Int).unwrap(),
            KEY_TYPE
        );
        assert_eq!(
            parsed
                .id_by_type_name_kind("unsigned char", BtfKind::Int)
                .unwrap(),
            BYTE_TYPE
        );
        // Re-encoded whole: the header's lengths are the sections' own.
        assert_eq!(parsed.to_bytes(), blob);
    }

    #[test]
    fn an_old_kernel_is_named_and_a_refusal_is_a_matter_of_privilege() {
        let old = failure("create", &io::Error::from_raw_os_error(libc::EINVAL));
        assert!(matches!(old, ProbeError::Other(_)), "{old:?}");
        assert!(
            old.to_string().ends_with("needs Linux 5.13 or newer)"),
            "{old}"
        );
        let refused = failure("describe", &io::Error::from_raw_os_error(libc::EPERM));
        assert!(matches!(refused, ProbeError::Permission(_)), "{refused:?}");
        assert!(refused.to_string().contains("CAP_BPF"), "{refused}");
        assert!(!refused.to_string().contains("5.13"), "{refused}");
    }

    /// The README documents the record as placement's hint for other
    /// schedulers: these offsets are a published layout.
    #[test]
    fn the_hints_layout_is_the_documented_one() {
        use std::mem::offset_of;

        use kubenpu_ebpf::CountKey;

        assert_eq!(size_of::<Inflight>(), 72);
        let key = offset_of!(Inflight, key);
        assert_eq!(key + offset_of!(CountKey, cgroup_id), 0);
        assert_eq!(key + offset_of!(CountKey, dev), 8);
        assert_eq!(key + offset_of!(CountKey, nr), 12);
        assert_eq!(offset_of!(Inflight, start_ns), 24);
        assert_eq!(offset_of!(Inflight, numa_node), 68);
    }
}
