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
