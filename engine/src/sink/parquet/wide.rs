//! `wide_counters`: the `dispatch_counters` table, one row per dispatch with one column per
//! counter (its values summed over the counter's dimensions), the shape a dataframe of
//! per-kernel metrics wants.
//!
//! A dispatch's samples arrive together, but nothing marks the last of them: a row is
//! complete once samples of [`OPEN`] later dispatches have arrived, or when the run ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Float64Array, RecordBatch};
use indexmap::IndexMap;

use crate::arrow::columns::BatchBuilder;
use crate::catalog::{Catalog, StreamMeta};
use crate::record::CounterSample;

/// The table's name.
pub const TABLE: &str = "dispatch_counters";

/// Dispatches kept open for more samples.
const OPEN: usize = 64;

#[derive(Default)]
pub struct WideCounters {
    /// Rows that may get more samples, by stream and dispatch, oldest first.
    open: IndexMap<(u16, u64), Row>,
    /// Complete rows, by stream, until they are taken.
    done: BTreeMap<u16, Vec<Row>>,
}

struct Row {
    agent: u32,
    dispatch_id: u64,
    kernel_id: u64,
    /// The latest sample's time.
    timestamp_ns: u64,
    /// Sums by counter id.
    values: Vec<(u32, f64)>,
}

impl WideCounters {
    pub fn add(&mut self, stream: u16, samples: &[CounterSample]) {
        for s in samples {
            let row = self
                .open
                .entry((stream, s.dispatch_id))
                .or_insert_with(|| Row {
                    agent: s.agent,
                    dispatch_id: s.dispatch_id,
                    kernel_id: s.kernel_id,
                    timestamp_ns: s.timestamp_ns,
                    values: Vec::new(),
                });
            row.timestamp_ns = row.timestamp_ns.max(s.timestamp_ns);
            match row.values.iter_mut().find(|(id, _)| *id == s.counter_id) {
                Some((_, sum)) => *sum += s.value,
                None => row.values.push((s.counter_id, s.value)),
            }
        }
        while self.open.len() > OPEN {
            let ((stream, _), row) = self.open.shift_remove_index(0).expect("not empty");
            self.done.entry(stream).or_default().push(row);
        }
    }

    /// Completes every open row (the run has ended).
    pub fn close(&mut self) {
        for ((stream, _), row) in self.open.drain(..) {
            self.done.entry(stream).or_default().push(row);
        }
    }

    /// The complete rows, a batch per stream. Counter columns are every counter name the
    /// run has (sorted), so that streams share one schema.
    pub fn take(&mut self, catalog: &Catalog) -> Vec<(u16, RecordBatch)> {
        if self.done.is_empty() {
            return Vec::new();
        }
        let mut names: Vec<&str> = catalog
            .streams()
            .flat_map(|(_, meta)| meta.counters.values().map(|c| c.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        std::mem::take(&mut self.done)
            .into_iter()
            .map(|(stream, rows)| (stream, batch(&rows, catalog.stream(stream), &names)))
            .collect()
    }
}

fn batch(rows: &[Row], meta: &StreamMeta, counters: &[&str]) -> RecordBatch {
    let pid = meta.process.as_ref().map_or(0, |p| p.pid);
    let mut table: Vec<Vec<Option<f64>>> = vec![vec![None; rows.len()]; counters.len()];
    for (r, row) in rows.iter().enumerate() {
        for &(id, sum) in &row.values {
            if let Ok(c) = counters.binary_search(&meta.counter_name(id)) {
                table[c][r] = Some(sum);
            }
        }
    }
    let mut b = BatchBuilder::default();
    b.u32("pid", rows.iter().map(|_| pid))
        .u32("agent", rows.iter().map(|r| r.agent))
        .u64("dispatch_id", rows.iter().map(|r| r.dispatch_id))
        .u64("kernel_id", rows.iter().map(|r| r.kernel_id))
        .text(
            "kernel_name",
            rows.iter().map(|r| meta.kernel_name(r.kernel_id)),
        )
        .time("timestamp_ns", rows.iter().map(|r| r.timestamp_ns));
    for (name, values) in counters.iter().zip(table) {
        b.array(name, Arc::new(Float64Array::from(values)), true);
    }
    b.finish()
}
