//! Turning spans that arrive roughly in time order into OTF2 event streams, which must be in
//! time order with balanced, properly nested enter and leave events per location.
//!
//! A timeline is one thing records happen on (a host thread, a GPU queue, a copy engine).
//! Its spans arrive in the order their records were flushed, which is nearly, not exactly,
//! the order of their starts: rocprofiler-sdk delivers a record when its span ends, and the
//! generator's dispatches start a few microseconds apart in launch order. A bounded reorder
//! buffer ([`REORDER_DEPTH`] spans per timeline) restores start order; memory stays flat
//! because nothing else is kept.
//!
//! Spans on one timeline may overlap without nesting: a call that starts inside another and
//! ends after it, two kernels on one queue that run concurrently, or a span that arrives
//! after later ones were written. Such a span cannot share a location with the span it
//! crosses, so a timeline spreads its spans over lanes, one OTF2 location each: a span goes
//! to the first lane it fits, and a new lane opens when none does. On a host thread, a span
//! fits inside the innermost open span (nesting is a call inside a call or a range); on a
//! device, where a kernel inside another kernel's time is concurrency, not a call, a span
//! fits only a lane with nothing open. Each lane leaves its open spans when later spans
//! start after their end, so events on a lane are in time order and every enter has its
//! leave.

use std::cmp::Reverse;
use std::collections::VecDeque;

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

/// What a span writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    /// The region is entered at the span's start and left at its end.
    Region { region: u32, attributes: Attributes },
    /// A metric value at the span's start (its end is its start).
    Metric {
        metric: u32,
        value: f64,
        attributes: Attributes,
    },
}

/// The attributes an event carries: an id each, and the value; a zero value is left out.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Attributes(pub [(u32, u64); 3]);

