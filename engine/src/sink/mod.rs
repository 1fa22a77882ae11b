//! Sinks: where records end up. One trait, one module per format, in the shape of
//! rocprofiler-sdk's own output generators; plugins bring more (see [`crate::plugin`]).

mod counters;
mod csv;
mod otf2;
mod parquet;
mod path;
mod perfetto;
mod rocpd;
pub(crate) mod staging;
mod timeline;

use std::path::PathBuf;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::pipeline::model::SinkKind;
use crate::plan::{SinkPlan, Writer};
use crate::plugin::{Plugin, PluginSink};
use crate::transform::Table;

pub use csv::table_rows as csv_rows;
pub use path::Placeholders;

/// A failure of one sink; it stops that sink, never the others.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("the run stopped before its end; nothing was written")]
    Stopped,
    #[error(transparent)]
    Plugin(#[from] crate::plugin::Error),
}

impl SinkError {
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SinkError {
        let context = context.into();
        move |source| SinkError::Io { context, source }
    }
}

/// An output format.
pub trait Sink: Send {
    /// Writes a window of chunks, in arrival order, all of kinds the sink asked for. Their
    /// metadata is in `catalog`, under each chunk's stream. A window holds many chunks so
    /// that a sink can spread its work over every core, and pay per window what it must
    /// pay per write (a transaction, a system call).
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError>;

    /// Writes a table an aggregate transform produced at the end of the run.
    fn table(&mut self, table: &Table) -> Result<(), SinkError>;

    /// Completes the output, moving it to its final path, and returns the paths written.
    fn finish(self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError>;
}

/// The sink's `options`, checked against what it takes.
fn options<T: serde::de::DeserializeOwned>(plan: &SinkPlan) -> Result<T, SinkError> {
    serde_json::from_value(plan.options.clone().into()).map_err(|e| SinkError::Io {
        context: format!("the options of sink `{}`", plan.name),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    })
}

/// Opens the sink a plan names, at its path with the placeholders filled in.
pub fn open(plan: &SinkPlan, placeholders: &Placeholders) -> Result<Box<dyn Sink>, SinkError> {
    let path = placeholders.expand(&plan.path);
    let kind = match &plan.writer {
        Writer::Builtin(kind) => kind,
        Writer::Plugin(plugin) => {
            let plugin = Plugin::load(&plugin.library)?;
            return Ok(Box::new(PluginSink::open(plugin, &plan.options, &path)?));
        }
    };
    match kind {
        SinkKind::Csv => Ok(Box::new(csv::CsvSink::create(path)?)),
        SinkKind::Perfetto => Ok(Box::new(perfetto::PerfettoSink::create(plan, path)?)),
        SinkKind::Parquet => Ok(Box::new(parquet::ParquetSink::create(plan, path)?)),
        SinkKind::Rocpd => Ok(Box::new(rocpd::RocpdSink::create(plan, placeholders)?)),
        SinkKind::Otf2 => Ok(Box::new(otf2::Otf2Sink::create(path)?)),
    }
}
