//! The object's instructions relocated against the maps aya created, for
//! the programs the agent loads itself: those aya 0.14 cannot load (a
//! kprobe.multi, a tracing program on a module, a map iterator bound to a
//! map).

use std::os::fd::{AsFd as _, AsRawFd as _};

use aya::{Ebpf, maps::Map};
use aya_obj::{Object, generated::bpf_insn};

use super::ProbeError;

fn other(e: &dyn std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

/// An object parsed once, its map references and calls resolved.
pub struct Relocated(Object);

impl Relocated {
    /// `object`, relocated against the maps `ebpf` created for it.
    pub fn new(ebpf: &Ebpf, object: &[u8]) -> Result<Self, ProbeError> {
        let mut obj = Object::parse(object).map_err(|e| other(&e))?;
        let text_sections = obj.functions.keys().map(|(section, _)| *section).collect();
        let mut maps = Vec::new();
        for (map_name, map) in &obj.maps {
            let created = ebpf
                .map(map_name)
                .ok_or_else(|| other(&format!("aya created no map {map_name}")))?;
            maps.push((map_name.clone(), map_fd(created)?, map.clone()));
        }
        obj.relocate_maps(
            maps.iter().map(|(n, fd, m)| (n.as_str(), *fd, m)),
            &text_sections,
        )
        .map_err(|e| other(&e))?;
        obj.relocate_calls(&text_sections).map_err(|e| other(&e))?;
        Ok(Self(obj))
    }

    /// The instructions of program `name`.
    pub fn instructions(&self, name: &str) -> Result<Vec<bpf_insn>, ProbeError> {
        let program = self
            .0
            .programs
            .get(name)
            .ok_or_else(|| other(&format!("no program {name}")))?;
        Ok(self.0.functions[&program.function_key()]
            .instructions
            .clone())
    }
}

/// The fd of one of the object's maps, whatever its type.
pub fn map_fd(map: &Map) -> Result<i32, ProbeError> {
    let data = match map {
        Map::Array(d)
        | Map::HashMap(d)
        | Map::LruHashMap(d)
        | Map::PerCpuHashMap(d)
        | Map::PerCpuArray(d)
        | Map::RingBuf(d)
        // INFLIGHT, task storage, which aya has no type for.
        | Map::Unsupported(d) => d,
        _ => {
            return Err(ProbeError::Other(
                "the object has a map of an unexpected type".into(),
            ));
        }
    };
    Ok(data.fd().as_fd().as_raw_fd())
}
