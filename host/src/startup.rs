//! Where the agent's start went: the ready line lists its parts with their
//! wall time, so a slow start on a node (a large kernel BTF, a slow
//! verifier, many plugins) shows its cause without a profiler.

use std::{
    fmt,
    time::{Duration, Instant},
};

/// Named parts of the start, in order, each with its wall time.
#[derive(Debug, Default, Clone)]
pub struct Phases(Vec<(&'static str, Duration)>);

impl Phases {
    /// Runs `part`, timed as `name`.
    pub fn time<T>(&mut self, name: &'static str, part: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = part();
        self.0.push((name, start.elapsed()));
        out
    }

    /// Appends `other`'s parts, in their order.
    pub fn append(&mut self, other: &Phases) {
        self.0.extend_from_slice(&other.0);
    }

    /// The parts' time together: what a start took beyond it went to
    /// steps not timed apart.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|(_, took)| *took).sum()
    }
}

/// `plugins 0.41 s, kernel BTF 0.30 s, ...`
impl fmt::Display for Phases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, took)) in self.0.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{name} {:.2} s", took.as_secs_f64())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_listed_in_order_with_their_time() {
        let mut phases = Phases::default();
        assert_eq!(phases.time("plugins", || 7), 7);
        let mut probe = Phases::default();
        probe.time("kernel BTF", || ());
        phases.append(&probe);
        let line = phases.to_string();
        assert!(line.starts_with("plugins 0.0"), "{line}");
        assert!(line.contains(", kernel BTF 0.0"), "{line}");
        assert!(line.ends_with(" s"), "{line}");
        assert!(phases.total() < Duration::from_secs(1));
    }
}
