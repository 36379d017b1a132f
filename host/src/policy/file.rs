//! The policy file (`--policy-file`): per-namespace modes over the
//! node's `--policy`, and rules that allow a container more than its
//! allocation, or deny it devices or kinds of calls. YAML (or JSON):
//!
//! ```yaml
//! namespaces:            # the mode per namespace: off, audit or enforce
//!   research: audit
//! rules:
//!   - namespace: ml      # a name, a prefix ending in '*', or '*' (the default)
//!     pod: "profiler-*"
//!     container: "*"
//!     allow: ["0000:03:00.0"]   # devices besides the allocation
//!     deny: ["faux/vgem"]       # whole devices, allocated or not
//!     denyKinds: [submit]       # submit, alloc or wait, on every device
//! ```
//!
//! Small on purpose: a mistake is refused in one line that names it, and
//! the rules in force before it stay.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    path::Path,
};

use kubenpu_sdk::Kind;
use serde::Deserialize;

use super::PolicyMode;
use crate::attribution::Owner;

/// A policy file's rules, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFile {
    /// The mode of each namespace named, over the node's.
    pub namespaces: BTreeMap<String, PolicyMode>,
    /// The rules, in the file's order.
    pub rules: Vec<Rule>,
}

/// One rule: whom it names, and what it allows and denies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The namespaces it names.
    pub namespace: Pattern,
    /// The pods it names, in those namespaces.
    pub pod: Pattern,
    /// The containers it names, in those pods.
    pub container: Pattern,
    /// Devices granted besides the allocation, by the agent's device name.
    pub allow: BTreeSet<String>,
    /// Devices taken away whole, allocated or allowed.
    pub deny: BTreeSet<String>,
    /// Kinds of calls refused on every device.
    pub deny_kinds: BTreeSet<Kind>,
}

/// What the rules naming one container say, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied<'a> {
    /// Devices they allow besides the allocation.
    pub allow: BTreeSet<&'a str>,
    /// Devices they deny whole.
    pub deny: BTreeSet<&'a str>,
    /// Kinds they deny on every device.
    pub deny_kinds: BTreeSet<Kind>,
}

/// A name in a rule: exact, a prefix (`abc*`), or anything (`*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// `*`: every name.
    Any,
    /// `abc*`: names that begin so.
    Prefix(String),
    /// `abc`: that name.
    Exact(String),
}

impl Pattern {
    fn parse(text: &str) -> Result<Self, String> {
        match text.strip_suffix('*') {
            _ if text.is_empty() => Err("is empty (use \"*\" for any)".into()),
            Some("") => Ok(Pattern::Any),
            Some(prefix) if !prefix.contains('*') => Ok(Pattern::Prefix(prefix.into())),
            None if !text.contains('*') => Ok(Pattern::Exact(text.into())),
            _ => Err(format!("{text:?}: '*' may only end a name")),
        }
    }

    /// Whether `name` is one this pattern names.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
            Pattern::Exact(exact) => name == exact,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Any => f.write_str("*"),
            Pattern::Prefix(prefix) => write!(f, "{prefix}*"),
            Pattern::Exact(exact) => f.write_str(exact),
        }
    }
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default)]
    namespaces: BTreeMap<String, PolicyMode>,
    #[serde(default)]
    rules: Vec<WrittenRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WrittenRule {
    #[serde(default = "any")]
    namespace: String,
    #[serde(default = "any")]
    pod: String,
    #[serde(default = "any")]
    container: String,
    #[serde(default)]
    allow: BTreeSet<String>,
    #[serde(default)]
    deny: BTreeSet<String>,
    #[serde(default)]
    deny_kinds: Vec<String>,
}

fn any() -> String {
    "*".into()
}

