//! The dataset directory: a folder per table holding its part files (`part-0.parquet`, …),
//! optionally split into hive partitions (`kernel_dispatch/host=node1/pid=4000/`), which
//! readers such as DuckDB and pyarrow read as one dataset, taking the partition columns
//! from the path (they are left out of the files, as hive readers expect).
//!
//! Each folder of part files has its own [`Part`] writer; folders that get rows in the same
//! window are written in parallel, and so are the columns of each. A part file is completed
//! (and the next one begun) when it reaches `max_file_size`, or when the columns of the rows
//! change (a `derive` column whose values changed type, a counter seen for the first time).
//! Everything is written under a [`Staging`] directory, moved into place when complete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use rayon::prelude::*;

use super::part::{Part, compression_ratio};
use crate::plan::sink::parquet::Partition;
use crate::record::Process;
use crate::sink::SinkError;
use crate::sink::staging::Staging;

impl Partition {
    /// The partition's key in folder names, and the column it takes out of the files.
    fn column(self) -> &'static str {
        match self {
            Partition::Host => "host",
            Partition::Process => "pid",
        }
    }
}

/// How files are written.
#[derive(Debug, Clone)]
pub struct Layout {
    pub compression: Compression,
    pub row_group_rows: usize,
    pub max_file_size: Option<u64>,
    pub partition_by: Vec<Partition>,
}

impl Layout {
    /// Places rows of `table` from `process` (rows of no process, such as aggregates, are
    /// never partitioned) in the folder of their partition, without the partition columns.
    pub fn place(&self, table: &str, process: Option<&Process>, mut batch: RecordBatch) -> Placed {
        let mut folder = PathBuf::from(table);
        if let Some(process) = process {
            for &partition in &self.partition_by {
                let value = match partition {
                    Partition::Host => escape(&process.hostname),
                    Partition::Process => process.pid.to_string(),
                };
                folder.push(format!("{}={value}", partition.column()));
                if let Ok(column) = batch.schema().index_of(partition.column()) {
                    batch.remove_column(column);
                }
            }
        }
        Placed { folder, batch }
    }
}

pub struct Dataset {
    // Dropped first on failure: files are closed before the staging directory goes.
    folders: BTreeMap<PathBuf, Folder>,
    staging: Staging,
    layout: Arc<Layout>,
    /// Key-value metadata of every file (provenance), written when the file is completed.
    metadata: Vec<KeyValue>,
}

/// Rows of one table bound for the folder of one partition.
pub struct Placed {
    folder: PathBuf,
    batch: RecordBatch,
}

impl Dataset {
    pub fn create(path: PathBuf, layout: Layout) -> Result<Dataset, SinkError> {
        Ok(Dataset {
            folders: BTreeMap::new(),
            staging: Staging::create(path)?,
            layout: Arc::new(layout),
            metadata: Vec::new(),
        })
    }

    /// Sets the key-value metadata of the files completed from now on.
    pub fn describe(&mut self, metadata: Vec<KeyValue>) {
        self.metadata = metadata;
    }

    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Writes placed rows, in order within each folder, the folders in parallel.
    pub fn write(&mut self, placed: Vec<Placed>) -> Result<(), SinkError> {
        let mut work: BTreeMap<PathBuf, Vec<RecordBatch>> = BTreeMap::new();
        for Placed { folder, batch } in placed {
            if !self.folders.contains_key(&folder) {
                let dir = self.staging.dir().join(&folder);
                self.folders.insert(folder.clone(), Folder::new(dir));
            }
            work.entry(folder).or_default().push(batch);
        }
        let jobs: Vec<(&mut Folder, Vec<RecordBatch>)> = self
            .folders
            .iter_mut()
            .filter_map(|(name, folder)| Some((folder, work.remove(name)?)))
            .collect();
        let (layout, metadata) = (&*self.layout, &self.metadata);
        jobs.into_par_iter().try_for_each(|(folder, batches)| {
            batches
                .iter()
                .try_for_each(|batch| folder.write(batch, layout, metadata))
                .and_then(|()| folder.encode())
                .map_err(|e| folder.failed(e))
        })
    }

