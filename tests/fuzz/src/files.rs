//! The files a worker shares with its supervisor, in a folder of its own.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A worker's folder: the worker writes these files, the supervisor reads them when it
/// ends, and removes the folder.
pub struct Files {
    dir: PathBuf,
}

impl Files {
    pub fn new(dir: PathBuf) -> Files {
        Files { dir }
    }

    /// How many inputs the worker has run, and the one running now (or the last one):
    /// see [`Running`].
    pub fn running(&self) -> PathBuf {
        self.dir.join("running")
    }

    /// What [`Files::running`] says: inputs run (0 if none) and the last one.
    pub fn read_running(&self) -> (u64, Vec<u8>) {
        let bytes = std::fs::read(self.running()).unwrap_or_default();
        let field = |at: usize| {
            let field = bytes.get(at..at + 8).and_then(|b| b.try_into().ok());
            field.map_or(0, u64::from_le_bytes)
        };
        let len = usize::try_from(field(8)).unwrap_or(usize::MAX);
        let input = bytes.get(HEADER..).unwrap_or_default();
        (field(0), input[..len.min(input.len())].to_vec())
    }

    /// What the worker caught: its kind on the first line, then the message.
    pub fn caught(&self) -> PathBuf {
        self.dir.join("caught")
    }

    /// The worker's standard error, where the runtime says why it aborted.
    pub fn stderr(&self) -> PathBuf {
        self.dir.join("stderr")
    }

    /// Where mutations that need a file (SQL on a database) make it.
    pub fn mutating(&self) -> PathBuf {
        self.dir.join("mutating")
    }

    /// Where targets write the files they need.
    pub fn scratch(&self) -> PathBuf {
        self.dir.join("scratch")
    }
}

/// Bytes before the input in [`Files::running`]: the count of inputs run, then the
/// input's length, each 8 little-endian bytes.
const HEADER: usize = 16;

/// The worker's side of [`Files::running`], written before each input runs so that it is
/// right however the worker ends. It is written in place and never truncated: a file
/// truncated and written again is flushed to disk when closed (ext4's `auto_da_alloc`),
/// which took more time than many inputs do.
pub struct Running {
    file: File,
    runs: u64,
}

impl Running {
    pub fn create(files: &Files) -> Running {
        Running {
            file: File::create(files.running()).expect("the worker folder is writable"),
            runs: 0,
        }
    }

    /// Notes that `input` runs next.
    pub fn start(&mut self, input: &[u8]) {
        self.runs += 1;
        let mut header = [0; HEADER];
        header[..8].copy_from_slice(&self.runs.to_le_bytes());
        header[8..].copy_from_slice(&(input.len() as u64).to_le_bytes());
        (self.file.write_all_at(input, HEADER as u64))
            .and_then(|()| self.file.write_all_at(&header, 0))
            .expect("the worker folder is writable");
    }
}

/// Writes `bytes` to `path` as a new file (the old one, if any, removed first): without
/// the flush that truncating a file would cost (see [`Running`]), and without changing a
/// file something may still have mapped.
pub fn replace(path: &Path, bytes: &[u8]) {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            panic!("removing {}: {e}", path.display())
        }
        _ => {}
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
