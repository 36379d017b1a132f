//! One counter as the agent reads it: what both ways of reading the
//! counters map (its iterator, or `bpf(2)` copies) hand back.

use kubenpu_ebpf::{CountKey, CountValue};

/// One counter: calls by one cgroup, on one device node, of one ioctl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Who, where, what.
    pub key: CountKey,
    /// How many calls (exactly), how many failed, their time and bytes.
    pub value: CountValue,
}
