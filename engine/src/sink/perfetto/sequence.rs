//! A packet sequence: one writer's share of the trace, with its own interning.
//!
//! The sink spreads tracks over several sequences (see [`super::shards`]), which write a
//! window's records in parallel; a track's events all come from one sequence, so their
//! order is kept. Each sequence interns event names, categories and annotation names in its
//! own incremental state, cleared at the start of every file, and describes each track
//! before its first event in a file: every file stands alone.
//!
//! A slice is written whole, begin and end, when its timeline places it: the reader sorts
//! events by time, so only the order of events at one time on one track matters, and a
//! timeline places a span that encloses another first. Counter values are written as they
//! come.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::proto::{Encoder, TRACE_PACKET, annotation, event, interned, packet};
use super::settings::Settings;
use super::shards::Routes;
use super::tracks::{Track, TrackKey};
use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::marker_label;
use crate::plan::sink::perfetto::TimeUnit;
use crate::record::{
    ApiCall, ArgValue, Batch, GraphLaunch, HipEventBarrier, KernelDispatch, Marker, MemoryCopy, Sym,
};
use crate::sdk::Domain;
use crate::sink::counters::{CounterSums, SpmSums, Sum};
use crate::sink::timeline::{self, Output, Overlap, Timeline};

/// A slice's record, kept until its timeline places it.
#[derive(Debug, Clone, Copy)]
enum Slice {
    Api(ApiCall),
    Marker(Marker),
    Kernel(KernelDispatch),
    Copy(MemoryCopy),
    Graph(GraphLaunch),
    Barrier(HipEventBarrier),
}

impl timeline::Mark for Slice {
    fn is_point(&self) -> bool {
        false
    }
}

/// Debug annotation names, interned at the start of every file (iid = position + 1).
#[derive(Debug, Clone, Copy)]
enum Arg {
    CorrelationId = 1,
    ExternalId,
    DispatchId,
    KernelId,
    Queue,
    GridSize,
    WorkgroupSize,
    LdsBytes,
    ScratchBytes,
    VgprCount,
    SgprCount,
    Bytes,
    SrcAgent,
    DstAgent,
    GraphExecId,
    DispatchCount,
    SourceQueue,
    Event,
    GraphNodeId,
}

const ARG_NAMES: [&str; 19] = [
    "correlation_id",
    "external_id",
    "dispatch_id",
    "kernel_id",
    "queue",
    "grid_size",
    "workgroup_size",
    "lds_bytes",
    "scratch_bytes",
    "vgpr_count",
    "sgpr_count",
    "bytes",
    "src_agent",
    "dst_agent",
    "graph_exec_id",
    "dispatch_count",
    "source_queue",
    "event",
    "graph_node_id",
];

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
    pub out: Encoder,
    interned: Interned,
    timelines: HashMap<TrackKey, Timeline<(usize, u64), Slice>>,
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

/// An argument, as its call's slice annotates it: integers as integers, addresses as
/// pointers (which readers show in hex), the rest as text.
#[derive(Debug)]
struct CallArg {
    name: String,
    value: CallValue,
}

#[derive(Debug)]
enum CallValue {
    Int(i64),
    Pointer(u64),
    Text(String),
}

impl Sequence {
    pub fn new(id: u32, unit: TimeUnit) -> Sequence {
        Sequence {
            id,
            unit,
            out: Encoder::default(),
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
                    self.slice(key, r.start_ns, r.end_ns, Slice::Api(*r), meta, settings);
                }
            }
            Batch::Marker(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        self.slice(key, r.start_ns, r.end_ns, Slice::Marker(*r), meta, settings);
                    }
                }
            }
            Batch::KernelDispatch(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        self.slice(key, r.start_ns, r.end_ns, Slice::Kernel(*r), meta, settings);
                    }
                }
            }
            Batch::MemoryCopy(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        self.slice(key, r.start_ns, r.end_ns, Slice::Copy(*r), meta, settings);
                    }
                }
            }
            Batch::GraphLaunch(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        self.slice(key, r.start_ns, r.end_ns, Slice::Graph(*r), meta, settings);
                    }
                }
            }
            Batch::HipEventBarrier(records) => {
                for (i, r) in records.iter().enumerate() {
                    if let Some(key) = mine(i) {
                        let barrier = Slice::Barrier(*r);
                        self.slice(key, r.start_ns, r.end_ns, barrier, meta, settings);
                    }
                }
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
            unit: self.unit,
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
            unit: self.unit,
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
        let (sequence, unit, out) = (self.id, self.unit, &mut self.out);
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
        let (sequence, unit, out) = (self.id, self.unit, &mut self.out);
        let uuid = key.uuid(0);
        key.describe(0, meta, sequence, &mut self.interned.described, out);
        out.message(TRACE_PACKET, |p| {
            unit.stamp(p, time);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::COUNTER);
                e.uint(event::TRACK_UUID, uuid);
                match value {
                    Value::Int(v) => e.int(event::COUNTER_VALUE, v),
                    Value::Double(v) => e.double(event::DOUBLE_COUNTER_VALUE, v),
                }
            });
        });
    }
}

