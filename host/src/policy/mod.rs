//! Allow or block: each container's access to the node's accelerators,
//! checked in the kernel by BPF LSM programs (`host-ebpf`'s `lsm.rs`)
//! before the driver sees the call.
//!
//! The one rule is *allocated-only*: a container the allocation join
//! classified (kubelet described its pod recently and every ID resolved)
//! may open and call only the devices kubelet allocated to it. Data flows
//! one way: the join's classification, then the [`rules`] the kernel
//! should hold, then the writes to the probe's maps.
//!
//! Never on a guess:
//! - a cgroup without a rule is never refused: processes outside pods,
//!   and containers not classified yet (before kubelet answers for them,
//!   while its word is stale or failing, or before the agent first sees
//!   them: at their first open of an accelerator, or their first counted
//!   call);
//! - a classification holds for the cgroup's life (kubelet never changes
//!   a running container's devices), so a join that goes stale later
//!   leaves the rules as they were;
//! - across a restart the pinned checks keep the last rules; the next
//!   agent adopts those of the cgroups it knows live, and drops the rest;
//! - with the policy off, and after `--cleanup`, no check is left
//!   attached.

pub mod lsm;
pub mod rules;

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::Duration,
};

use kubenpu_ebpf::{VerdictKey, lsm_hook, mode};
use tracing::{info, warn};

use self::rules::{Allowed, Write};
use crate::{
    allocation::join::Classified,
    attribution::Owner,
    catalog::kind_of_code,
    clock,
    device_table::DeviceTable,
    probe::{Probe, ProbeError, Rules, Verdicts},
    usage::Usage,
};

/// What the policy does with the calls its rule does not allow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum PolicyMode {
    /// No checks attached.
    #[default]
    Off,
    /// Count them; refuse nothing.
    Audit,
    /// Refuse them with EPERM, and count them.
    Enforce,
}

impl PolicyMode {
    /// Every mode, for the one-hot metric.
    pub const ALL: [PolicyMode; 3] = [PolicyMode::Off, PolicyMode::Audit, PolicyMode::Enforce];

    /// The name on the command line and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::Off => "off",
            PolicyMode::Audit => "audit",
            PolicyMode::Enforce => "enforce",
        }
    }

    /// As the kernel's RULES map holds it.
    fn code(self) -> Option<u32> {
        match self {
            PolicyMode::Off => None,
            PolicyMode::Audit => Some(mode::AUDIT),
            PolicyMode::Enforce => Some(mode::ENFORCE),
        }
    }
}

/// The rule every verdict is of, for now.
pub const ALLOCATED_ONLY: &str = "allocated-only";

/// The policy's state, owned by the agent's loop.
#[derive(Debug)]
pub struct Policy {
    /// The mode asked for.
    asked: PolicyMode,
    /// The mode in force: `asked`, or off where BPF LSM or the checks
    /// are unavailable.
    mode: PolicyMode,
    /// Whether BPF LSM is active on the kernel.
    lsm_available: bool,
    /// What the kernel's rules allow, as last written.
    allowed: Allowed,
    /// The kernel's rules, as last written.
    written: Rules,
    /// How long each renewal lets the checks refuse.
    lease: Duration,
}

impl Policy {
    /// The policy asked for, on a kernel where BPF LSM is active (`Ok`)
    /// or not (why), its rules leased for `lease` at each renewal. Says in
    /// one line when it must stay off.
    pub fn new(asked: PolicyMode, lsm: Result<(), String>, lease: Duration) -> Self {
        let lsm_available = lsm.is_ok();
        let mode = match lsm {
            Err(why) if asked != PolicyMode::Off => {
                warn!(
                    "policy {} falls back to off: {why}; counting is unaffected",
                    asked.as_str()
                );
                PolicyMode::Off
            }
            _ => asked,
        };
        Self {
            asked,
            mode,
            lsm_available,
            allowed: Allowed::new(),
            written: Rules::default(),
            lease,
        }
    }

    /// Whether the checks are to be attached.
    pub fn wants_checks(&self) -> bool {
        self.mode != PolicyMode::Off
    }

    /// Takes the outcome of attaching the checks: without them the
    /// policy falls back to off, in one line.
    pub fn checks(&mut self, outcome: Option<Result<&str, &str>>) {
        match outcome {
            Some(Ok(how)) => info!("policy {}: {how}", self.mode.as_str()),
            Some(Err(why)) => {
                warn!(
                    "policy {} falls back to off: {why}; counting is unaffected",
                    self.mode.as_str()
                );
                self.mode = PolicyMode::Off;
            }
            None => {}
        }
    }

