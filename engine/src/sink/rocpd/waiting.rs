//! Events of dispatches that counter samples name before the dispatch's own record came.
//! Counter values point at their dispatch's event, which must exist even if the dispatch
//! never comes. Written at once, bare, it had to be replaced when the dispatch came: a
//! delete and an insert in the middle of the event table, and `OR REPLACE` on every
//! dispatch's event. So those events wait here instead, and the ones whose dispatch comes
//! are never written bare. The wait is bounded: when too many wait, the one that waited
//! longest is written bare, and its dispatch, should it still come, replaces it.

use std::collections::VecDeque;

use rustc_hash::FxHashSet as HashSet;

/// Events that may wait at once: far more than the dispatches a buffer flush of counter
/// samples runs ahead of their dispatches' records, and 1.5 MiB at most.
const WAITING: usize = 1 << 16;

#[derive(Debug)]
pub struct Waiting {
    /// Events in the order they began to wait, among them some that stopped since.
    order: VecDeque<i64>,
    waiting: HashSet<i64>,
    capacity: usize,
}

impl Default for Waiting {
    fn default() -> Self {
        Waiting::with_capacity(WAITING)
    }
}

impl Waiting {
    fn with_capacity(capacity: usize) -> Waiting {
        Waiting {
            order: VecDeque::new(),
            waiting: HashSet::default(),
            capacity,
        }
    }

    /// Notes that counter samples name event `event`, whose dispatch may not have come;
    /// returns the event that waited longest when too many wait, to be written bare now.
    pub fn counted(&mut self, event: i64) -> Option<i64> {
        if !self.waiting.insert(event) {
            return None;
        }
        self.order.push_back(event);
        while self.order.len() > self.capacity {
            let oldest = self.order.pop_front()?;
            if self.waiting.remove(&oldest) {
                return Some(oldest);
            }
        }
        None
    }

    /// Notes that the dispatch of event `event` came: its event need not be written bare.
    pub fn dispatched(&mut self, event: i64) {
        self.waiting.remove(&event);
    }

    /// The events still waiting, in the order they began to.
    pub fn rest(&mut self) -> Vec<i64> {
        let rest = (self.order.drain(..))
            .filter(|event| self.waiting.remove(event))
            .collect();
        debug_assert!(self.waiting.is_empty());
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_whose_dispatch_came_are_never_written_bare() {
        let mut waiting = Waiting::with_capacity(2);
        assert_eq!(waiting.counted(10), None);
        assert_eq!(waiting.counted(10), None, "a second chunk of its samples");
        assert_eq!(waiting.counted(11), None);
        waiting.dispatched(10);
        // 10 stopped waiting, so 11 and 12 fit.
        assert_eq!(waiting.counted(12), None);
        assert_eq!(
            waiting.counted(13),
            Some(11),
            "the longest waiting goes out"
        );
        waiting.dispatched(12);
        assert_eq!(waiting.rest(), [13]);
        assert_eq!(waiting.rest(), [] as [i64; 0]);
    }

    #[test]
    fn an_event_counted_again_after_its_dispatch_waits_again_once() {
        let mut waiting = Waiting::with_capacity(4);
        waiting.counted(7);
        waiting.dispatched(7);
        waiting.counted(7);
        assert_eq!(waiting.rest(), [7]);
    }
}
