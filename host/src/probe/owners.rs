//! The pinned OWNERS map: who each counted cgroup belongs to, as the
//! agent named it, so a restarted agent names what its predecessor named,
//! gone cgroups included, and keeps their grace period.

use aya::{
    Ebpf,
    maps::{HashMap, MapData},
};
use kubenpu_ebpf::{OwnerRecord, map};

use super::{ProbeError, unpreempted::unpreempted};

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(format!("OWNERS map: {e}"))
}

fn owners(ebpf: &Ebpf) -> Result<HashMap<&MapData, u64, OwnerRecord>, ProbeError> {
    HashMap::try_from(ebpf.map(map::OWNERS).ok_or_else(|| other("missing"))?).map_err(other)
}

fn owners_mut(ebpf: &mut Ebpf) -> Result<HashMap<&mut MapData, u64, OwnerRecord>, ProbeError> {
    HashMap::try_from(ebpf.map_mut(map::OWNERS).ok_or_else(|| other("missing"))?).map_err(other)
}

/// Every record.
pub fn all(ebpf: &Ebpf) -> Result<Vec<(u64, OwnerRecord)>, ProbeError> {
    owners(ebpf)?
        .iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(other)
}

/// Writes cgroup `id`'s record.
pub fn save(ebpf: &mut Ebpf, id: u64, record: &OwnerRecord) -> Result<(), ProbeError> {
    let mut owners = owners_mut(ebpf)?;
    unpreempted(|| owners.insert(id, record, 0)).map_err(other)
}

/// Deletes cgroup `id`'s record, if there is one.
pub fn remove(ebpf: &mut Ebpf, id: u64) -> Result<(), ProbeError> {
    // The agent is the map's only writer: what it finds is what it removes.
    let mut owners = owners_mut(ebpf)?;
    if unpreempted(|| owners.get(&id, 0)).is_err() {
        return Ok(());
    }
    unpreempted(|| owners.remove(&id)).map_err(other)
}
