//! The files a worker shares with its supervisor, in a folder of its own.

use std::path::PathBuf;

/// A worker's folder: the worker writes these files, the supervisor reads them when it
/// ends, and removes the folder.
pub struct Files {
    dir: PathBuf,
}

impl Files {
    pub fn new(dir: PathBuf) -> Files {
        Files { dir }
    }

    /// The input running now (or the last one).
    pub fn input(&self) -> PathBuf {
        self.dir.join("input")
    }

    /// What the worker caught: its kind on the first line, then the message.
    pub fn caught(&self) -> PathBuf {
        self.dir.join("caught")
    }

    /// The worker's standard error, where the runtime says why it aborted.
    pub fn stderr(&self) -> PathBuf {
        self.dir.join("stderr")
    }

    /// How many inputs the worker has run, as 8 little-endian bytes, written before each
    /// runs: right however the worker ends.
    pub fn runs(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// What [`Files::runs`] says; 0 if the worker ran nothing.
    pub fn read_runs(&self) -> u64 {
        let bytes = std::fs::read(self.runs()).unwrap_or_default();
        bytes.try_into().map_or(0, u64::from_le_bytes)
    }

    /// Where targets write the files they need.
    pub fn scratch(&self) -> PathBuf {
        self.dir.join("scratch")
    }
}