#[derive(Debug, Clone, Copy)]
enum Value {
    Int(i64),
    Double(f64),
}

/// `rocprofiler_memory_allocation_operation_t` values that allocate.
const ALLOCATE: u8 = 1;
const VMEM_ALLOCATE: u8 = 2;
/// `ROCPROFILER_SCRATCH_MEMORY_ALLOC`; a free or an asynchronous reclaim leaves none.
const SCRATCH_ALLOC: u8 = 1;

/// The flow id linking an API call and the GPU work it caused: correlation ids are unique
/// within a process, and below 2^48 in any run rocprofiler-sdk can record.
fn flow(stream: u16, correlation: u64) -> u64 {
    u64::from(stream) << 48 | correlation & ((1 << 48) - 1)
}

/// One timeline's view of where its slices go.
struct Slices<'a> {
    sequence: u32,
    unit: TimeUnit,
    out: &'a mut Encoder,
    interned: &'a mut Interned,
    call_args: &'a mut HashMap<(u16, u64), Vec<CallArg>>,
    key: TrackKey,
    meta: &'a StreamMeta,
    settings: &'a Settings,
}

impl Output<Slice> for Slices<'_> {
    /// The lane's number and track uuid.
    type Location = (usize, u64);
    type Error = std::convert::Infallible;

    fn open_lane(&mut self, lane: usize) -> Result<(usize, u64), Self::Error> {
        Ok((lane, self.key.uuid(lane)))
    }

    fn enter(
        &mut self,
        (lane, uuid): (usize, u64),
        span: &timeline::Span<Slice>,
    ) -> Result<(), Self::Error> {
        let sequence = self.sequence;
        if !self.interned.described.contains(&uuid) {
            let described = &mut self.interned.described;
            self.key
                .describe(lane, self.meta, sequence, described, self.out);
        }
        self.start_file();
        let name = self.name(&span.mark);
        let category = category(&span.mark);
        let new_category = category.filter(|&c| self.interned.categories & (1 << c) == 0);
        if let Some(c) = new_category {
            self.interned.categories |= 1 << c;
        }
        let (settings, unit, stream) = (self.settings, self.unit, self.key.stream);
        let call_args = match span.mark {
            Slice::Api(r) => self.call_args.remove(&(stream, r.correlation_id)),
            _ => None,
        };
        self.out.message(TRACE_PACKET, |p| {
            unit.stamp(p, span.start);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.uint(packet::SEQUENCE_FLAGS, packet::SEQ_NEEDS_INCREMENTAL_STATE);
            if name.1.is_some() || new_category.is_some() {
                p.message(packet::INTERNED_DATA, |i| {
                    if let Some(c) = new_category {
                        let domain = Domain::from_sdk_value(c as i32);
                        let text = domain.map_or("<unknown>", Domain::name);
                        entry(i, interned::EVENT_CATEGORIES, c, text);
                    }
                    if let Some(text) = &name.1 {
                        entry(i, interned::EVENT_NAMES, name.0, text);
                    }
                });
            }
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::SLICE_BEGIN);
                e.uint(event::TRACK_UUID, uuid);
                e.uint(event::NAME_IID, name.0);
                if let Some(c) = category {
                    e.uint(event::CATEGORY_IIDS, c);
                }
                if settings.annotations {
                    annotations(&span.mark, e);
                }
                for arg in call_args.iter().flatten() {
                    e.message(event::DEBUG_ANNOTATIONS, |a| {
                        a.str(annotation::NAME, &arg.name);
                        match &arg.value {
                            CallValue::Int(v) => a.int(annotation::INT_VALUE, *v),
                            CallValue::Pointer(v) => a.uint(annotation::POINTER_VALUE, *v),
                            CallValue::Text(v) => a.str(annotation::STRING_VALUE, v),
                        }
                    });
                }
                if settings.flows {
                    match span.mark {
                        Slice::Api(r) if r.correlation_id != 0 => {
                            e.fixed64(event::FLOW_IDS, flow(stream, r.correlation_id));
                        }
                        Slice::Kernel(KernelDispatch { correlation_id, .. })
                        | Slice::Copy(MemoryCopy { correlation_id, .. })
                        | Slice::Graph(GraphLaunch { correlation_id, .. })
                        | Slice::Barrier(HipEventBarrier { correlation_id, .. })
                            if correlation_id != 0 =>
                        {
                            e.fixed64(event::TERMINATING_FLOW_IDS, flow(stream, correlation_id));
                        }
                        _ => {}
                    }
                }
            });
        });
        let unit = self.unit;
        self.out.message(TRACE_PACKET, |p| {
            unit.stamp(p, span.end);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::SLICE_END);
                e.uint(event::TRACK_UUID, uuid);
            });
        });
        Ok(())
    }

    /// The end was written with the start.
    fn leave(&mut self, _: (usize, u64), _: u64, _: &Slice) -> Result<(), Self::Error> {
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
        self.out.message(TRACE_PACKET, |p| {
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
    fn name(&mut self, slice: &Slice) -> (u64, Option<String>) {
        let stream = self.key.stream;
        let key = match *slice {
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
        (iid, Some(text))
    }
}

/// An interned entry (`iid`, `name`) in a table of `InternedData`.
fn entry(interned: &mut Encoder, table: u32, iid: u64, name: &str) {
    interned.message(table, |e| {
        e.uint(interned::IID, iid);
        e.str(interned::NAME, name);
    });
}

fn operation_name(domain: u8, operation: i32) -> &'static str {
    Domain::from_sdk_value(domain.into())
        .and_then(|d| d.operation_name(operation))
        .unwrap_or("<unknown>")
}

/// A slice's category: its domain, interned with its SDK value as iid (all below 64, so a
/// bit set says which a file has).
fn category(slice: &Slice) -> Option<u64> {
    let domain = match slice {
        Slice::Api(r) => r.domain_id,
        Slice::Marker(r) => r.domain_id,
        Slice::Kernel(_) => return Some(Domain::KernelDispatch.sdk_value() as u64),
        Slice::Copy(_) => return Some(Domain::MemoryCopy.sdk_value() as u64),
        // Their domains' categories are their calls', on the threads that made them.
        Slice::Graph(_) | Slice::Barrier(_) => return None,
    };
    Some(u64::from(domain)).filter(|&d| d < 64)
}

/// The slice's debug annotations: ids that link it to other records, and what it did.
fn annotations(slice: &Slice, e: &mut Encoder) {
    let mut arg = |name: Arg, value: u64| {
        e.message(event::DEBUG_ANNOTATIONS, |a| {
            a.uint(annotation::NAME_IID, name as u64);
            a.uint(annotation::UINT_VALUE, value);
        });
    };
    let (correlation, external) = match *slice {
        Slice::Api(r) => (r.correlation_id, r.external_id),
        Slice::Marker(r) => (r.correlation_id, r.external_id),
        Slice::Kernel(r) => (r.correlation_id, r.external_id),
        Slice::Copy(r) => (r.correlation_id, r.external_id),
        Slice::Graph(r) => (r.correlation_id, r.external_id),
        Slice::Barrier(r) => (r.correlation_id, r.external_id),
    };
    if correlation != 0 {
        arg(Arg::CorrelationId, correlation);
    }
    if external != 0 {
        arg(Arg::ExternalId, external);
    }
    // The HIP graph node a dispatch or copy ran as, where it ran in one.
    let (exec, node) = match *slice {
        Slice::Kernel(r) => (r.graph_exec_id, r.graph_node_id),
        Slice::Copy(r) => (r.graph_exec_id, r.graph_node_id),
        _ => (0, 0),
    };
    if exec != 0 {
        arg(Arg::GraphExecId, exec);
        arg(Arg::GraphNodeId, node);
    }
    match *slice {
        Slice::Kernel(r) => {
            let volume = |x: u32, y: u32, z: u32| u64::from(x) * u64::from(y) * u64::from(z);
            arg(Arg::DispatchId, r.dispatch_id);
            arg(Arg::KernelId, r.kernel_id);
            arg(Arg::Queue, r.queue);
            arg(Arg::GridSize, volume(r.grid_x, r.grid_y, r.grid_z));
            arg(
                Arg::WorkgroupSize,
                volume(r.workgroup_x, r.workgroup_y, r.workgroup_z),
            );
            arg(Arg::LdsBytes, r.lds_bytes.into());
            arg(Arg::ScratchBytes, r.scratch_bytes.into());
            arg(Arg::VgprCount, r.vgpr_count.into());
            arg(Arg::SgprCount, r.sgpr_count.into());
        }
        Slice::Copy(r) => {
            arg(Arg::Bytes, r.bytes);
            arg(Arg::SrcAgent, r.src_agent.into());
            arg(Arg::DstAgent, r.dst_agent.into());
        }
        Slice::Graph(r) => {
            arg(Arg::GraphExecId, r.graph_exec_id);
            arg(Arg::DispatchCount, r.dispatch_count);
        }
        Slice::Barrier(r) => {
            arg(Arg::Queue, r.queue);
            arg(Arg::SourceQueue, r.source_queue);
            arg(Arg::Event, r.event);
        }
        Slice::Api(_) | Slice::Marker(_) => {}
    }
}
