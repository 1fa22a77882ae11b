//! A rocflow sink plugin: a run's totals as OpenMetrics text, for Prometheus (through the
//! node exporter's textfile collector, a Pushgateway or any scrape of the file) and the
//! dashboards over it. Per kernel: dispatches and time, with the kernel's family when a
//! `kernel_family` column is there (the kernel_family plugin adds it); per copy direction:
//! copies, bytes and time; per API function: calls and time. Other tables are ignored.
//!
//! ```toml
//! [[sink]]
//! name = "metrics"
//! kind = "plugin"
//! plugin = "openmetrics"
//! path = "rocflow-out/{hostname}.prom"
//! records = ["kernel_dispatch", "memory_copy", "api"]
//! # Optional: labels on every series, and which of `host` (the default) and `pid` label
//! # series as well.
//! options = { labels = { job = "nightly" }, by = ["host", "pid"] }
//! ```
//!
//! The file is written when the run ends.

pub mod text;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rocflow_plugin::arrow_array::cast::AsArray;
use rocflow_plugin::arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use rocflow_plugin::arrow_array::{Array, RecordBatch};
use rocflow_plugin::arrow_schema::DataType;
use rocflow_plugin::{Batch, Result, Sink, export_plugin};
use serde::Deserialize;

use text::{Counter, Value};

/// The options as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default = "by_host")]
    by: Vec<By>,
}

fn by_host() -> Vec<By> {
    vec![By::Host]
}

/// The options, with label names checked.
#[derive(Debug, Deserialize)]
#[serde(try_from = "Written")]
pub struct Options {
    labels: BTreeMap<String, String>,
    by: Vec<By>,
}

/// What, besides the series' own labels, labels every series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum By {
    /// `host`: the host of the process.
    Host,
    /// `pid`: the process.
    Pid,
}

impl By {
    fn label(self) -> &'static str {
        match self {
            By::Host => "host",
            By::Pid => "pid",
        }
    }
}

/// Labels series have of their own.
const OWN_LABELS: &[&str] = &[
    "kernel",
    "kernel_family",
    "direction",
    "domain",
    "operation",
    "host",
    "pid",
];

impl TryFrom<Written> for Options {
    type Error = String;

    fn try_from(written: Written) -> Result<Options, String> {
        for name in written.labels.keys() {
            if !text::valid_label(name) || OWN_LABELS.contains(&name.as_str()) {
                return Err(format!(
                    "`{name}` cannot be a label: labels are letters, digits and `_`, and not one of {}",
                    OWN_LABELS.join(", ")
                ));
            }
        }
        Ok(Options {
            labels: written.labels,
            by: written.by,
        })
    }
}

/// The record kinds counted, each with the series' own labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Kernel,
    Copy,
    Api,
}

/// One series: its group and every label (name, value), in order.
type Series = (Group, Vec<(String, String)>);

#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    count: u64,
    nanoseconds: u64,
    bytes: u64,
}

impl std::ops::AddAssign for Totals {
    fn add_assign(&mut self, other: Totals) {
        self.count += other.count;
        self.nanoseconds += other.nanoseconds;
        self.bytes += other.bytes;
    }
}

pub struct OpenMetrics {
    path: PathBuf,
    options: Options,
    totals: BTreeMap<Series, Totals>,
}

