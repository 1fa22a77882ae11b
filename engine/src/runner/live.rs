//! A live run: the frames the application's processes send, as the runner's listener
//! takes them in (and writes them to the run's spool).

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use super::backlog::Receiver;
use super::listen::Intake;
use super::signals::{self, Stop};
use crate::source::{Ending, Source, SourceError};
use crate::wire::Frame;

pub struct Live<'a> {
    frames: Receiver,
    intake: &'a Intake,
    /// How completing the spool went, once it was.
    completed: Option<std::io::Result<()>>,
    /// Why the run stopped waiting for the application, if a signal made it.
    pub stopped: Option<Stop>,
}

impl<'a> Live<'a> {
    pub fn new(frames: Receiver, intake: &'a Intake) -> Live<'a> {
        Live {
            frames,
            intake,
            completed: None,
            stopped: None,
        }
    }

    /// Completes the spool (written out and synced) and says how that went.
    fn complete_spool(&self) -> std::io::Result<()> {
        self.intake.finish().map_or(Ok(()), Err)
    }
}

impl Source for Live<'_> {
    /// Waits for the next frame, until every process has gone, or a second Ctrl-C or the
    /// grace after SIGTERM says to stop waiting.
    fn next_frame(&mut self) -> Option<Frame> {
        if self.stopped.is_some() {
            return None;
        }
        loop {
            match self.frames.recv_timeout(Duration::from_millis(100)) {
                Ok(frame) => {
                    // Every process's stream has ended, though slow sinks may still have
                    // much to take: the spool is completed now, not after them, so that a
                    // scheduler's SIGKILL while they catch up finds it whole.
                    if self.completed.is_none() && self.frames.senders_gone() {
                        self.completed = Some(self.complete_spool());
                    }
                    return Some(frame);
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.stopped = signals::stop_waiting();
                    if self.stopped.is_some() {
                        return None;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Completes the spool, if every stream's end did not already: every frame that
    /// arrived is in it before the sinks finish (which can take long enough for a
    /// scheduler's SIGKILL to come first).
    fn finish(&mut self) -> Result<Ending, SourceError> {
        let completed = (self.completed.take()).unwrap_or_else(|| self.complete_spool());
        completed
            .map(|()| Ending::default())
            .map_err(SourceError::Spool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Batch, KernelDispatch};
    use crate::runner::backlog;
    use crate::spool::{self, SpoolReader, SpoolWriter};
    use crate::wire;

    /// The spool is completed as soon as every stream has ended, though the stages have
    /// frames still to take (a slow sink's backlog): a scheduler's SIGKILL while they
    /// catch up must find it whole.
    #[test]
    fn the_spool_is_whole_once_every_stream_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let intake = Intake::new(SpoolWriter::create(&path).unwrap(), None, |_| true);
        let (sender, frames) = backlog::channel(1 << 20, dir.path());
        let batch = Batch::KernelDispatch(vec![KernelDispatch::default(); 3]);
        let mut raw = Vec::new();
        wire::encode_records(0, &batch, &mut raw);

        // The frames the spool holds, and whether its end is recorded (none of it may be
        // written out yet, not even its header).
        let kept = || {
            SpoolReader::open(&path).map_or((0, false), |mut spool| {
                let frames = spool.by_ref().count();
                (frames, spool.ending() == Some(&spool::Ending::Complete))
            })
        };
        let mut live = Live::new(frames, &intake);
        intake.take(&raw, &sender).unwrap();
        assert!(live.next_frame().is_some());
        assert!(!kept().1, "completed while a stream could still send");
        for _ in 0..2 {
            intake.take(&raw, &sender).unwrap();
        }
        drop(sender);
        assert!(live.next_frame().is_some());
        assert_eq!(kept(), (3, true), "a frame is still to be taken");
        assert!(live.next_frame().is_some());
        assert!(live.next_frame().is_none());
        live.finish().unwrap();
        assert_eq!(kept(), (3, true));
    }
}
