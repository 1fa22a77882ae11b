//! Records to events: which timeline each record belongs to, the region or metric it shows,
//! and the attributes it carries (an API call's arguments among them, as the SDK's text).
//!
//! Every timeline takes records of one kind only. Kinds reach the sink in separate buffer
//! flushes, far apart in time (a marker buffer may flush once for thousands of API buffers),
//! so mixing kinds on one location would need a reorder buffer as long as a run; kept
//! apart, each timeline's records are nearly in order. So a host thread has a location for
//! its API calls, one for its marker ranges and one for its memory operations; a GPU one
//! per queue, one for its copies and one for its counters.
//!
//! Not written, for want of a fitting OTF2 record: PC samples (OTF2's calling-context
//! samples need a tree of source locations, which code-object offsets do not give), KFD
//! events (instants with no value: page faults and migrations), HIP stream and runtime
//! initialization records (bookkeeping, not time spent; rocprofv3's OTF2 leaves them out
//! too), and scratch memory operations (likewise).

use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use super::archive::{Archive, Live, LocationId};
use super::attributes::{BYTES, CORRELATION_ID, DISPATCH_ID, EXTERNAL_ID};
use super::definitions::{self, Definitions, Extent, RegionKey, RegionKind, Track, TrackKey};
use super::ffi;
use super::spill::{self, Event, Log, Spill};
use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::{Cell, Columns, marker_label};
use crate::record::Batch;
use crate::sdk::AgentType;
use crate::sink::SinkError;
use crate::sink::counters::{CounterSums, Sum};
use crate::sink::timeline::{self, Output, Overlap, Timeline};

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

impl timeline::Mark for Mark {
    fn is_point(&self) -> bool {
        matches!(self, Mark::Metric { .. })
    }
}

type Span = timeline::Span<Mark>;

/// The attributes an event carries: an id each, and the value; zero values are left out.
/// An API call's arguments, as many as it has, wait in its timeline's [`Arguments`] (`args`
/// is their slot there, plus one; 0 for none), so that marks stay small and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Attributes {
    pairs: [(u32, u64); 3],
    len: u8,
    args: u32,
}

/// The argument attributes of API calls whose events are not written yet.
#[derive(Default)]
struct Arguments {
    slots: Vec<Vec<(u32, u64)>>,
    free: Vec<u32>,
}

impl Arguments {
    /// Keeps `args`; the value for [`Attributes::args`].
    fn keep(&mut self, args: Vec<(u32, u64)>) -> u32 {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = args;
                slot
            }
            None => {
                self.slots.push(args);
                self.slots.len() as u32 - 1
            }
        };
        slot + 1
    }

    /// `attributes` with the arguments they refer to, which are given back.
    fn with<'a>(
        &mut self,
        attributes: &'a Attributes,
        all: &'a mut Vec<(u32, u64)>,
    ) -> &'a [(u32, u64)] {
        if attributes.args == 0 {
            return attributes.as_slice();
        }
        let slot = attributes.args - 1;
        all.clear();
        all.extend_from_slice(attributes.as_slice());
        let args = std::mem::take(&mut self.slots[slot as usize]);
        let room = spill::MAX_ATTRIBUTES - all.len();
        all.extend(args.into_iter().take(room));
        self.free.push(slot);
        all
    }
}

impl Attributes {
    fn new(pairs: [(u32, u64); 3]) -> Attributes {
        let mut attributes = Attributes::default();
        for pair in pairs.into_iter().filter(|&(_, value)| value != 0) {
            attributes.pairs[usize::from(attributes.len)] = pair;
            attributes.len += 1;
        }
        attributes
    }

    pub fn as_slice(&self) -> &[(u32, u64)] {
        &self.pairs[..usize::from(self.len)]
    }
}

/// Blocks of events a timeline's first lane has filled (32 KiB each) before it may have a
/// writer of its own: a smaller location takes OTF2 a few milliseconds at the end.
const BUSY: usize = 8;

