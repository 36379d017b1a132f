//! How one interval's energy on one device is divided: the idle power's
//! share evenly among the containers that hold the device, the rest among
//! the containers that used it, by how much they used it. In whole
//! microjoules, apportioned by largest remainder, so the shares always add
//! up to the device's energy: no microjoule is lost or counted twice.

use std::collections::BTreeMap;

use crate::attribution::Owner;

/// Whose energy a share is, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Share {
    /// Above the device's idle power: charged to the containers that used
    /// the device, by use.
    Active,
    /// The device's idle power: charged to the containers that hold it.
    Idle,
}

impl Share {
    /// The `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Share::Active => "active",
            Share::Idle => "idle",
        }
    }
}

/// One interval of one device.
#[derive(Debug, Clone)]
pub struct Interval<'a> {
    /// The device's energy over the interval.
    pub microjoules: u64,
    /// How long the interval was.
    pub seconds: f64,
    /// The device's idle power.
    pub idle_watts: f64,
    /// Each user's use of the device over the interval (engine or ioctl
    /// seconds); users with none are ignored.
    pub use_by: &'a BTreeMap<Owner, f64>,
    /// The containers holding the device; none: its idle share goes to
    /// the owner with empty labels.
    pub holders: &'a [Owner],
}

/// The interval's energy by owner and share. With no use at all, the whole
/// interval is idle (it is how the device idles). Its sum is always the
/// interval's energy.
pub fn split(interval: &Interval) -> BTreeMap<(Owner, Share), u64> {
    let users: Vec<(&Owner, f64)> = interval
        .use_by
        .iter()
        .filter(|(_, used)| used.is_finite() && **used > 0.0)
        .map(|(owner, used)| (owner, *used))
        .collect();
    let idle_budget = interval.idle_watts.max(0.0) * interval.seconds.max(0.0) * 1e6;
    let idle = if users.is_empty() {
        interval.microjoules
    } else {
        // Saturating float-to-int conversion: a huge budget is all of it.
        (idle_budget.round() as u64).min(interval.microjoules)
    };
    let mut shares = BTreeMap::new();
    for (owner, microjoules) in apportion(interval.microjoules - idle, &users) {
        *shares.entry((owner.clone(), Share::Active)).or_default() += microjoules;
    }
    let nobody = [Owner::default()];
    let holders = if interval.holders.is_empty() {
        &nobody[..]
    } else {
        interval.holders
    };
    let even: Vec<(&Owner, f64)> = holders.iter().map(|owner| (owner, 1.0)).collect();
    for (owner, microjoules) in apportion(idle, &even) {
        *shares.entry((owner.clone(), Share::Idle)).or_default() += microjoules;
    }
    shares.retain(|_, microjoules| *microjoules > 0);
    shares
}

