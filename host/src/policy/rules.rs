//! The rules the kernel holds, as functions of what the policy allows:
//! which device nodes each ruled cgroup may use, and the mode. Pure, so
//! the order of writes that never refuses on a half-written rule can be
//! read and tested here.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use kubenpu_ebpf::{GrantKey, grant};

use crate::{device_table::DeviceTable, probe::Rules};

/// The device nodes (kernel dev_t) each ruled cgroup may use.
pub type Allowed = BTreeMap<u64, BTreeSet<u32>>;

/// The device nodes of each device some vendor claims, by stable name:
/// the policy checks only those (the kernel's DEVICES map).
pub fn nodes_by_device(table: &DeviceTable) -> HashMap<Arc<str>, Vec<u32>> {
    table
        .claimed()
        .map(|(device, _)| {
            let nodes = device.nodes.iter().map(|n| n.dev.kernel_dev_t()).collect();
            (Arc::from(device.name.as_str()), nodes)
        })
        .collect()
}

/// What the kernel's rules allow: each ruled cgroup's nodes with any
/// grant.
pub fn allowed_by(rules: &Rules) -> Allowed {
    let mut allowed: Allowed = rules
        .modes
        .keys()
        .map(|&id| (id, BTreeSet::new()))
        .collect();
    for (key, &mask) in &rules.grants {
        if mask != 0
            && let Some(nodes) = allowed.get_mut(&key.cgroup_id)
        {
            nodes.insert(key.dev);
        }
    }
    allowed
}

/// The kernel's rules for `allowed`, every cgroup in `mode`.
pub fn rules_for(mode: u32, allowed: &Allowed) -> Rules {
    let mut rules = Rules::default();
    for (&cgroup_id, nodes) in allowed {
        rules.modes.insert(cgroup_id, mode);
        for &dev in nodes {
            let key = GrantKey {
                cgroup_id,
                dev,
                pad: 0,
            };
            rules.grants.insert(key, grant::ALL);
        }
    }
    rules
}

/// One write to the kernel's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Set (or, with `None`, remove) a grant.
    Grant(GrantKey, Option<u32>),
    /// Set (or, with `None`, remove) a cgroup's mode.
    Mode(u64, Option<u32>),
}

/// The writes that turn `from` into `to`, in an order under which no
/// call is refused on a rule half written: a cgroup's grants are written
/// before its mode makes it ruled, and its mode removed before its
/// grants.
pub fn writes(from: &Rules, to: &Rules) -> Vec<Write> {
    let mut writes = Vec::new();
    for (key, &mask) in &to.grants {
        if from.grants.get(key) != Some(&mask) {
            writes.push(Write::Grant(*key, Some(mask)));
        }
    }
    for (&id, &mode) in &to.modes {
        if from.modes.get(&id) != Some(&mode) {
            writes.push(Write::Mode(id, Some(mode)));
        }
    }
    for &id in from.modes.keys() {
        if !to.modes.contains_key(&id) {
            writes.push(Write::Mode(id, None));
        }
    }
    for key in from.grants.keys() {
        if !to.grants.contains_key(key) {
            writes.push(Write::Grant(*key, None));
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use kubenpu_ebpf::mode;

    use super::*;

    fn allowed(entries: &[(u64, &[u32])]) -> Allowed {
        entries
            .iter()
            .map(|(id, nodes)| (*id, nodes.iter().copied().collect()))
            .collect()
    }

    fn key(cgroup_id: u64, dev: u32) -> GrantKey {
        GrantKey {
            cgroup_id,
            dev,
            pad: 0,
        }
    }

    #[test]
    fn a_cgroup_is_ruled_only_once_its_grants_are_written_and_freed_in_reverse() {
        let before = rules_for(mode::ENFORCE, &allowed(&[(1, &[10, 11]), (2, &[10])]));
        // 1 loses node 11, 2 goes, 3 comes with node 12.
        let after = rules_for(mode::ENFORCE, &allowed(&[(1, &[10]), (3, &[12])]));
        assert_eq!(
            writes(&before, &after),
            [
                Write::Grant(key(3, 12), Some(grant::ALL)),
                Write::Mode(3, Some(mode::ENFORCE)),
                Write::Mode(2, None),
                Write::Grant(key(1, 11), None),
                Write::Grant(key(2, 10), None),
            ]
        );
        assert!(writes(&after, &after).is_empty());
    }

    #[test]
    fn a_new_mode_rewrites_every_rule_and_no_grant() {
        let nodes = allowed(&[(1, &[10]), (2, &[])]);
        let audit = rules_for(mode::AUDIT, &nodes);
        let enforce = rules_for(mode::ENFORCE, &nodes);
        assert_eq!(
            writes(&audit, &enforce),
            [
                Write::Mode(1, Some(mode::ENFORCE)),
                Write::Mode(2, Some(mode::ENFORCE))
            ]
        );
    }

    #[test]
    fn rules_read_back_from_the_kernel_give_what_they_allow() {
        let nodes = allowed(&[(1, &[10, 11]), (2, &[])]);
        let mut rules = rules_for(mode::AUDIT, &nodes);
        assert_eq!(allowed_by(&rules), nodes);
        // A grant of nothing allows nothing; one of a cgroup without a
        // mode is no rule.
        rules.grants.insert(key(2, 12), 0);
        rules.grants.insert(key(9, 10), grant::ALL);
        assert_eq!(allowed_by(&rules), nodes);
    }
}