/// Every timeline of the run, and counter values being summed.
///
/// A window's records become spans on the sink's thread, which numbers the definitions they
/// use as they come; then each timeline places its spans on its lanes, timelines in
/// parallel (that is most of the work, and no timeline depends on another). The busiest
/// timelines' first lanes are then written as they go, each by a [`Live`] writer.
///
/// A timeline's first lane is the location numbered as the timeline (in the order the
/// timelines began), so that it can be written before the run ends; its other lanes are
/// numbered after every first lane.
#[derive(Default)]
pub struct Tracks {
    /// Each timeline's place in `lines`.
    index: HashMap<TrackKey, usize>,
    /// The last timeline looked up: a chunk's records mostly share one.
    last: Option<(TrackKey, usize)>,
    /// Every timeline, in the order they began.
    lines: Vec<Line>,
    sums: CounterSums,
    /// Live writers that may still start.
    writers: usize,
}

/// One timeline, with the spans it took since it last placed spans, and its lanes.
struct Line {
    key: TrackKey,
    timeline: Timeline<usize, Mark, Mark>,
    /// Spans in the order they came, not placed yet.
    arrived: Vec<Span>,
    written: Written,
}

/// What a timeline's lanes hold, and what they need to write events.
#[derive(Default)]
struct Written {
    lanes: Vec<Lane>,
    args: Arguments,
    /// An event's attributes with its arguments, reused from event to event.
    all: Vec<(u32, u64)>,
    times: Extent,
}

/// A lane of a timeline: a location of the archive once the run ends.
#[derive(Default)]
struct Lane {
    events: Log,
    out: Out,
    /// The metrics it records.
    metrics: BTreeSet<u32>,
}

/// Where a lane's full blocks of events go.
#[derive(Default)]
enum Out {
    /// To the spill, for the end of the run.
    #[default]
    Spill,
    /// To a writer of the lane's own.
    Live(Live),
    /// Nowhere: its live writer wrote them all.
    Written,
}

impl Tracks {
    /// Timelines that may have up to `writers` [`Live`] writers among them.
    pub fn new(writers: usize) -> Tracks {
        Tracks {
            writers,
            ..Tracks::default()
        }
    }