    /// Completes every file and moves the dataset into place; returns its tables' folders.
    pub fn finish(self) -> Result<Vec<PathBuf>, SinkError> {
        let Dataset {
            mut folders,
            staging,
            metadata,
            ..
        } = self;
        folders
            .par_iter_mut()
            .try_for_each(|(_, folder)| folder.close(&metadata).map_err(|e| folder.failed(e)))?;
        let mut tables: Vec<PathBuf> = folders
            .keys()
            .filter_map(|folder| folder.iter().next())
            .map(|table| staging.target().join(table))
            .collect();
        tables.dedup();
        staging.commit(is_dataset)?;
        Ok(tables)
    }
}

/// The part files of one table (and partition).
struct Folder {
    dir: PathBuf,
    /// Part files begun so far.
    parts: usize,
    open: Option<Part>,
    /// Compressed bytes per encoded byte in the part files completed so far (1 until
    /// one is), to judge the size of a row group still being encoded.
    ratio: f64,
}

impl Folder {
    fn new(dir: PathBuf) -> Folder {
        Folder {
            dir,
            parts: 0,
            open: None,
            ratio: 1.0,
        }
    }

    fn write(
        &mut self,
        batch: &RecordBatch,
        layout: &Layout,
        metadata: &[KeyValue],
    ) -> Result<(), ParquetError> {
        if self
            .open
            .as_ref()
            .is_some_and(|part| *part.schema() != batch.schema())
        {
            self.close(metadata)?;
        }
        // A table without rows still gets a file, which gives its columns.
        if batch.num_rows() == 0 && self.parts > 0 {
            return Ok(());
        }
        let mut rest = batch.clone();
        loop {
            let part = match &mut self.open {
                Some(part) => part,
                None => {
                    std::fs::create_dir_all(&self.dir)?;
                    let path = self.dir.join(format!("part-{}.parquet", self.parts));
                    self.parts += 1;
                    let part = Part::create(&path, rest.schema(), layout.compression)?;
                    self.open.insert(part)
                }
            };
            let mut rows = rest
                .num_rows()
                .min(layout.row_group_rows - part.group_rows());
            if let Some(max) = layout.max_file_size {
                // Sizes are known once the rows so far are encoded.
                part.encode()?;
                rows = part.rows_that_fit(rows, max, self.ratio);
            }
            part.write(&rest.slice(0, rows))?;
            rest = rest.slice(rows, rest.num_rows() - rows);
            if part.group_rows() >= layout.row_group_rows {
                part.flush()?;
            }
            if let Some(max) = layout.max_file_size {
                part.encode()?;
                if part.size(self.ratio) >= max {
                    self.close(metadata)?;
                }
            }
            if rest.num_rows() == 0 {
                return Ok(());
            }
        }
    }

    /// Encodes the rows the open part file has queued.
    fn encode(&mut self) -> Result<(), ParquetError> {
        self.open.as_mut().map_or(Ok(()), Part::encode)
    }

    /// Completes the open part file, with the dataset's key-value metadata as it stands.
    fn close(&mut self, metadata: &[KeyValue]) -> Result<(), ParquetError> {
        let Some(part) = self.open.take() else {
            return Ok(());
        };
        let file = part.close(metadata)?;
        let groups = file.row_groups().iter();
        if let Some(ratio) =
            compression_ratio(groups.map(|g| (g.compressed_size(), g.total_byte_size())))
        {
            self.ratio = ratio;
        }
        Ok(())
    }

    fn failed(&self, error: ParquetError) -> SinkError {
        let context = format!("writing {}", self.dir.display());
        match error {
            ParquetError::External(e) => match e.downcast::<std::io::Error>() {
                Ok(io) => SinkError::Io {
                    context,
                    source: *io,
                },
                Err(other) => SinkError::Parquet {
                    context,
                    source: ParquetError::External(other),
                },
            },
            source => SinkError::Parquet { context, source },
        }
    }
}

/// A partition value as hive paths spell it: characters that are not plain are escaped as
/// `%XX`.
fn escape(value: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_');
    value
        .bytes()
        .map(|b| match plain(b) {
            true => char::from(b).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}

/// An earlier output of this sink: a directory of folders holding nothing but part files.
fn is_dataset(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|entries| {
        entries.flatten().all(|entry| {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => is_dataset(&path),
                _ => path.extension().is_some_and(|x| x == "parquet"),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_escape_what_paths_cannot_hold() {
        assert_eq!(escape("node-7.cluster_a"), "node-7.cluster_a");
        assert_eq!(escape("a/b=c d"), "a%2Fb%3Dc%20d");
    }
}
