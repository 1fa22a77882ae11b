//! Turning spans that arrive roughly in time order into per-track event streams in time
//! order, with every span properly nested in the spans around it: what OTF2 locations and
//! Perfetto slice tracks both require.
//!
//! A timeline is one thing records happen on (a host thread, a GPU queue, a copy engine).
//! Its spans arrive in the order their records were flushed, which is nearly, not exactly,
//! the order of their starts: rocprofiler-sdk delivers a record when its span ends, and the
//! generator's dispatches start a few microseconds apart in launch order. A bounded reorder
//! buffer ([`REORDER_DEPTH`] spans per timeline) restores start order; memory stays flat
//! because nothing else is kept. Spans that come in order wait in a queue, and those that
//! come after a span that starts later (a range, delivered when it ends, after the calls
//! inside it) in a heap beside it: the earliest of the two fronts goes first.
//!
//! Spans on one timeline may overlap without nesting: a call that starts inside another and
//! ends after it, two kernels on one queue that run concurrently, or a span that arrives
//! after later ones were written. Such a span cannot share a track with the span it
//! crosses, so a timeline spreads its spans over lanes, one output track each: a span goes
//! to the first lane it fits, and a new lane opens when none does. On a host thread, a span
//! fits inside the innermost open span (nesting is a call inside a call or a range); on a
//! device, where a kernel inside another kernel's time is concurrency, not a call, a span
//! fits only a lane with nothing open. Each lane leaves its open spans when later spans
//! start after their end, so events on a lane are in time order and every enter has its
//! leave.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// Spans a timeline holds back to restore start order: far more than the disorder of a
/// buffer flush on one thread or queue, small enough to keep many timelines in memory.
pub const REORDER_DEPTH: usize = 4096;

/// How spans of a timeline may share a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// A span may start inside another if it also ends inside it (host calls and ranges).
    Nest,
    /// Spans on a lane follow one another (device work).
    Exclusive,
}

/// What a timeline carries for each span, handed to its [`Output`].
pub trait Mark {
    /// Whether the mark stands for an instant (a metric value): it fits any lane, and is
    /// never left.
    fn is_point(&self) -> bool;
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span<M> {
    pub start: u64,
    /// The span's end; a point's end is its start.
    pub end: u64,
    pub mark: M,
}

/// Where a timeline's events go.
pub trait Output<M> {
    type Location: Copy;
    /// What leaving a span needs of it, kept while it is open.
    type Open;
    type Error;
    /// A location for the timeline's lane number `lane` (0 first).
    fn open_lane(&mut self, lane: usize) -> Result<Self::Location, Self::Error>;
    /// A span starts (or a point happens) on a lane; its end is already known.
    fn enter(&mut self, location: Self::Location, span: Span<M>)
    -> Result<Self::Open, Self::Error>;
    /// A span ends, after every span on its lane that starts before its end has entered.
    fn leave(
        &mut self,
        location: Self::Location,
        time: u64,
        open: Self::Open,
    ) -> Result<(), Self::Error>;
}

/// A timeline of spans marked `M` on lanes at locations `L`, whose open spans are kept as
/// their output's `O`.
pub struct Timeline<L, M, O> {
    overlap: Overlap,
    /// Spans held back that came in order, sorted.
    in_order: VecDeque<Pending<M>>,
    /// Spans held back that came after a later one, earliest on top: inserted among the
    /// sorted ones instead, a range moved the hundreds of spans it encloses, and that
    /// moving took a seventh of the Perfetto sink's time.
    late: BinaryHeap<Reverse<Pending<M>>>,
    /// Arrival number of the next span: equal spans keep their order.
    arrivals: u64,
    lanes: Vec<Lane<L, O>>,
}

struct Lane<L, O> {
    location: L,
    /// Open spans' ends, and what leaving them needs, innermost last; their ends never
    /// increase.
    open: Vec<(u64, O)>,
    /// The time of the lane's last event.
    last: u64,
    events: u64,
}

/// A span waiting in the reorder buffer, which gives them back in order of key: earliest
/// start first, and of equal starts the longest span, which encloses the others, then
/// arrival order. Keys are unique: they are ordered as the spans go.
struct Pending<M> {
    key: (u64, Reverse<u64>, u64),
    span: Span<M>,
}

impl<M> PartialEq for Pending<M> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<M> Eq for Pending<M> {}

impl<M> PartialOrd for Pending<M> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<M> Ord for Pending<M> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

impl<L: Copy, M: Mark, O> Timeline<L, M, O> {
    pub fn new(overlap: Overlap) -> Timeline<L, M, O> {
        Timeline {
            overlap,
            in_order: VecDeque::new(),
            late: BinaryHeap::new(),
            arrivals: 0,
            lanes: Vec::new(),
        }
    }

