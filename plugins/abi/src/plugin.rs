//! What a Rust plugin implements, [`Transform`] or [`Sink`], and the batches of records its
//! methods receive; [`glue`](crate::glue) calls them from the C ABI.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, Field, Schema};
use serde::de::DeserializeOwned;

use crate::abi;

/// What a plugin's methods fail with; rocflow shows its message (with its sources).
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Records of one kind, as rocflow hands them to a plugin.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The record kind (`kernel_dispatch`, `api`, …), or an aggregate transform's name.
    pub table: String,
    /// The records' columns: stored fields, then those resolved from the run's metadata
    /// (`kernel_name`, `duration_ns`, …), then those earlier transforms added. A transform's
    /// input also has [`abi::ROW_COLUMN`].
    pub records: RecordBatch,
}

impl Batch {
    /// The host of the process the records come from.
    pub fn hostname(&self) -> Option<&str> {
        self.records
            .schema_ref()
            .metadata()
            .get(abi::HOSTNAME_KEY)
            .map(String::as_str)
    }
}

/// A transform: sees each batch of the kinds its pipeline entry takes, and says which
/// records go on and what columns they gain.
pub trait Transform: Send + Sized + 'static {
    /// The pipeline entry's `options`; an unknown or missing option stops `rocflow run`
    /// before the application starts.
    type Options: DeserializeOwned;

    /// Makes an instance (once per run or replay, and once more to check it before).
    fn new(options: Self::Options) -> Result<Self>;

    /// Returns the records that go on, with the columns they gain: the input with a column
    /// more (see [`with_column`]), fewer rows (rows keep their [`abi::ROW_COLUMN`]), or
    /// both. Returning the input unchanged passes every record on.
    fn process(&mut self, batch: Batch) -> Result<RecordBatch>;
}

/// A sink: receives every batch of the kinds its pipeline entry takes, then completes its
/// output. rocflow stages what it writes and moves it into place once
/// [`finish`](Sink::finish) succeeded, or removes it when the run stops early.
pub trait Sink: Send + Sized + 'static {
    /// The pipeline entry's `options`; an unknown or missing option stops `rocflow run`
    /// before the application starts.
    type Options: DeserializeOwned + Send;

    /// Opens the output at `path` (the final name, placeholders filled in, in rocflow's
    /// staging directory), before the first batch arrives.
    fn open(options: Self::Options, path: &Path) -> Result<Self>;

    fn write(&mut self, batch: Batch) -> Result<()>;

    /// Completes the output; returns the paths written.
    fn finish(self) -> Result<Vec<PathBuf>>;
}

/// `records` with one more column, keeping the schema's metadata.
pub fn with_column(
    records: RecordBatch,
    field: Field,
    column: ArrayRef,
) -> Result<RecordBatch, ArrowError> {
    let schema = records.schema();
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(field));
    let schema = Schema::new(fields).with_metadata(schema.metadata().clone());
    let (_, mut columns, _) = records.into_parts();
    columns.push(column);
    RecordBatch::try_new(Arc::new(schema), columns)
}
