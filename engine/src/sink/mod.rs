//! Sinks: where records end up. One trait, one module per format, in the shape of
//! rocprofiler-sdk's own output generators; plugins bring more (see [`crate::plugin`]).

mod counters;
mod csv;
mod json;
mod open;
mod otf2;
mod output;
mod parquet;
mod path;
mod per_process;
mod perfetto;
mod plugin;
pub(crate) mod rocpd;
pub(crate) mod staging;
mod timeline;

pub use csv::table_rows as csv_rows;
pub use open::{open, paths};
pub use output::{Sink, SinkError, Written};
pub use path::Placeholders;
pub use plugin::PluginSink;
/// The settings a rocpd database is loaded with, for measuring SQLite alone with them.
pub use rocpd::PRAGMAS as ROCPD_PRAGMAS;
