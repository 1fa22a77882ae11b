//! The Parquet sink: a dataset directory for DuckDB, pandas, Polars or Spark, with a table
//! per record kind (`kernel_dispatch`, `api`, `counter_sample`, …: the record's columns as
//! the CSV sink names them, then those `derive` transforms added; counter samples name their
//! kernel by id only, see [`LEFT_OUT`]), the metadata tables records refer to (`processes`,
//! `agents`, `kernel_symbols`, `code_objects`, `counters`, `threads`, `queues`,
//! `hip_streams`, `dropped`; see [`info`]), a table per aggregate transform, and with
//! `wide_counters` the `dispatch_counters` table (see [`wide`]).
//!
//! Times and 64-bit ids are delta-encoded, strings dictionary-encoded, the rest plain; every
//! column goes through the codec. See [`part`] for how a table's columns are encoded in
//! parallel.
//!
//! Columns have their own types: times are nanosecond timestamps, ids unsigned integers,
//! strings (kernel, domain, operation and counter names) dictionary-encoded; counter
//! samples have a column per dimension coordinate. Every file carries statistics per column
//! and row group, and key-value metadata saying what wrote it: `rocflow.version`,
//! `rocflow.pipeline` and `rocflow.pipeline.hash` (the pipeline the run was recorded
//! with), `rocflow.command` (rocflow's command line), `rocflow.host` and
//! `rocflow.application` (the profiled processes' hosts and command lines).
//!
//! Its options, and their defaults, are [`Options`].

mod dataset;
mod info;
mod part;
mod wide;

use std::path::PathBuf;
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use rayon::prelude::*;
use serde::Deserialize;

use self::dataset::{Dataset, Layout, Placed};
use self::wide::WideCounters;
use super::{Sink, SinkError};
use crate::arrow::records;
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::plan::Provenance;
use crate::plan::sink::parquet::{Codec, Options};
use crate::record::{Batch, RecordKind};
use crate::table::Table;

/// Derived columns the tables leave out. A counter sample's kernel name repeats its
/// dispatch's in every sample of every counter and dimension instance (dozens per dispatch,
/// most of a run's records): it is a join away (`kernel_symbols`, by `pid` and `kernel_id`),
/// and resolving and encoding it would take a tenth of the sink's time.
const LEFT_OUT: &[(RecordKind, &str)] = &[(RecordKind::CounterSample, "kernel_name")];

impl Codec {
    fn compression(self) -> Compression {
        match self {
            Codec::Zstd => Compression::ZSTD(ZstdLevel::default()),
            Codec::Snappy => Compression::SNAPPY,
            Codec::Lz4 => Compression::LZ4_RAW,
            Codec::None => Compression::UNCOMPRESSED,
        }
    }
}

pub struct ParquetSink {
    dataset: Dataset,
    wide: Option<WideCounters>,
    /// The pipeline the run was recorded with, once the run's metadata has given it.
    pipeline: Option<Provenance>,
    /// The last window's rows, written while the next window is turned into batches.
    pending: Vec<Placed>,
}

impl ParquetSink {
    pub fn create(options: &Options, path: PathBuf) -> Result<ParquetSink, SinkError> {
        let mut partition_by = options.partition_by.clone();
        partition_by.dedup();
        let layout = Layout {
            compression: options.compression.compression(),
            row_group_rows: options.row_group_rows.max(1),
            max_file_size: options.max_file_size.as_ref().map(|size| size.bytes),
            partition_by,
        };
        Ok(ParquetSink {
            dataset: Dataset::create(path, layout)?,
            wide: options.wide_counters.then(WideCounters::default),
            pipeline: None,
            pending: Vec::new(),
        })
    }

