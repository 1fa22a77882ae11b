//! The frames between the connections and the stages: a queue bounded in bytes, not in
//! frames, since an SDK buffer delivers up to its whole size in one frame. A full queue
//! holds the connections back, as the lossless policy asks: every frame is in the spool
//! before it is queued.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::wire::Frame;

/// A queue holding up to `limit` bytes of frames (and one frame, however large).
pub fn queue(limit: usize) -> (Sender, Receiver) {
    let (frames_in, frames) = mpsc::channel();
    let budget = Arc::new(Budget {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        limit,
    });
    (
        Sender {
            frames: frames_in,
            budget: Arc::clone(&budget),
        },
        Receiver { frames, budget },
    )
}

/// The intake takes no more frames: the spool is finished, or the stages stopped.
#[derive(Debug)]
pub struct Closed;

#[derive(Clone)]
pub struct Sender {
    frames: mpsc::Sender<(Frame, usize)>,
    budget: Arc<Budget>,
}

pub struct Receiver {
    frames: mpsc::Receiver<(Frame, usize)>,
    budget: Arc<Budget>,
}

struct Budget {
    state: Mutex<State>,
    changed: Condvar,
    limit: usize,
}

#[derive(Default)]
struct State {
    queued: usize,
    closed: bool,
}

impl Sender {
    /// Queues a frame that took `bytes` on the wire, once the queue has room for it.
    pub fn send(&self, frame: Frame, bytes: usize) -> Result<(), Closed> {
        let budget = &*self.budget;
        let mut state = budget.state.lock().expect("no poison");
        while !state.closed && state.queued > 0 && state.queued + bytes > budget.limit {
            state = budget.changed.wait(state).expect("no poison");
        }
        if state.closed {
            return Err(Closed);
        }
        state.queued += bytes;
        drop(state);
        self.frames.send((frame, bytes)).map_err(|_| Closed)
    }
}

impl Receiver {
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Frame, RecvTimeoutError> {
        let (frame, bytes) = self.frames.recv_timeout(timeout)?;
        let mut state = self.budget.state.lock().expect("no poison");
        state.queued -= bytes;
        drop(state);
        self.budget.changed.notify_all();
        Ok(frame)
    }
}

impl Drop for Receiver {
    /// Senders waiting for room give up.
    fn drop(&mut self) {
        self.budget.state.lock().expect("no poison").closed = true;
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Payload;

    fn frame() -> Frame {
        Frame {
            stream: 0,
            payload: Payload::Meta(Vec::new()),
        }
    }

    #[test]
    fn a_full_queue_holds_senders_until_frames_are_taken() {
        let (sender, receiver) = queue(100);
        sender.send(frame(), 60).unwrap();
        let waiting = {
            let sender = sender.clone();
            std::thread::spawn(move || sender.send(frame(), 60))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "120 bytes went into a 100-byte queue"
        );
        receiver.recv_timeout(Duration::from_secs(1)).unwrap();
        waiting.join().unwrap().unwrap();
        receiver.recv_timeout(Duration::from_secs(1)).unwrap();
        // A frame larger than the queue goes in alone.
        sender.send(frame(), 500).unwrap();
        receiver.recv_timeout(Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn senders_waiting_for_room_give_up_once_the_stages_stop() {
        let (sender, receiver) = queue(100);
        sender.send(frame(), 100).unwrap();
        let waiting = std::thread::spawn(move || sender.send(frame(), 1));
        std::thread::sleep(Duration::from_millis(50));
        drop(receiver);
        // A sender that never gave up would hang the test: it gets 5 s.
        let gave_up = std::time::Instant::now() + Duration::from_secs(5);
        while !waiting.is_finished() && std::time::Instant::now() < gave_up {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(waiting.is_finished(), "the sender still waits for room");
        assert!(waiting.join().unwrap().is_err());
    }
}
