//! `aggregate` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `aggregate` module.


use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::diag::Step;

use super::kind::{Check, Compiled, Declared};

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

    fn compile(&self, check: &mut impl Check) -> Option<Plan> {
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
