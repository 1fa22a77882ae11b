//! A packet sequence: one writer's share of the trace, with its own interning.
//!
//! The sink spreads tracks over several sequences (see [`super::shards`]), which write a
//! window's records in parallel; a track's events all come from one sequence, so their
//! order is kept. Each sequence interns event names, categories and annotation names in its
//! own incremental state, cleared at the start of every file, and describes each track
//! before its first event in a file: every file stands alone.
//!
//! A slice goes out whole, begin and end, when its timeline places it: the reader sorts
//! events by time, so only the order of events at one time on one track matters, and a
//! timeline places a span that encloses another first. Counter values go out as they come.
//! Both are placed in order and encoded after, on several threads (see [`super::packets`]).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::events::{
    ARG_NAMES, CallArg, CallValue, Event, Placed, Slice, Value, Writer, category, entry,
};
use super::packets::Packets;
use super::proto::{TRACE_PACKET, event, interned, packet};
use super::settings::Settings;
use super::shards::Routes;
use super::tracks::{Track, TrackKey};
use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::marker_label;
use crate::plan::sink::perfetto::TimeUnit;
use crate::record::{ArgValue, Batch, Sym};
use crate::sdk::Domain;
use crate::sink::counters::{CounterSums, SpmSums, Sum};
use crate::sink::timeline::{self, Output, Overlap, Timeline};

/// What an event name stands for, before it is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Name {
    /// Domain, operation.
    Api(u8, i32),
    /// A marker's message, or its operation when it has none.
    Marker(u16, Sym, u8, i32),
    Kernel(u16, u64),
    Copy(u8),
    Graph(u64),
    Barrier(i32),
}

/// What this sequence has told the current file.
#[derive(Default)]
struct Interned {
    started: bool,
    names: HashMap<Name, u64>,
    /// Categories (domains) by bit of their SDK value.
    categories: u64,
    described: HashSet<u64>,
}

pub struct Sequence {
    /// `trusted_packet_sequence_id`.
    id: u32,
    /// What the packets' timestamps count.
    unit: TimeUnit,
    /// Packets written since the sink last took them.
    pub out: Packets,
    interned: Interned,
    timelines: HashMap<TrackKey, Timeline<(usize, u64), Slice, ()>>,
    sums: CounterSums,
    device_sums: CounterSums,
    spm_sums: SpmSums,
    /// Live allocations per (stream, address): agent and bytes.
    allocations: HashMap<(u16, u64), (u32, i64)>,
    /// Bytes allocated per (stream, agent).
    allocated: HashMap<(u16, u32), i64>,
    /// The arguments of calls not placed yet, by stream and correlation id.
    call_args: HashMap<(u16, u64), Vec<CallArg>>,
}

impl Sequence {
    pub fn new(id: u32, unit: TimeUnit) -> Sequence {
        Sequence {
            id,
            unit,
            out: Packets::default(),
            interned: Interned::default(),
            timelines: HashMap::default(),
            sums: CounterSums::default(),
            device_sums: CounterSums::default(),
            spm_sums: SpmSums::default(),
            allocations: HashMap::default(),
            allocated: HashMap::default(),
            call_args: HashMap::default(),
        }
    }

    /// Starts over in a new file: interning and descriptors begin again.
    pub fn new_file(&mut self) {
        self.interned = Interned::default();
    }

