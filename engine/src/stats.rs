//! Running statistics: count, sum, mean, extremes, standard deviation and percentiles of a
//! stream of values, in constant memory, mergeable across chunks processed in parallel.

use std::collections::BTreeMap;

/// Statistics of the values added so far.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    /// Sum of squared deviations from the mean (Welford), for the standard deviation.
    m2: f64,
    histogram: Histogram,
}

impl Accumulator {
    pub fn add(&mut self, value: f64) {
        if self.count == 0 {
            self.min = value;
            self.max = value;
        }
        let mean_before = self.mean();
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.m2 += (value - mean_before) * (value - self.mean());
        self.histogram.add(value);
    }

    pub fn merge(&mut self, other: &Accumulator) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let (n1, n2) = (self.count as f64, other.count as f64);
        let delta = other.mean() - self.mean();
        self.m2 += other.m2 + delta * delta * n1 * n2 / (n1 + n2);
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.histogram.merge(&other.histogram);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    pub fn min(&self) -> f64 {
        self.min
    }

    pub fn max(&self) -> f64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// The sample standard deviation (n - 1 in the denominator).
    pub fn stddev(&self) -> f64 {
        if self.count > 1 {
            (self.m2 / (self.count - 1) as f64).sqrt()
        } else {
            0.0
        }
    }

    /// The value below which a fraction `q` of the values lie (nearest rank), within 1%.
    pub fn quantile(&self, q: f64) -> f64 {
        self.histogram.quantile(q, self.min, self.max)
    }
}

/// A log-bucketed histogram: percentiles within 1% of the true value in constant memory,
/// however many values arrive.
#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Bucket index (log base GROWTH of the value; `i32::MIN` for values ≤ 0) → count.
    buckets: BTreeMap<i32, u64>,
}

const GROWTH: f64 = 1.01;

impl Histogram {
    fn bucket(value: f64) -> i32 {
        if value <= 0.0 {
            i32::MIN
        } else {
            (value.ln() / GROWTH.ln()).floor() as i32
        }
    }

    fn add(&mut self, value: f64) {
        *self.buckets.entry(Self::bucket(value)).or_default() += 1;
    }

    fn merge(&mut self, other: &Histogram) {
        for (&bucket, &count) in &other.buckets {
            *self.buckets.entry(bucket).or_default() += count;
        }
    }

    /// The value below which a fraction `q` of the values lie (nearest rank), clamped to
    /// the exact minimum and maximum.
    fn quantile(&self, q: f64, min: f64, max: f64) -> f64 {
        let total: u64 = self.buckets.values().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (&bucket, &count) in &self.buckets {
            seen += count;
            if seen >= rank {
                if bucket == i32::MIN {
                    return min.min(0.0);
                }
                // The middle of the bucket, in log space.
                let value = GROWTH.powf(f64::from(bucket) + 0.5);
                // Not `clamp`, which panics on a NaN bound: values come from spools and
                // databases, where a NaN can be.
                return value.max(min).min(max);
            }
        }
        max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_direct_computation() {
        let values: Vec<f64> = (1..=1000).map(|i| (i * i % 997) as f64 + 1.0).collect();
        let mut all = Accumulator::default();
        let (mut a, mut b) = (Accumulator::default(), Accumulator::default());
        for (i, &v) in values.iter().enumerate() {
            all.add(v);
            if i % 3 == 0 { a.add(v) } else { b.add(v) }
        }
        a.merge(&b);
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let stddev = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for acc in [&all, &a] {
            assert_eq!(acc.count(), 1000);
            assert!((acc.mean() - mean).abs() < 1e-9);
            assert!(
                (acc.stddev() - stddev).abs() < 1e-6,
                "{} vs {stddev}",
                acc.stddev()
            );
            assert_eq!(acc.min(), sorted[0]);
            assert_eq!(acc.max(), sorted[999]);
            for q in [0.50, 0.95, 0.99] {
                let exact = sorted[(q * n).ceil() as usize - 1];
                let estimate = acc.quantile(q);
                assert!(
                    (estimate - exact).abs() <= exact * 0.01,
                    "p{q}: {estimate} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn nan_values_give_quantiles_not_a_panic() {
        for values in [&[f64::NAN][..], &[1.0, f64::NAN, 3.0]] {
            let mut acc = Accumulator::default();
            values.iter().for_each(|&v| acc.add(v));
            for q in [0.50, 0.95, 0.99] {
                let _ = acc.quantile(q);
            }
            assert_eq!(acc.count(), values.len() as u64);
        }
    }
}
