//! The rules the kernel holds, as functions of what the policy decides:
//! the mode of each ruled cgroup, and what it may do on each device node
//! and by which rule it may not do the rest. Pure, so the rulings and the
//! order of writes that never refuses on a half-written rule can be read
//! and tested here.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use kubenpu_ebpf::{GrantKey, grant, kind, mode, rule};

use super::file::Applied;
use crate::{catalog::code_of_kind, device_table::DeviceTable, probe::Rules};

/// What the kernel holds for one ruled cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ruling {
    /// Its [`mode`].
    pub mode: u32,
    /// A [`grant::value`] per device node (kernel dev_t); a node without
    /// one is refused whole, as not allocated.
    pub grants: BTreeMap<u32, u32>,
}

/// The rulings of every ruled cgroup, by cgroup id.
pub type Rulings = BTreeMap<u64, Ruling>;

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

/// What a container may do on each node: all of its `allocated` devices,
/// those `open` to all and those the file's rules `allow`, less the
/// devices they `deny` (refused by deny-device) and the kinds they deny
/// on the rest (refused by deny-kind).
pub fn grants(
    allocated: &BTreeSet<Arc<str>>,
    open: &BTreeSet<Arc<str>>,
    applied: &Applied,
    nodes: &HashMap<Arc<str>, Vec<u32>>,
) -> BTreeMap<u32, u32> {
    let denied_kinds = applied
        .deny_kinds
        .iter()
        .fold(0, |mask, &kind| mask | grant::bit(code_of_kind(kind)));
    let granted = if denied_kinds == 0 {
        grant::value(grant::ALL, rule::ALLOCATED_ONLY)
    } else {
        grant::value(grant::ALL & !denied_kinds, rule::DENY_KIND)
    };
    let given = allocated
        .iter()
        .chain(open)
        .map(|d| &**d)
        .chain(applied.allow.iter().copied());
    let mut grants = BTreeMap::new();
    for device in given.filter(|d| !applied.deny.contains(d)) {
        for &node in nodes.get(device).into_iter().flatten() {
            grants.insert(node, granted);
        }
    }
    for device in &applied.deny {
        for &node in nodes.get(*device).into_iter().flatten() {
            grants.insert(node, grant::value(0, rule::DENY_DEVICE));
        }
    }
    grants
}

/// The rulings the kernel's `rules` hold, for each cgroup with a mode.
pub fn rulings_of(rules: &Rules) -> Rulings {
    let mut rulings: Rulings = rules
        .modes
        .iter()
        .map(|(&id, &mode)| {
            (
                id,
                Ruling {
                    mode,
                    ..Ruling::default()
                },
            )
        })
        .collect();
    for (key, &value) in &rules.grants {
        if let Some(ruling) = rulings.get_mut(&key.cgroup_id) {
            ruling.grants.insert(key.dev, value);
        }
    }
    rulings
}

/// The kernel's rules for `rulings`.
pub fn rules_for(rulings: &Rulings) -> Rules {
    let mut rules = Rules::default();
    for (&cgroup_id, ruling) in rulings {
        rules.modes.insert(cgroup_id, ruling.mode);
        for (&dev, &value) in &ruling.grants {
            rules.grants.insert(grant_key(cgroup_id, dev), value);
        }
    }
    rules
}

fn grant_key(cgroup_id: u64, dev: u32) -> GrantKey {
    GrantKey {
        cgroup_id,
        dev,
        pad: 0,
    }
}

/// One write to the kernel's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Set (or, with `None`, remove) a grant.
    Grant(GrantKey, Option<u32>),
    /// Set (or, with `None`, remove) a cgroup's mode.
    Mode(u64, Option<u32>),
}

/// Where a write goes in [`writes`]' order: each step refuses more than
/// the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// A rule removed, or enforce turned to audit: refuses less.
    Loosen,
    /// A grant of a cgroup no longer ruled: refuses nothing, and makes
    /// room in a full map for what follows.
    Free,
    /// A grant new or allowing more than before.
    Widen,
    /// A grant allowing less, or removed from a cgroup still ruled.
    Narrow,
    /// A cgroup ruled anew, or audit turned to enforce: last, once its
    /// grants are all written.
    Tighten,
}