    /// Turns a chunk's records into spans on their timelines.
    pub fn write(&mut self, chunk: &Chunk, meta: &StreamMeta, defs: &mut Definitions) {
        let stream = chunk.stream;
        let hip = |role| RegionKind {
            role,
            paradigm: ffi::PARADIGM_HIP,
        };
        match &chunk.batch {
            Batch::Api(records) => {
                for (i, r) in records.iter().enumerate() {
                    let key = RegionKey::Api(r.domain_id, r.operation_id);
                    let region = defs.region(key, hip(ffi::REGION_ROLE_FUNCTION), || {
                        column(r, "operation", meta).to_owned()
                    });
                    let track = TrackKey {
                        stream,
                        track: Track::Thread(r.tid),
                    };
                    let times = (r.start_ns, r.end_ns);
                    let ids = (r.correlation_id, r.external_id);
                    let mut span = span(times, region, ids, None);
                    let line = self.line(track);
                    if let (Some(args), Mark::Region { attributes, .. }) =
                        (chunk.args(i, meta), &mut span.mark)
                    {
                        let args = args.map(|a| {
                            let value = defs.string(&a.value);
                            (defs.argument(a.name, a.type_name), u64::from(value))
                        });
                        attributes.args = line.written.args.keep(args.collect());
                    }
                    line.arrived.push(span);
                }
            }
            Batch::Marker(records) => {
                let user = RegionKind {
                    role: ffi::REGION_ROLE_FUNCTION,
                    paradigm: ffi::PARADIGM_USER,
                };
                for r in records {
                    let key = RegionKey::Marker(stream, r.message, r.operation_id);
                    let region = defs.region(key, user, || marker_label(r, meta).to_owned());
                    let track = TrackKey {
                        stream,
                        track: Track::Markers(r.tid),
                    };
                    let times = (r.start_ns, r.end_ns);
                    let ids = (r.correlation_id, r.external_id);
                    self.push(track, span(times, region, ids, None));
                }
            }
            Batch::MemoryAllocation(records) => {
                for r in records {
                    let name = column(r, "operation", meta);
                    let role = if name.contains("FREE") {
                        ffi::REGION_ROLE_DEALLOCATE
                    } else {
                        ffi::REGION_ROLE_ALLOCATE
                    };
                    let region =
                        defs.region(RegionKey::Allocation(r.operation_id), hip(role), || {
                            name.to_owned()
                        });
                    let track = TrackKey {
                        stream,
                        track: Track::Memory(r.tid),
                    };
                    let times = (r.start_ns, r.end_ns);
                    let ids = (r.correlation_id, r.external_id);
                    self.push(track, span(times, region, ids, Some((BYTES, r.bytes))));
                }
            }
            Batch::KernelDispatch(records) => {
                for r in records {
                    let key = RegionKey::Kernel(stream, r.kernel_id);
                    let kind = hip(ffi::REGION_ROLE_FUNCTION);
                    let region = defs.named_region(key, kind, || {
                        let mangled = meta.mangled_kernel_name(r.kernel_id);
                        (meta.kernel_name(r.kernel_id).to_owned(), mangled.to_owned())
                    });
                    let track = TrackKey {
                        stream,
                        track: Track::Queue(r.agent, r.queue),
                    };
                    let times = (r.start_ns, r.end_ns);
                    let ids = (r.correlation_id, r.external_id);
                    let dispatch = Some((DISPATCH_ID, r.dispatch_id));
                    self.push(track, span(times, region, ids, dispatch));
                }
            }
            Batch::MemoryCopy(records) => {
                for r in records {
                    let key = RegionKey::Copy(r.operation_id);
                    let region = defs.region(key, hip(ffi::REGION_ROLE_DATA_TRANSFER), || {
                        column(r, "direction", meta).to_owned()
                    });
                    // The GPU's copy engines do the work: the destination's, unless it is
                    // the host.
                    let is_gpu = |agent| {
                        definitions::agent_info(meta, agent)
                            .is_some_and(|a| a.agent_type == AgentType::Gpu)
                    };
                    let agent = if is_gpu(r.dst_agent) || !is_gpu(r.src_agent) {
                        r.dst_agent
                    } else {
                        r.src_agent
                    };
                    let track = TrackKey {
                        stream,
                        track: Track::Copies(agent),
                    };
                    let times = (r.start_ns, r.end_ns);
                    let ids = (r.correlation_id, r.external_id);
                    self.push(track, span(times, region, ids, Some((BYTES, r.bytes))));
                }
            }
            Batch::CounterSample(records) => {
                for r in records {
                    if let Some(sum) = self.sums.add(stream, r) {
                        self.metric(sum, meta, defs);
                    }
                }
            }
            Batch::ScratchMemory(_)
            | Batch::PcSample(_)
            | Batch::KfdEvent(_)
            | Batch::HipStream(_)
            | Batch::RuntimeInitialization(_)
            | Batch::DeviceCounterSample(_)
            | Batch::GraphLaunch(_)
            | Batch::HipEventBarrier(_)
            | Batch::SpmSample(_) => {}
        }
    }

    /// Places the spans that came since the last call on their timelines' lanes, timelines
    /// in parallel; the lanes' events go to `spill`, or to their live writers.
    pub fn place(&mut self, spill: &Arc<Spill>, archive: &Archive) -> Result<(), SinkError> {
        self.lines
            .par_iter_mut()
            .filter(|line| !line.arrived.is_empty())
            .try_for_each(|line| line.place(spill))?;
        self.start_writers(spill, archive)
    }