/// `total` in whole units among `weights` (positive, finite), each its
/// share rounded down, then the units left one each to the largest
/// remainders (ties to the earlier in order): the parts add up to `total`.
fn apportion<'a>(total: u64, weights: &[(&'a Owner, f64)]) -> Vec<(&'a Owner, u64)> {
    let sum: f64 = weights.iter().map(|(_, w)| w).sum();
    if total == 0 || weights.is_empty() || sum <= 0.0 {
        return Vec::new();
    }
    let mut parts: Vec<(&Owner, u64, f64)> = weights
        .iter()
        .map(|&(owner, weight)| {
            let exact = total as f64 * (weight / sum);
            let whole = (exact.floor() as u64).min(total);
            (owner, whole, exact - whole as f64)
        })
        .collect();
    let given: u64 = parts.iter().map(|(_, whole, _)| whole).sum();
    // Float rounding can give a unit too many; take it back from the
    // smallest remainders first.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| parts[b].2.total_cmp(&parts[a].2).then(a.cmp(&b)));
    if given <= total {
        for &i in order.iter().cycle().take((total - given) as usize) {
            parts[i].1 += 1;
        }
    } else {
        let mut excess = given - total;
        for &i in order.iter().rev().cycle() {
            if excess == 0 {
                break;
            }
            if parts[i].1 > 0 {
                parts[i].1 -= 1;
                excess -= 1;
            }
        }
    }
    parts
        .into_iter()
        .map(|(owner, whole, _)| (owner, whole))
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Container `main` of pod `pod` in namespace `ml`.
    pub(in crate::energy) fn owner(pod: &str) -> Owner {
        Owner {
            namespace: "ml".into(),
            pod: pod.into(),
            container: "main".into(),
        }
    }

    fn share(shares: &BTreeMap<(Owner, Share), u64>, pod: &str, kind: Share) -> u64 {
        let owner = if pod.is_empty() {
            Owner::default()
        } else {
            owner(pod)
        };
        shares.get(&(owner, kind)).copied().unwrap_or(0)
    }

    #[test]
    fn active_energy_follows_use_and_idle_energy_is_shared_by_the_holders() {
        // 10 s at 30 W idle: 300 J idle, 700 J above it; a used 3 s of
        // engine time, b 1 s; a, b and the idle c hold the device.
        let use_by = [(owner("a"), 3.0), (owner("b"), 1.0)].into();
        let holders = [owner("a"), owner("b"), owner("c")];
        let shares = split(&Interval {
            microjoules: 1_000_000_000,
            seconds: 10.0,
            idle_watts: 30.0,
            use_by: &use_by,
            holders: &holders,
        });
        assert_eq!(share(&shares, "a", Share::Active), 525_000_000);
        assert_eq!(share(&shares, "b", Share::Active), 175_000_000);
        assert_eq!(share(&shares, "a", Share::Idle), 100_000_000);
        assert_eq!(share(&shares, "b", Share::Idle), 100_000_000);
        assert_eq!(share(&shares, "c", Share::Idle), 100_000_000);
        assert_eq!(shares.values().sum::<u64>(), 1_000_000_000);
    }

    #[test]
    fn an_unused_device_is_all_idle_and_an_unheld_one_charges_nobody() {
        let shares = split(&Interval {
            microjoules: 5_000,
            seconds: 1.0,
            idle_watts: 0.001,
            use_by: &BTreeMap::new(),
            holders: &[],
        });
        assert_eq!(shares.len(), 1);
        assert_eq!(share(&shares, "", Share::Idle), 5_000);
    }

    #[test]
    fn idle_power_above_the_energy_leaves_nothing_active() {
        let use_by = [(owner("a"), 1.0)].into();
        let shares = split(&Interval {
            microjoules: 1_000,
            seconds: 1.0,
            idle_watts: 50.0,
            use_by: &use_by,
            holders: &[owner("a")],
        });
        assert_eq!(share(&shares, "a", Share::Idle), 1_000);
        assert_eq!(share(&shares, "a", Share::Active), 0);
    }

    /// The property the metrics promise: over any intervals, uses and
    /// holders, the shares add up to the device's energy exactly.
    #[test]
    fn shares_always_add_up_to_the_devices_energy() {
        // A small deterministic generator: no dependency for one test.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5_000 {
            let users = (next() % 6) as usize;
            let use_by: BTreeMap<Owner, f64> = (0..users)
                .map(|i| {
                    let used = match next() % 4 {
                        0 => 0.0,
                        1 => 1e-9,
                        _ => (next() % 10_000) as f64 / 997.0,
                    };
                    (owner(&format!("u{i}")), used)
                })
                .collect();
            let holders: Vec<Owner> = (0..(next() % 5)).map(|i| owner(&format!("h{i}"))).collect();
            let microjoules = match next() % 3 {
                0 => next() % 10,
                1 => next() % 1_000_000_000,
                _ => next() >> 8,
            };
            let shares = split(&Interval {
                microjoules,
                seconds: (next() % 100) as f64 / 7.0,
                idle_watts: (next() % 400) as f64 / 3.0,
                use_by: &use_by,
                holders: &holders,
            });
            assert_eq!(
                shares.values().sum::<u64>(),
                microjoules,
                "{use_by:?} {holders:?}"
            );
        }
    }
}