/// The writes that turn `from` into `to`, up to step `upto`, in an order
/// under which no call is refused on a rule half written: every write
/// that refuses less goes before every one that refuses more, and a
/// cgroup's grants are written before its mode makes it ruled.
pub fn writes(from: &Rules, to: &Rules, upto: Step) -> Vec<Write> {
    let mut writes = Vec::new();
    for (&id, &old) in &from.modes {
        match to.modes.get(&id) {
            None => writes.push((Step::Loosen, Write::Mode(id, None))),
            Some(&new) if new != old => {
                let step = if new == mode::AUDIT {
                    Step::Loosen
                } else {
                    Step::Tighten
                };
                writes.push((step, Write::Mode(id, Some(new))));
            }
            Some(_) => {}
        }
    }
    for (&id, &new) in &to.modes {
        if !from.modes.contains_key(&id) {
            writes.push((Step::Tighten, Write::Mode(id, Some(new))));
        }
    }
    for (key, &new) in &to.grants {
        let step = match from.grants.get(key) {
            Some(&old) if old == new => continue,
            Some(&old) if grant::mask(old) & !grant::mask(new) != 0 => Step::Narrow,
            _ => Step::Widen,
        };
        writes.push((step, Write::Grant(*key, Some(new))));
    }
    for key in from.grants.keys() {
        if !to.grants.contains_key(key) {
            let step = if to.modes.contains_key(&key.cgroup_id) {
                Step::Narrow
            } else {
                Step::Free
            };
            writes.push((step, Write::Grant(*key, None)));
        }
    }
    // Stable: within a step, in key order.
    writes.sort_by_key(|(step, _)| *step);
    writes
        .into_iter()
        .filter(|(step, _)| *step <= upto)
        .map(|(_, write)| write)
        .collect()
}

/// The kinds of calls a grant's `value` allows, by name: `open` (the
/// open, and ioctls the vendor's table does not list), then `submit`,
/// `alloc` and `wait`.
pub fn allowed_kinds(value: u32) -> Vec<&'static str> {
    KIND_NAMES
        .into_iter()
        .filter(|(code, _)| grant::mask(value) & grant::bit(*code) != 0)
        .map(|(_, name)| name)
        .collect()
}

/// The kinds a deny-kinds rule takes away in a grant's `value`; none
/// where another rule refuses what it leaves out (a denied device
/// allows nothing, but no kind was denied).
pub fn denied_kinds(value: u32) -> Vec<&'static str> {
    if grant::rule(value) != rule::DENY_KIND {
        return Vec::new();
    }
    KIND_NAMES[1..]
        .iter()
        .filter(|(code, _)| grant::mask(value) & grant::bit(*code) == 0)
        .map(|(_, name)| *name)
        .collect()
}

/// Each grant bit's kind, by name.
const KIND_NAMES: [(u32, &str); 4] = [
    (kind::OTHER, "open"),
    (kind::SUBMIT, "submit"),
    (kind::ALLOC, "alloc"),
    (kind::WAIT, "wait"),
];

#[cfg(test)]
mod tests {
    use kubenpu_sdk::Kind;

    use super::*;

    fn ruling(mode: u32, grants: &[(u32, u32)]) -> Ruling {
        Ruling {
            mode,
            grants: grants.iter().copied().collect(),
        }
    }

    fn rules(rulings: &[(u64, Ruling)]) -> Rules {
        rules_for(&rulings.iter().cloned().collect())
    }

    const ALL: u32 = grant::value(grant::ALL, rule::ALLOCATED_ONLY);

