//! The policy as scrapes and `kubenpuctl policy` show it: the mode, the
//! containers the kernel's rules hold with what each may use and why, and
//! the calls the checks audited or refused.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use kubenpu_ebpf::{VerdictKey, grant, lsm_hook, mode, rule};

use super::{PolicyMode, rule_name};
use crate::{attribution::Owner, catalog::kind_of_code, usage::Usage};

/// What a scrape shows of the policy.
#[derive(Debug, Clone, Default)]
pub struct PolicyView {
    /// The mode asked for.
    pub asked: PolicyMode,
    /// The mode in force.
    pub mode: PolicyMode,
    /// Whether BPF LSM is active on the kernel.
    pub lsm_available: bool,
    /// Whether the policy file's last reading was good; `None` without
    /// one.
    pub file_valid: Option<bool>,
    /// Cgroups the kernel's rules hold.
    pub ruled: usize,
    /// The containers among them the agent can name.
    pub containers: Vec<RuledView>,
    /// The devices the checks cover: those a vendor claims.
    pub checked: Vec<Arc<str>>,
    /// Calls audited or refused, per verdict.
    pub refusals: BTreeMap<Verdict, u64>,
    /// Verdicts the kernel could not count.
    pub lost: u64,
    /// Containers held at their creation, per outcome; `None` where
    /// nothing listens on the admission socket.
    pub admissions: Option<BTreeMap<&'static str, u64>>,
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
    /// The rule that does not allow it: `allocated-only`, `deny-device`
    /// or `deny-kind`.
    pub rule: &'static str,
    /// `audited` (let through) or `refused`.
    pub action: &'static str,
}

impl Verdict {
    /// The labels of the kernel's verdict `key`; `None` for a cgroup or
    /// device the agent cannot name.
    pub(super) fn of(key: &VerdictKey, usage: &Usage) -> Option<Self> {
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
            rule: rule_name(key.rule),
            action: if u32::from(key.mode) == mode::ENFORCE {
                "refused"
            } else {
                "audited"
            },
        })
    }
}

/// A container the kernel's rules hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuledView {
    /// Whose.
    pub owner: Owner,
    /// Its mode: audit or enforce.
    pub mode: PolicyMode,
    /// The devices it has a grant on; it may use no other.
    pub grants: Vec<GrantView>,
}

/// A ruled container's grant on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantView {
    /// The device's stable name.
    pub device: Arc<str>,
    /// Its vendor.
    pub vendor: Arc<str>,
    /// The kernel's value ([`kubenpu_ebpf::grant::value`]): what it
    /// allows, and the rule that refuses the rest.
    pub value: u32,
    /// Why the container has it.
    pub because: Because,
}

/// Why a ruled container has a grant on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Because {
    /// kubelet allocated it the device.
    Allocated,
    /// No allocator hands the device out (a DMA heap, udmabuf): it is
    /// open to every container.
    Shared,
    /// The policy file allows it.
    Allowed,
    /// The policy file denies it the device: the grant allows nothing.
    Denied,
    /// A predecessor wrote it, and the join has not spoken for the
    /// container since.
    Adopted,
}

impl Because {
    /// Why a container has the grant `value` on `device`, given what
    /// kubelet `allocated` it (if the join spoke for it), the devices
    /// `shared` with every container, and whether its rules were
    /// `adopted` from a predecessor.
    pub fn of(
        value: u32,
        device: &str,
        allocated: Option<&BTreeSet<Arc<str>>>,
        shared: &BTreeSet<Arc<str>>,
        adopted: bool,
    ) -> Self {
        if grant::rule(value) == rule::DENY_DEVICE {
            Because::Denied
        } else if allocated.is_some_and(|a| a.contains(device)) {
            Because::Allocated
        } else if shared.contains(device) {
            Because::Shared
        } else if adopted {
            Because::Adopted
        } else {
            Because::Allowed
        }
    }

    /// As `kubenpuctl policy` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Because::Allocated => "allocated",
            Because::Shared => "open to every container: no allocator hands it out",
            Because::Allowed => "allowed by the policy file",
            Because::Denied => "denied by the policy file",
            Because::Adopted => "adopted from the previous agent",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_device_is_granted_for_being_shared_not_by_the_file() {
        let set = |names: &[&str]| names.iter().map(|&n| Arc::from(n)).collect();
        let shared: BTreeSet<Arc<str>> = set(&["virtual/dma_heap/system"]);
        let allocated: BTreeSet<Arc<str>> = set(&["0000:00:02.0"]);
        let allows = grant::value(grant::ALL, rule::ALLOCATED_ONLY);
        let because = |device: &str, adopted: bool| {
            Because::of(allows, device, Some(&allocated), &shared, adopted)
        };
        assert_eq!(because("virtual/dma_heap/system", false), Because::Shared);
        assert_eq!(because("virtual/dma_heap/system", true), Because::Shared);
        assert_eq!(because("0000:00:02.0", false), Because::Allocated);
        assert_eq!(because("faux/vgem", false), Because::Allowed);
        assert_eq!(because("faux/vgem", true), Because::Adopted);
        let denied = grant::value(0, rule::DENY_DEVICE);
        let of = Because::of(denied, "virtual/dma_heap/system", None, &shared, false);
        assert_eq!(of, Because::Denied);
        assert_eq!(
            Because::Shared.as_str(),
            "open to every container: no allocator hands it out"
        );
    }
}