    /// Takes a span; writes the earliest one held back once the reorder buffer is full.
    pub fn push<E: Output<M, Location = L, Open = O>>(
        &mut self,
        span: Span<M>,
        out: &mut E,
    ) -> Result<(), E::Error> {
        let end = if span.mark.is_point() {
            span.start
        } else {
            span.end.max(span.start)
        };
        let pending = Pending {
            key: (span.start, Reverse(end), self.arrivals),
            span: Span { end, ..span },
        };
        self.arrivals += 1;
        match self.in_order.back() {
            Some(last) if *last > pending => self.late.push(Reverse(pending)),
            _ => self.in_order.push_back(pending),
        }
        if self.in_order.len() + self.late.len() > REORDER_DEPTH {
            let next = self.earliest().expect("the buffer is full");
            self.place(next.span, out)?;
        }
        Ok(())
    }

    /// Takes the earliest span held back.
    fn earliest(&mut self) -> Option<Pending<M>> {
        let late = match (self.in_order.front(), self.late.peek()) {
            (Some(in_order), Some(Reverse(late))) => late < in_order,
            (in_order, late) => in_order.is_none() && late.is_some(),
        };
        match late {
            true => self.late.pop().map(|Reverse(pending)| pending),
            false => self.in_order.pop_front(),
        }
    }

    /// Writes every span held back and leaves every open span.
    pub fn finish<E: Output<M, Location = L, Open = O>>(
        &mut self,
        out: &mut E,
    ) -> Result<(), E::Error> {
        while let Some(next) = self.earliest() {
            self.place(next.span, out)?;
        }
        for lane in &mut self.lanes {
            lane.leave_until(u64::MAX, out)?;
        }
        Ok(())
    }

    /// Each lane's location and its event count.
    pub fn lanes(&self) -> impl Iterator<Item = (L, u64)> + '_ {
        self.lanes.iter().map(|lane| (lane.location, lane.events))
    }

    fn place<E: Output<M, Location = L, Open = O>>(
        &mut self,
        span: Span<M>,
        out: &mut E,
    ) -> Result<(), E::Error> {
        let mut chosen = None;
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if lane.last > span.start {
                continue; // a late span: it would go back in time here
            }
            lane.leave_until(span.start, out)?;
            let fits = span.mark.is_point()
                || match self.overlap {
                    Overlap::Nest => lane.open.last().is_none_or(|&(end, _)| end >= span.end),
                    Overlap::Exclusive => lane.open.is_empty(),
                };
            if fits {
                chosen = Some(i);
                break;
            }
        }
        let lane = match chosen {
            Some(i) => &mut self.lanes[i],
            None => {
                let location = out.open_lane(self.lanes.len())?;
                self.lanes.push(Lane {
                    location,
                    open: Vec::new(),
                    last: 0,
                    events: 0,
                });
                self.lanes.last_mut().expect("just pushed")
            }
        };
        lane.last = span.start;
        lane.events += 1;
        let (point, end) = (span.mark.is_point(), span.end);
        let open = out.enter(lane.location, span)?;
        if !point {
            lane.open.push((end, open));
        }
        Ok(())
    }
}

