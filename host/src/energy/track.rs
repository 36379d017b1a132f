//! From successive readings of one device's sensor to the energy of each
//! interval between them: a counter's growth, across its restarts and
//! wraps, or power integrated over time.

use std::time::Duration;

/// One reading of a device's sensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A cumulative counter, in microjoules.
    Counter {
        /// Its value.
        microjoules: u64,
        /// The value it wraps at, if it may wrap (a 32-bit firmware
        /// counter); otherwise a step back is a restart from zero.
        wraps_at: Option<u64>,
    },
    /// Power, in microwatts.
    Power {
        /// Its value.
        microwatts: u64,
    },
}

/// The last reading of one device, to measure the next interval from.
#[derive(Debug, Clone, Default)]
pub struct Track {
    last: Option<(Sample, Duration)>,
}

impl Track {
    /// Takes a reading made at `at` (CLOCK_BOOTTIME); returns the energy
    /// in microjoules and the length of the interval since the last one,
    /// if there was a last one of the same kind. The first reading is
    /// only a baseline: what the device used before is not the pods'.
    pub fn take(&mut self, sample: Sample, at: Duration) -> Option<(u64, Duration)> {
        let last = self.last.replace((sample, at));
        let (before, then) = last?;
        let seconds = at.checked_sub(then)?;
        let microjoules = match (before, sample) {
            (
                Sample::Counter {
                    microjoules: old, ..
                },
                Sample::Counter {
                    microjoules: new,
                    wraps_at,
                },
            ) => grown(old, new, wraps_at),
            // The trapezoid between the two readings: for hwmon's average
            // power, as near as two points get.
            (Sample::Power { microwatts: old }, Sample::Power { microwatts: new }) => {
                let mean = (u128::from(old) + u128::from(new)) as f64 / 2.0;
                (mean * seconds.as_secs_f64()).round() as u64
            }
            _ => return None,
        };
        Some((microjoules, seconds))
    }
}

/// How much a counter grew from `old` to `new`: a step back is a wrap at
/// `wraps_at` where both lie below it, else a restart from zero (the
/// driver reloaded), whose new value is all it counted since.
fn grown(old: u64, new: u64, wraps_at: Option<u64>) -> u64 {
    match wraps_at {
        _ if new >= old => new - old,
        Some(modulus) if old < modulus && new < modulus => modulus - old + new,
        _ => new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn counter(microjoules: u64) -> Sample {
        Sample::Counter {
            microjoules,
            wraps_at: None,
        }
    }

    #[test]
    fn a_counter_counts_its_growth_after_a_baseline() {
        let mut track = Track::default();
        assert_eq!(track.take(counter(5_000_000), SECOND), None);
        assert_eq!(
            track.take(counter(7_500_000), 3 * SECOND),
            Some((2_500_000, 2 * SECOND))
        );
    }

    #[test]
    fn a_counter_that_restarts_lower_counts_from_zero() {
        // The driver reloaded: its counter began again at zero.
        let mut track = Track::default();
        track.take(counter(90_000_000), SECOND);
        assert_eq!(
            track.take(counter(4_000), 2 * SECOND),
            Some((4_000, SECOND))
        );
    }

    #[test]
    fn a_32_bit_counter_wraps() {
        let wraps_at = Some(65_536_000_000);
        let sample = |microjoules| Sample::Counter {
            microjoules,
            wraps_at,
        };
        let mut track = Track::default();
        track.take(sample(65_535_000_000), SECOND);
        assert_eq!(
            track.take(sample(2_000_000), 2 * SECOND),
            Some((3_000_000, SECOND))
        );
        // Past the wrap value, a step back is a restart.
        track.take(sample(70_000_000_000), 3 * SECOND);
        assert_eq!(track.take(sample(1_000), 4 * SECOND), Some((1_000, SECOND)));
    }

    #[test]
    fn power_is_integrated_between_readings() {
        let mut track = Track::default();
        let power = |microwatts| Sample::Power { microwatts };
        track.take(power(20_000_000), SECOND);
        // 20 W then 40 W over 2 s: 60 J by the trapezoid.
        assert_eq!(
            track.take(power(40_000_000), 3 * SECOND),
            Some((60_000_000, 2 * SECOND))
        );
    }
}
