//! `rocflow diff`: two runs' summaries side by side, per kernel, API function and counter,
//! with the ratios a CI gate compares against.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use evalexpr::{ContextWithMutableVariables, HashMapContext, Value};

use crate::table::Table;

/// The sections compared, with the statistic that stands for a row's time (or value).
const SECTIONS: &[(&str, &str)] = &[
    ("kernels", "total_ns"),
    ("api", "total_ns"),
    ("memory_copies", "total_ns"),
    ("counters", "mean_value"),
];

/// One row of a section in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: Vec<String>,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

impl Change {
    /// B over A, where both runs have the row.
    pub fn ratio(&self) -> Option<f64> {
        match (self.a, self.b) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a),
            _ => None,
        }
    }

    fn delta(&self) -> f64 {
        self.b.unwrap_or(0.0) - self.a.unwrap_or(0.0)
    }
}

/// Two runs compared.
#[derive(Debug, Default)]
pub struct Diff {
    /// Section name → its key columns and rows, largest change first.
    pub sections: Vec<(String, String, Vec<String>, Vec<Change>)>,
    /// The figures `--fail-if` expressions use, by name.
    pub metrics: BTreeMap<&'static str, f64>,
}

/// Why a `--fail-if` predicate cannot be decided.
#[derive(Debug, thiserror::Error)]
pub enum FailIfError {
    #[error(transparent)]
    Parse(#[from] crate::expression::ExpressionError),
    /// Evaluating it failed: a name that is no metric, a value that is no boolean.
    #[error("{0} (the names it can use: {names})", names = metric_names())]
    Eval(#[source] evalexpr::EvalexprError),
    /// A metric could not be given to it.
    #[error(transparent)]
    Metric(evalexpr::EvalexprError),
}

/// The metrics' names, as a list in a sentence.
fn metric_names() -> String {
    let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
    names.join(", ")
}

/// Evaluates a `--fail-if` predicate over `metrics`, by name: two runs' (`rocflow diff`) or
/// two campaigns' (`rocflow campaign diff`, whose metrics its Python side computes).
pub fn fails<'a>(
    predicate: &str,
    metrics: impl IntoIterator<Item = (&'a str, f64)>,
) -> Result<bool, FailIfError> {
    let mut context = HashMapContext::new();
    for (name, value) in metrics {
        context
            .set_value(name.to_owned(), Value::Float(value))
            .map_err(FailIfError::Metric)?;
    }
    let tree = crate::expression::parse(predicate)?;
    tree.eval_boolean_with_context(&context)
        .map_err(FailIfError::Eval)
}

/// The names `--fail-if` knows, with what they mean.
pub const METRICS: &[(&str, &str)] = &[
    ("kernel_time_ratio", "total GPU kernel time, B over A"),
    ("api_time_ratio", "total API call time, B over A"),
    (
        "worst_kernel_ratio",
        "the largest per-kernel time ratio among kernels in both runs",
    ),
    (
        "worst_counter_ratio",
        "the largest per-kernel counter mean ratio",
    ),
    ("kernels_added", "kernels only in B"),
    ("kernels_removed", "kernels only in A"),
];

impl Diff {
    pub fn new(a: &[Table], b: &[Table]) -> Diff {
        let mut diff = Diff::default();
        for &(name, statistic) in SECTIONS {
            let (Some(ta), Some(tb)) = (find(a, name), find(b, name)) else {
                continue;
            };
            let keys = key_columns(ta);
            let (va, vb) = (values(ta, statistic), values(tb, statistic));
            let mut changes: Vec<Change> = va
                .keys()
                .chain(vb.keys())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|key| Change {
                    key: key.clone(),
                    a: va.get(key).copied(),
                    b: vb.get(key).copied(),
                })
                .collect();
            changes.sort_by(|x, y| y.delta().abs().total_cmp(&x.delta().abs()));
            let total = |v: &BTreeMap<Vec<String>, f64>| v.values().sum::<f64>();
            let worst = changes.iter().filter_map(Change::ratio).fold(0.0, f64::max);
            match name {
                "kernels" => {
                    diff.metrics
                        .insert("kernel_time_ratio", total(&vb) / total(&va).max(1.0));
                    diff.metrics.insert("worst_kernel_ratio", worst);
                    let only = |a: bool| {
                        changes
                            .iter()
                            .filter(|c| c.a.is_some() != a && c.b.is_some() == a)
                            .count() as f64
                    };
                    diff.metrics.insert("kernels_added", only(true));
                    diff.metrics.insert("kernels_removed", only(false));
                }
                "api" => {
                    diff.metrics
                        .insert("api_time_ratio", total(&vb) / total(&va).max(1.0));
                }
                "counters" => {
                    diff.metrics.insert("worst_counter_ratio", worst);
                }
                _ => {}
            }
            diff.sections
                .push((name.to_owned(), statistic.to_owned(), keys, changes));
        }
        diff
    }

    /// Evaluates a `--fail-if` predicate over the metrics.
    pub fn fails(&self, predicate: &str) -> Result<bool, FailIfError> {
        fails(
            predicate,
            self.metrics.iter().map(|(&name, &value)| (name, value)),
        )
    }

    /// A table per section for people, `top` rows each.
    pub fn text(&self, top: usize, markdown: bool) -> String {
        let mut out = String::new();
        for (name, statistic, keys, changes) in &self.sections {
            let header: Vec<String> = keys
                .iter()
                .cloned()
                .chain([
                    format!("A {statistic}"),
                    format!("B {statistic}"),
                    "delta".into(),
                    "ratio".into(),
                ])
                .collect();
            let rows: Vec<Vec<String>> = changes
                .iter()
                .take(top)
                .map(|c| {
                    let number =
                        |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"));
                    (c.key.iter())
                        .map(|k| crate::printable::name(k).into_owned())
                        .chain([
                            number(c.a),
                            number(c.b),
                            format!("{:+.0}", c.delta()),
                            match (c.a, c.b) {
                                (None, Some(_)) => "new".into(),
                                (Some(_), None) => "gone".into(),
                                _ => c.ratio().map_or_else(|| "-".into(), |r| format!("{r:.3}x")),
                            },
                        ])
                        .collect()
                })
                .collect();
            let _ = writeln!(out, "{}{name}", if markdown { "## " } else { "" });
            if markdown {
                let _ = writeln!(
                    out,
                    "\n| {} |\n|{}",
                    header.join(" | "),
                    " --- |".repeat(header.len())
                );
                for row in rows {
                    let _ = writeln!(out, "| {} |", row.join(" | ").replace('\n', " "));
                }
            } else {
                let widths: Vec<usize> = (0..header.len())
                    .map(|i| {
                        rows.iter()
                            .map(|r| r[i].chars().count())
                            .chain([header[i].len()])
                            .max()
                            .unwrap_or(0)
                            .min(60)
                    })
                    .collect();
                for row in std::iter::once(&header).chain(&rows) {
                    let cells: Vec<String> = row
                        .iter()
                        .zip(&widths)
                        .map(|(cell, &w)| {
                            let cell: String = cell.chars().take(w).collect();
                            format!("{cell:<w$}")
                        })
                        .collect();
                    let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
                }
            }
            out.push('\n');
        }
        for (name, value) in &self.metrics {
            let _ = writeln!(out, "{name} = {value:.4}");
        }
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let sections = self
            .sections
            .iter()
            .map(|(name, statistic, keys, changes)| {
                let rows: Vec<serde_json::Value> = changes
                    .iter()
                    .map(|c| {
                        let mut row: serde_json::Map<String, serde_json::Value> = keys
                            .iter()
                            .cloned()
                            .zip(c.key.iter().map(|k| k.clone().into()))
                            .collect();
                        row.insert("a".into(), c.a.into());
                        row.insert("b".into(), c.b.into());
                        row.insert("ratio".into(), c.ratio().into());
                        serde_json::Value::Object(row)
                    })
                    .collect();
                (
                    name.clone(),
                    serde_json::json!({ "statistic": statistic, "rows": rows }),
                )
            })
            .collect::<serde_json::Map<_, _>>();
        serde_json::json!({ "sections": sections, "metrics": self.metrics })
    }
}

fn find<'t>(tables: &'t [Table], name: &str) -> Option<&'t Table> {
    tables.iter().find(|t| t.name == name)
}

/// The key columns: the leading string columns.
fn key_columns(table: &Table) -> Vec<String> {
    let width = table.rows.first().map_or(0, |r| {
        r.iter()
            .take_while(|v| matches!(v, Value::String(_)))
            .count()
    });
    table.columns[..width].to_vec()
}

/// Each row's key and its `statistic`.
fn values(table: &Table, statistic: &str) -> BTreeMap<Vec<String>, f64> {
    let Some(column) = table.columns.iter().position(|c| c == statistic) else {
        return BTreeMap::new();
    };
    table
        .rows
        .iter()
        .map(|row| {
            let key = row
                .iter()
                .map_while(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            (key, crate::summary::number(&row[column]))
        })
        .collect()
}
