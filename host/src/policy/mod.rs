//! Allow or block: each container's access to the node's accelerators,
//! checked in the kernel by BPF LSM programs (`host-ebpf`'s `lsm.rs`)
//! before the driver sees the call.
//!
//! The base rule is *allocated-only*: a container the allocation join
//! classified (kubelet described its pod recently and every ID resolved)
//! may open and call only the devices kubelet allocated to it. The
//! [`file`] (`--policy-file`) sets modes per namespace and adds rules:
//! allow devices besides the allocation, deny whole devices, deny kinds
//! of calls. Data flows one way: the join's classification and the file,
//! then the [`rules`] the kernel should hold, then the writes to the
//! probe's maps.
//!
//! Never on a guess:
//! - a cgroup without a rule is never refused: processes outside pods,
//!   and containers not classified yet (before kubelet answers for them,
//!   while its word is stale or failing, or before the agent first sees
//!   them: as the runtime creates them, where it runs
//!   [`crate::admission`]'s hook, else at their first open of an
//!   accelerator, or their first counted call); the file's rules, too,
//!   rule only classified containers;
//! - a classification holds for the cgroup's life (kubelet never changes
//!   a running container's devices), so a join that goes stale later
//!   leaves the rules as they were;
//! - a file that does not parse changes nothing: the rules before it stay;
//! - across a restart the pinned checks keep the last rules; the next
//!   agent adopts those of the cgroups it knows live, and drops the rest;
//! - with the policy off (and no namespace the file sets to audit or
//!   enforce), and after `--cleanup`, no check is left attached.

pub mod file;
pub mod lsm;
pub mod reload;
pub mod rules;
pub mod view;

use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use kubenpu_ebpf::{mode, rule};
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tracing::{info, warn};

pub use self::view::{Because, GrantView, PolicyView, RuledView, Verdict};
use self::{
    file::PolicyFile,
    reload::Reading,
    rules::{Ruling, Rulings, Step, Write},
};
use crate::{
    admission::Standing,
    allocation::{Allocation, join::Classified},
    clock,
    device_table::DeviceTable,
    probe::{Probe, ProbeError, Rules, Verdicts},
    usage::Usage,
    watch::DirWatch,
};

