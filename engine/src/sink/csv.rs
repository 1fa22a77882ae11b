//! The CSV sink: a directory with one file per record kind (every column of the kind, then
//! the columns `derive` transforms added) and one per aggregate table.
//!
//! Files are written into a hidden sibling directory and moved into place when the run
//! ends, so a failed run leaves no half-written output where the final one would be.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::{BatchVisitor, Cell, Columns, visit};
use crate::record::RecordKind;
use crate::transform::Table;

use super::{Sink, SinkError};

pub struct CsvSink {
    path: PathBuf,
    staging: PathBuf,
    files: HashMap<RecordKind, File>,
    written: Vec<PathBuf>,
    /// Formatted text waiting to be written, and texts free for reuse.
    pending: Option<Pending>,
    spare: Vec<Text>,
}

/// A formatted chunk not yet written.
struct Pending {
    kind: RecordKind,
    texts: Vec<Text>,
    blocks: usize,
}

impl Pending {
    /// Writes the text to its kind's file; gives the texts back for reuse.
    fn write_to(self, files: &mut HashMap<RecordKind, File>) -> (Vec<Text>, Result<(), SinkError>) {
        let out = files
            .get_mut(&self.kind)
            .expect("files are created before their text");
        let result = self.texts[..self.blocks]
            .iter()
            .try_for_each(|text| out.write_all(&text.bytes))
            .map_err(|e| SinkError::io(format!("writing {}.csv", self.kind.name()))(e));
        (self.texts, result)
    }
}

/// Rows formatted by one task.
const ROWS_PER_BLOCK: usize = 1024;

/// CSV text being built, with the escaped form of the long strings seen so far: kernel
/// names repeat on most rows, and are scanned for quoting once.
#[derive(Default)]
struct Text {
    bytes: Vec<u8>,
    escaped: FxHashMap<(usize, usize), Box<[u8]>>,
}

/// Formats a chunk's rows in blocks, in parallel.
struct Blocks<'a> {
    chunk: &'a Chunk,
    meta: &'a StreamMeta,
    /// One text per block, reused from chunk to chunk.
    texts: &'a mut [Text],
}

impl BatchVisitor for Blocks<'_> {
    type Output = ();

    fn visit<R: Columns>(self, records: &[R]) {
        records
            .par_chunks(ROWS_PER_BLOCK)
            .zip(self.texts.par_iter_mut())
            .enumerate()
            .for_each(|(block, (rows, text))| {
                text.bytes.clear();
                // The escaped strings are only known to live as long as this chunk's
                // metadata read lock.
                text.escaped.clear();
                for (offset, record) in rows.iter().enumerate() {
                    let mut first = true;
                    record.for_each_cell(self.meta, |cell| {
                        if !first {
                            text.bytes.push(b',');
                        }
                        first = false;
                        text.field(cell);
                    });
                    for extra in &self.chunk.extra {
                        text.bytes.push(b',');
                        text.value(&extra.values[block * ROWS_PER_BLOCK + offset]);
                    }
                    text.bytes.push(b'\n');
                }
            });
    }
}

impl Text {
    /// A value of an added column or an aggregate table.
    fn value(&mut self, value: &evalexpr::Value) {
        match value {
            evalexpr::Value::String(s) => quote(s, &mut self.bytes),
            evalexpr::Value::Int(v) => self.field(Cell::Int(*v)),
            evalexpr::Value::Float(v) => self.field(Cell::Float(*v)),
            evalexpr::Value::Empty => {}
            other => quote(&other.to_string(), &mut self.bytes),
        }
    }

    fn field(&mut self, cell: Cell<'_>) {
        match cell {
            Cell::Int(v) => self
                .bytes
                .extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
            // Counter values are mostly whole numbers: print them as integers.
            Cell::Float(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => self
                .bytes
                .extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes()),
            Cell::Float(v) => self
                .bytes
                .extend_from_slice(ryu::Buffer::new().format(v).as_bytes()),
            Cell::Str(s) if s.len() > 8 => {
                // Metadata strings do not move while a chunk is written: their address
                // identifies them.
                let escaped = self
                    .escaped
                    .entry((s.as_ptr() as usize, s.len()))
                    .or_insert_with(|| {
                        let mut out = Vec::with_capacity(s.len() + 2);
                        quote(s, &mut out);
                        out.into_boxed_slice()
                    });
                self.bytes.extend_from_slice(escaped);
            }
            Cell::Str(s) => quote(s, &mut self.bytes),
        }
    }
}

