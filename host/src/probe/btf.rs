//! Just enough of a BTF reader for what aya does not expose: struct member
//! offsets (Rust eBPF has no CO-RE field relocations, so the agent resolves
//! `file.f_inode` and `inode.i_rdev` itself) and function ids in a kernel
//! module's split BTF (fentry on `drm_ioctl` when DRM is a module).

use std::{fs, path::Path};

use thiserror::Error;

/// Why BTF could not be read or lacks what is needed.
#[derive(Debug, Error)]
pub enum BtfError {
    /// The file could not be read.
    #[error("cannot read {path}: {error} (the kernel needs CONFIG_DEBUG_INFO_BTF=y)")]
    Read {
        /// The BTF file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The bytes are not BTF this reader understands.
    #[error("{0} is not valid BTF")]
    Malformed(String),
}

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_FUNC: u32 = 12;

/// One BTF object: vmlinux's, or a module's split BTF on top of it.
pub struct Btf {
    name: String,
    data: Vec<u8>,
    /// Byte offset of each type record in `data`, in id order.
    types: Vec<usize>,
    /// Id of `types[0]`: 1 for vmlinux, after the base's last id for a module.
    first_id: u32,
    strings: usize,
    /// Length of the base's string section: offsets past it are ours.
    base_strings: usize,
}

/// A parsed type record.
struct Type {
    kind: u32,
    vlen: usize,
    kind_flag: bool,
    /// Offset of the trailing data (members, parameters, ...).
    extra: usize,
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

impl Btf {
    /// Reads `/sys/kernel/btf/<name>`-style files; `base` for split BTF.
    pub fn from_file(path: &Path, base: Option<&Btf>) -> Result<Self, BtfError> {
        let data = fs::read(path).map_err(|error| BtfError::Read {
            path: path.display().to_string(),
            error,
        })?;
        Self::parse(path.display().to_string(), data, base)
    }

    /// Parses BTF bytes.
    pub fn parse(name: String, data: Vec<u8>, base: Option<&Btf>) -> Result<Self, BtfError> {
        let malformed = || BtfError::Malformed(name.clone());
        if data.len() < HEADER_LEN || u16::from_le_bytes([data[0], data[1]]) != MAGIC {
            return Err(malformed());
        }
        let header = |i: usize| {
            u32_at(&data, 8 + 4 * i)
                .map(|v| v as usize)
                .ok_or_else(malformed)
        };
        let hdr_len = u32_at(&data, 4).ok_or_else(malformed)? as usize;
        let (type_off, type_len, str_off) = (header(0)?, header(1)?, header(2)?);
        let (start, end) = (hdr_len + type_off, hdr_len + type_off + type_len);
        let mut types = Vec::new();
        let mut at = start;
        while at < end {
            types.push(at);
            let t = parse_type(&data, at).ok_or_else(malformed)?;
            at = t.extra + trailing_len(&t);
        }
        let (first_id, base_strings) = match base {
            Some(base) => (
                base.first_id + base.types.len() as u32,
                base.string_section_len(),
            ),
            None => (1, 0),
        };
        Ok(Self {
            name,
            data,
            types,
            first_id,
            strings: hdr_len + str_off,
            base_strings,
        })
    }

    /// The index of the first struct with members (`KIND_STRUCT`) or
    /// function (`KIND_FUNC`) named `name`. vmlinux has over 100,000
    /// types and the agent asks for a dozen at start, so each type costs
    /// one word read for its kind, and a name of that kind one compare of
    /// `name`'s bytes (not a string made of it).
    fn find(&self, kind: u32, name: &str, base: Option<&Btf>) -> Option<usize> {
        let name = name.as_bytes();
        self.types.iter().position(|&at| {
            let Some(info) = u32_at(&self.data, at + 4) else {
                return false;
            };
            (info >> 24) & 0x1f == kind
                && (kind != KIND_STRUCT || info & 0xffff > 0)
                && u32_at(&self.data, at).is_some_and(|off| self.name_is(off, base, name))
        })
    }

