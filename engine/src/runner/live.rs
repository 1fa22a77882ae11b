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
    /// Told once the spool holds every frame that arrived.
    complete: &'a dyn Fn(),
    /// How completing the spool went, once it was.
    completed: Option<std::io::Result<()>>,
    /// Why the run stopped waiting for the application, if a signal made it.
    pub stopped: Option<Stop>,
}

impl<'a> Live<'a> {
    pub fn new(frames: Receiver, intake: &'a Intake, complete: &'a dyn Fn()) -> Live<'a> {
        Live {
            frames,
            intake,
            complete,
            completed: None,
            stopped: None,
        }
    }

    /// Completes the spool (written out, synced, and told) and says how that went.
    fn complete_spool(&self) -> std::io::Result<()> {
        match self.intake.finish() {
            Some(e) => Err(e),
            None => {
                (self.complete)();
                Ok(())
            }
        }
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
    use std::cell::Cell;

    use super::*;
    use crate::record::{Batch, KernelDispatch};
    use crate::runner::backlog;
    use crate::source::Spool;
    use crate::spool::SpoolWriter;
    use crate::wire;

    /// The spool is completed and told once, as soon as every stream has ended, though
    /// the stages have frames still to take (a slow sink's backlog): what the post-steps'
    /// reading ahead starts on, and what a scheduler's SIGKILL must find whole.
    #[test]
    fn the_end_is_told_once_the_spool_holds_every_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let intake = Intake::new(SpoolWriter::create(&path).unwrap(), None, |_| true);
        let (sender, frames) = backlog::channel(1 << 20, dir.path());
        let batch = Batch::KernelDispatch(vec![KernelDispatch::default(); 3]);
        let mut raw = Vec::new();
        wire::encode_records(0, &batch, &mut raw);

        let told = Cell::new(0);
        let complete = || {
            let mut spool = Spool::open(&path).unwrap();
            let kept = std::iter::from_fn(|| spool.next_frame()).count();
            assert_eq!(kept, 3, "the spool is whole when the end is told");
            told.set(told.get() + 1);
        };
        let mut live = Live::new(frames, &intake, &complete);
        intake.take(&raw, &sender).unwrap();
        assert!(live.next_frame().is_some());
        assert_eq!(told.get(), 0, "told while a stream could still send");
        for _ in 0..2 {
            intake.take(&raw, &sender).unwrap();
        }
        drop(sender);
        assert!(live.next_frame().is_some());
        assert_eq!(told.get(), 1, "a frame is still to be taken");
        assert!(live.next_frame().is_some());
        assert!(live.next_frame().is_none());
        live.finish().unwrap();
        assert_eq!(told.get(), 1);
    }
}