impl CsvSink {
    pub fn create(path: PathBuf) -> Result<CsvSink, SinkError> {
        let name = path
            .file_name()
            .map_or_else(|| "csv".into(), |n| n.to_string_lossy().into_owned());
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .map_err(SinkError::io(format!("creating {}", parent.display())))?;
        let staging = parent.join(format!(".{name}.rocflow-{}", std::process::id()));
        std::fs::create_dir_all(&staging)
            .map_err(SinkError::io(format!("creating {}", staging.display())))?;
        Ok(CsvSink {
            path,
            staging,
            files: HashMap::new(),
            written: Vec::new(),
            pending: None,
            spare: Vec::new(),
        })
    }

    /// Creates a file with its header line. Rows are written in large blocks, so files
    /// need no buffering of their own.
    fn file(
        &mut self,
        name: &str,
        header: impl Iterator<Item = String>,
    ) -> Result<File, SinkError> {
        let path = self.staging.join(format!("{name}.csv"));
        let mut out =
            File::create(&path).map_err(SinkError::io(format!("creating {}", path.display())))?;
        let header: Vec<String> = header.collect();
        writeln!(out, "{}", header.join(","))
            .map_err(SinkError::io(format!("writing {}", path.display())))?;
        self.written.push(self.path.join(format!("{name}.csv")));
        Ok(out)
    }
}

impl Sink for CsvSink {
    fn write(&mut self, chunk: &Chunk, meta: &StreamMeta) -> Result<(), SinkError> {
        let kind = chunk.batch.kind();
        if !self.files.contains_key(&kind) {
            let header = kind
                .columns()
                .map(|(name, _)| name.to_owned())
                .chain(chunk.extra.iter().map(|e| e.name.to_string()));
            let file = self.file(kind.name(), header)?;
            self.files.insert(kind, file);
        }
        // Rows are formatted in parallel, in blocks, while the previous chunk's text is
        // written: formatting and writing overlap.
        let blocks = chunk.len().div_ceil(ROWS_PER_BLOCK);
        let mut texts = std::mem::take(&mut self.spare);
        if texts.len() < blocks {
            texts.resize_with(blocks, Text::default);
        }
        let previous = self.pending.take();
        let files = &mut self.files;
        let ((), written) = rayon::join(
            || {
                visit(
                    &chunk.batch,
                    Blocks {
                        chunk,
                        meta,
                        texts: &mut texts[..blocks],
                    },
                )
            },
            || previous.map(|p| p.write_to(files)),
        );
        self.pending = Some(Pending {
            kind,
            texts,
            blocks,
        });
        match written {
            Some((spare, result)) => {
                self.spare = spare;
                result
            }
            None => Ok(()),
        }
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        let mut out = self.file(&table.name, table.columns.iter().cloned())?;
        let mut text = Text::default();
        for values in &table.rows {
            for (c, value) in values.iter().enumerate() {
                if c > 0 {
                    text.bytes.push(b',');
                }
                text.value(value);
            }
            text.bytes.push(b'\n');
        }
        out.write_all(&text.bytes)
            .map_err(SinkError::io(format!("writing {}.csv", table.name)))?;
        out.flush()
            .map_err(SinkError::io(format!("writing {}.csv", table.name)))
    }

    fn finish(mut self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        if let Some(pending) = self.pending.take() {
            pending.write_to(&mut self.files).1?;
        }
        for (kind, mut out) in self.files.drain() {
            out.flush()
                .map_err(SinkError::io(format!("writing {}.csv", kind.name())))?;
        }
        replace_dir(&self.staging, &self.path)?;
        Ok(std::mem::take(&mut self.written))
    }
}

impl Drop for CsvSink {
    /// A sink that did not finish leaves nothing behind (after a finish, the staging
    /// directory is gone already).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Moves `staging` to `target`, replacing an earlier CSV output there (a directory of
/// `.csv` files only); anything else at `target` is left alone and reported.
fn replace_dir(staging: &Path, target: &Path) -> Result<(), SinkError> {
    if target.exists() {
        let ours = std::fs::read_dir(target)
            .map(|entries| {
                entries
                    .flatten()
                    .all(|e| e.path().extension().is_some_and(|x| x == "csv"))
            })
            .unwrap_or(false);
        if !ours {
            return Err(SinkError::Io {
                context: format!("writing {}", target.display()),
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "it exists and is not an earlier CSV output; remove it or choose another path",
                ),
            });
        }
        std::fs::remove_dir_all(target)
            .map_err(SinkError::io(format!("replacing {}", target.display())))?;
    }
    std::fs::rename(staging, target).map_err(SinkError::io(format!(
        "moving output to {}",
        target.display()
    )))
}

/// Appends a CSV field, quoted when it holds a comma, quote or line break.
fn quote(s: &str, line: &mut Vec<u8>) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        line.push(b'"');
        line.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        line.push(b'"');
    } else {
        line.extend_from_slice(s.as_bytes());
    }
}
