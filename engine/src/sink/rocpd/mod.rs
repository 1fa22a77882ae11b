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

mod append;
mod database;
mod dispatches;
pub(crate) mod extdata;
mod fault;
mod ids;
mod info;
mod rows;
mod views;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;

use super::per_process::{Paths, PerProcess};
use super::{Placeholders, Sink, SinkError, Written};
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::plan::sink::rocpd::{Layout, Options};
use crate::record::Process;
use crate::table::Table;
pub use database::PRAGMAS;
use database::{Database, Streams};
pub(crate) use info::stable_hash;
use rows::Queued;
use writer::{MOST_THREADS, Pool, Writer};

/// One database, of the whole run or of one process (the [`PerProcess`] sink opens one
/// per process for the `per_process` layout).
pub struct RocpdSink {
    database: Writer,
    /// Aggregate tables, written into the database when the run ends.
    tables: Vec<Table>,
    written: Written,
}

impl RocpdSink {
    /// The sink of `options` at `template`, its placeholders filled in with the run's
    /// values (`run`), or each process's.
    pub fn open(
        options: &Options,
        template: &str,
        run: &Placeholders,
    ) -> Result<Box<dyn Sink>, SinkError> {
        let written = Written::default();
        let run_start_ns = run.timestamp * 1_000_000_000;
        if options.layout == Layout::Single {
            let path = run.expand(template);
            let pool = Pool::start(1).map_err(|e| e.at(&path))?;
            let sink = RocpdSink::create(&pool, path, run_start_ns, Streams::All, &written)?;
            return Ok(Box::new(sink));
        }
        let pool = Pool::start(MOST_THREADS).map_err(|e| e.at(std::path::Path::new(template)))?;
        let counted = written.clone();
        let open = move |path: PathBuf, stream: u16, process: Option<&Process>| {
            let start_ns = process.map_or(run_start_ns, |p| p.start_ns);
            let streams = Streams::of(stream, process);
            let sink = RocpdSink::create(&pool, path, start_ns, streams, &counted)?;
            Ok(Box::new(sink) as Box<dyn Sink>)
        };
        Ok(Box::new(PerProcess::new(
            template,
            run,
            Paths::Distinct(", or layout = \"single\" for one database of every process"),
            Some(written),
            Box::new(open),
        )))
    }

    fn create(
        pool: &Arc<Pool>,
        path: PathBuf,
        start_ns: u64,
        streams: Streams,
        written: &Written,
    ) -> Result<RocpdSink, SinkError> {
        let database =
            Database::create(path.clone(), start_ns, streams).map_err(|e| e.at(&path))?;
        Ok(RocpdSink {
            database: Writer::start(pool, database, written.clone()),
            tables: Vec::new(),
            written: written.clone(),
        })
    }
}

impl Sink for RocpdSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        let database = &mut self.database;
        let chunks: Vec<Queued> = window
            .iter()
            .filter(|c| database.holds(c.stream, catalog))
            .map(|c| Queued::new(Arc::clone(c), catalog.stream(c.stream)))
            .collect();
        if !chunks.is_empty() {
            database.write(chunks).map_err(|e| e.at(database.path()))?;
        }
        Ok(())
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        self.tables.push(table.clone());
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        let tables: Arc<[Table]> = std::mem::take(&mut self.tables).into();
        let RocpdSink { database, .. } = *self;
        let path = database.path().to_owned();
        let done = database.finish(Arc::new(catalog.clone()), tables);
        Ok(vec![done.map_err(|e| e.at(&path))?])
    }

    fn written(&self) -> Option<Written> {
        Some(self.written.clone())
    }
}