    /// Gives the busiest first lanes without one a [`Live`] writer, while writers are left.
    fn start_writers(&mut self, spill: &Arc<Spill>, archive: &Archive) -> Result<(), SinkError> {
        if self.writers == 0 {
            return Ok(());
        }
        let mut busy: Vec<(usize, usize)> = (self.lines.iter().enumerate())
            .filter_map(|(at, line)| {
                let first = line.written.lanes.first()?;
                let blocks = first.events.spilled();
                (matches!(first.out, Out::Spill) && blocks >= BUSY).then_some((blocks, at))
            })
            .collect();
        busy.sort_unstable_by(|a, b| b.cmp(a));
        busy.truncate(self.writers);
        for (_, at) in busy {
            let first = &mut self.lines[at].written.lanes[0];
            let spilled = first.events.take_spilled();
            first.out = Out::Live(archive.live(spill, LocationId(at as u64), spilled)?);
            self.writers -= 1;
        }
        Ok(())
    }

    /// Places every span held back, defines a location for each lane of each timeline, and
    /// returns their events, in location order.
    pub fn finish(
        mut self,
        catalog: &Catalog,
        defs: &mut Definitions,
        spill: &Spill,
    ) -> Result<Vec<Option<Log>>, SinkError> {
        for sum in std::mem::take(&mut self.sums).finish() {
            self.metric(sum, catalog.stream(sum.stream), defs);
        }
        self.lines
            .par_iter_mut()
            .try_for_each(|line| line.finish(spill))?;
        let lines = self.lines.len();
        let (mut first, mut others) = (Vec::with_capacity(lines), Vec::new());
        for line in self.lines {
            defs.times(line.written.times);
            let counts = line.timeline.lanes().map(|(_, events)| events);
            let lanes = line.written.lanes.into_iter().zip(counts);
            for (n, (lane, events)) in lanes.enumerate() {
                let lanes = if n == 0 { &mut first } else { &mut others };
                lanes.push((line.key, n, events, lane));
            }
        }
        // A timeline has a lane from its first span on, so the first lanes are numbered
        // as their timelines, as `start_writers` numbered them.
        debug_assert_eq!(first.len(), lines, "every timeline has a first lane");
        let logs = (first.into_iter().chain(others))
            .map(|(key, n, events, lane)| {
                let location = defs.location(key, n, events, catalog.stream(key.stream));
                for metric in lane.metrics {
                    defs.recorder(metric, location);
                }
                match lane.out {
                    Out::Spill => Some(lane.events),
                    Out::Written => None,
                    Out::Live(_) => unreachable!("live writers finish with their timelines"),
                }
            })
            .collect();
        Ok(logs)
    }

    /// A dispatch's counter value on its agent's counter timeline.
    fn metric(&mut self, sum: Sum, meta: &StreamMeta, defs: &mut Definitions) {
        let mark = Mark::Metric {
            metric: defs.metric(sum.stream, sum.counter, meta),
            value: sum.value,
            attributes: attributes(0, 0, Some((DISPATCH_ID, sum.dispatch))),
        };
        let span = Span {
            start: sum.time,
            end: sum.time,
            mark,
        };
        let track = TrackKey {
            stream: sum.stream,
            track: Track::Counters(sum.agent),
        };
        self.push(track, span);
    }

    fn push(&mut self, key: TrackKey, span: Span) {
        self.line(key).arrived.push(span);
    }

    /// The timeline of `key`, begun if it is new.
    fn line(&mut self, key: TrackKey) -> &mut Line {
        if let Some((last, at)) = self.last
            && last == key
        {
            return &mut self.lines[at];
        }
        let next = self.lines.len();
        let at = *self.index.entry(key).or_insert(next);
        self.last = Some((key, at));
        if at == next {
            self.lines.push(Line {
                key,
                timeline: Timeline::new(overlap(key.track)),
                arrived: Vec::new(),
                written: Written::default(),
            });
        }
        &mut self.lines[at]
    }
}

impl Line {
    /// Places the spans that came since the last call.
    fn place(&mut self, spill: &Spill) -> Result<(), SinkError> {
        let mut out = Writer {
            spill,
            written: &mut self.written,
        };
        (self.arrived.drain(..)).try_for_each(|span| self.timeline.push(span, &mut out))
    }

