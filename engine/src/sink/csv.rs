//! The CSV sink: a directory with one file per record kind (every column of the kind, then
//! the columns `derive` transforms added) and one per aggregate table.
//!
//! Files are written into a hidden sibling directory and moved into place when the run
//! ends, so a failed run leaves no half-written output where the final one would be.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::{Cell, row};
use crate::record::RecordKind;
use crate::transform::Table;

use super::{Sink, SinkError};

pub struct CsvSink {
    path: PathBuf,
    staging: PathBuf,
    files: HashMap<RecordKind, BufWriter<File>>,
    written: Vec<PathBuf>,
    line: Vec<u8>,
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
            line: Vec::with_capacity(512),
        })
    }

    fn file(
        &mut self,
        name: &str,
        header: impl Iterator<Item = String>,
    ) -> Result<BufWriter<File>, SinkError> {
        let path = self.staging.join(format!("{name}.csv"));
        let file =
            File::create(&path).map_err(SinkError::io(format!("creating {}", path.display())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
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
        let out = self.files.get_mut(&kind).expect("just inserted");
        let line = &mut self.line;
        for i in 0..chunk.len() {
            line.clear();
            let record = row(&chunk.batch, i);
            for (c, (name, _)) in kind.columns().enumerate() {
                if c > 0 {
                    line.push(b',');
                }
                match record.cell(name, meta) {
                    Some(Cell::Int(v)) => {
                        line.extend_from_slice(itoa::Buffer::new().format(v).as_bytes())
                    }
                    Some(Cell::Float(v)) => line.extend_from_slice(v.to_string().as_bytes()),
                    Some(Cell::Str(s)) => quote(s, line),
                    None => {}
                }
            }
            for extra in &chunk.extra {
                line.push(b',');
                match &extra.values[i] {
                    evalexpr::Value::String(s) => quote(s, line),
                    evalexpr::Value::Empty => {}
                    other => line.extend_from_slice(other.to_string().as_bytes()),
                }
            }
            line.push(b'\n');
            out.write_all(line)
                .map_err(SinkError::io(format!("writing {}.csv", kind.name())))?;
        }
        Ok(())
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        let mut out = self.file(&table.name, table.columns.iter().cloned())?;
        let mut line = Vec::new();
        for values in &table.rows {
            line.clear();
            for (c, value) in values.iter().enumerate() {
                if c > 0 {
                    line.push(b',');
                }
                match value {
                    evalexpr::Value::String(s) => quote(s, &mut line),
                    other => line.extend_from_slice(other.to_string().as_bytes()),
                }
            }
            line.push(b'\n');
            out.write_all(&line)
                .map_err(SinkError::io(format!("writing {}.csv", table.name)))?;
        }
        out.flush()
            .map_err(SinkError::io(format!("writing {}.csv", table.name)))
    }

    fn finish(mut self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
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
    if s.contains([',', '"', '\n', '\r']) {
        line.push(b'"');
        line.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        line.push(b'"');
    } else {
        line.extend_from_slice(s.as_bytes());
    }
}
