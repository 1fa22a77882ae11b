//! A live run: the frames the application's processes send, as the runner's listener
//! takes them in (and writes them to the run's spool).

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::queue::Receiver;
use crate::runner::listen::Intake;
use crate::runner::signals::{self, Stop};
use crate::wire::Frame;

use super::{Ending, Source, SourceError};

pub struct Live<'a> {
    frames: Receiver<Frame>,
    intake: &'a Intake,
    /// Told once the spool holds every frame that arrived.
    complete: &'a dyn Fn(),
    /// Why the run stopped waiting for the application, if a signal made it.
    pub stopped: Option<Stop>,
}

impl<'a> Live<'a> {
    pub fn new(frames: Receiver<Frame>, intake: &'a Intake, complete: &'a dyn Fn()) -> Live<'a> {
        Live {
            frames,
            intake,
            complete,
            stopped: None,
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
                Ok(frame) => return Some(frame),
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

    /// Completes the spool: every frame that arrived is in it before the sinks finish
    /// (which can take long enough for a scheduler's SIGKILL to come first).
    fn finish(&mut self) -> Result<Ending, SourceError> {
        match self.intake.finish() {
            Some(e) => Err(SourceError::Spool(e)),
            None => {
                (self.complete)();
                Ok(Ending::default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::queue;
    use crate::record::{Batch, KernelDispatch};
    use crate::source::Spool;
    use crate::spool::SpoolWriter;
    use crate::wire;

    /// The input's end is told once, when the spool already holds every frame: what the
    /// post-steps' reading ahead starts on.
    #[test]
    fn the_end_is_told_once_the_spool_holds_every_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let intake = Intake::new(SpoolWriter::create(&path).unwrap(), None, |_| true);
        let (sender, frames) = queue::bounded(1 << 20);
        let batch = Batch::KernelDispatch(vec![KernelDispatch::default(); 3]);
        let mut raw = Vec::new();
        wire::encode_records(0, &batch, &mut raw);
        for _ in 0..2 {
            intake.take(&raw, &sender).unwrap();
        }
        drop(sender);

        let told = Cell::new(0);
        let complete = || {
            let mut spool = Spool::open(&path).unwrap();
            let kept = std::iter::from_fn(|| spool.next_frame()).count();
            assert_eq!(kept, 2, "the spool is whole when the end is told");
            told.set(told.get() + 1);
        };
        let mut live = Live::new(frames, &intake, &complete);
        let read = std::iter::from_fn(|| live.next_frame()).count();
        assert_eq!((read, told.get()), (2, 0));
        live.finish().unwrap();
        assert_eq!(told.get(), 1);
    }
}
