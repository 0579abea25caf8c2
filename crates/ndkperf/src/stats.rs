//! Latency samples and their summary (min, average, percentiles, max).

use std::time::Duration;

/// Per-operation latencies in nanoseconds.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    ns: Vec<u64>,
}

/// A summary of [`Samples`]; every field is in microseconds.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Smallest sample.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl Samples {
    /// Room for `n` samples.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            ns: Vec::with_capacity(n),
        }
    }

    /// Adds one sample.
    pub fn push(&mut self, d: Duration) {
        self.ns
            .push(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Min/avg/p50/p99/max in microseconds; all zero without samples.
    /// `scale` multiplies every sample (0.5 turns round trips into one-way
    /// latencies).
    pub fn summary(&self, scale: f64) -> Summary {
        if self.ns.is_empty() {
            return Summary::default();
        }
        let mut sorted = self.ns.clone();
        sorted.sort_unstable();
        let us = |ns: u64| ns as f64 * scale / 1000.0;
        let pick = |q: f64| {
            // Nearest-rank percentile.
            let rank = (q * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        let total: u128 = sorted.iter().map(|&n| u128::from(n)).sum();
        Summary {
            min: us(sorted[0]),
            avg: total as f64 / sorted.len() as f64 * scale / 1000.0,
            p50: us(pick(0.50)),
            p99: us(pick(0.99)),
            max: us(sorted[sorted.len() - 1]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut s = Samples::default();
        for i in 1..=100 {
            s.push(Duration::from_micros(i));
        }
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let sum = s.summary(1.0);
        assert!(close(sum.min, 1.0));
        assert!(close(sum.p50, 50.0));
        assert!(close(sum.p99, 99.0));
        assert!(close(sum.max, 100.0));
        assert!(close(sum.avg, 50.5));
        assert!(close(s.summary(0.5).p50, 25.0));
        assert_eq!(Samples::default().summary(1.0), Summary::default());
    }
}
