//! What every format implements: the [`Sink`] trait the stage runner drives, the error that
//! stops one sink, and the count of records a sink has written.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::table::Table;

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
/// 1. It is opened ([`open`](super::open())) when its first window or table arrives, when
///    the run's metadata can fill its path's placeholders; a run that brings it nothing
///    opens it at the end, and it writes its empty output (unless no process sent anything
///    at all: then it is not opened).
/// 2. [`write`](Sink::write) takes the windows in arrival order, then
///    [`table`](Sink::table) each aggregate table, once the records have ended.
/// 3. [`finish`](Sink::finish) completes the output, and only after every call succeeded.
///    After a failure nothing more is called: the sink is dropped.
///
/// Dropping a sink that has not finished (after its failure, or a run that stopped early)
/// must discard what it wrote, leaving any earlier output at its path as it was: outputs
/// are written under a temporary name ([`staging`](super::staging)) and moved into place
/// by `finish`.
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
