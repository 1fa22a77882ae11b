//! A queue bounded in bytes, not in items: what travels through it (a frame, a delivery's
//! frames) ranges from bytes to a whole SDK buffer, so a bound in items bounds nothing.
//! The tool library queues a delivery's frames between the SDK's buffer callback and the
//! socket's writer; its senders wait for room, which bounds the application's memory. (The
//! runner's frames for the stages wait on disk past a budget instead: its `backlog`.)

use std::sync::mpsc::{self, RecvError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// A queue holding up to `limit` bytes of items, and one item however large.
pub fn bounded<T>(limit: usize) -> (Sender<T>, Receiver<T>) {
    let (items_in, items) = mpsc::channel();
    let budget = Arc::new(Budget {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        limit,
    });
    (
        Sender {
            items: items_in,
            budget: Arc::clone(&budget),
        },
        Receiver { items, budget },
    )
}

/// The receiver is gone: the queue takes no more items.
#[derive(Debug)]
pub struct Closed;

pub struct Sender<T> {
    items: mpsc::Sender<(T, usize)>,
    budget: Arc<Budget>,
}

pub struct Receiver<T> {
    items: mpsc::Receiver<(T, usize)>,
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

impl Budget {
    /// The state, whatever a panicking holder left: two counters that each step leaves
    /// consistent.
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            items: self.items.clone(),
            budget: Arc::clone(&self.budget),
        }
    }
}

impl<T> Sender<T> {
    /// Queues an item of `bytes` bytes, once the queue has room for it.
    pub fn send(&self, item: T, bytes: usize) -> Result<(), Closed> {
        let budget = &*self.budget;
        let mut state = budget.state();
        while !state.closed && state.queued > 0 && state.queued + bytes > budget.limit {
            state = budget
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.closed {
            return Err(Closed);
        }
        state.queued += bytes;
        drop(state);
        self.items.send((item, bytes)).map_err(|_| Closed)
    }
}

impl<T> Receiver<T> {
    /// The next item; `Err` once every sender is gone and the queue is empty.
    pub fn recv(&self) -> Result<T, RecvError> {
        let (item, bytes) = self.items.recv()?;
        Ok(self.taken(item, bytes))
    }

    /// Gives an item's bytes back to the senders.
    fn taken(&self, item: T, bytes: usize) -> T {
        self.budget.state().queued -= bytes;
        self.budget.changed.notify_all();
        item
    }
}

impl<T> Drop for Receiver<T> {
    /// Senders waiting for room give up.
    fn drop(&mut self) {
        self.budget.state().closed = true;
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;
    use std::time::{Duration, Instant};

    /// Whether `waiting` finishes within 5 s.
    fn finishes<R>(waiting: &thread::JoinHandle<R>) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !waiting.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        waiting.is_finished()
    }

    #[test]
    fn a_full_queue_holds_senders_until_items_are_taken() {
        let (sender, receiver) = bounded(100);
        sender.send(1, 60).unwrap();
        let waiting = {
            let sender = sender.clone();
            thread::spawn(move || sender.send(2, 60))
        };
        thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "120 bytes went into a 100-byte queue"
        );
        assert_eq!(receiver.recv().unwrap(), 1);
        assert!(finishes(&waiting), "the sender still waits for room");
        waiting.join().unwrap().unwrap();
        assert_eq!(receiver.recv().unwrap(), 2);
        // An item larger than the queue goes in alone.
        sender.send(3, 500).unwrap();
        assert_eq!(receiver.recv().unwrap(), 3);
    }

    #[test]
    fn senders_waiting_for_room_give_up_once_the_receiver_is_gone() {
        let (sender, receiver) = bounded(100);
        sender.send((), 100).unwrap();
        let waiting = thread::spawn(move || sender.send((), 1));
        thread::sleep(Duration::from_millis(50));
        drop(receiver);
        assert!(finishes(&waiting), "the sender still waits for room");
        assert!(waiting.join().unwrap().is_err());
    }

    #[test]
    fn the_receiver_drains_the_queue_after_the_senders_are_gone() {
        let (sender, receiver) = bounded(100);
        sender.send("a", 10).unwrap();
        sender.send("b", 10).unwrap();
        drop(sender);
        assert_eq!(receiver.recv().unwrap(), "a");
        assert_eq!(receiver.recv().unwrap(), "b");
        assert!(receiver.recv().is_err());
    }
}