impl PolicyFile {
    /// Reads and checks the file at `path`: `Ok(None)` if there is none
    /// (no rules), else the rules or the one line that says what is wrong.
    pub fn read(path: &Path) -> Result<Option<Self>, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text)
                .map(Some)
                .map_err(|e| format!("policy file {}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read policy file {}: {e}", path.display())),
        }
    }

    /// Checks the text of a policy file.
    pub fn parse(text: &str) -> Result<Self, String> {
        // An empty file (a ConfigMap key left blank) holds no rules.
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        // One line, whatever the file quotes back into the message.
        let written: Written = serde_norway::from_str(text)
            .map_err(|e| e.to_string().replace('\n', "\\n").replace('\r', "\\r"))?;
        if let Some(namespace) = written
            .namespaces
            .keys()
            .find(|n| n.is_empty() || n.contains('*'))
        {
            return Err(format!(
                "namespaces: {namespace:?}: a mode names one namespace (patterns are for rules)"
            ));
        }
        let rules = written
            .rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| Rule::check(rule).map_err(|e| format!("rules[{i}]: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            namespaces: written.namespaces,
            rules,
        })
    }

    /// What the rules naming `owner` say. Processes outside pods are
    /// named by none.
    pub fn applied(&self, owner: &Owner) -> Applied<'_> {
        let mut applied = Applied::default();
        if owner.is_outside_pods() {
            return applied;
        }
        for rule in self.rules.iter().filter(|rule| rule.names(owner)) {
            applied.allow.extend(rule.allow.iter().map(String::as_str));
            applied.deny.extend(rule.deny.iter().map(String::as_str));
            applied.deny_kinds.extend(rule.deny_kinds.iter().copied());
        }
        applied
    }

    /// The mode the file gives `namespace`, if it names it.
    pub fn mode_of(&self, namespace: &str) -> Option<PolicyMode> {
        self.namespaces.get(namespace).copied()
    }

    /// Whether it sets a namespace to audit or enforce, which needs the
    /// checks whatever the node's mode.
    pub fn asks_for_checks(&self) -> bool {
        self.namespaces
            .values()
            .any(|mode| *mode != PolicyMode::Off)
    }

    /// The namespaces it sets to audit or enforce.
    pub fn checked_namespaces(&self) -> Vec<&str> {
        self.namespaces
            .iter()
            .filter(|(_, mode)| **mode != PolicyMode::Off)
            .map(|(namespace, _)| namespace.as_str())
            .collect()
    }
}

impl Rule {
    fn check(written: WrittenRule) -> Result<Self, String> {
        let pattern =
            |field: &str, text: &str| Pattern::parse(text).map_err(|e| format!("{field} {e}"));
        let deny_kinds = written
            .deny_kinds
            .iter()
            .map(|kind| match kind.as_str() {
                "submit" => Ok(Kind::Submit),
                "alloc" => Ok(Kind::Alloc),
                "wait" => Ok(Kind::Wait),
                _ => Err(format!(
                    "denyKinds: unknown kind {kind:?} (submit, alloc or wait)"
                )),
            })
            .collect::<Result<BTreeSet<_>, _>>()?;
        if let Some(device) = written
            .allow
            .iter()
            .chain(&written.deny)
            .find(|d| d.is_empty())
        {
            return Err(format!("a device name is empty ({device:?})"));
        }
        if let Some(both) = written.allow.intersection(&written.deny).next() {
            return Err(format!("allows and denies {both:?}"));
        }
        if written.allow.is_empty() && written.deny.is_empty() && deny_kinds.is_empty() {
            return Err(
                "neither allows nor denies anything (give allow, deny or denyKinds)".into(),
            );
        }
        Ok(Rule {
            namespace: pattern("namespace", &written.namespace)?,
            pod: pattern("pod", &written.pod)?,
            container: pattern("container", &written.container)?,
            allow: written.allow,
            deny: written.deny,
            deny_kinds,
        })
    }