/// What the policy does with the calls its rules do not allow.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
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

    /// The mode of a RULES value.
    fn of_code(code: u32) -> Self {
        match code {
            mode::ENFORCE => PolicyMode::Enforce,
            _ => PolicyMode::Audit,
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

/// The name of a [`rule`] code, as metrics show it.
pub fn rule_name(code: u8) -> &'static str {
    match code {
        rule::DENY_DEVICE => "deny-device",
        rule::DENY_KIND => "deny-kind",
        _ => "allocated-only",
    }
}

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
    /// Whether the checks could not be attached: nothing is ruled then,
    /// whatever the node or the file asks.
    checks_failed: bool,
    /// The devices kubelet allocated to each container the join
    /// classified, held for the container's life.
    allocated: BTreeMap<u64, Arc<BTreeSet<Arc<str>>>>,
    /// Rulings a predecessor left for live cgroups not classified since:
    /// kept as they were until the join speaks for them.
    adopted: Rulings,
    /// The policy file's rules in force: none without a file.
    file: PolicyFile,
    /// Whether the policy file's last reading was good; `None` without
    /// `--policy-file`.
    file_valid: Option<bool>,
    /// Why the policy file's last reading was refused, if it was.
    file_fault: Option<String>,
    /// Whether the rules are held as a predecessor left them: a policy
    /// file is given and none has been read good yet, so what it says is
    /// not known.
    holding: bool,
    /// Where the policy file is, for the log's lines.
    file_path: Option<PathBuf>,
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
            checks_failed: false,
            allocated: BTreeMap::new(),
            adopted: Rulings::new(),
            file: PolicyFile::default(),
            file_valid: None,
            file_fault: None,
            holding: false,
            file_path: None,
            written: Rules::default(),
            lease,
        }
    }

    /// Reads the policy file at `path` and follows its changes, which
    /// the returned receiver hands to [`Policy::take_file`]; `None` where
    /// BPF LSM is not active, which one line says. A file read while the
    /// node's policy is off rules the namespaces it sets to audit or
    /// enforce, and no others.
    pub fn follow_file(
        &mut self,
        path: &Path,
    ) -> Option<(UnboundedReceiver<Reading>, Option<DirWatch>)> {
        if !self.lsm_available {
            warn!(
                "policy file {} is not read: BPF LSM is not active on this kernel, so nothing can be checked",
                path.display()
            );
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (reading, watch) = reload::follow(path, move |reading| {
            let _ = tx.send(reading);
        });
        self.file_path = Some(path.to_owned());
        self.take_file(reading);
        if self.file_valid == Some(false) {
            self.holding = true;
            warn!(
                "until the policy file can be read, the rules a previous agent left stay as they are, and no other container is ruled"
            );
        }
        Some((rx, watch))
    }

    /// Takes a reading of the policy file: good rules replace the ones in
    /// force; a file that does not parse leaves them, in one line. The
    /// next [`Policy::sync`] writes them.
    pub fn take_file(&mut self, reading: Reading) {
        let path = self.file_path.as_deref().unwrap_or(Path::new("")).display();
        // One line for each change of what is in force.
        let changed = |file: &PolicyFile| self.file_valid != Some(true) || *file != self.file;
        let file = match reading {
            Ok(Some(file)) => {
                if changed(&file) {
                    info!(
                        "policy file {path}: {} namespace mode(s), {} rule(s)",
                        file.namespaces.len(),
                        file.rules.len()
                    );
                }
                file
            }
            Ok(None) => {
                if changed(&PolicyFile::default()) {
                    info!("policy file {path} does not exist: no rules beyond allocated-only");
                }
                PolicyFile::default()
            }
            Err(why) => {
                // Once per fault: a directory's one change can be read
                // twice.
                if self.file_fault.as_ref() != Some(&why) {
                    warn!("{why}; the rules in force before it stay");
                }
                self.file_fault = Some(why);
                self.file_valid = Some(false);
                return;
            }
        };
        self.file = file;
        self.file_valid = Some(true);
        self.file_fault = None;
        self.holding = false;
    }

    /// Whether the checks are to be attached: the node's mode is audit or
    /// enforce, or the policy file sets a namespace to one of them.
    /// (Without BPF LSM no file is read.)
    pub fn wants_checks(&self) -> bool {
        !self.checks_failed && (self.mode != PolicyMode::Off || self.file.asks_for_checks())
    }

    /// What asks for the checks, for the log: the node's mode, or the
    /// namespaces the policy file sets.
    fn asking(&self) -> String {
        if self.mode != PolicyMode::Off {
            return format!("policy {}", self.mode.as_str());
        }
        format!(
            "policy off but for namespace(s) {} (policy file)",
            self.file.checked_namespaces().join(", ")
        )
    }

    /// Takes the outcome of attaching the checks: without them the
    /// policy falls back to off, in one line.
    pub fn checks(&mut self, outcome: Option<Result<&str, &str>>) {
        match outcome {
            Some(Ok(how)) => info!("{}: {how}", self.asking()),
            Some(Err(why)) => {
                warn!(
                    "{} falls back to off: {why}; counting is unaffected",
                    self.asking()
                );
                self.mode = PolicyMode::Off;
                self.checks_failed = true;
            }
            None => {}
        }
    }

    /// Takes note that the checks were detached, and every rule removed
    /// with them, because nothing asks for them any more.
    pub fn detached(&mut self) {
        info!(
            "policy off, and the policy file sets no namespace to audit or enforce: the checks are detached and every rule removed"
        );
        self.written = Rules::default();
        self.adopted.clear();
    }

    /// Takes up the rules a predecessor left in the kernel (`pinned`),
    /// for the cgroups `usage` knows live; the next [`Policy::sync`]
    /// drops the rest.
    pub fn adopt(&mut self, pinned: Rules, usage: &Usage) {
        let live = live_cgroups(usage);
        self.adopted = rules::rulings_of(&pinned);
        self.adopted.retain(|id, _| live.contains(id));
        if !self.adopted.is_empty() {
            info!(
                "policy: adopted the rules of {} container(s)",
                self.adopted.len()
            );
        }
        self.written = pinned;
    }

    /// Renews the rules' lease, and brings them in line with the
    /// classified cgroups that live and the policy file, in the modes in
    /// force, with the writes up to step `upto` (all of them:
    /// [`Step::Tighten`]). A write that fails leaves the rest for the
    /// next call. While a policy file has never been read good, the rules
    /// stay as a predecessor left them, and no other cgroup is ruled.
    pub fn sync(
        &mut self,
        probe: &mut Probe,
        (classified, table, usage): (&Classified, &DeviceTable, &Usage),
        upto: Step,
    ) -> Result<(), ProbeError> {
        if !self.wants_checks() {
            return Ok(());
        }
        probe.renew_lease(clock::boottime() + self.lease);
        if self.holding {
            return Ok(());
        }
        let live = live_cgroups(usage);
        self.allocated.retain(|id, _| live.contains(id));
        self.adopted.retain(|id, _| live.contains(id));
        for (id, devices) in classified {
            if live.contains(id) {
                self.allocated.insert(*id, devices.clone());
                self.adopted.remove(id);
            }
        }
        let target = rules::rules_for(&self.rulings(table, usage));
        for write in rules::writes(&self.written, &target, upto) {
            match write {
                Write::Grant(key, value) => {
                    probe.set_grant(key, value)?;
                    match value {
                        Some(value) => self.written.grants.insert(key, value),
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

    /// What the kernel should hold: a ruling for each classified
    /// container whose namespace's mode is not off, from its allocation
    /// and the file's rules naming it; adopted rulings as they were, in
    /// their namespace's mode.
    fn rulings(&self, table: &DeviceTable, usage: &Usage) -> Rulings {
        let nodes = rules::nodes_by_device(table);
        let open = table.open_to_all();
        let mut rulings = Rulings::new();
        for (&id, devices) in &self.allocated {
            // Classified means named: a cgroup without an owner is skipped.
            let Some(owner) = usage.owner(id) else {
                continue;
            };
            if let Some(mode) = self.mode_of(&owner.namespace) {
                let grants = rules::grants(devices, &open, &self.file.applied(owner), &nodes);
                rulings.insert(id, Ruling { mode, grants });
            }
        }
        for (&id, adopted) in &self.adopted {
            let namespace = usage.owner(id).map_or("", |owner| &owner.namespace);
            if let Some(mode) = self.mode_of(namespace) {
                let grants = adopted.grants.clone();
                rulings.insert(id, Ruling { mode, grants });
            }
        }
        rulings
    }

    /// Where the container in cgroup `id`, held at its creation since
    /// `since`, stands: ruled once its rule is written; unruled once it
    /// is known that no rule will come from what the runtime and kubelet
    /// say (the join classified it after `since`, or would have).
    pub fn standing(
        &self,
        id: u64,
        since: Instant,
        usage: &Usage,
        allocation: Option<&Allocation>,
    ) -> Standing {
        if let Some(&code) = self.written.modes.get(&id) {
            return Standing::Ruled(PolicyMode::of_code(code).as_str());
        }
        let unruled = |why: String| Standing::Unruled(why);
        if !self.wants_checks() {
            return unruled("the policy is off".into());
        }
        if self.holding {
            return unruled("the policy file has not been read good yet".into());
        }
        let Some(allocation) = allocation else {
            return unruled("the allocation join is off".into());
        };
        let Some(owner) = usage.attributor.owner(id) else {
            return Standing::Undecided;
        };
        if owner.is_outside_pods() {
            return unruled("the runtime names no container of a pod in its cgroup".into());
        }
        if self.mode_of(&owner.namespace).is_none() {
            return unruled(format!("namespace {} is off", owner.namespace));
        }
        if allocation.spoke_since(owner, since) {
            return unruled(format!(
                "kubelet does not describe {}/{} container {} fully",
                owner.namespace, owner.pod, owner.container
            ));
        }
        Standing::Undecided
    }

    /// The kernel's mode code for `namespace`: the file's, else the
    /// node's; `None` where it is off.
    fn mode_of(&self, namespace: &str) -> Option<u32> {
        self.file.mode_of(namespace).unwrap_or(self.mode).code()
    }

    /// The policy as a scrape shows it, with the kernel's `verdicts`, on
    /// the devices of `table`.
    pub fn view(
        &self,
        verdicts: Option<Verdicts>,
        usage: &Usage,
        table: &DeviceTable,
    ) -> PolicyView {
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
            file_valid: self.file_valid,
            ruled: self.written.modes.len(),
            containers: self.ruled_containers(usage, &table.open_to_all()),
            checked: table
                .claimed()
                .map(|(device, _)| Arc::from(device.name.as_str()))
                .collect(),
            refusals,
            lost,
            admissions: None,
        }
    }

    /// The containers the kernel's rules hold, as last written, with what
    /// each may use and why; cgroups the agent cannot name are left out.
    fn ruled_containers(&self, usage: &Usage, shared: &BTreeSet<Arc<str>>) -> Vec<RuledView> {
        let rulings = rules::rulings_of(&self.written);
        let mut containers: Vec<RuledView> = rulings
            .iter()
            .filter_map(|(id, ruling)| {
                let owner = usage.owner(*id)?.clone();
                let allocated = self.allocated.get(id);
                let mut grants: BTreeMap<Arc<str>, GrantView> = BTreeMap::new();
                for (&node, &value) in &ruling.grants {
                    let Some((device, vendor)) = usage.device(node) else {
                        continue;
                    };
                    let adopted = self.adopted.contains_key(id);
                    let because =
                        Because::of(value, &device, allocated.map(|a| &**a), shared, adopted);
                    grants.entry(device.clone()).or_insert(GrantView {
                        device,
                        vendor,
                        value,
                        because,
                    });
                }
                Some(RuledView {
                    owner,
                    mode: PolicyMode::of_code(ruling.mode),
                    grants: grants.into_values().collect(),
                })
            })
            .collect();
        containers.sort_by(|a, b| a.owner.cmp(&b.owner));
        containers
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

#[cfg(test)]
mod tests {
    use super::*;

    fn enforcing() -> Policy {
        let mut policy = Policy::new(PolicyMode::Enforce, Ok(()), Duration::from_secs(60));
        policy.file_path = Some("policy.yaml".into());
        policy
    }

    #[test]
    fn a_refused_file_leaves_the_rules_in_force_and_a_good_one_replaces_them() {
        let mut policy = enforcing();
        let first = PolicyFile::parse("namespaces: {ml: audit}").unwrap();
        policy.take_file(Ok(Some(first.clone())));
        assert_eq!(
            (policy.file_valid, policy.mode_of("ml")),
            (Some(true), Some(mode::AUDIT))
        );
        policy.take_file(Err("policy file policy.yaml: rules[0]: …".into()));
        assert_eq!(policy.file_valid, Some(false));
        assert_eq!(policy.file, first);
        policy.take_file(Ok(None));
        assert_eq!(policy.file_valid, Some(true));
        assert_eq!(policy.mode_of("ml"), Some(mode::ENFORCE));
    }

    #[test]
    fn a_file_refused_from_the_start_holds_the_rules_until_one_is_good() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "rules: [{}]").unwrap();
        let mut policy = enforcing();
        let followed = policy.follow_file(&path);
        assert!(followed.is_some_and(|(_, watch)| watch.is_some()));
        assert!(policy.holding);
        assert_eq!(policy.file_valid, Some(false));
        policy.take_file(Ok(None));
        assert!(!policy.holding);
        // A later bad file leaves the good rules in force, and holds
        // nothing.
        policy.take_file(Err("policy file policy.yaml: …".into()));
        assert!(!policy.holding);
    }

    #[test]
    fn a_namespace_off_in_the_file_is_ruled_by_nothing() {
        let mut policy = enforcing();
        policy.take_file(Ok(Some(
            PolicyFile::parse("namespaces: {dev: off}").unwrap(),
        )));
        assert_eq!(policy.mode_of("dev"), None);
        assert_eq!(policy.mode_of("prod"), Some(mode::ENFORCE));
    }

    #[test]
    fn a_file_that_sets_a_namespace_asks_for_the_checks_with_the_node_off() {
        let mut policy = Policy::new(PolicyMode::Off, Ok(()), Duration::from_secs(60));
        assert!(!policy.wants_checks());
        policy.take_file(Ok(Some(
            PolicyFile::parse("namespaces: {ml: enforce, dev: off}").unwrap(),
        )));
        assert!(policy.wants_checks());
        assert_eq!(policy.mode_of("ml"), Some(mode::ENFORCE));
        assert_eq!(policy.mode_of("dev"), None);
        assert_eq!(policy.mode_of("prod"), None);
        assert_eq!(
            policy.asking(),
            "policy off but for namespace(s) ml (policy file)"
        );
        // Checks that cannot be attached rule nothing, whatever is asked.
        policy.checks(Some(Err("no BPF LSM")));
        assert!(!policy.wants_checks());
        // Without BPF LSM the file is not even read.
        let mut without = Policy::new(
            PolicyMode::Off,
            Err("no bpf in lsm=".into()),
            Duration::from_secs(60),
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "namespaces: {ml: enforce}").unwrap();
        assert!(without.follow_file(&path).is_none());
        assert!(!without.wants_checks());
    }

    #[test]
    fn rule_codes_name_the_rules() {
        assert_eq!(rule_name(rule::ALLOCATED_ONLY), "allocated-only");
        assert_eq!(rule_name(rule::DENY_DEVICE), "deny-device");
        assert_eq!(rule_name(rule::DENY_KIND), "deny-kind");
    }
}