impl OpenMetrics {
    /// Adds a batch's records to the totals of their series; `own` are the columns of the
    /// series' own labels (a label is left out where its column is missing).
    fn add(&mut self, group: Group, batch: &Batch, own: &[(&'static str, &str)]) -> Result<()> {
        assert!(own.len() <= 2, "a series has at most two labels of its own");
        let records = &batch.records;
        // A batch comes from one process: the labels it shares are read once.
        let mut shared: Vec<(String, String)> = self.options.labels.clone().into_iter().collect();
        for by in &self.options.by {
            let value = match by {
                By::Host => batch.hostname().unwrap_or_default().to_owned(),
                By::Pid => {
                    let pids = integers(records, "pid")?;
                    pids.first().copied().unwrap_or_default().to_string()
                }
            };
            shared.push((by.label().to_owned(), value));
        }
        let mut columns = Vec::new();
        for &(label, column) in own {
            if let Some(values) = strings(records, column)? {
                columns.push((label, values));
            }
        }
        let durations = integers(records, "duration_ns")?;
        let bytes = match group {
            Group::Copy => Some(integers(records, "bytes")?),
            Group::Kernel | Group::Api => None,
        };
        // Keyed by the row's label values (a series has at most two of its own), with no
        // allocation per row.
        let mut batch_totals: HashMap<[&str; 2], Totals> = HashMap::new();
        for (row, &nanoseconds) in durations.iter().enumerate() {
            let mut key = [""; 2];
            for (value, (_, values)) in key.iter_mut().zip(&columns) {
                *value = values[row];
            }
            *batch_totals.entry(key).or_default() += Totals {
                count: 1,
                nanoseconds,
                bytes: bytes.as_ref().map_or(0, |b| b[row]),
            };
        }
        for (values, totals) in batch_totals {
            let mut labels = shared.clone();
            let own = columns.iter().zip(values);
            labels.extend(own.map(|((label, _), v)| ((*label).to_owned(), v.to_owned())));
            *self.totals.entry((group, labels)).or_default() += totals;
        }
        Ok(())
    }

    /// The counters of the totals.
    fn counters(&self) -> Vec<Counter<'_>> {
        type Metric = (
            Group,
            &'static str,
            Option<&'static str>,
            &'static str,
            fn(&Totals) -> Value,
        );
        let seconds = |t: &Totals| Value::Real(t.nanoseconds as f64 / 1e9);
        let metrics: [Metric; 7] = [
            (
                Group::Kernel,
                "rocflow_kernel_dispatches",
                None,
                "Kernel dispatches.",
                |t| Value::Count(t.count),
            ),
            (
                Group::Kernel,
                "rocflow_kernel_duration_seconds",
                Some("seconds"),
                "Time kernels ran, from the start to the end of each dispatch.",
                seconds,
            ),
            (
                Group::Copy,
                "rocflow_memory_copies",
                None,
                "Asynchronous memory copies.",
                |t| Value::Count(t.count),
            ),
            (
                Group::Copy,
                "rocflow_memory_copy_bytes",
                Some("bytes"),
                "Bytes copied.",
                |t| Value::Count(t.bytes),
            ),
            (
                Group::Copy,
                "rocflow_memory_copy_duration_seconds",
                Some("seconds"),
                "Time copies took.",
                seconds,
            ),
            (
                Group::Api,
                "rocflow_api_calls",
                None,
                "Host API calls.",
                |t| Value::Count(t.count),
            ),
            (
                Group::Api,
                "rocflow_api_duration_seconds",
                Some("seconds"),
                "Time spent in host API calls.",
                seconds,
            ),
        ];
        metrics
            .into_iter()
            .map(|(group, name, unit, help, value)| Counter {
                name,
                unit,
                help,
                series: (self.totals.iter())
                    .filter(|((g, _), _)| *g == group)
                    .map(|((_, labels), totals)| {
                        let labels = labels
                            .iter()
                            .map(|(n, v)| (n.as_str(), v.as_str()))
                            .collect();
                        (labels, value(totals))
                    })
                    .collect(),
            })
            .collect()
    }
}

/// A string column (dictionary-encoded or not), an empty string for a null; `None` when
/// the batch has no such column.
fn strings<'a>(records: &'a RecordBatch, name: &str) -> Result<Option<Vec<&'a str>>> {
    let Some(column) = records.column_by_name(name) else {
        return Ok(None);
    };
    let not_text = || format!("`{name}` does not hold strings");
    let values = match column.as_any_dictionary_opt() {
        Some(dictionary) => {
            let text = dictionary
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(not_text)?;
            (dictionary.normalized_keys().into_iter().enumerate())
                .map(|(i, key)| {
                    if column.is_valid(i) {
                        text.value(key)
                    } else {
                        ""
                    }
                })
                .collect()
        }
        None => (column.as_string_opt::<i32>().ok_or_else(not_text)?.iter())
            .map(Option::unwrap_or_default)
            .collect(),
    };
    Ok(Some(values))
}

/// An integer column.
fn integers(records: &RecordBatch, name: &str) -> Result<Vec<u64>> {
    let column = records
        .column_by_name(name)
        .ok_or_else(|| format!("no `{name}` column"))?;
    Ok(match column.data_type() {
        DataType::Int64 => (column.as_primitive::<Int64Type>().values().iter())
            .map(|&v| v.max(0) as u64)
            .collect(),
        DataType::UInt64 => column.as_primitive::<UInt64Type>().values().to_vec(),
        DataType::UInt32 => (column.as_primitive::<UInt32Type>().values().iter())
            .map(|&v| u64::from(v))
            .collect(),
        other => return Err(format!("`{name}` is {other}, not an integer").into()),
    })
}

impl Sink for OpenMetrics {
    type Options = Options;

    fn open(options: Options, path: &Path) -> Result<Self> {
        Ok(OpenMetrics {
            path: path.to_path_buf(),
            options,
            totals: BTreeMap::new(),
        })
    }

    fn write(&mut self, batch: Batch) -> Result<()> {
        match batch.table.as_str() {
            "kernel_dispatch" => self.add(
                Group::Kernel,
                &batch,
                &[
                    ("kernel", "kernel_name"),
                    ("kernel_family", "kernel_family"),
                ],
            ),
            "memory_copy" => self.add(Group::Copy, &batch, &[("direction", "direction")]),
            "api" => self.add(
                Group::Api,
                &batch,
                &[("domain", "domain"), ("operation", "operation")],
            ),
            _ => Ok(()),
        }
    }

    fn finish(self) -> Result<Vec<PathBuf>> {
        // rocflow stages the path and moves the file into place once this returns.
        std::fs::write(&self.path, text::exposition(&self.counters()))
            .map_err(|e| format!("writing {}: {e}", self.path.display()))?;
        Ok(vec![self.path])
    }
}

