//! What a sequence's packets say about its slices and counter values, encoded after the
//! sequence has placed them: placing keeps the sequence's state (timelines, interning,
//! described tracks) and must go in order, while encoding needs only what placing decided,
//! so a busy track's events are encoded in pieces on several threads (see [`super::packets`]).

use super::proto::{Encoder, TRACE_PACKET, annotation, event, interned, packet};
use super::settings::Settings;
use crate::plan::sink::perfetto::TimeUnit;
use crate::record::{ApiCall, GraphLaunch, HipEventBarrier, KernelDispatch, Marker, MemoryCopy};
use crate::sdk::Domain;
use crate::sink::timeline;

/// An event placed by its sequence, its packets not yet encoded.
pub enum Event {
    Slice(Placed),
    /// A counter track's value from `time` on.
    Value {
        uuid: u64,
        time: u64,
        value: Value,
    },
}

/// A slice placed on its lane, with what the sequence's interning decided for it.
pub struct Placed {
    /// The lane's track.
    pub uuid: u64,
    pub stream: u16,
    pub start: u64,
    pub end: u64,
    pub slice: Slice,
    /// The event name's iid, and its text where the file has not had it yet.
    pub name: u64,
    pub new_name: Option<Box<str>>,
    pub category: Option<u8>,
    /// Whether the file has not had the category yet.
    pub new_category: bool,
    /// The call's arguments, where they are shown.
    pub call_args: Option<Box<[CallArg]>>,
}

/// What each packet of a sequence says alike.
#[derive(Clone, Copy)]
pub struct Writer<'a> {
    /// `trusted_packet_sequence_id`.
    pub sequence: u32,
    pub unit: TimeUnit,
    pub settings: &'a Settings,
}

impl Event {
    pub fn encode(&self, w: Writer, out: &mut Encoder) {
        match self {
            Event::Slice(placed) => placed.encode(w, out),
            &Event::Value { uuid, time, value } => {
                out.message(TRACE_PACKET, |p| {
                    w.unit.stamp(p, time);
                    p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(w.sequence));
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
    }
}

impl Placed {
    /// The slice's begin (which interns what the file has not had) and its end.
    fn encode(&self, w: Writer, out: &mut Encoder) {
        let Writer {
            sequence,
            unit,
            settings,
        } = w;
        let stream = self.stream;
        out.message(TRACE_PACKET, |p| {
            unit.stamp(p, self.start);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.uint(packet::SEQUENCE_FLAGS, packet::SEQ_NEEDS_INCREMENTAL_STATE);
            let new_category = self.category.filter(|_| self.new_category);
            if self.new_name.is_some() || new_category.is_some() {
                p.message(packet::INTERNED_DATA, |i| {
                    if let Some(c) = new_category {
                        let domain = Domain::from_sdk_value(c.into());
                        let text = domain.map_or("<unknown>", Domain::name);
                        entry(i, interned::EVENT_CATEGORIES, c.into(), text);
                    }
                    if let Some(text) = &self.new_name {
                        entry(i, interned::EVENT_NAMES, self.name, text);
                    }
                });
            }
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::SLICE_BEGIN);
                e.uint(event::TRACK_UUID, self.uuid);
                e.uint(event::NAME_IID, self.name);
                if let Some(c) = self.category {
                    e.uint(event::CATEGORY_IIDS, c.into());
                }
                if settings.annotations {
                    annotations(&self.slice, e);
                }
                for arg in self.call_args.as_deref().unwrap_or_default() {
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
                    let (caused, correlation) = match &self.slice {
                        Slice::Api(r) => (false, r.correlation_id),
                        Slice::Marker(_) => (false, 0),
                        Slice::Kernel(r) => (true, r.correlation_id),
                        Slice::Copy(r) => (true, r.correlation_id),
                        Slice::Graph(r) => (true, r.correlation_id),
                        Slice::Barrier(r) => (true, r.correlation_id),
                    };
                    match (caused, correlation) {
                        (_, 0) => {}
                        (false, id) => e.fixed64(event::FLOW_IDS, flow(stream, id)),
                        (true, id) => e.fixed64(event::TERMINATING_FLOW_IDS, flow(stream, id)),
                    }
                }
            });
        });
        out.message(TRACE_PACKET, |p| {
            unit.stamp(p, self.end);
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.message(packet::TRACK_EVENT, |e| {
                e.uint(event::TYPE, event::SLICE_END);
                e.uint(event::TRACK_UUID, self.uuid);
            });
        });
    }
}

