//! Where records wait, already written as JSON, for their place in the document: the
//! document puts every process's descriptions and statistics before its records, and each
//! kind's records in an array of its own, so the records of a window are appended to one
//! file as they come and copied into the document, array by array, when the run ends.
//! Memory holds only where each window's part of an array lies.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::PathBuf;

/// The file of written records, opened for each window rather than held open: a run
/// with thousands of processes has as many outputs.
pub struct Spill {
    path: PathBuf,
    len: u64,
}

impl Spill {
    pub fn new(path: PathBuf) -> Spill {
        Spill { path, len: 0 }
    }

    /// Appends `parts` and returns where each lies.
    pub fn append(&mut self, parts: &[&[u8]]) -> io::Result<Vec<Range<u64>>> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        let mut ranges = Vec::with_capacity(parts.len());
        for part in parts {
            out.write_all(part)?;
            let end = self.len + part.len() as u64;
            ranges.push(self.len..end);
            self.len = end;
        }
        out.flush()?;
        Ok(ranges)
    }

    /// Opens the file to copy parts out of it.
    pub fn reader(&self) -> io::Result<Option<File>> {
        match self.len {
            0 => Ok(None),
            _ => File::open(&self.path).map(Some),
        }
    }

    /// Removes the file.
    pub fn remove(self) -> io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Copies the part of `file` at `range` to `out`.
pub fn copy(file: &mut File, range: &Range<u64>, out: &mut impl Write) -> io::Result<()> {
    file.seek(SeekFrom::Start(range.start))?;
    let len = range.end - range.start;
    let copied = io::copy(&mut file.take(len), out)?;
    if copied != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the records' file ended early",
        ));
    }
    Ok(())
}