    /// Whether the string at `name_off` is `name`.
    fn name_is(&self, name_off: u32, base: Option<&Btf>, name: &[u8]) -> bool {
        let (btf, off) = self.string_at(name_off, base);
        btf.data
            .get(btf.strings + off..)
            .is_some_and(|bytes| bytes.starts_with(name) && bytes.get(name.len()) == Some(&0))
    }

    /// The BTF whose string section holds `name_off`, and the offset in it.
    fn string_at<'a>(&'a self, name_off: u32, base: Option<&'a Btf>) -> (&'a Btf, usize) {
        let off = name_off as usize;
        match base {
            Some(base) if off < self.base_strings => (base, off),
            _ => (self, off - self.base_strings),
        }
    }

    fn string_section_len(&self) -> usize {
        u32_at(&self.data, 20).unwrap_or(0) as usize
    }

    /// A type's name; `base` resolves offsets into the base's strings.
    fn name<'a>(&'a self, name_off: u32, base: Option<&'a Btf>) -> &'a str {
        let (btf, off) = self.string_at(name_off, base);
        let bytes = &btf.data[btf.strings + off..];
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(0);
        std::str::from_utf8(&bytes[..len]).unwrap_or("")
    }

    fn type_by_id(&self, id: u32) -> Option<Type> {
        let index = id.checked_sub(self.first_id)? as usize;
        parse_type(&self.data, *self.types.get(index)?)
    }

    /// The id of the function `name` (for fentry's attach target).
    pub fn func_id(&self, name: &str, base: Option<&Btf>) -> Option<u32> {
        self.find(KIND_FUNC, name, base)
            .map(|i| self.first_id + i as u32)
    }

    /// Byte offset of `member` in `struct name`, looking into anonymous
    /// unions and structs.
    pub fn member_offset(&self, name: &str, member: &str) -> Result<u32, String> {
        let t = self
            .find(KIND_STRUCT, name, None)
            .and_then(|i| parse_type(&self.data, self.types[i]))
            .ok_or_else(|| format!("{} has no struct {name}", self.name))?;
        self.find_member(&t, member, 0)
            .map(|bits| bits / 8)
            .ok_or_else(|| format!("{}: struct {name} has no member {member}", self.name))
    }

    /// The id and byte size of `struct name` (for a struct_ops map's
    /// value type and its programs' attach target).
    pub fn struct_id(&self, name: &str) -> Result<(u32, u32), String> {
        let i = self
            .find(KIND_STRUCT, name, None)
            .ok_or_else(|| format!("{} has no struct {name}", self.name))?;
        let size = u32_at(&self.data, self.types[i] + 8).unwrap_or(0);
        Ok((self.first_id + i as u32, size))
    }

    /// The index of `member` among `struct name`'s own members (a
    /// struct_ops program's `expected_attach_type`), and its byte offset.
    pub fn member_index(&self, name: &str, member: &str) -> Result<(u32, u32), String> {
        let t = self
            .find(KIND_STRUCT, name, None)
            .and_then(|i| parse_type(&self.data, self.types[i]))
            .ok_or_else(|| format!("{} has no struct {name}", self.name))?;
        (0..t.vlen)
            .find_map(|i| {
                let at = t.extra + 12 * i;
                let offset = u32_at(&self.data, at + 8)?;
                let bits = if t.kind_flag {
                    offset & 0xff_ffff
                } else {
                    offset
                };
                (self.name(u32_at(&self.data, at)?, None) == member).then_some((i as u32, bits / 8))
            })
            .ok_or_else(|| format!("{}: struct {name} has no member {member}", self.name))
    }