    /// Brings the files' key-value metadata up to date with the run's metadata.
    fn describe(&mut self, catalog: &Catalog) {
        if self.pipeline.is_none() {
            /// The part of a recorded plan that says where it came from.
            #[derive(Deserialize)]
            struct Recorded {
                pipeline: Provenance,
            }
            self.pipeline = catalog
                .plan
                .as_deref()
                .and_then(|json| serde_json::from_str::<Recorded>(json).ok())
                .map(|recorded| recorded.pipeline);
        }
        let processes: Vec<_> = catalog
            .streams()
            .filter_map(|(_, meta)| meta.process.as_ref())
            .collect();
        let distinct = |values: Vec<String>| {
            let mut values = values;
            values.sort_unstable();
            values.dedup();
            values
        };
        let hosts = distinct(processes.iter().map(|p| p.hostname.clone()).collect());
        let commands = distinct(processes.iter().map(|p| p.command.join(" ")).collect());
        let mut metadata = vec![
            ("rocflow.version", env!("CARGO_PKG_VERSION").to_owned()),
            (
                "rocflow.command",
                std::env::args().collect::<Vec<_>>().join(" "),
            ),
            ("rocflow.host", hosts.join(",")),
            ("rocflow.application", commands.join("\n")),
        ];
        if let Some(pipeline) = &self.pipeline {
            metadata.push(("rocflow.pipeline", pipeline.name.clone()));
            metadata.push(("rocflow.pipeline.hash", pipeline.hash.clone()));
        }
        // Known once the input has ended: the files completed at the end carry it (all of
        // them, unless `max_file_size` completed some before).
        if let Some(why) = &catalog.partial {
            metadata.push(("rocflow.partial", why.clone()));
        }
        self.dataset.describe(
            metadata
                .into_iter()
                .map(|(key, value)| KeyValue::new(key.to_owned(), value))
                .collect(),
        );
    }
}

impl Sink for ParquetSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        self.describe(catalog);
        let layout = Arc::clone(self.dataset.layout());
        let previous = std::mem::take(&mut self.pending);
        let dataset = &mut self.dataset;
        // The window becomes batches (a chunk per task) while the previous window's are
        // encoded (a folder per task).
        let (mut placed, written) = rayon::join(
            || {
                window
                    .par_iter()
                    .map(|chunk| {
                        let meta = catalog.stream(chunk.stream);
                        let batch = records::batch(chunk, meta, LEFT_OUT);
                        layout.place(chunk.batch.kind().name(), meta.process.as_ref(), batch)
                    })
                    .collect::<Vec<_>>()
            },
            || dataset.write(previous),
        );
        if let Some(wide) = &mut self.wide {
            for chunk in window {
                if let Batch::CounterSample(samples) = &chunk.batch {
                    wide.add(chunk.stream, samples);
                }
            }
            placed.extend(wide_rows(wide, &layout, catalog));
        }
        self.pending = placed;
        written
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        let taken = RecordKind::names()
            .chain(info::TABLES.iter().copied())
            .chain([wide::TABLE])
            .any(|name| name == table.name);
        if taken {
            return Err(SinkError::NameClash {
                context: format!("writing the table of aggregate `{}`", table.name),
                reason: "the Parquet dataset has a table of that name; rename the transform".into(),
            });
        }
        let placed = self
            .dataset
            .layout()
            .place(&table.name, None, records::table(table));
        self.dataset.write(vec![placed])
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        self.describe(catalog);
        let layout = Arc::clone(self.dataset.layout());
        let mut placed = std::mem::take(&mut self.pending);
        if let Some(wide) = &mut self.wide {
            wide.close();
            placed.extend(wide_rows(wide, &layout, catalog));
        }
        for (_, meta) in catalog.streams() {
            for (name, batch) in info::tables(meta) {
                placed.push(layout.place(name, meta.process.as_ref(), batch));
            }
        }
        self.dataset.write(placed)?;
        self.dataset.finish()
    }
}

/// The complete rows of the `dispatch_counters` table, in their partitions.
fn wide_rows(wide: &mut WideCounters, layout: &Layout, catalog: &Catalog) -> Vec<Placed> {
    wide.take(catalog)
        .into_iter()
        .map(|(stream, batch)| {
            layout.place(wide::TABLE, catalog.stream(stream).process.as_ref(), batch)
        })
        .collect()
}