export_plugin! {
    name: "openmetrics",
    description: "Writes per-kernel, per-copy-direction and per-API-function totals as OpenMetrics text",
    sink: OpenMetrics,
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use rocflow_plugin::abi::HOSTNAME_KEY;
    use rocflow_plugin::arrow_array::types::Int32Type;
    use rocflow_plugin::arrow_array::{
        ArrayRef, DictionaryArray, Int64Array, StringArray, UInt32Array, UInt64Array,
    };
    use rocflow_plugin::arrow_schema::Schema;

    use super::*;

    fn batch(table: &str, columns: Vec<(&str, ArrayRef)>) -> Batch {
        let records = RecordBatch::try_from_iter(columns).unwrap();
        let schema = Schema::clone(&records.schema())
            .with_metadata(HashMap::from([(HOSTNAME_KEY.into(), "node1".into())]));
        Batch {
            table: table.into(),
            records: records.with_schema(Arc::new(schema)).unwrap(),
        }
    }

    #[test]
    fn totals_per_series_in_openmetrics_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.prom");
        let options: Options =
            serde_json::from_str(r#"{"labels": {"job": "ci"}, "by": ["host", "pid"]}"#).unwrap();
        let mut sink = OpenMetrics::open(options, &path).unwrap();
        let kernels: DictionaryArray<Int32Type> = ["gemm", "add", "gemm"].into_iter().collect();
        let families: DictionaryArray<Int32Type> =
            ["gemm", "elementwise", "gemm"].into_iter().collect();
        sink.write(batch(
            "kernel_dispatch",
            vec![
                ("pid", Arc::new(UInt32Array::from(vec![7, 7, 7]))),
                ("kernel_name", Arc::new(kernels)),
                (
                    "duration_ns",
                    Arc::new(Int64Array::from(vec![1_000, 500, 3_000])),
                ),
                ("kernel_family", Arc::new(families)),
            ],
        ))
        .unwrap();
        sink.write(batch(
            "memory_copy",
            vec![
                ("pid", Arc::new(UInt32Array::from(vec![7]))),
                (
                    "direction",
                    Arc::new(StringArray::from(vec!["HOST_TO_DEVICE"])),
                ),
                ("bytes", Arc::new(UInt64Array::from(vec![4096]))),
                (
                    "duration_ns",
                    Arc::new(Int64Array::from(vec![2_000_000_000])),
                ),
            ],
        ))
        .unwrap();
        sink.write(batch(
            "marker",
            vec![("pid", Arc::new(UInt32Array::from(vec![7])))],
        ))
        .unwrap();
        assert_eq!(sink.finish().unwrap(), std::slice::from_ref(&path));
        let labels = r#"job="ci",host="node1",pid="7""#;
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!(
                "# TYPE rocflow_kernel_dispatches counter\n\
                 # HELP rocflow_kernel_dispatches Kernel dispatches.\n\
                 rocflow_kernel_dispatches_total{{{labels},kernel=\"add\",kernel_family=\"elementwise\"}} 1\n\
                 rocflow_kernel_dispatches_total{{{labels},kernel=\"gemm\",kernel_family=\"gemm\"}} 2\n\
                 # TYPE rocflow_kernel_duration_seconds counter\n\
                 # UNIT rocflow_kernel_duration_seconds seconds\n\
                 # HELP rocflow_kernel_duration_seconds Time kernels ran, from the start to the end of each dispatch.\n\
                 rocflow_kernel_duration_seconds_total{{{labels},kernel=\"add\",kernel_family=\"elementwise\"}} 0.0000005\n\
                 rocflow_kernel_duration_seconds_total{{{labels},kernel=\"gemm\",kernel_family=\"gemm\"}} 0.000004\n\
                 # TYPE rocflow_memory_copies counter\n\
                 # HELP rocflow_memory_copies Asynchronous memory copies.\n\
                 rocflow_memory_copies_total{{{labels},direction=\"HOST_TO_DEVICE\"}} 1\n\
                 # TYPE rocflow_memory_copy_bytes counter\n\
                 # UNIT rocflow_memory_copy_bytes bytes\n\
                 # HELP rocflow_memory_copy_bytes Bytes copied.\n\
                 rocflow_memory_copy_bytes_total{{{labels},direction=\"HOST_TO_DEVICE\"}} 4096\n\
                 # TYPE rocflow_memory_copy_duration_seconds counter\n\
                 # UNIT rocflow_memory_copy_duration_seconds seconds\n\
                 # HELP rocflow_memory_copy_duration_seconds Time copies took.\n\
                 rocflow_memory_copy_duration_seconds_total{{{labels},direction=\"HOST_TO_DEVICE\"}} 2\n\
                 # EOF\n"
            )
        );
    }

    #[test]
    fn labels_must_be_label_names_of_their_own() {
        for labels in [r#"{"a-b": "x"}"#, r#"{"kernel": "x"}"#] {
            let options = format!(r#"{{"labels": {labels}}}"#);
            let error = serde_json::from_str::<Options>(&options).unwrap_err();
            assert!(error.to_string().contains("cannot be a label"), "{error}");
        }
        let by_default: Options = serde_json::from_str("{}").unwrap();
        assert_eq!(by_default.by, [By::Host]);
    }
}