    #[test]
    fn a_cgroup_is_ruled_only_once_its_grants_are_written_and_freed_in_reverse() {
        let enforce = |grants: &[(u32, u32)]| ruling(mode::ENFORCE, grants);
        let before = rules(&[
            (1, enforce(&[(10, ALL), (11, ALL)])),
            (2, enforce(&[(10, ALL)])),
        ]);
        // 1 loses node 11, 2 goes, 3 comes with node 12.
        let after = rules(&[(1, enforce(&[(10, ALL)])), (3, enforce(&[(12, ALL)]))]);
        assert_eq!(
            writes(&before, &after, Step::Tighten),
            [
                Write::Mode(2, None),
                Write::Grant(grant_key(2, 10), None),
                Write::Grant(grant_key(3, 12), Some(ALL)),
                Write::Grant(grant_key(1, 11), None),
                Write::Mode(3, Some(mode::ENFORCE)),
            ]
        );
        assert!(writes(&after, &after, Step::Tighten).is_empty());
        // Up to widening: what refuses no more than before.
        assert_eq!(
            writes(&before, &after, Step::Widen),
            [
                Write::Mode(2, None),
                Write::Grant(grant_key(2, 10), None),
                Write::Grant(grant_key(3, 12), Some(ALL)),
            ]
        );
    }

    #[test]
    fn writes_that_refuse_less_go_before_those_that_refuse_more() {
        let no_submit = grant::value(grant::ALL & !grant::bit(kind::SUBMIT), rule::DENY_KIND);
        // 1 goes to audit and loses submit; 2 goes to enforce and gains
        // node 11.
        let before = rules(&[
            (1, ruling(mode::ENFORCE, &[(10, ALL)])),
            (2, ruling(mode::AUDIT, &[(10, ALL)])),
        ]);
        let after = rules(&[
            (1, ruling(mode::AUDIT, &[(10, no_submit)])),
            (2, ruling(mode::ENFORCE, &[(10, ALL), (11, ALL)])),
        ]);
        assert_eq!(
            writes(&before, &after, Step::Tighten),
            [
                Write::Mode(1, Some(mode::AUDIT)),
                Write::Grant(grant_key(2, 11), Some(ALL)),
                Write::Grant(grant_key(1, 10), Some(no_submit)),
                Write::Mode(2, Some(mode::ENFORCE)),
            ]
        );
    }

    #[test]
    fn rules_read_back_from_the_kernel_give_the_rulings() {
        let rulings: Rulings = [
            (1, ruling(mode::AUDIT, &[(10, ALL), (11, 0)])),
            (2, ruling(mode::ENFORCE, &[])),
        ]
        .into_iter()
        .collect();
        let mut kernel = rules_for(&rulings);
        assert_eq!(rulings_of(&kernel), rulings);
        // A grant of a cgroup without a mode is no rule.
        kernel.grants.insert(grant_key(9, 10), ALL);
        assert_eq!(rulings_of(&kernel), rulings);
    }

    #[test]
    fn grants_are_the_allocation_and_allows_less_denies_and_denied_kinds() {
        let nodes: HashMap<Arc<str>, Vec<u32>> =
            [("a", vec![10, 11]), ("b", vec![20]), ("c", vec![30])]
                .into_iter()
                .map(|(d, n)| (Arc::from(d), n))
                .collect();
        let allocated: BTreeSet<Arc<str>> = [Arc::from("a")].into();
        let (closed, open) = (BTreeSet::new(), [Arc::from("c")].into());
        let none = Applied::default();
        assert_eq!(
            grants(&allocated, &closed, &none, &nodes),
            BTreeMap::from([(10, ALL), (11, ALL)])
        );
        // A device no allocator hands out is every container's.
        assert_eq!(
            grants(&allocated, &open, &none, &nodes),
            BTreeMap::from([(10, ALL), (11, ALL), (30, ALL)])
        );
        let applied = Applied {
            allow: ["b", "gone"].into(),
            deny: ["a"].into(),
            deny_kinds: [Kind::Submit, Kind::Wait].into(),
        };
        let some = grant::value(
            grant::bit(kind::OTHER) | grant::bit(kind::ALLOC),
            rule::DENY_KIND,
        );
        let denied = grant::value(0, rule::DENY_DEVICE);
        assert_eq!(
            grants(&allocated, &closed, &applied, &nodes),
            BTreeMap::from([(10, denied), (11, denied), (20, some)])
        );
        // A deny rule takes it away all the same.
        let deny_open = Applied {
            deny: ["c"].into(),
            ..Applied::default()
        };
        assert_eq!(
            grants(&allocated, &open, &deny_open, &nodes),
            BTreeMap::from([(10, ALL), (11, ALL), (30, denied)])
        );
        assert_eq!(allowed_kinds(some), ["open", "alloc"]);
        assert_eq!(denied_kinds(some), ["submit", "wait"]);
        assert!(allowed_kinds(denied).is_empty());
        assert!(denied_kinds(denied).is_empty());
        assert_eq!(allowed_kinds(ALL), ["open", "submit", "alloc", "wait"]);
        assert!(denied_kinds(ALL).is_empty());
    }