    fn find_member(&self, t: &Type, member: &str, base_bits: u32) -> Option<u32> {
        (0..t.vlen).find_map(|i| {
            let at = t.extra + 12 * i;
            let (name_off, type_id, offset) = (
                u32_at(&self.data, at)?,
                u32_at(&self.data, at + 4)?,
                u32_at(&self.data, at + 8)?,
            );
            let bits = base_bits
                + if t.kind_flag {
                    offset & 0xff_ffff
                } else {
                    offset
                };
            if name_off == 0 {
                let inner = self.type_by_id(type_id)?;
                return matches!(inner.kind, KIND_STRUCT | KIND_UNION)
                    .then(|| self.find_member(&inner, member, bits))
                    .flatten();
            }
            (self.name(name_off, None) == member).then_some(bits)
        })
    }
}

fn parse_type(data: &[u8], at: usize) -> Option<Type> {
    let info = u32_at(data, at + 4)?;
    Some(Type {
        kind: (info >> 24) & 0x1f,
        vlen: (info & 0xffff) as usize,
        kind_flag: info >> 31 == 1,
        extra: at + 12,
    })
}

/// Bytes following a type record, by kind (see the kernel's btf.rst).
fn trailing_len(t: &Type) -> usize {
    match t.kind {
        1 | 14 | 17 => 4,       // INT, VAR, DECL_TAG
        3 => 12,                // ARRAY
        4 | 5 => 12 * t.vlen,   // STRUCT, UNION
        6 | 13 => 8 * t.vlen,   // ENUM, FUNC_PROTO
        15 | 19 => 12 * t.vlen, // DATASEC, ENUM64
        _ => 0,                 // PTR, FWD, TYPEDEF, qualifiers, FUNC, FLOAT, TYPE_TAG
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Development and CI machines' kernels have BTF even though they
    /// cannot run the hook; the VM tests cover the kernels we ship for.
    #[test]
    fn the_running_kernels_struct_offsets_are_found() {
        let path = Path::new("/sys/kernel/btf/vmlinux");
        let btf = Btf::from_file(path, None).unwrap();
        let f_inode = btf.member_offset("file", "f_inode").unwrap();
        let i_rdev = btf.member_offset("inode", "i_rdev").unwrap();
        assert!(f_inode > 0 && f_inode.is_multiple_of(8), "{f_inode}");
        assert!(i_rdev > 0 && i_rdev.is_multiple_of(4), "{i_rdev}");
        assert!(btf.member_offset("file", "no_such_member").is_err());
        let (index, offset) = btf.member_index("file", "f_inode").unwrap();
        assert_eq!(offset, f_inode);
        assert!(index > 0, "f_inode is not struct file's first member");
        let (id, size) = btf.struct_id("file").unwrap();
        assert!(id > 0 && size > f_inode, "{id} {size}");
        assert!(btf.member_index("file", "no_such_member").is_err());
        assert!(btf.func_id("vfs_read", None).is_some());
    }

    /// The look-up by kind and name bytes finds what comparing whole
    /// names finds: the first struct with members or function of a name,
    /// for a sample of the kernel's.
    #[test]
    fn look_ups_find_the_first_of_each_name() {
        let btf = Btf::from_file(Path::new("/sys/kernel/btf/vmlinux"), None).unwrap();
        let first = |kind: u32, name: &str| {
            (0..btf.types.len()).find(|&i| {
                let t = parse_type(&btf.data, btf.types[i]).unwrap();
                t.kind == kind
                    && (kind != KIND_STRUCT || t.vlen > 0)
                    && btf.name(u32_at(&btf.data, btf.types[i]).unwrap(), None) == name
            })
        };
        let mut checked = 0;
        for i in (0..btf.types.len()).step_by(499) {
            let t = parse_type(&btf.data, btf.types[i]).unwrap();
            if matches!(t.kind, KIND_STRUCT | KIND_FUNC) {
                let name = btf.name(u32_at(&btf.data, btf.types[i]).unwrap(), None);
                assert_eq!(btf.find(t.kind, name, None), first(t.kind, name), "{name}");
                checked += 1;
            }
        }
        assert!(checked > 50, "{checked}");
        assert_eq!(btf.find(KIND_FUNC, "no_such_function_anywhere", None), None);
    }
}
