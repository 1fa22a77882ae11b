//! A plugin for rocflow's tests: a transform that keeps every n-th record (by the row
//! numbers rocflow gives it) and adds `probe_row`, and a sink that takes everything and
//! writes one line per batch to its path, its first only once the test lets it; each fails
//! or panics in the call its options name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocflow_plugin::abi::ROW_COLUMN;
use rocflow_plugin::arrow_array::cast::AsArray;
use rocflow_plugin::arrow_array::types::UInt32Type;
use rocflow_plugin::arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use rocflow_plugin::{Batch, Result, Sink, Transform, export_plugin};
use serde::Deserialize;

/// A call of the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Create,
    Process,
    Open,
    Write,
    Finish,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Keep records whose row number is a multiple of this (a transform).
    #[serde(default = "one")]
    keep_every: u32,
    /// The call that returns an error.
    fail: Option<Call>,
    /// The call that panics.
    panic: Option<Call>,
    /// `process` and `write` fail or panic only on batches of more records than this: the
    /// one record rocflow checks a transform with gets through.
    #[serde(default)]
    over_rows: usize,
    /// A file the first `write` waits for before it takes its batch (relative to rocflow's
    /// directory): a sink that falls behind the application for as long as the test wants.
    first_write_after: Option<PathBuf>,
}

fn one() -> u32 {
    1
}

impl Options {
    /// Fails or panics if asked to in `call`.
    fn call(&self, call: Call) -> Result<()> {
        if self.panic == Some(call) {
            panic!("the probe panics in {call:?}, as asked");
        }
        if self.fail == Some(call) {
            return Err(format!("the probe fails in {call:?}, as asked").into());
        }
        Ok(())
    }
}

pub struct Probe(Options, Option<(PathBuf, std::fs::File)>);

impl Transform for Probe {
    type Options = Options;

    fn new(options: Options) -> Result<Self> {
        options.call(Call::Create)?;
        Ok(Probe(options, None))
    }

    fn process(&mut self, batch: Batch) -> Result<RecordBatch> {
        if batch.records.num_rows() > self.0.over_rows {
            self.0.call(Call::Process)?;
        }
        let rows = batch
            .records
            .column_by_name(ROW_COLUMN)
            .ok_or("no row numbers")?;
        let kept: UInt32Array = (rows.as_primitive::<UInt32Type>().values().iter())
            .copied()
            .filter(|row| row % self.0.keep_every == 0)
            .collect();
        // The rows kept, and a column that repeats their numbers.
        let kept: ArrayRef = Arc::new(kept);
        Ok(RecordBatch::try_from_iter([
            (ROW_COLUMN, kept.clone()),
            ("probe_row", kept),
        ])?)
    }
}

impl Sink for Probe {
    type Options = Options;

    fn open(options: Options, path: &Path) -> Result<Self> {
        options.call(Call::Open)?;
        let file = std::fs::File::create(path)?;
        Ok(Probe(options, Some((path.to_path_buf(), file))))
    }

    fn write(&mut self, batch: Batch) -> Result<()> {
        use std::io::Write;
        if let Some(file) = self.0.first_write_after.take() {
            while !file.exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        if let Some((_, file)) = &mut self.1 {
            writeln!(file, "{} {}", batch.table, batch.records.num_rows())?;
        }
        if batch.records.num_rows() > self.0.over_rows {
            self.0.call(Call::Write)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<PathBuf>> {
        self.0.call(Call::Finish)?;
        Ok(self.1.map(|(path, _)| path).into_iter().collect())
    }
}

export_plugin! {
    name: "probe",
    description: "A plugin for rocflow's tests",
    transform: Probe,
    sink: Probe,
}
