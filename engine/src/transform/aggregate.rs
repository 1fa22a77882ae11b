//! `aggregate`: group-by with count, sum, mean, min, max, stddev and percentiles. Records
//! pass through unchanged; the table is handed to the sinks when the run ends.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::aggregate`]).

use std::collections::HashMap;
use std::sync::Mutex;

use evalexpr::Value;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{Cell, row};
use crate::stats::Accumulator;
use crate::table::Table;

use super::apply::{Apply, At};
use crate::plan::transform::aggregate::{Metric, MetricOp, Plan};

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(Aggregate::new(
        plan.group_by.clone(),
        plan.metrics.clone(),
    )))
}

impl Apply for Aggregate {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        self.add(chunk, at.meta);
    }

    fn table(&self, name: &str) -> Option<Table> {
        Some(self.finish(name))
    }
}

#[derive(Debug)]
struct Aggregate {
    group_by: Vec<String>,
    metrics: Vec<Metric>,
    groups: Mutex<HashMap<Vec<String>, Vec<Accumulator>>>,
}

impl Aggregate {
    fn new(group_by: Vec<String>, metrics: Vec<Metric>) -> Aggregate {
        Aggregate {
            group_by,
            metrics,
            groups: Mutex::new(HashMap::new()),
        }
    }

    /// Adds a chunk's records to their groups (chunks may come in any order).
    fn add(&self, chunk: &Chunk, meta: &StreamMeta) {
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
                        .map_or(String::new(), |e| text(&e.values[i])),
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
    fn finish(&self, name: &str) -> Table {
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
                            .map(|(m, a)| value(a, m.op)),
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

/// The value of one metric.
fn value(accumulator: &Accumulator, op: MetricOp) -> Value {
    let a = accumulator;
    match op {
        MetricOp::Count => Value::Int(a.count() as i64),
        MetricOp::Sum => Value::Float(a.sum()),
        MetricOp::Mean => Value::Float(a.mean()),
        MetricOp::Min => Value::Float(a.min()),
        MetricOp::Max => Value::Float(a.max()),
        MetricOp::Stddev => Value::Float(a.stddev()),
        MetricOp::P50 => Value::Float(a.quantile(0.50)),
        MetricOp::P90 => Value::Float(a.quantile(0.90)),
        MetricOp::P95 => Value::Float(a.quantile(0.95)),
        MetricOp::P99 => Value::Float(a.quantile(0.99)),
    }
}

/// An added column's value as a group key: strings as they are (their `Display` quotes
/// them), nothing as empty.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Empty => String::new(),
        other => other.to_string(),
    }
}