    /// Whether this rule names `owner`'s container.
    pub fn names(&self, owner: &Owner) -> bool {
        self.namespace.matches(&owner.namespace)
            && self.pod.matches(&owner.pod)
            && self.container.matches(&owner.container)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(namespace: &str, pod: &str, container: &str) -> Owner {
        Owner {
            namespace: namespace.into(),
            pod: pod.into(),
            container: container.into(),
        }
    }

    #[test]
    fn a_file_gives_modes_per_namespace_and_rules_by_name_prefix_or_any() {
        let file = PolicyFile::parse(
            r#"
namespaces:
  research: audit
  kube-system: off
rules:
  - namespace: ml
    pod: "profiler-*"
    denyKinds: [submit]
  - pod: trainer
    container: main
    allow: ["0000:03:00.0"]
    deny: [faux/vgem]
"#,
        )
        .unwrap();
        assert_eq!(file.mode_of("research"), Some(PolicyMode::Audit));
        assert_eq!(file.mode_of("kube-system"), Some(PolicyMode::Off));
        assert_eq!(file.mode_of("ml"), None);
        let profiler = file.applied(&owner("ml", "profiler-7", "side"));
        assert_eq!(profiler.deny_kinds, BTreeSet::from([Kind::Submit]));
        assert!(profiler.allow.is_empty() && profiler.deny.is_empty());
        assert_eq!(
            file.applied(&owner("ml2", "profiler-7", "side")),
            Applied::default()
        );
        let trainer = file.applied(&owner("any", "trainer", "main"));
        assert_eq!(trainer.allow, BTreeSet::from(["0000:03:00.0"]));
        assert_eq!(trainer.deny, BTreeSet::from(["faux/vgem"]));
        assert_eq!(
            file.applied(&owner("any", "trainer", "sidecar")),
            Applied::default()
        );
        // Processes outside pods are named by no rule, even `*`.
        let everyone = PolicyFile::parse("rules: [{denyKinds: [wait]}]").unwrap();
        assert_eq!(everyone.applied(&owner("", "", "")), Applied::default());
        assert_eq!(
            everyone.applied(&owner("a", "b", "c")).deny_kinds,
            BTreeSet::from([Kind::Wait])
        );
    }

    #[test]
    fn several_rules_naming_a_container_add_up() {
        let file = PolicyFile::parse(
            "rules:\n- {namespace: ml, allow: [a]}\n- {pod: 'p*', deny: [b], denyKinds: [alloc]}\n- {container: c, denyKinds: [wait]}",
        )
        .unwrap();
        let applied = file.applied(&owner("ml", "p1", "c"));
        assert_eq!(applied.allow, BTreeSet::from(["a"]));
        assert_eq!(applied.deny, BTreeSet::from(["b"]));
        assert_eq!(
            applied.deny_kinds,
            BTreeSet::from([Kind::Alloc, Kind::Wait])
        );
    }

    #[test]
    fn an_empty_file_holds_no_rules() {
        assert_eq!(PolicyFile::parse(" \n").unwrap(), PolicyFile::default());
        assert_eq!(PolicyFile::parse("{}").unwrap(), PolicyFile::default());
    }

    #[test]
    fn each_mistake_is_one_line_that_names_it() {
        let cases = [
            (
                "rules: [{}]",
                "rules[0]: neither allows nor denies anything",
            ),
            (
                "rules: [{pod: 'a*b', deny: [x]}]",
                "rules[0]: pod \"a*b\": '*' may only end a name",
            ),
            ("rules: [{pod: '', deny: [x]}]", "rules[0]: pod is empty"),
            (
                "rules: [{denyKinds: [read]}]",
                "rules[0]: denyKinds: unknown kind \"read\" (submit, alloc or wait)",
            ),
            ("rules: [{deny: ['']}]", "rules[0]: a device name is empty"),
            (
                "rules: [{allow: [x], deny: [x]}]",
                "rules[0]: allows and denies \"x\"",
            ),
            ("namespaces: {ml: block}", "unknown variant `block`"),
            ("rules: [{deny: [x], pods: y}]", "unknown field `pods`"),
            ("rule: []", "unknown field `rule`"),
            ("rules: [", "did not find expected node content at line 2"),
            (
                "namespaces: {'team-*': off}",
                "namespaces: \"team-*\": a mode names one namespace",
            ),
            ("rules: [{\"a\\nb\": 1}]", "unknown field `a\\nb`"),
        ];
        for (text, expected) in cases {
            let error = PolicyFile::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
            assert!(!error.contains('\n'), "{text}: {error}");
        }
    }

    #[test]
    fn a_name_ending_in_a_multibyte_character_is_a_name() {
        let pattern = Pattern::parse("pödé").unwrap();
        assert!(pattern.matches("pödé") && !pattern.matches("pöd"));
        let prefix = Pattern::parse("pö*").unwrap();
        assert!(prefix.matches("pödé") && !prefix.matches("pa"));
        assert_eq!(prefix.to_string(), "pö*");
    }

    #[test]
    fn a_missing_file_holds_no_rules_and_an_unreadable_one_says_why() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(PolicyFile::read(&dir.path().join("policy.yaml")), Ok(None));
        let error = PolicyFile::read(dir.path()).unwrap_err();
        assert!(error.starts_with("cannot read policy file"), "{error}");
        std::fs::write(dir.path().join("bad.yaml"), "rules: [{}]").unwrap();
        let error = PolicyFile::read(&dir.path().join("bad.yaml")).unwrap_err();
        assert!(error.contains("bad.yaml: rules[0]"), "{error}");
    }
}
