//! The raw spool: every frame of a run, as received, in one file (`run.rfraw`).
//!
//! Frames are appended as they arrive, so a crash leaves a readable prefix: the reader
//! stops at the first incomplete or corrupt frame and says which, keeping what came before.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::Path;

use crate::wire::{self, Frame, FrameReader, WireError};

/// Appends frames to a spool file.
pub struct SpoolWriter {
    out: BufWriter<File>,
    bytes: u64,
}

impl SpoolWriter {
    /// Creates (or truncates) the spool and writes the stream header.
    pub fn create(path: &Path) -> io::Result<SpoolWriter> {
        SpoolWriter::start(File::create(path)?)
    }

    /// Creates the spool, failing if the file exists: a run never replaces another's.
    pub fn create_new(path: &Path) -> io::Result<SpoolWriter> {
        SpoolWriter::start(File::create_new(path)?)
    }

    fn start(file: File) -> io::Result<SpoolWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&wire::stream_header())?;
        Ok(SpoolWriter {
            out,
            bytes: wire::STREAM_HEADER as u64,
        })
    }

    /// Appends encoded frames (see [`wire::encode_records`] and [`wire::encode_meta`]).
    pub fn write(&mut self, frames: &[u8]) -> io::Result<()> {
        self.bytes += frames.len() as u64;
        self.out.write_all(frames)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes and syncs the file.
    pub fn finish(self) -> io::Result<()> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

/// How reading a spool ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Every frame was read.
    Complete,
    /// The last frame was cut short (the run was killed while writing it); it was dropped.
    Truncated { offset: u64, missing: usize },
    /// A frame failed its checks; it and everything after it were dropped.
    Corrupt { offset: u64, reason: String },
}

impl Ending {
    /// A warning for the user, `None` for a complete spool.
    pub fn warning(&self) -> Option<String> {
        match self {
            Ending::Complete => None,
            Ending::Truncated { offset, missing } => Some(format!(
                "the spool ends inside a frame at byte {offset} ({missing} bytes missing, the run was probably interrupted); using the frames before it"
            )),
            Ending::Corrupt { offset, reason } => Some(format!(
                "the spool is corrupt at byte {offset} ({reason}); using the frames before it"
            )),
        }
    }
}

/// Reads a spool's frames in order. Iteration stops at the end of the valid prefix;
/// [`SpoolReader::ending`] then says why.
pub struct SpoolReader {
    frames: FrameReader<BufReader<File>>,
    ending: Option<Ending>,
}

impl SpoolReader {
    /// Opens a spool; fails if the file is missing or is not a spool of a version this
    /// rocflow reads.
    pub fn open(path: &Path) -> Result<SpoolReader, WireError> {
        let file = BufReader::with_capacity(1 << 20, File::open(path)?);
        Ok(SpoolReader {
            frames: FrameReader::kept(file)?,
            ending: None,
        })
    }

    /// Why iteration stopped; `None` while frames remain.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }
}

impl Iterator for SpoolReader {
    type Item = Result<Frame, io::Error>;

    /// The next frame; an I/O error reading the file is passed on, a truncated or corrupt
    /// frame ends the iteration.
    fn next(&mut self) -> Option<Self::Item> {
        if self.ending.is_some() {
            return None;
        }
        let ending = match self.frames.next_frame() {
            Ok(Some(frame)) => return Some(Ok(frame)),
            Ok(None) => Ending::Complete,
            Err(WireError::Truncated { offset, missing }) => Ending::Truncated { offset, missing },
            Err(WireError::Corrupt { offset, reason }) => Ending::Corrupt { offset, reason },
            Err(WireError::Io(e)) => return Some(Err(e)),
            Err(other @ (WireError::NotASpool | WireError::Version(_))) => {
                unreachable!("the header was checked on open: {other}")
            }
        };
        self.ending = Some(ending);
        None
    }
}