impl<L: Copy, O> Lane<L, O> {
    /// Leaves the open spans that end by `time`, innermost first.
    fn leave_until<M, E: Output<M, Location = L, Open = O>>(
        &mut self,
        time: u64,
        out: &mut E,
    ) -> Result<(), E::Error> {
        while let Some(&(end, _)) = self.open.last() {
            if end > time {
                break;
            }
            let (end, open) = self.open.pop().expect("the innermost open span");
            out.leave(self.location, end, open)?;
            self.last = end;
            self.events += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events as written: (location, time, +region for enter / -region-1 for leave).
    #[derive(Default)]
    struct Recorder {
        lanes: usize,
        events: Vec<(usize, u64, i64)>,
    }

    /// A test span's mark: its region.
    impl Mark for u32 {
        fn is_point(&self) -> bool {
            false
        }
    }

    impl Output<u32> for Recorder {
        type Location = usize;
        type Open = u32;
        type Error = ();
        fn open_lane(&mut self, lane: usize) -> Result<usize, ()> {
            assert_eq!(lane, self.lanes);
            self.lanes += 1;
            Ok(lane)
        }
        fn enter(&mut self, l: usize, span: Span<u32>) -> Result<u32, ()> {
            self.events.push((l, span.start, i64::from(span.mark)));
            Ok(span.mark)
        }
        fn leave(&mut self, l: usize, time: u64, region: u32) -> Result<(), ()> {
            self.events.push((l, time, -i64::from(region) - 1));
            Ok(())
        }
    }

    fn region(id: u32, start: u64, end: u64) -> Span<u32> {
        Span {
            start,
            end,
            mark: id,
        }
    }

    /// Writes `spans` and checks what every lane got: time order, each leave closing the
    /// innermost open region, nothing left open, and each span's enter and leave at its
    /// start and end. Returns the lanes used.
    fn write(overlap: Overlap, spans: &[Span<u32>]) -> usize {
        let mut timeline = Timeline::new(overlap);
        let mut out = Recorder::default();
        for span in spans {
            timeline.push(*span, &mut out).unwrap();
        }
        timeline.finish(&mut out).unwrap();
        let mut written = Vec::new();
        for lane in 0..out.lanes {
            let events: Vec<_> = out.events.iter().filter(|e| e.0 == lane).collect();
            assert!(
                events.windows(2).all(|w| w[0].1 <= w[1].1),
                "lane {lane} goes back in time"
            );
            let mut open: Vec<(u64, i64)> = Vec::new();
            for &&(_, time, code) in &events {
                if code >= 0 {
                    if overlap == Overlap::Exclusive {
                        assert!(open.is_empty(), "lane {lane} nests device spans");
                    }
                    open.push((time, code));
                } else {
                    let (start, region) = open.pop().expect("a leave without an enter");
                    assert_eq!(-code - 1, region, "lane {lane} leaves another region");
                    written.push((start, time, region as u32));
                }
            }
            assert!(open.is_empty());
            let counted = timeline.lanes().find(|(l, _)| *l == lane).unwrap().1;
            assert_eq!(counted as usize, events.len());
        }
        let mut expected: Vec<_> = spans.iter().map(|s| (s.start, s.end, s.mark)).collect();
        expected.sort_unstable();
        written.sort_unstable();
        assert_eq!(written, expected);
        out.lanes
    }

    #[test]
    fn nested_calls_share_a_lane_and_crossing_ones_do_not() {
        // A range around two calls, the second calling a third; then a call that starts
        // inside the range and ends after it.
        let spans = [
            region(1, 0, 100),
            region(2, 10, 20),
            region(3, 30, 60),
            region(4, 40, 50),
            region(5, 90, 130),
            region(6, 140, 150),
        ];
        assert_eq!(write(Overlap::Nest, &spans), 2);
        assert_eq!(write(Overlap::Exclusive, &spans), 3);
    }

    #[test]
    fn spans_arriving_out_of_order_are_written_in_order() {
        // Inner calls arrive before the outer one, as rocprofiler-sdk delivers them.
        let spans = [
            region(2, 10, 20),
            region(3, 30, 40),
            region(1, 5, 50),
            region(4, 60, 70),
        ];
        assert_eq!(write(Overlap::Nest, &spans), 1);
    }

    #[test]
    fn a_span_later_than_the_reorder_buffer_opens_a_lane_instead_of_going_back() {
        let mut spans: Vec<Span<u32>> = (0..REORDER_DEPTH as u64 + 10)
            .map(|i| region(1, 100 + i * 10, 105 + i * 10))
            .collect();
        spans.push(region(2, 0, 1));
        assert_eq!(write(Overlap::Nest, &spans), 2);
    }

    #[test]
    fn shuffled_overlapping_spans_stay_ordered_and_balanced() {
        // Deterministic pseudo-random spans, locally shuffled.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut spans: Vec<Span<u32>> = (0..20_000u64)
            .map(|i| {
                let start = i * 50 + next(40);
                region((i % 7) as u32, start, start + next(2_000))
            })
            .collect();
        for i in (1..spans.len()).rev() {
            let j = i - (next(8) as usize).min(i);
            spans.swap(i, j);
        }
        write(Overlap::Nest, &spans);
        write(Overlap::Exclusive, &spans);
    }
}
