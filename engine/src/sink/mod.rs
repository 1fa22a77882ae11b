//! Sinks: where records end up. One trait, one module per format, in the shape of
//! rocprofiler-sdk's own output generators; plugins bring more (see [`crate::plugin`]).

mod counters;
mod csv;
mod otf2;
mod parquet;
mod path;
mod per_process;
mod perfetto;
pub(crate) mod rocpd;
pub(crate) mod staging;
mod timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::plan::sink::csv::Flavour;
use crate::plan::sink::rocpd::Layout;
use crate::plan::sink::{Format, SinkPlan, Writer};
use crate::plugin::{Plugin, PluginSink};
use crate::record::Process;
use crate::table::Table;
use per_process::{Paths, PerProcess};

pub use csv::table_rows as csv_rows;
pub use path::Placeholders;
/// The settings a rocpd database is loaded with, for measuring SQLite alone with them.
pub use rocpd::PRAGMAS as ROCPD_PRAGMAS;

/// A failure of one sink; it stops that sink, never the others. Each says what was being
/// done (`context`, e.g. "writing out/trace.pftrace") and what went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The output would take a place that is not the sink's to take: a file it did not
    /// write, another process's database, a table of the format's own.
    #[error("{context}: {reason}")]
    NameClash { context: String, reason: String },
    /// Parquet could not encode or write a file.
    #[error("{context}: {source}")]
    Parquet {
        context: String,
        source: ::parquet::errors::ParquetError,
    },
    /// SQLite refused a statement of the rocpd sink.
    #[error("{context}: SQLite: {source}")]
    Sqlite {
        context: String,
        source: rusqlite::Error,
    },
    /// The records hold what the format has no room for.
    #[error("{context}: {reason}")]
    Unrepresentable { context: String, reason: String },
    /// The OTF2 library is missing, or one of its calls failed.
    #[error("{context}: {message}")]
    Otf2 { context: String, message: String },
    /// The run stopped early; the sink dropped what it had written.
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
///
/// The stage runner ([`crate::stage`]) drives each sink on a thread of its own, in this
/// order:
///
/// 1. It is opened ([`open`]) when its first window or table arrives, when the run's
///    metadata can fill its path's placeholders; a run that brings it nothing opens it at
///    the end, and it writes its empty output (unless no process sent anything at all:
///    then it is not opened).
/// 2. [`write`](Sink::write) takes the windows in arrival order, then
///    [`table`](Sink::table) each aggregate table, once the records have ended.
/// 3. [`finish`](Sink::finish) completes the output, and only after every call succeeded.
///    After a failure nothing more is called: the sink is dropped.
///
/// Dropping a sink that has not finished (after its failure, or a run that stopped early)
/// must discard what it wrote, leaving any earlier output at its path as it was: outputs
/// are written under a temporary name ([`staging`]) and moved into place by `finish`.
pub trait Sink: Send {
    /// Writes a window of chunks, in arrival order, all of kinds the sink asked for. Their
    /// metadata is in `catalog`, under each chunk's stream. A window holds many chunks so
    /// that a sink can spread its work over every core, and pay per window what it must
    /// pay per write (a transaction, a system call).
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError>;

    /// Writes a table an aggregate transform produced at the end of the run. Formats of
    /// events, not tables (a trace), leave them to a table sink: the default.
    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        let _ = table;
        Ok(())
    }

    /// Completes the output, moving it to its final path, and returns the paths written.
    fn finish(self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError>;

    /// The count of records in the output so far, for a sink that writes on threads of
    /// its own, behind the windows it took: the progress display shows it while the sink
    /// catches up. By default none: a window is in the output once `write` returns.
    fn written(&self) -> Option<Written> {
        None
    }
}

/// Records a sink has put in its output, counted as it goes (see [`Sink::written`]);
/// clones count together.
#[derive(Debug, Clone, Default)]
pub struct Written(Arc<AtomicU64>);

impl Written {
    pub fn add(&self, records: u64) {
        self.0.fetch_add(records, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Opens the sink a plan names, at its path with the placeholders filled in: one output
/// per process where the path names what tells processes apart (see [`per_process`]).
pub fn open(plan: &SinkPlan, placeholders: &Placeholders) -> Result<Box<dyn Sink>, SinkError> {
    // rocpd's layouts say how processes map to databases.
    if let Writer::Builtin(Format::Rocpd(options)) = &plan.writer {
        return rocpd::RocpdSink::open(options, &plan.path, placeholders);
    }
    if !per_process::names_a_process(&plan.path) {
        return open_at(plan, placeholders.expand(&plan.path));
    }
    let template = plan.path.clone();
    let plan = plan.clone();
    let open = move |path: PathBuf, _: u16, _: Option<&Process>| open_at(&plan, path);
    Ok(Box::new(PerProcess::new(
        &template,
        placeholders,
        Paths::Shared,
        None,
        Box::new(open),
    )))
}

/// The paths a sink of the plan writes for a run, as [`open`] fills them in: one per
/// process (in the order they connected) where its path names one, else one.
pub fn paths(plan: &SinkPlan, catalog: &Catalog) -> Vec<PathBuf> {
    let single = matches!(&plan.writer,
        Writer::Builtin(Format::Rocpd(options)) if options.layout == Layout::Single);
    if single || !per_process::names_a_process(&plan.path) {
        return vec![Placeholders::for_run(catalog).expand(&plan.path)];
    }
    per_process::paths(&plan.path, catalog)
}

/// Opens the sink a plan names at `path`.
fn open_at(plan: &SinkPlan, path: PathBuf) -> Result<Box<dyn Sink>, SinkError> {
    Ok(match &plan.writer {
        Writer::Builtin(Format::Csv(options)) => match options.flavour {
            Flavour::Rocflow => Box::new(csv::CsvSink::create(path)?),
            Flavour::Rocprofv3 => {
                Box::new(csv::rocprofv3::Rocprofv3Sink::create(path, &plan.kinds)?)
            }
        },
        Writer::Builtin(Format::Perfetto(options)) => {
            Box::new(perfetto::PerfettoSink::create(options, path)?)
        }
        Writer::Builtin(Format::Parquet(options)) => {
            Box::new(parquet::ParquetSink::create(options, path)?)
        }
        Writer::Builtin(Format::Rocpd(_)) => {
            unreachable!("rocpd maps processes to databases itself")
        }
        Writer::Builtin(Format::Otf2(_)) => Box::new(otf2::Otf2Sink::create(path)?),
        Writer::Plugin { plugin, options } => {
            let plugin = Plugin::load(&plugin.library)?;
            Box::new(PluginSink::open(plugin, options, &path)?)
        }
    })
}
