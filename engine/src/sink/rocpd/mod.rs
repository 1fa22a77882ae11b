//! The rocpd sink: SQLite databases in the schema of rocprofiler-sdk's rocpd, which AMD's
//! rocpd tools (and anyone's SQL) read as if rocprofv3 had written them. Kernel dispatches,
//! memory copies and allocations, API calls and markers (regions, or samples when they
//! have no duration), counter values (`pmc_event`) and PC samples (`sample`), with the
//! nodes, processes and their command lines, threads, agents, queues, counters, code
//! objects and kernel symbols they refer to; the data and summary views AMD ships
//! (`kernels`, `top_kernels`, `kernel_summary`, `memory_copies`, `regions`, …); aggregate
//! tables as `rocflow_<name>`. Columns that `derive` transforms add have no place in the
//! schema and are not stored.
//!
//! Its options are [`Options`]: `layout` says how the run's processes map to databases
//! ([`Layout`]).

mod database;
pub(crate) mod extdata;
mod ids;
mod info;
mod insert;
mod rows;
pub(crate) mod schema;
mod views;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Placeholders, Sink, SinkError};
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::transform::Table;
use database::{Database, Streams};
use rows::Queued;
use writer::Writer;

/// How the run's processes map to databases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One database per process, at the path with that process's placeholders filled in,
    /// as rocprofv3 writes.
    #[default]
    PerProcess,
    /// One database for the whole run.
    Single,
}

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    pub layout: Layout,
}

/// What stops a database; reported as the sink's failure.
#[derive(Debug, thiserror::Error)]
enum Fault {
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("dispatch id {0} is beyond the 2^40 dispatches a process may have in rocpd")]
    DispatchId(u64),
}

impl Fault {
    fn at(self, path: &std::path::Path) -> SinkError {
        let context = format!("writing {}", path.display());
        match self {
            Fault::Io(source) => SinkError::Io { context, source },
            Fault::Sqlite(source) => SinkError::Sqlite { context, source },
            reason => SinkError::Unrepresentable {
                context,
                reason: reason.to_string(),
            },
        }
    }
}

pub struct RocpdSink {
    layout: Layout,
    /// The output path with its placeholders.
    template: String,
    /// The run's placeholder values, for what a process's own metadata does not say.
    run: Placeholders,
    databases: Vec<Writer>,
    /// Aggregate tables, written into every database when the run ends.
    tables: Vec<Table>,
}

impl RocpdSink {
    pub fn create(
        options: &Options,
        template: &str,
        run: &Placeholders,
    ) -> Result<RocpdSink, SinkError> {
        let mut sink = RocpdSink {
            layout: options.layout,
            template: template.to_owned(),
            run: run.clone(),
            databases: Vec::new(),
            tables: Vec::new(),
        };
        if sink.layout == Layout::Single {
            let path = run.expand(&sink.template);
            let database =
                Database::create(path.clone(), run.timestamp * 1_000_000_000, Streams::All)
                    .map_err(|e| e.at(&path))?;
            sink.databases.push(Writer::start(database));
        }
        Ok(sink)
    }

    /// Opens the database of each stream in `streams` that has none yet (one per process).
    fn open_processes(
        &mut self,
        streams: impl Iterator<Item = u16>,
        catalog: &Catalog,
    ) -> Result<(), SinkError> {
        if self.layout != Layout::PerProcess {
            return Ok(());
        }
        for stream in streams {
            if self.databases.iter().any(|d| d.holds(stream)) {
                continue;
            }
            let process = catalog.stream(stream).process.as_ref();
            let placeholders =
                process.map_or_else(|| self.run.clone(), |p| self.run.for_process(p));
            let path = placeholders.expand(&self.template);
            if let Some(other) = self.databases.iter().find(|d| d.path() == path) {
                return Err(SinkError::NameClash {
                    context: format!("writing {}", path.display()),
                    reason: format!(
                        "two processes would write this database ({} and process {}); \
                         with layout = \"per_process\" the path needs a placeholder that \
                         tells processes apart, such as {{pid}} or {{rank}}",
                        other.path().display(),
                        placeholders.pid
                    ),
                });
            }
            let start_ns = process.map_or(self.run.timestamp * 1_000_000_000, |p| p.start_ns);
            let database = Database::create(path.clone(), start_ns, Streams::One(stream))
                .map_err(|e| e.at(&path))?;
            self.databases.push(Writer::start(database));
        }
        Ok(())
    }
}

impl Sink for RocpdSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        self.open_processes(window.iter().map(|c| c.stream), catalog)?;
        for database in &mut self.databases {
            let chunks: Vec<Queued> = window
                .iter()
                .filter(|c| database.holds(c.stream))
                .map(|c| Queued::new(Arc::clone(c), catalog.stream(c.stream)))
                .collect();
            if !chunks.is_empty() {
                database.write(chunks).map_err(|e| e.at(database.path()))?;
            }
        }
        Ok(())
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        self.tables.push(table.clone());
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        // A process whose records all went elsewhere still gets its database.
        let described = catalog
            .streams()
            .filter(|(_, meta)| meta.process.is_some())
            .map(|(stream, _)| stream);
        self.open_processes(described, catalog)?;
        let catalog = Arc::new(catalog.clone());
        let tables: Arc<[Table]> = std::mem::take(&mut self.tables).into();
        // Every database completes at once, each on its thread.
        for database in &mut self.databases {
            database
                .finish(Arc::clone(&catalog), Arc::clone(&tables))
                .map_err(|e| e.at(database.path()))?;
        }
        std::mem::take(&mut self.databases)
            .into_iter()
            .map(|database| {
                let path = database.path().to_owned();
                database.join().map_err(|e| e.at(&path))
            })
            .collect()
    }
}
