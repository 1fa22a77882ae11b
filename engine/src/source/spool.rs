//! A recorded run: the frames of a spool, as the runner wrote them.
//!
//! The spool is read on a thread of its own, a few frames ahead of the stages, its frames
//! decoded (and decompressed) several at once on rayon's threads: on the stages' thread,
//! reading took most of the time that every sink waits for, and bounded each replay at
//! the speed of that one thread; on one thread of its own, it still did on 16 cores.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use crate::spool::SpoolReader;
use crate::wire::{Frame, WireError};

use super::{Ending, Source, SourceError};

/// Frames decoded ahead of the stages at most (a frame is one SDK buffer flush, some
/// thousands of records), besides those the reader decodes at once: enough to cover a
/// pause of the reader. At 16, a 2 M-record trace-all replay's peak grew by 12 to 26 MiB.
const READ_AHEAD: usize = 2;

pub struct Spool {
    path: PathBuf,
    /// The frames read ahead; `None` once the source is finished.
    frames: Option<Receiver<io::Result<Frame>>>,
    /// The reading thread, which hands the reader back (it knows how the spool ended).
    reading: Option<JoinHandle<SpoolReader>>,
    /// What ended the frames early, if something did.
    failed: Option<io::Error>,
}

impl Spool {
    pub fn open(path: &Path) -> Result<Spool, WireError> {
        let mut reader = SpoolReader::open(path)?;
        let (sender, frames) = sync_channel(READ_AHEAD);
        let reading = std::thread::Builder::new()
            .name("spool reader".into())
            .spawn(move || {
                for frame in reader.by_ref() {
                    // A read that failed ends the frames, as it ends the stages' input.
                    let failed = frame.is_err();
                    // An error sending: the stages stopped taking frames.
                    if sender.send(frame).is_err() || failed {
                        break;
                    }
                }
                reader
            })
            .map_err(WireError::Io)?;
        Ok(Spool {
            path: path.to_owned(),
            frames: Some(frames),
            reading: Some(reading),
            failed: None,
        })
    }
}

impl Source for Spool {
    fn next_frame(&mut self) -> Option<Frame> {
        match self.frames.as_ref()?.recv().ok()? {
            Ok(frame) => Some(frame),
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        // A reader still sending sees the frames dropped and stops.
        self.frames = None;
        let reader = (self.reading.take()).map(|t| t.join().expect("reading does not panic"));
        if let Some(source) = self.failed.take() {
            return Err(SourceError::Read {
                path: self.path.clone(),
                source,
            });
        }
        let partial = reader.as_ref().and_then(|r| r.ending()?.warning());
        Ok(Ending {
            warning: None,
            partial,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Batch, KernelDispatch};
    use crate::spool::SpoolWriter;
    use crate::wire;

    /// A spool of `frames` frames of one dispatch each.
    fn spool(path: &Path, frames: usize) {
        let mut writer = SpoolWriter::create(path).unwrap();
        let mut raw = Vec::new();
        for _ in 0..frames {
            wire::encode_records(
                0,
                &Batch::KernelDispatch(vec![KernelDispatch::default()]),
                &mut raw,
            );
        }
        writer.write(&raw).unwrap();
        writer.finish().unwrap();
    }

    /// The frames come in order and whole, and the spool is told complete at the end.
    #[test]
    fn every_frame_is_read_ahead_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        spool(&path, 3 * READ_AHEAD);
        let mut source = Spool::open(&path).unwrap();
        let frames = std::iter::from_fn(|| source.next_frame()).count();
        assert_eq!(frames, 3 * READ_AHEAD);
        let ending = source.finish().unwrap();
        assert_eq!(ending.partial, None);
    }

    /// Stages that stop early (a strict transform failed) finish the source while its
    /// reader waits to hand over more frames: the reader stops instead of holding them.
    #[test]
    fn finishing_early_stops_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        spool(&path, 3 * READ_AHEAD);
        let mut source = Spool::open(&path).unwrap();
        assert!(source.next_frame().is_some());
        source.finish().unwrap();
        assert!(
            source.next_frame().is_none(),
            "a finished source has no frames"
        );
    }
}