impl Attributes {
    pub fn present(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.0.iter().copied().filter(|&(_, value)| value != 0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub mark: Mark,
}

/// Where a timeline's events go.
pub trait Output {
    type Location: Copy;
    type Error;
    /// A location for the timeline's lane number `lane` (0 first).
    fn open_lane(&mut self, lane: usize) -> Result<Self::Location, Self::Error>;
    fn enter(
        &mut self,
        location: Self::Location,
        time: u64,
        region: u32,
        attributes: &Attributes,
    ) -> Result<(), Self::Error>;
    fn leave(
        &mut self,
        location: Self::Location,
        time: u64,
        region: u32,
    ) -> Result<(), Self::Error>;
    fn metric(
        &mut self,
        location: Self::Location,
        time: u64,
        metric: u32,
        value: f64,
        attributes: &Attributes,
    ) -> Result<(), Self::Error>;
}

pub struct Timeline<L> {
    overlap: Overlap,
    pending: VecDeque<Pending>,
    /// Arrival number of the next span: equal spans keep their order.
    arrivals: u64,
    lanes: Vec<Lane<L>>,
}

struct Lane<L> {
    location: L,
    /// Open spans' (end, region), innermost last; their ends never increase.
    open: Vec<(u64, u32)>,
    /// The time of the lane's last event.
    last: u64,
    events: u64,
}

/// A span waiting in the reorder buffer, which is sorted by key: earliest start first, and
/// of equal starts the longest span, which encloses the others, then arrival order.
struct Pending {
    key: (u64, Reverse<u64>, u64),
    span: Span,
}

impl<L: Copy> Timeline<L> {
    pub fn new(overlap: Overlap) -> Timeline<L> {
        Timeline {
            overlap,
            pending: VecDeque::new(),
            arrivals: 0,
            lanes: Vec::new(),
        }
    }

    /// Takes a span; writes the earliest one held back once the reorder buffer is full.
    pub fn push<E: Output<Location = L>>(
        &mut self,
        span: Span,
        out: &mut E,
    ) -> Result<(), E::Error> {
        let end = match span.mark {
            Mark::Region { .. } => span.end.max(span.start),
            Mark::Metric { .. } => span.start,
        };
        let pending = Pending {
            key: (span.start, Reverse(end), self.arrivals),
            span: Span { end, ..span },
        };
        self.arrivals += 1;
        // Spans mostly come in order: they go at the back, or a few places before it.
        match self.pending.back() {
            Some(last) if last.key > pending.key => {
                let at = self.pending.partition_point(|p| p.key < pending.key);
                self.pending.insert(at, pending);
            }
            _ => self.pending.push_back(pending),
        }
        if self.pending.len() > REORDER_DEPTH {
            let next = self.pending.pop_front().expect("the buffer is full");
            self.place(next.span, out)?;
        }
        Ok(())
    }

    /// Writes every span held back and leaves every open span.
    pub fn finish<E: Output<Location = L>>(&mut self, out: &mut E) -> Result<(), E::Error> {
        while let Some(next) = self.pending.pop_front() {
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

    fn place<E: Output<Location = L>>(&mut self, span: Span, out: &mut E) -> Result<(), E::Error> {
        let mut chosen = None;
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if lane.last > span.start {
                continue; // a late span: it would go back in time here
            }
            lane.leave_until(span.start, out)?;
            let fits = match (span.mark, self.overlap) {
                (Mark::Metric { .. }, _) => true,
                (Mark::Region { .. }, Overlap::Nest) => {
                    lane.open.last().is_none_or(|&(end, _)| end >= span.end)
                }
                (Mark::Region { .. }, Overlap::Exclusive) => lane.open.is_empty(),
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
        match span.mark {
            Mark::Region { region, attributes } => {
                out.enter(lane.location, span.start, region, &attributes)?;
                lane.open.push((span.end, region));
            }
            Mark::Metric {
                metric,
                value,
                attributes,
            } => out.metric(lane.location, span.start, metric, value, &attributes)?,
        }
        Ok(())
    }
}

impl<L: Copy> Lane<L> {
    /// Leaves the open spans that end by `time`, innermost first.
    fn leave_until<E: Output<Location = L>>(
        &mut self,
        time: u64,
        out: &mut E,
    ) -> Result<(), E::Error> {
        while let Some(&(end, region)) = self.open.last() {
            if end > time {
                break;
            }
            out.leave(self.location, end, region)?;
            self.open.pop();
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

    impl Output for Recorder {
        type Location = usize;
        type Error = ();
        fn open_lane(&mut self, lane: usize) -> Result<usize, ()> {
            assert_eq!(lane, self.lanes);
            self.lanes += 1;
            Ok(lane)
        }
        fn enter(&mut self, l: usize, time: u64, region: u32, _: &Attributes) -> Result<(), ()> {
            self.events.push((l, time, i64::from(region)));
            Ok(())
        }
        fn leave(&mut self, l: usize, time: u64, region: u32) -> Result<(), ()> {
            self.events.push((l, time, -i64::from(region) - 1));
            Ok(())
        }
        fn metric(
            &mut self,
            l: usize,
            time: u64,
            _: u32,
            _: f64,
            _: &Attributes,
        ) -> Result<(), ()> {
            self.events.push((l, time, i64::MIN));
            Ok(())
        }
    }

    fn region(id: u32, start: u64, end: u64) -> Span {
        Span {
            start,
            end,
            mark: Mark::Region {
                region: id,
                attributes: Attributes::default(),
            },
        }
    }

    /// Writes `spans` and checks what every lane got: time order, each leave closing the
    /// innermost open region, nothing left open, and each span's enter and leave at its
    /// start and end. Returns the lanes used.
    fn write(overlap: Overlap, spans: &[Span]) -> usize {
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
        let mut expected: Vec<_> = spans
            .iter()
            .map(|s| match s.mark {
                Mark::Region { region, .. } => (s.start, s.end, region),
                Mark::Metric { .. } => unreachable!(),
            })
            .collect();
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
        let mut spans: Vec<Span> = (0..REORDER_DEPTH as u64 + 10)
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
        let mut spans: Vec<Span> = (0..20_000u64)
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
