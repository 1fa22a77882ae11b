//! A summary's tables as files (CSV, Markdown, JSON) and as the short table printed at the
//! end of a run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalexpr::Value;

use crate::transform::Table;

/// A file format of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Md,
    Json,
}

impl Format {
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "csv" => Some(Format::Csv),
            "md" => Some(Format::Md),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Writes the tables into `dir` in each format (CSV: a file per table; Markdown and JSON:
/// one `summary` file), each under a temporary name renamed when complete. Returns the
/// paths written.
pub fn write_files(
    tables: &[Table],
    dir: &Path,
    formats: &[Format],
) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<(String, String)> = Vec::new();
    for format in formats {
        match format {
            Format::Csv => {
                for table in tables {
                    files.push((format!("{}.csv", table.name), csv(table)));
                }
            }
            Format::Md | Format::Json => {
                let name = if *format == Format::Md {
                    "summary.md"
                } else {
                    "summary.json"
                };
                files.push((name.into(), render(tables, *format)));
            }
        }
    }
    files
        .into_iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            crate::atomic::write(&path, text)?;
            Ok(path)
        })
        .collect()
}

/// One table as a CSV file's text, with its header line.
pub fn csv(table: &Table) -> String {
    let rows = String::from_utf8(crate::sink::csv_rows(table)).expect("CSV text is UTF-8");
    format!("{}\n{rows}", table.columns.join(","))
}

/// The tables in one format, as one text.
pub fn render(tables: &[Table], format: Format) -> String {
    match format {
        Format::Md => markdown(tables),
        Format::Json => {
            serde_json::to_string_pretty(&json(tables)).expect("tables serialize") + "\n"
        }
        Format::Csv => tables
            .iter()
            .map(|t| format!("# {}\n{}", t.name, csv(t)))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The tables as one JSON object: table name → list of rows, each an object of columns.
pub fn json(tables: &[Table]) -> serde_json::Value {
    let object = tables
        .iter()
        .map(|table| {
            let rows = table
                .rows
                .iter()
                .map(|row| {
                    let fields = table
                        .columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| (c.clone(), json_value(v)))
                        .collect::<serde_json::Map<_, _>>();
                    serde_json::Value::Object(fields)
                })
                .collect();
            (table.name.clone(), serde_json::Value::Array(rows))
        })
        .collect::<serde_json::Map<_, _>>();
    serde_json::Value::Object(object)
}

fn json_value(value: &Value) -> serde_json::Value {
    match value {
        Value::String(s) => s.clone().into(),
        Value::Int(v) => (*v).into(),
        Value::Float(v) => {
            serde_json::Number::from_f64(*v).map_or(serde_json::Value::Null, Into::into)
        }
        Value::Boolean(b) => (*b).into(),
        other => other.to_string().into(),
    }
}

/// The tables as Markdown sections.
fn markdown(tables: &[Table]) -> String {
    let mut out = String::from("# Run summary\n");
    for table in tables {
        let _ = write!(
            out,
            "\n## {}\n\n| {} |\n|",
            table.name,
            table.columns.join(" | ")
        );
        for value in &table.rows.first().cloned().unwrap_or_default() {
            out.push_str(if matches!(value, Value::String(_)) {
                " --- |"
            } else {
                " ---: |"
            });
        }
        if table.rows.is_empty() {
            out.push_str(&" --- |".repeat(table.columns.len()));
        }
        out.push('\n');
        for row in &table.rows {
            out.push('|');
            for value in row {
                let _ = write!(out, " {} |", cell(value).replace('|', "\\|"));
            }
            out.push('\n');
        }
    }
    out
}

/// A value as people read it: times and counts whole, shares with two decimals.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Float(v) if v.fract() == 0.0 || v.abs() >= 100.0 => format!("{v:.0}"),
        Value::Float(v) => format!("{v:.2}"),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A numeric cell's value (0 for others).
pub fn number(value: &Value) -> f64 {
    match value {
        Value::Float(v) => *v,
        Value::Int(v) => *v as f64,
        _ => 0.0,
    }
}

/// The `n` kernels with the most GPU time, as a compact terminal table.
pub fn top_kernels(tables: &[Table], n: usize) -> Option<String> {
    let kernels = tables.iter().find(|t| t.name == "kernels")?;
    let column = |name: &str| kernels.columns.iter().position(|c| c == name);
    let (calls, total, share, mean, kernel) = (
        column("calls")?,
        column("total_ns")?,
        column("percent")?,
        column("mean_ns")?,
        column("kernel")?,
    );
    let mut out = format!(
        "top kernels by GPU time\n  {:>8} {:>12} {:>7} {:>11}  kernel\n",
        "calls", "total ms", "%", "mean us"
    );
    for row in kernels.rows.iter().take(n) {
        let name = match &row[kernel] {
            Value::String(s) => s.as_str(),
            _ => "",
        };
        let shown: String = if name.chars().count() > 80 {
            name.chars().take(79).chain(['…']).collect()
        } else {
            name.to_owned()
        };
        let _ = writeln!(
            out,
            "  {:>8} {:>12.3} {:>7.2} {:>11.2}  {shown}",
            number(&row[calls]),
            number(&row[total]) / 1e6,
            number(&row[share]),
            number(&row[mean]) / 1e3,
        );
    }
    Some(out)
}
