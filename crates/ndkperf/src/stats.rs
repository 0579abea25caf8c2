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
    /// 99.9th percentile.
    pub p999: f64,
    /// Standard deviation (of the population of samples).
    pub stdev: f64,
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
        let mean_ns = total as f64 / sorted.len() as f64;
        let var = sorted
            .iter()
            .map(|&n| (n as f64 - mean_ns).powi(2))
            .sum::<f64>()
            / sorted.len() as f64;
        Summary {
            min: us(sorted[0]),
            avg: mean_ns * scale / 1000.0,
            p50: us(pick(0.50)),
            p99: us(pick(0.99)),
            p999: us(pick(0.999)),
            stdev: var.sqrt() * scale / 1000.0,
            max: us(sorted[sorted.len() - 1]),
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.ns.len()
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.ns.is_empty()
    }

    /// Adds every sample of `other`.
    pub fn extend(&mut self, other: &Samples) {
        self.ns.extend_from_slice(&other.ns);
    }

    /// A histogram with power-of-two bucket bounds in nanoseconds (after
    /// `scale`): `(upper bound in microseconds, count)` for each bucket
    /// from the one holding the smallest sample to the largest's.
    pub fn histogram(&self, scale: f64) -> Vec<(f64, u64)> {
        let mut counts = [0u64; 64];
        for &n in &self.ns {
            let v = (n as f64 * scale) as u64;
            // Bucket b holds [2^(b-1), 2^b) ns; 0 holds 0.
            counts[(64 - v.leading_zeros()) as usize] += 1;
        }
        let Some(first) = counts.iter().position(|&c| c > 0) else {
            return Vec::new();
        };
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(first);
        (first..=last)
            .map(|b| ((1u64 << b) as f64 / 1000.0, counts[b]))
            .collect()
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
        assert!(close(sum.p999, 100.0));
        // The population standard deviation of 1..=100: sqrt((100^2 - 1) / 12).
        assert!((sum.stdev - 28.866_070).abs() < 1e-5, "{}", sum.stdev);
        assert!(close(s.summary(0.5).p50, 25.0));
        assert_eq!(Samples::default().summary(1.0), Summary::default());
    }

    #[test]
    fn histogram_buckets_are_powers_of_two() {
        let mut s = Samples::default();
        for ns in [1000, 1500, 2047, 2048, 5000] {
            s.push(Duration::from_nanos(ns));
        }
        // 1000 < 1024; 1500 and 2047 < 2048; 2048 < 4096; 5000 < 8192.
        let h = s.histogram(1.0);
        assert_eq!(
            h,
            vec![(1.024, 1), (2.048, 2), (4.096, 1), (8.192, 1)],
            "{h:?}"
        );
        assert_eq!(h.iter().map(|b| b.1).sum::<u64>(), 5);
        assert!(Samples::default().histogram(1.0).is_empty());
    }
}