    /// What the kernel's check (`host-ebpf`'s `lsm.rs`) does with a call
    /// of `kind` on node 10 by cgroup 1, reading the mode in `first`, the
    /// grant in `grant`, then the mode again in `last`: `None` lets it
    /// through, else the mode it is judged in.
    fn check(first: &Rules, grant: &Rules, last: &Rules, kind: u32) -> Option<u32> {
        let before = *first.modes.get(&1)?;
        let value = grant.grants.get(&grant_key(1, 10)).copied().unwrap_or(0);
        if grant::mask(value) & grant::bit(kind) != 0 {
            return None;
        }
        let now = *last.modes.get(&1)?;
        Some(if before == mode::ENFORCE && now == mode::ENFORCE {
            mode::ENFORCE
        } else {
            mode::AUDIT
        })
    }

    /// Every mode (none, audit, enforce) and grant (none, or any mask) of
    /// cgroup 1 on node 10, before and after a change; for each, every
    /// order of a check's three reads among the writes: a call is refused
    /// only if the rules before or after refuse it, and one both refuse
    /// is refused.
    #[test]
    fn no_order_of_reads_and_writes_refuses_what_neither_rules_refuse() {
        let modes = [None, Some(mode::AUDIT), Some(mode::ENFORCE)];
        let masks = [
            None,
            Some(0),
            Some(grant::bit(kind::OTHER)),
            Some(grant::ALL),
        ];
        let all_rules: Vec<Rules> = modes
            .iter()
            .flat_map(|&mode| masks.iter().map(move |&mask| (mode, mask)))
            .map(|(mode, mask)| {
                let mut rules = Rules::default();
                if let Some(mode) = mode {
                    rules.modes.insert(1, mode);
                }
                if let Some(mask) = mask {
                    let value = grant::value(mask, rule::ALLOCATED_ONLY);
                    rules.grants.insert(grant_key(1, 10), value);
                }
                rules
            })
            .collect();
        let mut orders = 0;
        for from in &all_rules {
            for to in &all_rules {
                // The states the kernel passes through, write by write.
                let mut states = vec![from.clone()];
                for write in writes(from, to, Step::Tighten) {
                    let mut next = states.last().unwrap().clone();
                    match write {
                        Write::Grant(key, Some(value)) => next.grants.insert(key, value),
                        Write::Grant(key, None) => next.grants.remove(&key),
                        Write::Mode(id, Some(mode)) => next.modes.insert(id, mode),
                        Write::Mode(id, None) => next.modes.remove(&id),
                    };
                    states.push(next);
                }
                assert_eq!(states.last(), Some(to));
                for kind in [kind::OTHER, kind::SUBMIT] {
                    let refuses =
                        |rules: &Rules| check(rules, rules, rules, kind) == Some(mode::ENFORCE);
                    for i in 0..states.len() {
                        for j in i..states.len() {
                            for k in j..states.len() {
                                orders += 1;
                                let refused = check(&states[i], &states[j], &states[k], kind)
                                    == Some(mode::ENFORCE);
                                assert!(
                                    !refused || refuses(from) || refuses(to),
                                    "{from:?} -> {to:?}, reads at {i} {j} {k}: refused"
                                );
                                assert!(
                                    refused || !(refuses(from) && refuses(to)),
                                    "{from:?} -> {to:?}, reads at {i} {j} {k}: let through"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(orders > 1000, "{orders}");
    }
}
