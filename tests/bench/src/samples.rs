//! Repeated measurements of one thing, summarised as median and range.

use std::fmt;

/// The values of one measurement over the rounds.
#[derive(Debug, Default, Clone)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// Adds one round's value.
    pub fn push(&mut self, value: f64) {
        self.0.push(value);
    }

    /// Whether no round has been added.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every value times `factor` (a change of unit).
    pub fn scaled(self, factor: f64) -> Self {
        Self(self.0.into_iter().map(|v| v * factor).collect())
    }

    /// The median (the mean of the middle two for an even count).
    pub fn median(&self) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        }
    }

    /// The smallest and the largest value.
    pub fn range(&self) -> (f64, f64) {
        let min = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, max)
    }
}

/// `median (min–max)`, to the precision asked (`{:.1}`), else to whole
/// units.
impl fmt::Display for Samples {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (min, max) = self.range();
        let p = f.precision().unwrap_or(0);
        write!(f, "{:.p$} ({:.p$}–{:.p$})", self.median(), min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::Samples;

    #[test]
    fn median_and_range() {
        let mut s = Samples::default();
        for v in [30.0, 10.0, 20.0, 40.0] {
            s.push(v);
        }
        assert_eq!(s.median(), 25.0);
        assert_eq!(s.to_string(), "25 (10–40)");
        assert_eq!(format!("{s:.1}"), "25.0 (10.0–40.0)");
        s.push(50.0);
        assert_eq!(s.median(), 30.0);
    }
}
