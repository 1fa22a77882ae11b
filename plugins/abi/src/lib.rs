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
mod plugin;

pub use arrow_array;
pub use arrow_schema;
pub use plugin::{Batch, Error, Result, Sink, Transform, with_column};

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
