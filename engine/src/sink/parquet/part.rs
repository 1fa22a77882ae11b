//! One part file being written: a Parquet file whose row group in progress is encoded a
//! column per task (arrow-rs's [`ArrowColumnWriter`]s, as its docs show for parallel
//! encoding), so that a table holding most of a run's records still spreads over every
//! core. Row groups hold up to `row_group_rows` rows; each column's pages are compressed
//! as they fill, so a part holds one row group's compressed columns in memory.

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
    compute_leaves,
};
use parquet::basic::{Compression, Encoding};
use parquet::errors::ParquetError;
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::writeback::Behind;

/// What a file's footer takes: for each column of each row group (its metadata, statistics
/// and page indexes), and for the rest (the schemas and the key-value metadata).
const FOOTER_PER_CHUNK: u64 = 256;
const FOOTER: u64 = 4096;

pub struct Part {
    file: SerializedFileWriter<Behind>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The row group being encoded: a writer per leaf column, once it has rows.
    group: Option<Vec<ArrowColumnWriter>>,
    /// Rows queued for the row group, per leaf column, until they are encoded.
    queued: Vec<Vec<ArrowLeafColumn>>,
    /// Rows in the row group, queued ones included.
    group_rows: usize,
    /// Rows in the file.
    rows: usize,
}

impl Part {
    pub fn create(
        path: &Path,
        schema: SchemaRef,
        compression: Compression,
    ) -> Result<Part, ParquetError> {
        let mut properties = WriterProperties::builder()
            .set_compression(compression)
            .set_dictionary_enabled(false);
        // Strings repeat a few names: a dictionary. Times and 64-bit ids grow or change
        // little from row to row: their deltas take a few bits, which leaves little for the
        // codec. Narrower integers (coordinates, agents, operations) repeat in runs, which
        // the codec takes cheaper than either.
        for field in schema.fields() {
            let column = ColumnPath::from(field.name().as_str());
            properties = match field.data_type() {
                DataType::Dictionary(..) => properties.set_column_dictionary_enabled(column, true),
                DataType::UInt64 | DataType::Int64 | DataType::Timestamp(..) => {
                    properties.set_column_encoding(column, Encoding::DELTA_BINARY_PACKED)
                }
                _ => properties,
            };
        }
        // The Arrow writer puts the Arrow schema in the file's metadata, for Arrow readers.
        let writer = ArrowWriter::try_new(
            Behind::create(path)?,
            schema.clone(),
            Some(properties.build()),
        )?;
        let (file, factory) = writer.into_serialized_writer()?;
        Ok(Part {
            file,
            factory,
            schema,
            group: None,
            queued: Vec::new(),
            group_rows: 0,
            rows: 0,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn group_rows(&self) -> usize {
        self.group_rows
    }

    /// Adds rows to the row group in progress; they are encoded by [`Part::encode`].
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), ParquetError> {
        let mut leaves = Vec::with_capacity(self.queued.len());
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field, column)?);
        }
        self.queued.resize_with(leaves.len(), Vec::new);
        for (queue, leaf) in self.queued.iter_mut().zip(leaves) {
            queue.push(leaf);
        }
        self.group_rows += batch.num_rows();
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Encodes the rows queued, a column per task: the more rows at once, the fewer times
    /// the tasks wait for the slowest column.
    pub fn encode(&mut self) -> Result<(), ParquetError> {
        if self.queued.is_empty() {
            return Ok(());
        }
        let group = match &mut self.group {
            Some(group) => group,
            None => {
                let index = self.file.flushed_row_groups().len();
                self.group
                    .insert(self.factory.create_column_writers(index)?)
            }
        };
        group
            .par_iter_mut()
            .zip(std::mem::take(&mut self.queued))
            .try_for_each(|(writer, leaves)| leaves.iter().try_for_each(|leaf| writer.write(leaf)))
    }

    /// Completes the row group in progress.
    pub fn flush(&mut self) -> Result<(), ParquetError> {
        self.encode()?;
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let chunks: Vec<ArrowColumnChunk> = group
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<Result<_, _>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.group_rows = 0;
        Ok(())
    }

    /// Completes the file, with `metadata` in its footer.
    pub fn close(mut self, metadata: &[KeyValue]) -> Result<ParquetMetaData, ParquetError> {
        self.flush()?;
        for pair in metadata {
            self.file.append_key_value_metadata(pair.clone());
        }
        self.file.close()
    }

    /// The file's size once complete, as it stands (queued rows aside: encode them first):
    /// the bytes of its complete row groups,
    /// those the row group being encoded will take once compressed, judged by `ratio`
    /// (compressed to encoded bytes) or by the file's own complete row groups, and an
    /// allowance for the footer.
    pub fn size(&self, ratio: f64) -> u64 {
        let groups = self.file.flushed_row_groups();
        let ratio = compression_ratio(
            groups
                .iter()
                .map(|g| (g.compressed_size(), g.total_byte_size())),
        )
        .unwrap_or(ratio);
        let encoding: usize = self
            .group
            .iter()
            .flatten()
            .map(ArrowColumnWriter::get_estimated_total_bytes)
            .sum();
        let chunks = (groups.len() + 1) * self.schema.fields().len();
        let footer = FOOTER + FOOTER_PER_CHUNK * chunks as u64;
        self.file.bytes_written() as u64 + (encoding as f64 * ratio) as u64 + footer
    }

    /// How many of `rows` more rows fit under `max` bytes, judged by the rows so far (all
    /// of them while the file is empty, and at least one).
    pub fn rows_that_fit(&self, rows: usize, max: u64, ratio: f64) -> usize {
        if self.rows == 0 {
            return rows;
        }
        let size = self.size(ratio);
        let per_row = (size / self.rows as u64).max(1);
        let room = max.saturating_sub(size) / per_row;
        (room as usize).max(1).min(rows)
    }
}

/// Compressed bytes per encoded byte of row groups given as (compressed, encoded) sizes;
/// `None` without any.
pub fn compression_ratio(groups: impl Iterator<Item = (i64, i64)>) -> Option<f64> {
    let (compressed, encoded) = groups.fold((0, 0), |(c, e), (gc, ge)| (c + gc, e + ge));
    (encoded > 0).then(|| compressed as f64 / encoded as f64)
}
