//! rocflow's plugin interface: custom transforms and sinks in shared libraries.
//!
//! A plugin is a `cdylib` that rocflow loads when a pipeline names it:
//!
//! ```toml
//! [[transform]]
//! name = "families"
//! kind = "plugin"
//! plugin = "kernel_family"        # librocflow_plugin_kernel_family.so
//! records = ["kernel_dispatch"]
//! options = { }                   # handed to the plugin as JSON
//! ```
//!
//! The interface is a stable C ABI ([`abi`], and `plugins/include/rocflow_plugin.h` for C
//! and C++), versioned by [`abi::ABI_VERSION`]; records cross it as Arrow record batches
//! through the Arrow C Data Interface, one record kind per batch. This crate also makes a
//! Rust plugin short and safe: implement [`Transform`] or [`Sink`] on a type and name it in
//! [`export_plugin!`]. Errors and panics are caught at the boundary and reported by rocflow
//! as failures of the plugin.
//!
//! ```
//! use std::sync::Arc;
//!
//! use rocflow_plugin::arrow_array::{BooleanArray, RecordBatch, cast::AsArray, types::Int64Type};
//! use rocflow_plugin::arrow_schema::{DataType, Field};
//! use rocflow_plugin::{Batch, Result, Transform, export_plugin, with_column};
//!
//! #[derive(serde::Deserialize)]
//! struct Options {
//!     threshold_ns: i64,
//! }
//!
//! /// Adds `slow`: whether a record took longer than `threshold_ns`.
//! struct Slow(Options);
//!
//! impl Transform for Slow {
//!     type Options = Options;
//!
//!     fn new(options: Options) -> Result<Self> {
//!         Ok(Slow(options))
//!     }
//!
//!     fn process(&mut self, batch: Batch) -> Result<RecordBatch> {
//!         let Some(duration) = batch.records.column_by_name("duration_ns") else {
//!             return Ok(batch.records); // records without a duration pass unchanged
//!         };
//!         let duration = duration.as_primitive_opt::<Int64Type>().ok_or("not int64")?;
//!         let slow: BooleanArray = duration.iter().map(|d| d.map(|d| d > self.0.threshold_ns)).collect();
//!         let field = Field::new("slow", DataType::Boolean, true);
//!         Ok(with_column(batch.records, field, Arc::new(slow))?)
//!     }
//! }
//!
//! export_plugin! {
//!     name: "slow",
//!     description: "Adds slow: whether a record took longer than threshold_ns",
//!     transform: Slow,
//! }
//! ```

pub mod abi;
pub mod batch;
#[doc(hidden)]
pub mod glue;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use arrow_array;
use arrow_array::{ArrayRef, RecordBatch};
pub use arrow_schema;
use arrow_schema::{ArrowError, Field, Schema};
use serde::de::DeserializeOwned;

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

/// Exports a plugin: its name and description (what `rocflow plugins list` shows, with the
/// crate's version), and the types implementing [`Transform`], [`Sink`] or both.
///
/// `export_plugin! { name: "stats", description: "…", transform: MyStats, sink: MySink }`
/// (see the crate's example).
#[macro_export]
macro_rules! export_plugin {
    (
        name: $name:literal,
        description: $description:literal
        $(, transform: $transform:ty)?
        $(, sink: $sink:ty)?
        $(,)?
    ) => {
        /// The plugin's descriptor (`rocflow_plugin_v1` of the plugin ABI).
        #[unsafe(no_mangle)]
        pub extern "C" fn rocflow_plugin_v1() -> *const $crate::abi::Plugin {
            static PLUGIN: $crate::abi::Plugin = $crate::abi::Plugin {
                abi_version: $crate::abi::ABI_VERSION,
                name: concat!($name, "\0").as_ptr().cast(),
                version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
                description: concat!($description, "\0").as_ptr().cast(),
                transform: $crate::__table!(TransformGlue $(, $transform)?),
                sink: $crate::__table!(SinkGlue $(, $sink)?),
                last_error: Some($crate::glue::last_error),
            };
            &PLUGIN
        }
    };
}

/// A descriptor's table of functions for a type, or null without one.
#[doc(hidden)]
#[macro_export]
macro_rules! __table {
    ($glue:ident) => {
        ::core::ptr::null()
    };
    ($glue:ident, $type:ty) => {
        &$crate::glue::$glue::<$type>::FNS
    };
}
