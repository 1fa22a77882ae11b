//! `aggregate`: group-by with count, sum, mean, min, max, stddev and percentiles. Records
//! pass through unchanged; the table is handed to the sinks when the run ends.

use std::collections::HashMap;
use std::sync::Mutex;

use evalexpr::Value;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{Cell, row};
use crate::pipeline::{Step, TransformCheck};
use crate::stats::Accumulator;
use crate::table::Table;

use super::{Apply, At, Compiled, Declared};

#[derive(Debug, Deserialize, Serialize)]
pub struct Options {
    pub group_by: Vec<String>,
    /// Output column = "op(column)".
    pub metrics: IndexMap<String, String>,
}

/// The metrics parsed.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    pub group_by: Vec<String>,
    pub metrics: Vec<Metric>,
}

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        let metrics = format!(
            "Output column = \"op(column)\" with op among {}.",
            MetricOp::NAMES.join(", ")
        );
        json!({
            "required": ["group_by", "metrics"],
            "properties": {
                "group_by": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                "metrics": {
                    "type": "object",
                    "description": metrics,
                    "additionalProperties": { "type": "string" },
                    "minProperties": 1
                }
            }
        })
    }

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Plan> {
        for (g, column) in self.group_by.iter().enumerate() {
            check.group_column(&[Step::Key("group_by"), Step::Index(g)], column);
        }
        let mut columns = Vec::new();
        let mut metrics = Vec::new();
        for (name, spec) in &self.metrics {
            match parse_metric(spec) {
                Ok((op, column)) => {
                    columns.extend(column.iter().map(|c| (c.clone(), None)));
                    metrics.push(Metric {
                        name: name.clone(),
                        op,
                        column,
                    });
                }
                Err(message) => {
                    check
                        .error(&[Step::Key("metrics"), Step::Key(name)], message)
                        .hint = Some(format!(
                        "write \"op(column)\" with op among {}",
                        MetricOp::NAMES.join(", ")
                    ));
                }
            }
        }
        check.columns("metrics", &columns);
        Some(Plan {
            group_by: self.group_by.clone(),
            metrics,
        })
    }
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        let metrics: Vec<String> = (self.metrics.iter())
            .map(|m| {
                format!(
                    "{} = {:?}({})",
                    m.name,
                    m.op,
                    m.column.as_deref().unwrap_or("")
                )
            })
            .collect();
        format!("by {}: {}", self.group_by.join(", "), metrics.join(", "))
    }

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        Ok(Box::new(Aggregate::new(
            self.group_by.clone(),
            self.metrics.clone(),
        )))
    }
}

impl Apply for Aggregate {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        self.add(chunk, at.meta);
    }

    fn table(&self, name: &str) -> Option<Table> {
        Some(self.finish(name))
    }
}

/// One output column of an aggregate: `name = op(column)`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    pub name: String,
    pub op: MetricOp,
    /// `None` for `count()`.
    pub column: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MetricOp {
    Count,
    Sum,
    Mean,
    Min,
    Max,
    Stddev,
    P50,
    P90,
    P95,
    P99,
}

impl MetricOp {
    pub const NAMES: &[&str] = &[
        "count", "sum", "mean", "min", "max", "stddev", "p50", "p90", "p95", "p99",
    ];

    pub fn from_name(name: &str) -> Option<MetricOp> {
        use MetricOp::*;
        let ops = [Count, Sum, Mean, Min, Max, Stddev, P50, P90, P95, P99];
        MetricOp::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| ops[i])
    }
}

/// "p95(duration_ns)" → (P95, Some("duration_ns")); "count()" → (Count, None).
fn parse_metric(spec: &str) -> Result<(MetricOp, Option<String>), String> {
    let spec = spec.trim();
    let (op, rest) = spec
        .split_once('(')
        .ok_or_else(|| format!("`{spec}` is not a metric"))?;
    let column = rest
        .strip_suffix(')')
        .ok_or_else(|| format!("`{spec}` is missing `)`"))?
        .trim();
    let op = MetricOp::from_name(op.trim())
        .ok_or_else(|| format!("unknown aggregate `{}` in `{spec}`", op.trim()))?;
    match (op, column.is_empty()) {
        (MetricOp::Count, _) => Ok((op, (!column.is_empty()).then(|| column.to_owned()))),
        (_, true) => Err(format!("`{spec}` needs a column")),
        (_, false) => Ok((op, Some(column.to_owned()))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics() {
        assert_eq!(
            parse_metric("p95(duration_ns)"),
            Ok((MetricOp::P95, Some("duration_ns".into())))
        );
        assert_eq!(parse_metric("count()"), Ok((MetricOp::Count, None)));
        assert!(
            parse_metric("median(x)")
                .unwrap_err()
                .contains("unknown aggregate `median`")
        );
        assert!(
            parse_metric("sum()")
                .unwrap_err()
                .contains("needs a column")
        );
    }
}
