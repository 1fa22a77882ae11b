//! `aggregate`: group-by with count, sum, mean, min, max, stddev and percentiles. Records
//! pass through unchanged; the table is handed to the sinks when the run ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use evalexpr::Value;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{Cell, row};
use crate::plan::{Metric, MetricOp};

/// A finished aggregate: named columns and rows of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

#[derive(Debug)]
pub struct Aggregate {
    group_by: Vec<String>,
    metrics: Vec<Metric>,
    groups: Mutex<HashMap<Vec<String>, Vec<Accumulator>>>,
}

impl Aggregate {
    pub fn new(group_by: Vec<String>, metrics: Vec<Metric>) -> Aggregate {
        Aggregate {
            group_by,
            metrics,
            groups: Mutex::new(HashMap::new()),
        }
    }

    /// Adds a chunk's records to their groups (chunks may come in any order).
    pub fn add(&self, chunk: &Chunk, meta: &StreamMeta) {
        // Accumulate locally, then merge under the lock once per chunk.
        let mut local: HashMap<Vec<String>, Vec<Accumulator>> = HashMap::new();
        for i in 0..chunk.len() {
            let record = row(&chunk.batch, i);
            let key: Vec<String> = self
                .group_by
                .iter()
                .map(|column| match record.cell(column, meta) {
                    Some(Cell::Str(s)) => s.to_owned(),
                    Some(Cell::Int(v)) => v.to_string(),
                    Some(Cell::Float(v)) => v.to_string(),
                    None => chunk
                        .extra(column)
                        .map_or(String::new(), |e| e.values[i].to_string()),
                })
                .collect();
            let accumulators = local
                .entry(key)
                .or_insert_with(|| vec![Accumulator::default(); self.metrics.len()]);
            for (metric, accumulator) in self.metrics.iter().zip(accumulators) {
                let value = match &metric.column {
                    None => 0.0,
                    Some(column) => match record.cell(column, meta) {
                        Some(Cell::Int(v)) => v as f64,
                        Some(Cell::Float(v)) => v,
                        _ => match chunk.extra(column).map(|e| &e.values[i]) {
                            Some(Value::Int(v)) => *v as f64,
                            Some(Value::Float(v)) => *v,
                            _ => continue,
                        },
                    },
                };
                accumulator.add(value);
            }
        }
        let mut groups = self
            .groups
            .lock()
            .expect("no panics while holding the lock");
        for (key, accumulators) in local {
            match groups.get_mut(&key) {
                Some(existing) => existing
                    .iter_mut()
                    .zip(&accumulators)
                    .for_each(|(a, b)| a.merge(b)),
                None => {
                    groups.insert(key, accumulators);
                }
            }
        }
    }

    /// The table, groups sorted by key.
    pub fn finish(&self, name: &str) -> Table {
        let groups = self
            .groups
            .lock()
            .expect("no panics while holding the lock");
        let mut keys: Vec<&Vec<String>> = groups.keys().collect();
        keys.sort();
        let rows = keys
            .into_iter()
            .map(|key| {
                let accumulators = &groups[key];
                key.iter()
                    .map(|k| Value::String(k.clone()))
                    .chain(
                        self.metrics
                            .iter()
                            .zip(accumulators)
                            .map(|(m, a)| a.value(m.op)),
                    )
                    .collect()
            })
            .collect();
        Table {
            name: name.to_owned(),
            columns: self
                .group_by
                .iter()
                .cloned()
                .chain(self.metrics.iter().map(|m| m.name.clone()))
                .collect(),
            rows,
        }
    }
}

/// Running statistics of one metric of one group, mergeable across chunks.
#[derive(Debug, Clone, Default)]
struct Accumulator {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    /// Sum of squared deviations from the mean (Welford), for the standard deviation.
    m2: f64,
    histogram: Histogram,
}

impl Accumulator {
    fn add(&mut self, value: f64) {
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

    fn merge(&mut self, other: &Accumulator) {
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

    fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    fn value(&self, op: MetricOp) -> Value {
        match op {
            MetricOp::Count => Value::Int(self.count as i64),
            MetricOp::Sum => Value::Float(self.sum),
            MetricOp::Mean => Value::Float(self.mean()),
            MetricOp::Min => Value::Float(self.min),
            MetricOp::Max => Value::Float(self.max),
            MetricOp::Stddev => Value::Float(if self.count > 1 {
                (self.m2 / (self.count - 1) as f64).sqrt()
            } else {
                0.0
            }),
            MetricOp::P50 => Value::Float(self.histogram.quantile(0.50, self.min, self.max)),
            MetricOp::P90 => Value::Float(self.histogram.quantile(0.90, self.min, self.max)),
            MetricOp::P95 => Value::Float(self.histogram.quantile(0.95, self.min, self.max)),
            MetricOp::P99 => Value::Float(self.histogram.quantile(0.99, self.min, self.max)),
        }
    }
}

/// A log-bucketed histogram: percentiles within 1% of the true value in constant memory
/// per group, however many records arrive.
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
                return value.clamp(min, max);
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
            assert_eq!(acc.value(MetricOp::Count), Value::Int(1000));
            assert!((acc.mean() - mean).abs() < 1e-9);
            let Value::Float(s) = acc.value(MetricOp::Stddev) else {
                panic!()
            };
            assert!((s - stddev).abs() < 1e-6, "{s} vs {stddev}");
            assert_eq!(acc.value(MetricOp::Min), Value::Float(sorted[0]));
            assert_eq!(acc.value(MetricOp::Max), Value::Float(sorted[999]));
            for (op, q) in [
                (MetricOp::P50, 0.50),
                (MetricOp::P95, 0.95),
                (MetricOp::P99, 0.99),
            ] {
                let exact = sorted[(q * n).ceil() as usize - 1];
                let Value::Float(estimate) = acc.value(op) else {
                    panic!()
                };
                assert!(
                    (estimate - exact).abs() <= exact * 0.01,
                    "{op:?}: {estimate} vs {exact}"
                );
            }
        }
    }
}