    /// Writes the records of `chunk` on the tracks of sequence `shard`; `routes` are the
    /// chunk's.
    pub fn write(
        &mut self,
        chunk: &Chunk,
        routes: &Routes,
        meta: &StreamMeta,
        settings: &Settings,
        shard: usize,
    ) {
        if !routes.reach(shard) {
            return;
        }
        let stream = chunk.stream;
        let mine = |index| routes.mine(index, shard);
        match &chunk.batch {
            Batch::Api(records) => {
                for (i, r) in records.iter().enumerate() {
                    let Some(key) = mine(i) else { continue };
                    if let Some(args) = chunk.call_args(i).filter(|_| settings.annotations) {
                        let args = args.iter().map(|a| CallArg {
                            name: meta.string(a.name).to_owned(),
                            value: match a.value {
                                ArgValue::Int(v) => CallValue::Int(v),
                                ArgValue::Address(v) => CallValue::Pointer(v),
                                ArgValue::Text(s) => CallValue::Text(meta.string(s).into()),
                            },
                        });
                        self.call_args
                            .insert((stream, r.correlation_id), args.collect());
                    }
                    self.slice(
                        key,
                        r.start_ns,
                        r.end_ns,
                        Slice::Api(r.into()),
                        meta,
                        settings,
                    );
                }
            }
            Batch::Marker(records) => {
                self.slices(
                    records,
                    mine,
                    |r| (r.start_ns, r.end_ns, Slice::Marker(Box::new(*r))),
                    meta,
                    settings,
                );
            }
            Batch::KernelDispatch(records) => {
                self.slices(
                    records,
                    mine,
                    |r| (r.start_ns, r.end_ns, Slice::Kernel(Box::new(*r))),
                    meta,
                    settings,
                );
            }
            Batch::MemoryCopy(records) => {
                self.slices(
                    records,
                    mine,
                    |r| (r.start_ns, r.end_ns, Slice::Copy(Box::new(*r))),
                    meta,
                    settings,
                );
            }
            Batch::GraphLaunch(records) => {
                self.slices(
                    records,
                    mine,
                    |r| (r.start_ns, r.end_ns, Slice::Graph(Box::new(*r))),
                    meta,
                    settings,
                );
            }
            Batch::HipEventBarrier(records) => {
                self.slices(
                    records,
                    mine,
                    |r| (r.start_ns, r.end_ns, Slice::Barrier(Box::new(*r))),
                    meta,
                    settings,
                );
            }
            Batch::CounterSample(records) => {
                for (i, r) in records.iter().enumerate() {
                    if mine(i).is_some()
                        && let Some(sum) = self.sums.add(stream, r)
                    {
                        self.counter(sum, meta);
                    }
                }
            }
            Batch::DeviceCounterSample(records) => {
                for (i, r) in records.iter().enumerate() {
                    if mine(i).is_some()
                        && let Some(sum) = self.device_sums.add_device(stream, r)
                    {
                        self.device_counter(sum, meta);
                    }
                }
            }
            Batch::SpmSample(records) => {
                for (i, r) in records.iter().enumerate() {
                    if mine(i).is_some()
                        && let Some(sum) = self.spm_sums.add(stream, r)
                    {
                        self.spm(sum, meta);
                    }
                }
            }
            Batch::MemoryAllocation(records) => {
                // Every record is on the process's track.
                for (i, r) in records.iter().enumerate() {
                    if mine(i).is_none() {
                        continue;
                    }
                    let live = (stream, r.address);
                    let bytes = i64::try_from(r.bytes).unwrap_or(i64::MAX);
                    let (agent, change) = match r.operation_id {
                        ALLOCATE | VMEM_ALLOCATE => {
                            self.allocations.insert(live, (r.agent, bytes));
                            (r.agent, bytes)
                        }
                        _ => match self.allocations.remove(&live) {
                            Some((agent, bytes)) => (agent, -bytes),
                            // A free of null or of memory allocated before tracing began.
                            None => continue,
                        },
                    };
                    let total = self.allocated.entry((stream, agent)).or_default();
                    *total = total.saturating_add(change);
                    let total = *total;
                    let key = TrackKey {
                        stream,
                        track: Track::Allocated(agent),
                    };
                    self.value(key, r.end_ns, Value::Int(total), meta);
                }
            }
            Batch::ScratchMemory(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        let held = if r.operation_id == SCRATCH_ALLOC {
                            r.bytes
                        } else {
                            0
                        };
                        self.value(key, r.end_ns, Value::Int(held as i64), meta);
                    }
                }
            }
            // Kinds the trace does not show have no routes.
            _ => {}
        }
    }

    /// Writes what is held back at the end of the run, a timeline per call (so that a
    /// split trace can go on in the next file between calls); false once all is written.
    pub fn finish(&mut self, catalog: &Catalog, settings: &Settings) -> bool {
        for sum in std::mem::take(&mut self.device_sums).finish() {
            self.device_counter(sum, catalog.stream(sum.stream));
        }
        for sum in std::mem::take(&mut self.spm_sums).finish() {
            self.spm(sum, catalog.stream(sum.stream));
        }
        for sum in std::mem::take(&mut self.sums).finish() {
            self.counter(sum, catalog.stream(sum.stream));
        }
        let Some(key) = self.timelines.keys().next().copied() else {
            return false;
        };
        let mut timeline = self.timelines.remove(&key).expect("a key of the map");
        let mut out = Slices {
            sequence: self.id,
            out: &mut self.out,
            interned: &mut self.interned,
            call_args: &mut self.call_args,
            key,
            meta: catalog.stream(key.stream),
            settings,
        };
        let Ok(()) = timeline.finish(&mut out);
        true
    }

    /// Takes the slices of those of `records` on this sequence's tracks.
    fn slices<R>(
        &mut self,
        records: &[R],
        mine: impl Fn(usize) -> Option<TrackKey>,
        slice: impl Fn(&R) -> (u64, u64, Slice),
        meta: &StreamMeta,
        settings: &Settings,
    ) {
        for (i, r) in records.iter().enumerate() {
            if let Some(key) = mine(i) {
                let (start, end, slice) = slice(r);
                self.slice(key, start, end, slice, meta, settings);
            }
        }
    }

    fn slice(
        &mut self,
        key: TrackKey,
        start: u64,
        end: u64,
        slice: Slice,
        meta: &StreamMeta,
        settings: &Settings,
    ) {
        let timeline = self.timelines.entry(key).or_insert_with(|| {
            Timeline::new(match key.track {
                Track::Thread(_) | Track::Markers(_) => Overlap::Nest,
                _ => Overlap::Exclusive,
            })
        });
        let mut out = Slices {
            sequence: self.id,
            out: &mut self.out,
            interned: &mut self.interned,
            call_args: &mut self.call_args,
            key,
            meta,
            settings,
        };
        let span = timeline::Span {
            start,
            end,
            mark: slice,
        };
        let Ok(()) = timeline.push(span, &mut out);
    }

    /// An instant named `name` on process `stream`'s track.
    pub fn process_instant(&mut self, stream: u16, time: u64, name: &str, meta: &StreamMeta) {
        let key = TrackKey {
            stream,
            track: Track::Process,
        };
        let (sequence, unit, out) = (self.id, self.unit, self.out.now());
        key.describe(0, meta, sequence, &mut self.interned.described, out);
        out.message(TRACE_PACKET, |p| {
            unit.stamp(p, time);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::INSTANT);
                e.uint(event::TRACK_UUID, key.uuid(0));
                e.str(event::NAME, name);
            });
        });
    }

    /// A dispatch's counter value, on its agent's track for the counter.
    fn counter(&mut self, sum: Sum, meta: &StreamMeta) {
        let key = TrackKey {
            stream: sum.stream,
            track: Track::Counter(sum.agent, sum.counter),
        };
        self.value(key, sum.time, Value::Double(sum.value), meta);
    }

    /// A device read's value of a counter (its instances summed), on the agent's track for
    /// the counter's samples.
    fn device_counter(&mut self, sum: Sum, meta: &StreamMeta) {
        let key = TrackKey {
            stream: sum.stream,
            track: Track::DeviceCounter(sum.agent, sum.counter),
        };
        self.value(key, sum.time, Value::Double(sum.value), meta);
    }

    /// What an agent's counter counted in an SPM interval (its instances summed), at the
    /// interval's end, on the agent's track for the counter's SPM samples.
    fn spm(&mut self, sum: Sum, meta: &StreamMeta) {
        let key = TrackKey {
            stream: sum.stream,
            track: Track::Spm(sum.agent, sum.counter),
        };
        self.value(key, sum.time, Value::Double(sum.value), meta);
    }

    /// A counter track's value from `time` on.
    fn value(&mut self, key: TrackKey, time: u64, value: Value, meta: &StreamMeta) {
        let uuid = key.uuid(0);
        let described = &mut self.interned.described;
        key.describe(0, meta, self.id, described, self.out.now());
        self.out.place(Event::Value { uuid, time, value });
    }

    /// Encodes the events placed since the last call (see [`Packets::encode`]).
    pub fn encode(&mut self, settings: &Settings) {
        self.out.encode(Writer {
            sequence: self.id,
            unit: self.unit,
            settings,
        });
    }
}