    /// Takes up the rules a predecessor left in the kernel (`pinned`),
    /// for the cgroups `usage` knows live; the next [`Policy::sync`]
    /// drops the rest.
    pub fn adopt(&mut self, pinned: Rules, usage: &Usage) {
        let live = live_cgroups(usage);
        self.allowed = rules::allowed_by(&pinned);
        self.allowed.retain(|id, _| live.contains(id));
        if !self.allowed.is_empty() {
            info!(
                "policy: adopted the rules of {} container(s)",
                self.allowed.len()
            );
        }
        self.written = pinned;
    }

    /// Renews the rules' lease, and brings them in line with the
    /// classified cgroups that live, in the mode in force. A write that
    /// fails leaves the rest for the next call.
    pub fn sync(
        &mut self,
        probe: &mut Probe,
        classified: &Classified,
        table: &DeviceTable,
        usage: &Usage,
    ) -> Result<(), ProbeError> {
        let Some(code) = self.mode.code() else {
            return Ok(());
        };
        probe.renew_lease(clock::boottime() + self.lease);
        let live = live_cgroups(usage);
        let nodes = rules::nodes_by_device(table);
        self.allowed.retain(|id, _| live.contains(id));
        for (id, devices) in classified {
            if live.contains(id) {
                let allowed = devices.iter().filter_map(|d| nodes.get(d)).flatten();
                self.allowed.insert(*id, allowed.copied().collect());
            }
        }
        let target = rules::rules_for(code, &self.allowed);
        for write in rules::writes(&self.written, &target) {
            match write {
                Write::Grant(key, mask) => {
                    probe.set_grant(key, mask)?;
                    match mask {
                        Some(mask) => self.written.grants.insert(key, mask),
                        None => self.written.grants.remove(&key),
                    };
                }
                Write::Mode(id, mode) => {
                    probe.set_rule(id, mode)?;
                    match mode {
                        Some(mode) => self.written.modes.insert(id, mode),
                        None => self.written.modes.remove(&id),
                    };
                }
            }
        }
        Ok(())
    }

    /// The policy as a scrape shows it, with the kernel's `verdicts`.
    pub fn view(&self, verdicts: Option<Verdicts>, usage: &Usage) -> PolicyView {
        let mut refusals = BTreeMap::new();
        let Verdicts { counts, lost } = verdicts.unwrap_or_default();
        for (key, calls) in counts {
            if let Some(verdict) = Verdict::of(&key, usage) {
                *refusals.entry(verdict).or_default() += calls;
            }
        }
        PolicyView {
            asked: self.asked,
            mode: self.mode,
            lsm_available: self.lsm_available,
            ruled: self.written.modes.len(),
            refusals,
            lost,
        }
    }
}

/// The cgroups the agent knows and has not found gone.
fn live_cgroups(usage: &Usage) -> HashSet<u64> {
    usage
        .attributor
        .named()
        .filter(|named| named.gone_at.is_none())
        .map(|named| named.id)
        .collect()
}

/// What a scrape shows of the policy.
#[derive(Debug, Clone, Default)]
pub struct PolicyView {
    /// The mode asked for.
    pub asked: PolicyMode,
    /// The mode in force.
    pub mode: PolicyMode,
    /// Whether BPF LSM is active on the kernel.
    pub lsm_available: bool,
    /// Cgroups the kernel's rules hold.
    pub ruled: usize,
    /// Calls audited or refused, per verdict.
    pub refusals: BTreeMap<Verdict, u64>,
    /// Verdicts the kernel could not count.
    pub lost: u64,
}

/// The labels of one series of audited or refused calls.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Verdict {
    /// Who called.
    pub owner: Owner,
    /// The device's stable name.
    pub device: Arc<str>,
    /// Its vendor.
    pub vendor: Arc<str>,
    /// The call's kind, `other` for an open and ioctls the vendor's table
    /// does not list.
    pub kind: &'static str,
    /// `open`, `ioctl` or `ioctl_compat`.
    pub hook: &'static str,
    /// `audited` (let through) or `refused`.
    pub action: &'static str,
}

impl Verdict {
    /// The labels of the kernel's verdict `key`; `None` for a cgroup or
    /// device the agent cannot name.
    fn of(key: &VerdictKey, usage: &Usage) -> Option<Self> {
        let owner = usage.owner(key.cgroup_id)?.clone();
        let (device, vendor) = usage.device(key.dev)?;
        Some(Verdict {
            owner,
            device,
            vendor,
            kind: kind_of_code(u32::from(key.kind)).map_or("other", |kind| kind.as_str()),
            hook: match key.hook {
                lsm_hook::OPEN => "open",
                lsm_hook::IOCTL_COMPAT => "ioctl_compat",
                _ => "ioctl",
            },
            action: if u32::from(key.mode) == mode::ENFORCE {
                "refused"
            } else {
                "audited"
            },
        })
    }
}
