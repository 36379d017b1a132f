//! Errors the agent's loop meets after start-up. None of them ends the
//! agent: a DaemonSet would turn that into CrashLoopBackOff and stop
//! counting everything else. Each is counted per stage for
//! `kubenpu_agent_errors_total`, logged once (again only when it changes
//! or comes back after a success), and the stage is retried on its next
//! tick.

use std::collections::{BTreeMap, HashMap};

/// Errors per stage, and the last one logged.
#[derive(Debug, Default)]
pub struct Faults {
    counts: BTreeMap<&'static str, u64>,
    logged: HashMap<&'static str, String>,
}

impl Faults {
    /// Takes the outcome of one run of `stage`; returns the value on
    /// success. A failure is counted, and logged through `log` unless it
    /// is the one logged last for the stage.
    pub fn check<T, E: std::fmt::Display>(
        &mut self,
        stage: &'static str,
        outcome: Result<T, E>,
        log: impl FnOnce(String),
    ) -> Option<T> {
        match outcome {
            Ok(value) => {
                self.logged.remove(stage);
                Some(value)
            }
            Err(e) => {
                *self.counts.entry(stage).or_default() += 1;
                let text = format!("{e:#}");
                if self.logged.get(stage) != Some(&text) {
                    log(format!("{stage}: {text} (counting goes on; retried)"));
                    self.logged.insert(stage, text);
                }
                None
            }
        }
    }

    /// Errors so far, per stage.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.counts.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::Faults;

    #[test]
    fn a_repeated_error_is_counted_every_time_and_logged_once() {
        let mut faults = Faults::default();
        let mut lines = Vec::new();
        for _ in 0..3 {
            let got: Option<()> = faults.check("sweep", Err("map gone"), |l| lines.push(l));
            assert_eq!(got, None);
        }
        assert_eq!(faults.counts()["sweep"], 3);
        assert_eq!(lines, ["sweep: map gone (counting goes on; retried)"]);

        // A success, then the same error: logged again, as it came back.
        assert_eq!(
            faults.check("sweep", Ok::<_, &str>(7), |l| lines.push(l)),
            Some(7)
        );
        faults.check("sweep", Err::<(), _>("map gone"), |l| lines.push(l));
        // Another stage's errors are its own.
        faults.check("drain", Err::<(), _>("ring gone"), |l| lines.push(l));
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(faults.counts()["sweep"], 4);
        assert_eq!(faults.counts()["drain"], 1);
    }
}