/// `rocprofiler_memory_allocation_operation_t` values that allocate.
const ALLOCATE: u8 = 1;
const VMEM_ALLOCATE: u8 = 2;
/// `ROCPROFILER_SCRATCH_MEMORY_ALLOC`; a free or an asynchronous reclaim leaves none.
const SCRATCH_ALLOC: u8 = 1;

/// One timeline's view of where its slices go.
struct Slices<'a> {
    sequence: u32,
    out: &'a mut Packets,
    interned: &'a mut Interned,
    call_args: &'a mut HashMap<(u16, u64), Vec<CallArg>>,
    key: TrackKey,
    meta: &'a StreamMeta,
    settings: &'a Settings,
}

impl Output<Slice> for Slices<'_> {
    /// The lane's number and track uuid.
    type Location = (usize, u64);
    /// The end was written with the start.
    type Open = ();
    type Error = std::convert::Infallible;

    fn open_lane(&mut self, lane: usize) -> Result<(usize, u64), Self::Error> {
        Ok((lane, self.key.uuid(lane)))
    }

    fn enter(
        &mut self,
        (lane, uuid): (usize, u64),
        span: timeline::Span<Slice>,
    ) -> Result<(), Self::Error> {
        let sequence = self.sequence;
        if !self.interned.described.contains(&uuid) {
            let described = &mut self.interned.described;
            self.key
                .describe(lane, self.meta, sequence, described, self.out.now());
        }
        self.start_file();
        let (name, new_name) = self.name(&span.mark);
        let category = category(&span.mark);
        let new_category = category.is_some_and(|c| {
            let known = self.interned.categories & (1 << c) != 0;
            self.interned.categories |= 1 << c;
            !known
        });
        let stream = self.key.stream;
        let call_args = match &span.mark {
            Slice::Api(r) if !self.call_args.is_empty() => {
                (self.call_args.remove(&(stream, r.correlation_id))).map(Vec::into_boxed_slice)
            }
            _ => None,
        };
        self.out.place(Event::Slice(Placed {
            uuid,
            stream,
            start: span.start,
            end: span.end,
            slice: span.mark,
            name,
            new_name,
            category,
            new_category,
            call_args,
        }));
        Ok(())
    }

    fn leave(&mut self, _: (usize, u64), _: u64, (): ()) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl Slices<'_> {
    /// Clears the sequence's incremental state at its first event in a file, interning the
    /// annotation names there.
    fn start_file(&mut self) {
        if self.interned.started {
            return;
        }
        self.interned.started = true;
        let (sequence, annotations) = (self.sequence, self.settings.annotations);
        self.out.now().message(TRACE_PACKET, |p| {
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.uint(
                packet::SEQUENCE_FLAGS,
                packet::SEQ_INCREMENTAL_STATE_CLEARED,
            );
            if annotations {
                p.message(packet::INTERNED_DATA, |i| {
                    for (iid, name) in (1..).zip(ARG_NAMES) {
                        entry(i, interned::DEBUG_ANNOTATION_NAMES, iid, name);
                    }
                });
            }
        });
    }

    /// The slice's event name iid, and its text when this file has not seen it yet.
    fn name(&mut self, slice: &Slice) -> (u64, Option<Box<str>>) {
        let stream = self.key.stream;
        let key = match slice {
            Slice::Api(r) => Name::Api(r.domain_id, r.operation_id),
            Slice::Marker(r) => Name::Marker(stream, r.message, r.domain_id, r.operation_id),
            Slice::Kernel(r) => Name::Kernel(stream, r.kernel_id),
            Slice::Copy(r) => Name::Copy(r.operation_id),
            Slice::Graph(r) => Name::Graph(r.graph_exec_id),
            Slice::Barrier(r) => Name::Barrier(r.operation_id),
        };
        let next = self.interned.names.len() as u64 + 1;
        let iid = *self.interned.names.entry(key).or_insert(next);
        if iid != next {
            return (iid, None);
        }
        let text = match slice {
            Slice::Api(r) => operation_name(r.domain_id, r.operation_id).to_owned(),
            Slice::Marker(r) => marker_label(r, self.meta).to_owned(),
            Slice::Kernel(r) => self.meta.kernel_name(r.kernel_id).to_owned(),
            Slice::Copy(r) => operation_name(
                Domain::MemoryCopy.sdk_value() as u8,
                i32::from(r.operation_id),
            )
            .to_owned(),
            Slice::Graph(r) => format!("graph {}", r.graph_exec_id),
            Slice::Barrier(r) => format!(
                "hip event {}",
                operation_name(Domain::HipEvent.sdk_value() as u8, r.operation_id)
            ),
        };
        (iid, Some(text.into_boxed_str()))
    }
}

fn operation_name(domain: u8, operation: i32) -> &'static str {
    Domain::from_sdk_value(domain.into())
        .and_then(|d| d.operation_name(operation))
        .unwrap_or("<unknown>")
}
