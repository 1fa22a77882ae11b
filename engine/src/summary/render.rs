//! A summary's tables as files (CSV, Markdown, JSON) and as the short tables printed on a
//! terminal.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalexpr::Value;

use crate::table::Table;

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
/// one `summary` file, which says why they are `partial`, if they are), each under a
/// temporary name renamed when complete. Returns the paths written.
pub fn write_files(
    tables: &[Table],
    partial: Option<&str>,
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
                files.push((name.into(), render_of_run(tables, partial, *format)));
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

/// A run's summary tables in one format, as one text, saying first why they are only part
/// of the run's, if they are: Markdown in a quoted line, JSON in a `partial` member beside
/// the tables (CSV has no place for it).
pub fn render_of_run(tables: &[Table], partial: Option<&str>, format: Format) -> String {
    match (format, partial) {
        (Format::Md, Some(why)) => {
            let text = render(tables, format);
            let (title, rest) = text.split_once('\n').unwrap_or((&text, ""));
            format!(
                "{title}\n\n> **Partial:** {}\n{rest}",
                why.replace('\n', " ")
            )
        }
        (Format::Json, Some(why)) => {
            let mut json = json(tables);
            json["partial"] = why.into();
            serde_json::to_string_pretty(&json).expect("tables serialize") + "\n"
        }
        _ => render(tables, format),
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

/// The tables as Markdown sections, each cell printable (see [`crate::printable`]): a
/// newline in a name would end its row, and forge a line where the text is printed.
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
                let text = cell(value);
                let _ = write!(
                    out,
                    " {} |",
                    crate::printable::name(&text).replace('|', "\\|")
                );
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

/// Every table that has rows, as compact terminal tables of the `top` rows with the most
/// time (or, for counters, value): what `rocflow summary` and a run's summary step print.
/// Each shows the columns its rows are grouped by (node, process, agent, where asked),
/// then its own (kernel, API function, copy direction, …).
pub fn terminal(tables: &[Table], top: usize) -> String {
    let shown: Vec<String> = (tables.iter())
        .filter(|t| !t.rows.is_empty())
        .filter_map(|t| terminal_table(t, top))
        .collect();
    shown.join("\n")
}

/// What a terminal table's title calls the rows of a summary table.
fn title(table: &str) -> &str {
    match table {
        "kernels" => "kernels by GPU time",
        "api" => "API calls by time",
        "memory_copies" => "memory copies by time",
        "memory_allocations" => "memory allocations by time",
        "scratch_memory" => "scratch memory operations by time",
        "markers" => "marker ranges by time",
        "counters" => "counter values per kernel, largest first",
        other => other,
    }
}

/// The longest name shown whole in the last column (kernel names run to hundreds).
const MAX_NAME: usize = 80;

/// One summary table as a terminal table: its numbers, then the columns that name a row.
fn terminal_table(table: &Table, top: usize) -> Option<String> {
    let column = |name: &str| table.columns.iter().position(|c| c == name);
    // Times are in ns, shown in ms and us; counter values as they are.
    let (count, times) = match column("calls") {
        Some(calls) => (calls, true),
        None => (column("dispatches")?, false),
    };
    let measure = if times { "ns" } else { "value" };
    let (total, share, mean) = (
        column(&format!("total_{measure}"))?,
        column("percent")?,
        column(&format!("mean_{measure}"))?,
    );
    let bytes = column("bytes");
    let rows = &table.rows[..top.min(table.rows.len())];
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => cell(other),
    };
    let keys = &table.columns[..count];
    let widths: Vec<usize> = (keys.iter().enumerate())
        .map(|(i, key)| {
            let widest = (rows.iter())
                .map(|r| shown(&text(&r[i])).chars().count())
                .max();
            widest.unwrap_or(0).max(key.len())
        })
        .collect();
    let mut out = String::from(title(&table.name));
    if rows.len() < table.rows.len() {
        let _ = write!(out, " (top {} of {})", rows.len(), table.rows.len());
    }
    out.push('\n');
    let (total_head, mean_head) = if times {
        ("total ms", "mean us")
    } else {
        ("total", "mean")
    };
    let _ = write!(
        out,
        "  {:>10} {:>14} {:>7} {:>12}",
        table.columns[count], total_head, "%", mean_head
    );
    if bytes.is_some() {
        let _ = write!(out, " {:>14}", "bytes");
    }
    push_keys(&mut out, keys.iter().map(String::as_str), &widths);
    for row in rows {
        let (total, mean) = (number(&row[total]), number(&row[mean]));
        let _ = write!(out, "  {:>10}", cell(&row[count]));
        if times {
            let _ = write!(out, " {:>14.3} ", total / 1e6);
        } else {
            let _ = write!(out, " {:>14} ", cell(&Value::Float(total)));
        }
        let _ = write!(out, "{:>7.2} ", number(&row[share]));
        if times {
            let _ = write!(out, "{:>12.2}", mean / 1e3);
        } else {
            let _ = write!(out, "{:>12}", cell(&Value::Float(mean)));
        }
        if let Some(bytes) = bytes {
            let _ = write!(out, " {:>14}", cell(&row[bytes]));
        }
        let names: Vec<String> = row[..count].iter().map(text).collect();
        push_keys(&mut out, names.iter().map(String::as_str), &widths);
    }
    Some(out)
}

/// Appends the columns that name a row, each padded to its width but the last; then ends
/// the line.
fn push_keys<'a>(out: &mut String, keys: impl ExactSizeIterator<Item = &'a str>, widths: &[usize]) {
    let last = keys.len().saturating_sub(1);
    for (i, (key, width)) in keys.zip(widths).enumerate() {
        let key = shown(key);
        if i < last {
            let _ = write!(out, "  {key:<width$}");
        } else {
            let _ = write!(out, "  {key}");
        }
    }
    out.push('\n');
}

/// A name as a terminal table shows it: printable (see [`crate::printable`]), cut at
/// [`MAX_NAME`] characters.
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    let name = crate::printable::name(name);
    if name.chars().count() <= MAX_NAME {
        return name;
    }
    name.chars().take(MAX_NAME - 1).chain(['…']).collect()
}
