//! Reading the agent's exposition in the VM tests: a series' labels and
//! value, and sums per pod.

use std::collections::BTreeMap;

/// A label's value in an exposition line (`source` is not the end of
/// `resource`).
pub fn label(line: &str, name: &str) -> String {
    let at = [format!("{{{name}=\""), format!(",{name}=\"")]
        .iter()
        .find_map(|key| Some(line.find(key.as_str())? + key.len()))
        .unwrap_or_else(|| panic!("no label {name} in {line}"));
    line[at..at + line[at..].find('"').unwrap()].to_owned()
}

/// A line's value.
pub fn value(line: &str) -> String {
    line.rsplit(' ').next().unwrap().to_owned()
}

/// The values of `family`'s series of namespace ml, summed per pod.
pub fn per_pod(exposition: &str, family: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in exposition
        .lines()
        .filter(|l| l.starts_with(family) && l.contains(r#"namespace="ml""#))
    {
        *calls.entry(label(line, "pod")).or_default() += value(line).parse::<u64>().unwrap();
    }
    calls
}

/// A counter's value; 0 if absent.
pub fn counter(exposition: &str, series: &str) -> u64 {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(series))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// Counted calls per pod of namespace ml.
pub fn ioctls(exposition: &str) -> BTreeMap<String, u64> {
    per_pod(exposition, "kubenpu_ioctl_total{")
}