/// A slice's record, kept until its timeline places it and its packets are encoded. A host
/// thread's calls, most of the records, are moved through the timeline and into the placed
/// events: moved at the largest record's size, they cost the busiest sequences a tenth of
/// their time, so a call keeps only what its packets show, and the larger records are
/// boxed.
#[derive(Debug)]
pub enum Slice {
    Api(Call),
    Marker(Box<Marker>),
    Kernel(Box<KernelDispatch>),
    Copy(Box<MemoryCopy>),
    Graph(Box<GraphLaunch>),
    Barrier(Box<HipEventBarrier>),
}

/// What an API call's slice shows of its record.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub domain_id: u8,
    pub operation_id: i32,
    pub correlation_id: u64,
    pub external_id: u64,
}

impl From<&ApiCall> for Call {
    fn from(r: &ApiCall) -> Call {
        Call {
            domain_id: r.domain_id,
            operation_id: r.operation_id,
            correlation_id: r.correlation_id,
            external_id: r.external_id,
        }
    }
}

impl timeline::Mark for Slice {
    fn is_point(&self) -> bool {
        false
    }
}

/// Debug annotation names, interned at the start of every file (iid = position + 1).
#[derive(Debug, Clone, Copy)]
pub enum Arg {
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

pub const ARG_NAMES: [&str; 19] = [
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

/// An argument, as its call's slice annotates it: integers as integers, addresses as
/// pointers (which readers show in hex), the rest as text.
#[derive(Debug)]
pub struct CallArg {
    pub name: String,
    pub value: CallValue,
}

#[derive(Debug)]
pub enum CallValue {
    Int(i64),
    Pointer(u64),
    Text(String),
}

#[derive(Debug, Clone, Copy)]
pub enum Value {
    Int(i64),
    Double(f64),
}

/// The flow id linking an API call and the GPU work it caused: correlation ids are unique
/// within a process, and below 2^48 in any run rocprofiler-sdk can record.
fn flow(stream: u16, correlation: u64) -> u64 {
    u64::from(stream) << 48 | correlation & ((1 << 48) - 1)
}

/// An interned entry (`iid`, `name`) in a table of `InternedData`.
pub fn entry(interned: &mut Encoder, table: u32, iid: u64, name: &str) {
    interned.message(table, |e| {
        e.uint(interned::IID, iid);
        e.str(interned::NAME, name);
    });
}

/// A slice's category: its domain, interned with its SDK value as iid (all below 64, so a
/// bit set says which a file has).
pub fn category(slice: &Slice) -> Option<u8> {
    let domain = match slice {
        Slice::Api(r) => r.domain_id,
        Slice::Marker(r) => r.domain_id,
        Slice::Kernel(_) => Domain::KernelDispatch.sdk_value() as u8,
        Slice::Copy(_) => Domain::MemoryCopy.sdk_value() as u8,
        // Their domains' categories are their calls', on the threads that made them.
        Slice::Graph(_) | Slice::Barrier(_) => return None,
    };
    Some(domain).filter(|&d| d < 64)
}

/// The slice's debug annotations: ids that link it to other records, and what it did.
fn annotations(slice: &Slice, e: &mut Encoder) {
    let mut arg = |name: Arg, value: u64| {
        e.message(event::DEBUG_ANNOTATIONS, |a| {
            a.uint(annotation::NAME_IID, name as u64);
            a.uint(annotation::UINT_VALUE, value);
        });
    };
    let (correlation, external) = match slice {
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
    let (exec, node) = match slice {
        Slice::Kernel(r) => (r.graph_exec_id, r.graph_node_id),
        Slice::Copy(r) => (r.graph_exec_id, r.graph_node_id),
        _ => (0, 0),
    };
    if exec != 0 {
        arg(Arg::GraphExecId, exec);
        arg(Arg::GraphNodeId, node);
    }
    match slice {
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