    /// Places every span, leaves every open span, and waits for the first lane's live
    /// writer, if it has one, to write the rest.
    fn finish(&mut self, spill: &Spill) -> Result<(), SinkError> {
        self.place(spill)?;
        self.timeline.finish(&mut Writer {
            spill,
            written: &mut self.written,
        })?;
        let Some(first) = self.written.lanes.first_mut() else {
            return Ok(());
        };
        first.out = match std::mem::take(&mut first.out) {
            Out::Live(live) => {
                live.finish(first.events.take_open())?;
                Out::Written
            }
            out => out,
        };
        Ok(())
    }
}

/// Host calls and ranges nest; device work side by side is concurrency, not nesting.
fn overlap(track: Track) -> Overlap {
    match track {
        Track::Thread(_) | Track::Markers(_) | Track::Memory(_) => Overlap::Nest,
        Track::Queue(..) | Track::Copies(_) | Track::Counters(_) => Overlap::Exclusive,
    }
}

/// A span that enters `region` at `start` and leaves it at `end`.
/// A record's span in `region`, with its [`attributes`].
fn span(
    (start, end): (u64, u64),
    region: u32,
    (correlation, external): (u64, u64),
    detail: Option<(u32, u64)>,
) -> Span {
    Span {
        start,
        end,
        mark: Mark::Region {
            region,
            attributes: attributes(correlation, external, detail),
        },
    }
}

/// The attributes of an event: its correlation ids and one more, when it has one.
fn attributes(correlation: u64, external: u64, detail: Option<(u32, u64)>) -> Attributes {
    let (id, value) = detail.unwrap_or((BYTES, 0));
    Attributes::new([
        (CORRELATION_ID, correlation),
        (EXTERNAL_ID, external),
        (id, value),
    ])
}

/// A record's text column, for a region's name.
fn column<'a>(record: &impl Columns, name: &str, meta: &'a StreamMeta) -> &'a str {
    match record.get(name, meta) {
        Some(Cell::Str(text)) => text,
        other => unreachable!("{name} is a text column, not {other:?}"),
    }
}

/// A timeline's lanes as its output: their events go to the spill.
struct Writer<'a> {
    spill: &'a Spill,
    written: &'a mut Written,
}

impl Lane {
    fn write(&mut self, spill: &Spill, event: Event<'_>) -> Result<(), SinkError> {
        match &self.out {
            Out::Live(live) => {
                if self.events.push(event) {
                    live.send(self.events.take_open());
                }
                Ok(())
            }
            Out::Spill => (spill.push(&mut self.events, event))
                .map_err(SinkError::io("holding the OTF2 events back")),
            Out::Written => unreachable!("a lane is written when its timeline ended"),
        }
    }
}

impl Output<Mark> for Writer<'_> {
    type Location = usize;
    /// A region is left as it was entered.
    type Open = Mark;
    type Error = SinkError;

    fn open_lane(&mut self, lane: usize) -> Result<usize, SinkError> {
        let lanes = &mut self.written.lanes;
        debug_assert_eq!(lane, lanes.len(), "lanes open in order");
        lanes.push(Lane::default());
        Ok(lane)
    }

    fn enter(&mut self, lane: usize, span: Span) -> Result<Mark, SinkError> {
        let time = span.start;
        let Written {
            lanes,
            args,
            all,
            times,
        } = &mut *self.written;
        times.add(time);
        let lane = &mut lanes[lane];
        let event = match &span.mark {
            Mark::Region { region, attributes } => Event::Enter {
                time,
                region: *region,
                attributes: args.with(attributes, all),
            },
            &Mark::Metric {
                metric,
                value,
                ref attributes,
            } => {
                lane.metrics.insert(metric);
                Event::Metric {
                    time,
                    metric,
                    value,
                    attributes: attributes.as_slice(),
                }
            }
        };
        lane.write(self.spill, event)?;
        Ok(span.mark)
    }

    fn leave(&mut self, lane: usize, time: u64, mark: Mark) -> Result<(), SinkError> {
        let Mark::Region { region, .. } = mark else {
            unreachable!("a metric is a point: it is never left")
        };
        self.written.times.add(time);
        self.written.lanes[lane].write(self.spill, Event::Leave { time, region })
    }
}
