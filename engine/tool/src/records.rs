//! The buffer callback: SDK records in, rocflow records out. Each record is encoded
//! straight into its kind's frame, and a delivery's frames go to the writer together, a
//! part of the delivery at a time (new strings, threads and queues described first), so
//! the work inside the application is one copy per record and one hand-over per part.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use rocflow_core::abi::{
    ApiRecord, CounterRecord, DispatchCountingServiceRecord, Handle, HipEventRecord,
    HipGraphRecord, KernelDispatchRecord, MemoryAllocationRecord, MemoryCopyRecord,
    PcSamplingHostTrapRecord, RecordHeader, ScratchMemoryRecord, category, counter_record,
    pc_record,
};
use rocflow_core::record::{
    ApiArgs, ApiCall, Arg, ArgValue, CounterSample, GraphLaunch, HipEventBarrier, KernelDispatch,
    KfdEvent, Marker, MemoryAllocation, MemoryCopy, Meta, PcSample, Queue, Record, RecordKind,
    ScratchMemory, SpmSample, Sym, Thread,
};
use rocflow_core::ring::FrameBuffer;
use rocflow_core::sdk::Domain;
use rocflow_core::wire::{self, RecordsFrame};

use crate::graph::QueueSide;
use crate::graph_node::GraphNode;
use crate::guard::{entry, locked};
use crate::state::{Kernels, Tool, tool};
use crate::stream;
use crate::strings::{self, Table};

/// What the tool keeps per SDK buffer (the buffer callback's data).
pub struct BufferState {
    /// The kind losses are reported under: the context's first.
    pub kind: RecordKind,
    /// The context streams SPM, whose samples come in the counters category as counted
    /// dispatches' values do (the SDK refuses both in one context).
    spm: bool,
    /// Record vectors reused from delivery to delivery, and what outlives a delivery
    /// (the SDK delivers one buffer's batches one at a time, so this lock, taken once
    /// per delivery, is never contended).
    out: Mutex<Out>,
    /// The streams of the dispatches and copies enqueued and not yet delivered.
    pub streams: crate::hip_stream::Pending,
}

impl BufferState {
    pub fn new(kind: RecordKind, spm: bool) -> BufferState {
        BufferState {
            kind,
            spm,
            out: Mutex::default(),
            streams: Default::default(),
        }
    }

    /// Sends the values of dispatches whose last values never came (a discarding buffer
    /// dropped them), once the buffer's last batch is delivered: they are all there is.
    pub fn release_open(&self) {
        let pid = std::process::id();
        let mut out = locked(self.out.lock());
        let mut open: Vec<(u64, OpenDispatch)> = out.open.drain().collect();
        open.sort_unstable_by_key(|&(dispatch, _)| dispatch);
        // A forked child's copy of the map holds its parent's dispatches too.
        let values = open.into_iter().flat_map(|(_, d)| d.stamped());
        for value in values.filter(|v| v.pid == pid) {
            out.counters.push(value);
        }
        out.send(pid);
    }
}

/// A dispatch header whose counter values have not all arrived, and the values that have.
/// They are sent together once the last one comes, so that a dispatch's values reach the
/// runner in one frame, however the SDK interleaved them with those of dispatches that
/// completed at the same time: the stages and sinks total a dispatch's values as they
/// come, and gave a dispatch whose values came apart two totals.
///
/// Kernel replay's passes of a dispatch each bring a header and their values, with the
/// pass's times: they gather into one set, sent after the last pass's values with its
/// end, the application's (see [`crate::kernel_replay`]).
struct OpenDispatch {
    kernel_id: u64,
    end_ns: u64,
    values_left: u64,
    /// Headers of further passes still to come.
    passes_left: u64,
    values: Vec<CounterSample>,
}

impl OpenDispatch {
    fn complete(&self) -> bool {
        self.values_left == 0 && self.passes_left == 0
    }

    /// The values, each with the dispatch's end.
    fn stamped(mut self) -> Vec<CounterSample> {
        for value in &mut self.values {
            value.timestamp_ns = self.end_ns;
        }
        self.values
    }
}

/// The most values of one dispatch set aside for before they come: a header's count is
/// the SDK's, trusted for a sum, not for an allocation.
const RESERVED_VALUES: u64 = 4096;

/// The most emptied value lists kept for reuse: as many dispatches as are open at once.
const SPARE_LISTS: usize = 64;

/// One delivery's records, a frame per kind present, and the threads and queues they run
/// on.
#[derive(Default)]
struct Out {
    dispatches: Frame<KernelDispatch>,
    apis: Frame<ApiCall>,
    /// The arguments of calls in `apis` whose records carry them.
    args: ApiArgs,
    markers: Frame<Marker>,
    copies: Frame<MemoryCopy>,
    allocations: Frame<MemoryAllocation>,
    scratch: Frame<ScratchMemory>,
    counters: Frame<CounterSample>,
    pcs: Frame<PcSample>,
    kfd: Frame<KfdEvent>,
    graphs: Frame<GraphLaunch>,
    barriers: Frame<HipEventBarrier>,
    spm: Frame<SpmSample>,
    /// SPM dispatches whose samples may still come; kept across deliveries.
    spm_dispatches: crate::spm::Dispatches,
    tids: Vec<u64>,
    /// Queue id and agent index.
    queues: Vec<(u64, u32)>,
    /// Dispatches whose counter values are still to come, by dispatch id; kept across
    /// deliveries. A dispatch's values follow its header, but those of dispatches
    /// completing on other threads may come in between, so every open header is kept,
    /// with the values so far, until its last value.
    open: FxHashMap<u64, OpenDispatch>,
    /// Emptied value lists of dispatches sent, for the next headers: a dispatch takes one
    /// instead of allocating.
    spare: Vec<Vec<CounterSample>>,
    /// Which dispatch records of kernel replay's passes to keep.
    passes: crate::kernel_replay::PassRecords,
}

impl Out {
    /// Notes a thread; few distinct ones appear in a delivery, in runs.
    fn thread(&mut self, tid: u64) {
        if self.tids.last() != Some(&tid) && !self.tids.contains(&tid) {
            self.tids.push(tid);
        }
    }

    fn queue(&mut self, queue: u64, agent: u32) {
        if self.queues.last().map(|q| q.0) != Some(queue)
            && !self.queues.iter().any(|q| q.0 == queue)
        {
            self.queues.push((queue, agent));
        }
    }

    /// Sends dispatch `dispatch_id`'s values once they are all in, every pass's.
    fn close(&mut self, dispatch_id: u64) {
        if !self
            .open
            .get(&dispatch_id)
            .is_some_and(OpenDispatch::complete)
        {
            return;
        }
        let open = self.open.remove(&dispatch_id).expect("found above");
        let mut values = open.stamped();
        for value in values.drain(..) {
            self.counters.push(value);
        }
        if self.spare.len() < SPARE_LISTS {
            self.spare.push(values);
        }
    }

    /// Sends the frames so far, after what they refer to that the stream lacks: strings,
    /// threads, queues and marker messages.
    fn send(&mut self, pid: u32) {
        strings::send_new();
        describe_new(self, pid);
        let frames = self.finish();
        if !frames.is_empty() {
            crate::messages::send();
            stream::send(frames);
        }
    }

    /// The frames so far, a buffer each, in the order they are sent; leaves `self` ready
    /// for the next.
    fn finish(&mut self) -> Vec<FrameBuffer> {
        let mut frames = Vec::new();
        self.dispatches.finish(&mut frames);
        // Before the calls they belong to, so the runner has them at hand.
        if !self.args.is_empty() {
            let mut bytes = stream::frame_buffer();
            wire::encode_args(0, &self.args, &mut bytes);
            frames.push(bytes);
            self.args.clear();
        }
        self.apis.finish(&mut frames);
        self.markers.finish(&mut frames);
        self.copies.finish(&mut frames);
        self.allocations.finish(&mut frames);
        self.scratch.finish(&mut frames);
        self.counters.finish(&mut frames);
        self.pcs.finish(&mut frames);
        self.kfd.finish(&mut frames);
        self.graphs.finish(&mut frames);
        self.barriers.finish(&mut frames);
        self.spm.finish(&mut frames);
        self.tids.clear();
        self.queues.clear();
        frames
    }
}

/// A delivery's frame of one kind, started on its first record in a free slot of the
/// memory shared with the runner, or else in a buffer the writer is done with.
struct Frame<R>(Option<RecordsFrame<R, FrameBuffer>>);

impl<R> Default for Frame<R> {
    fn default() -> Self {
        Frame(None)
    }
}

impl<R: Record> Frame<R> {
    #[inline(always)]
    fn push(&mut self, record: R) {
        (self
            .0
            .get_or_insert_with(|| RecordsFrame::new(stream::frame_buffer())))
        .push(record);
    }

    /// Adds the frame, if it was started, to `frames`.
    fn finish(&mut self, frames: &mut Vec<FrameBuffer>) {
        frames.extend(self.0.take().map(|frame| frame.finish(0)));
    }
}

/// `rocprofiler_buffer_tracing_cb_t` for every buffer the tool creates.
pub unsafe extern "C" fn on_buffer(
    _context: Handle,
    _buffer: Handle,
    headers: *mut *mut RecordHeader,
    count: usize,
    data: *mut c_void,
    drop_count: u64,
) {
    entry("on_buffer", (), || {
        let Some(tool) = tool() else { return };
        // SAFETY: the data pointer is the leaked `BufferState` given at creation.
        let state = unsafe { &*data.cast::<BufferState>() };
        let headers = if headers.is_null() {
            &[][..]
        } else {
            // SAFETY: the SDK passes `count` header pointers.
            unsafe { std::slice::from_raw_parts(headers, count) }
        };
        // SAFETY: as above.
        unsafe { deliver(tool, state, headers, drop_count) }
    });
}

/// Records of a delivery converted before their frames are sent, as if the SDK had
/// delivered them apart. A delivery is up to a buffer's watermark, hundreds of thousands
/// of records with `trace-all`'s 64 MiB buffer: made whole, its frames grew to tens of MiB
/// (fresh memory, then copied by the writer long after they were written). A part's frames
/// are a few MiB, in buffers the writer hands back; a part of the largest kind fits a
/// ring slot, with room for records to grow.
const PART: usize = 49152;

/// How many records ahead of the one converted the loop asks for a payload. The SDK's
/// payloads were written a whole buffer ago, long out of the core's cache: fetched only
/// when converted, their loads were most of a delivery's time.
const PREFETCH: usize = 16;

/// Asks the core to bring the cache lines of a payload (the largest, a dispatch's, spans
/// three) in ahead of its use. It reads nothing, so any address will do.
#[inline(always)]
fn prefetch(payload: *const c_void) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for line in [0, 64, 128] {
            // SAFETY: SSE, which the instruction needs, is part of every x86-64 core; a
            // prefetch neither reads nor faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(payload.wrapping_byte_add(line).cast()) };
        }
    }
}

/// Converts a delivery's records and sends them, a part at a time.
///
/// # Safety
/// `headers` are the SDK's for the call, each valid.
unsafe fn deliver(
    tool: &Tool,
    state: &BufferState,
    headers: &[*mut RecordHeader],
    drop_count: u64,
) {
    let cpu_start = stream::thread_cpu_ns();
    // The whole delivery goes to one runner, even across a session's phase switch.
    let _pin = stream::pin();
    let pid = std::process::id();
    let mut out = locked(state.out.lock());
    for part in headers.chunks(PART) {
        let kernels = locked(tool.kernels.read());
        for (i, &header) in part.iter().enumerate() {
            if let Some(&ahead) = part.get(i + PREFETCH) {
                // SAFETY: as below: a header the SDK passes.
                prefetch(unsafe { (*ahead).payload });
            }
            // SAFETY: each header the SDK passes is valid for the call.
            let header = unsafe { &*header };
            // SAFETY: the payload's type follows from the category and kind.
            unsafe { convert(tool, &kernels, pid, header, state, &mut out) };
        }
        drop(kernels);
        out.send(pid);
    }
    let replayed = out.passes.take_left_out();
    drop(out);
    stream::account(headers.len() as u64, stream::thread_cpu_ns() - cpu_start);
    let unreplayed = crate::kernel_replay::take_unreplayed();
    if replayed > 0 || !unreplayed.is_empty() {
        stream::send_meta(vec![Meta::ReplayedPasses {
            count: replayed,
            unreplayed,
        }]);
    }
    if drop_count > 0 {
        stream::send_meta(vec![Meta::Dropped {
            kind: state.kind,
            count: drop_count,
        }]);
    }
}

/// Describes threads and queues the records use that the stream has not described yet.
/// Describes thread `tid` of this process, with the name it goes by.
pub fn thread(pid: u32, tid: u64) -> Meta {
    Meta::Thread(Thread {
        pid,
        tid: tid as u32,
        name: std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .ok()
            .map(|n| n.trim_end().to_owned()),
    })
}

fn describe_new(out: &Out, pid: u32) {
    let queue_ids: Vec<u64> = out.queues.iter().map(|q| q.0).collect();
    let (tids, new_queues) = stream::unseen(&out.tids, &queue_ids);
    let items: Vec<Meta> = tids
        .into_iter()
        .map(|tid| thread(pid, tid))
        .chain(new_queues.into_iter().map(|id| {
            let agent = out
                .queues
                .iter()
                .find(|q| q.0 == id)
                .map_or(u32::MAX, |q| q.1);
            Meta::Queue(Queue { id, agent, pid })
        }))
        .collect();
    stream::send_meta(items);
}

/// Adds the arguments of the call whose `_EXT` record `header` is, as the SDK's iteration
/// gives them: the way rocprofv3 reads them, from the records it buffered. The record holds
/// the arguments by value and only the SDK knows their layout, so this happens here, in
/// the application, where the record is; pointers are given as addresses, never followed.
fn collect_args(tool: &Tool, header: &RecordHeader, args: &mut ApiArgs) {
    let mut table = strings::lock();
    let mut sink = ArgSink {
        args,
        table: Table::of(&mut table),
    };
    // SAFETY: a record the SDK delivered, and a callback of the SDK's type whose data is
    // `sink` for the call. A status other than success (an SDK without arguments for the
    // kind) leaves the call without arguments.
    unsafe {
        (tool.api.iterate_record_args)(*header, Some(on_arg), (&mut sink as *mut ArgSink).cast())
    };
}

struct ArgSink<'a> {
    args: &'a mut ApiArgs,
    table: &'a mut Table,
}

/// `rocprofiler_buffer_tracing_operation_args_cb_t`: one argument of the call.
unsafe extern "C" fn on_arg(
    _kind: i32,
    _operation: i32,
    arg_number: u32,
    _arg_value_addr: *const c_void,
    _arg_indirection_count: i32,
    arg_type: *const c_char,
    arg_name: *const c_char,
    arg_value_str: *const c_char,
    data: *mut c_void,
) -> c_int {
    // Non-zero stops the iteration.
    entry("on_arg", 1, || {
        // SAFETY: the caller's contract.
        unsafe { add_arg(arg_number, arg_type, arg_name, arg_value_str, data) }
    })
}

/// Adds one argument to the `ArgSink` at `data`.
///
/// # Safety
/// As [`on_arg`]'s: `data` is the sink, the strings are NUL-terminated or null.
unsafe fn add_arg(
    arg_number: u32,
    arg_type: *const c_char,
    arg_name: *const c_char,
    arg_value_str: *const c_char,
    data: *mut c_void,
) -> c_int {
    // rocprofv3 leaves out an argument the SDK gives no type, name or value for.
    if arg_type.is_null() || arg_name.is_null() || arg_value_str.is_null() {
        return 0;
    }
    // SAFETY: `data` is the `ArgSink` of `collect_args`, and the strings are the SDK's
    // NUL-terminated ones, valid for the call.
    let (sink, type_name, name, value) = unsafe {
        (
            &mut *data.cast::<ArgSink>(),
            CStr::from_ptr(arg_type).to_bytes(),
            CStr::from_ptr(arg_name).to_bytes(),
            CStr::from_ptr(arg_value_str).to_bytes(),
        )
    };
    let value = std::str::from_utf8(value)
        .ok()
        .and_then(ArgValue::number)
        .unwrap_or_else(|| ArgValue::Text(sink.table.intern(value, str::to_owned)));
    sink.args.push(Arg {
        position: arg_number.min(u32::from(u8::MAX)) as u8,
        name: sink.table.intern(name, str::to_owned),
        type_name: sink.table.intern(type_name, demangle_type),
        value,
    });
    0
}

/// A C++ type as `typeid(T).name()` gives it (`Pv`, `m`, `13hipMemcpyKind`), demangled as
/// rocprofv3 writes it (`void*`, `unsigned long`, `hipMemcpyKind`): as the one parameter of
/// a function, which the demangler takes where it takes no bare type.
fn demangle_type(mangled: &str) -> String {
    cpp_demangle::Symbol::new(format!("_Z1f{mangled}"))
        .ok()
        .and_then(|s| s.demangle().ok())
        .and_then(|f| Some(f.strip_prefix("f(")?.strip_suffix(')')?.to_owned()))
        .unwrap_or_else(|| mangled.to_owned())
}

/// The call a host API domain's record is (its `pid` left to the caller). A graph
/// launch's and a HIP event's records have layouts of their own; an `_EXT` record starts
/// as the plain one does.
///
/// # Safety
/// `payload` points to a record of `domain` as the SDK delivers it.
unsafe fn api_call(domain: Domain, payload: *const c_void) -> ApiCall {
    // The fields a call is made of have the same names in every layout.
    macro_rules! call {
        ($record:ty) => {{
            // SAFETY: the caller's contract.
            let r = unsafe { &*payload.cast::<$record>() };
            ApiCall {
                pid: 0,
                tid: r.thread_id as u32,
                start_ns: r.start_timestamp,
                end_ns: r.end_timestamp,
                correlation_id: r.correlation_id.internal,
                external_id: r.correlation_id.external.value,
                domain_id: domain.plain().sdk_value() as u8,
                operation_id: r.operation,
            }
        }};
    }
    match domain {
        Domain::HipGraph => call!(HipGraphRecord),
        Domain::HipEvent => call!(HipEventRecord),
        _ => call!(ApiRecord),
    }
}

/// Converts one SDK record into its rocflow record.
///
/// # Safety
/// `header.payload` points at the record its category and kind say.
unsafe fn convert(
    tool: &Tool,
    kernels: &Kernels,
    pid: u32,
    header: &RecordHeader,
    state: &BufferState,
    out: &mut Out,
) {
    let agent = |handle: Handle| tool.agent_index(handle);
    match header.category {
        category::COUNTERS if state.spm => {
            let Out {
                spm,
                spm_dispatches,
                ..
            } = out;
            // SAFETY: the caller's contract.
            unsafe { crate::spm::convert(tool, pid, header, spm_dispatches, |s| spm.push(s)) }
        }
        category::TRACING => {
            let Some(domain) = Domain::from_sdk_value(header.kind as i32) else {
                return;
            };
            match domain.record_kind() {
                RecordKind::KernelDispatch => {
                    // SAFETY: the caller's contract.
                    let r = unsafe { &*header.payload.cast::<KernelDispatchRecord>() };
                    let info = &r.dispatch_info;
                    if !out.passes.keep(info.dispatch_id) {
                        return;
                    }
                    let (vgpr, sgpr) = kernels.get(&info.kernel_id).map_or((0, 0), |k| (k.0, k.1));
                    let agent = agent(info.agent_id);
                    out.thread(r.thread_id);
                    out.queue(info.queue_id.handle, agent);
                    let external = r.correlation_id.external.value;
                    let node = GraphNode::of_external(external);
                    let (graph_exec_id, graph_node_id) = GraphNode::columns(node);
                    out.dispatches.push(KernelDispatch {
                        pid,
                        tid: r.thread_id as u32,
                        agent,
                        queue: info.queue_id.handle,
                        dispatch_id: info.dispatch_id,
                        kernel_id: info.kernel_id,
                        start_ns: r.start_timestamp,
                        end_ns: r.end_timestamp,
                        correlation_id: r.correlation_id.internal,
                        // An id that carries a node is none of the application's.
                        external_id: if node.is_some() { 0 } else { external },
                        grid_x: info.grid_size.x,
                        grid_y: info.grid_size.y,
                        grid_z: info.grid_size.z,
                        workgroup_x: info.workgroup_size.x,
                        workgroup_y: info.workgroup_size.y,
                        workgroup_z: info.workgroup_size.z,
                        lds_bytes: info.group_segment_size,
                        scratch_bytes: info.private_segment_size,
                        vgpr_count: vgpr,
                        sgpr_count: sgpr,
                        graph_exec_id,
                        graph_node_id,
                        hip_stream: state.streams.take(r.correlation_id.internal),
                    });
                }
                RecordKind::Api => {
                    // SAFETY: the caller's contract.
                    let call = unsafe { api_call(domain, header.payload) };
                    out.thread(u64::from(call.tid));
                    out.apis.push(ApiCall { pid, ..call });
                    if domain.has_args() {
                        out.args.begin(call.correlation_id);
                        collect_args(tool, header, &mut out.args);
                    }
                    // SAFETY: the caller's contract.
                    match unsafe { crate::graph::queue_side(domain, header.payload, pid, agent) } {
                        // The SDK names no queue for a launch whose branches may run on
                        // several.
                        Some(QueueSide::Launch(launch)) => {
                            if launch.queue != 0 {
                                out.queue(launch.queue, launch.agent);
                            }
                            out.graphs.push(launch);
                        }
                        Some(QueueSide::Barrier(barrier)) => {
                            out.queue(barrier.queue, barrier.agent);
                            out.barriers.push(barrier);
                        }
                        None => {}
                    }
                }
                RecordKind::Marker => {
                    // SAFETY: the caller's contract.
                    let r = unsafe { &*header.payload.cast::<ApiRecord>() };
                    out.thread(r.thread_id);
                    out.markers.push(Marker {
                        pid,
                        tid: r.thread_id as u32,
                        start_ns: r.start_timestamp,
                        end_ns: r.end_timestamp,
                        correlation_id: r.correlation_id.internal,
                        external_id: r.correlation_id.external.value,
                        domain_id: r.kind as u8,
                        operation_id: r.operation,
                        // Buffered marker records carry no message: the runner gives
                        // them theirs (see `messages`).
                        message: Sym(0),
                    });
                }
                RecordKind::MemoryCopy => {
                    // SAFETY: the caller's contract.
                    let r = unsafe { &*header.payload.cast::<MemoryCopyRecord>() };
                    out.thread(r.thread_id);
                    let external = r.correlation_id.external.value;
                    let node = GraphNode::of_external(external);
                    let (graph_exec_id, graph_node_id) = GraphNode::columns(node);
                    out.copies.push(MemoryCopy {
                        pid,
                        tid: r.thread_id as u32,
                        src_agent: agent(r.src_agent_id),
                        dst_agent: agent(r.dst_agent_id),
                        start_ns: r.start_timestamp,
                        end_ns: r.end_timestamp,
                        correlation_id: r.correlation_id.internal,
                        external_id: if node.is_some() { 0 } else { external },
                        bytes: r.bytes,
                        operation_id: r.operation as u8,
                        graph_exec_id,
                        graph_node_id,
                        dst_address: r.dst_address,
                        src_address: r.src_address,
                        hip_stream: state.streams.take(r.correlation_id.internal),
                    });
                }
                RecordKind::MemoryAllocation => {
                    // SAFETY: the caller's contract.
                    let r = unsafe { &*header.payload.cast::<MemoryAllocationRecord>() };
                    out.allocations.push(MemoryAllocation {
                        pid,
                        tid: r.thread_id as u32,
                        agent: agent(r.agent_id),
                        start_ns: r.start_timestamp,
                        end_ns: r.end_timestamp,
                        correlation_id: r.correlation_id.internal,
                        external_id: r.correlation_id.external.value,
                        address: r.address,
                        bytes: r.allocation_size,
                        operation_id: r.operation as u8,
                    });
                }
                RecordKind::ScratchMemory => {
                    // SAFETY: the caller's contract.
                    let r = unsafe { &*header.payload.cast::<ScratchMemoryRecord>() };
                    out.scratch.push(ScratchMemory {
                        pid,
                        tid: r.thread_id as u32,
                        agent: agent(r.agent_id),
                        queue: r.queue_id.handle,
                        start_ns: r.start_timestamp,
                        end_ns: r.end_timestamp,
                        correlation_id: r.correlation_id.internal,
                        external_id: r.correlation_id.external.value,
                        bytes: r.allocation_size,
                        flags: r.flags,
                        operation_id: r.operation as u8,
                    });
                }
                RecordKind::KfdEvent => {
                    // SAFETY: the caller's contract.
                    if let Some(event) =
                        unsafe { crate::kfd::event(domain, header.payload, pid, agent) }
                    {
                        out.kfd.push(event);
                    }
                }
                // Domains whose records rocflow does not take apart yet.
                _ => {}
            }
        }
        category::COUNTERS if header.kind == counter_record::DISPATCH_HEADER => {
            // SAFETY: the caller's contract.
            let r = unsafe { &*header.payload.cast::<DispatchCountingServiceRecord>() };
            let id = r.dispatch_info.dispatch_id;
            match out.open.get_mut(&id) {
                // A further pass of a replayed dispatch: its values join the earlier ones.
                Some(open) if open.passes_left > 0 => {
                    open.passes_left -= 1;
                    open.values_left += r.num_records;
                    open.end_ns = r.end_timestamp;
                }
                _ => {
                    let passes = crate::kernel_replay::passes_of(id).unwrap_or(1);
                    if r.num_records == 0 && passes == 1 {
                        return;
                    }
                    let mut values = out.spare.pop().unwrap_or_default();
                    values.reserve(r.num_records.min(RESERVED_VALUES) as usize);
                    let open = OpenDispatch {
                        kernel_id: r.dispatch_info.kernel_id,
                        end_ns: r.end_timestamp,
                        values_left: r.num_records,
                        passes_left: passes - 1,
                        values,
                    };
                    out.open.insert(id, open);
                }
            }
            out.close(id);
        }
        category::COUNTERS if header.kind == counter_record::VALUE => {
            // SAFETY: the caller's contract.
            let r = unsafe { &*header.payload.cast::<CounterRecord>() };
            let open = out.open.get_mut(&r.dispatch_id);
            let (kernel_id, end) = (open.as_ref()).map_or((0, 0), |o| (o.kernel_id, o.end_ns));
            let (counter, at) = crate::gpu::coordinates(tool, r.id);
            let value = CounterSample {
                pid,
                agent: agent(r.agent_id),
                dispatch_id: r.dispatch_id,
                kernel_id,
                timestamp_ns: end,
                counter_id: counter.handle as u32,
                xcc: at[0],
                aid: at[1],
                shader_engine: at[2],
                agent_index: at[3],
                shader_array: at[4],
                wgp: at[5],
                instance: at[6],
                value: r.counter_value,
            };
            match open {
                Some(open) => {
                    open.values.push(value);
                    open.values_left = open.values_left.saturating_sub(1);
                    out.close(r.dispatch_id);
                }
                // The header was lost (a discarding buffer dropped it).
                None => out.counters.push(value),
            }
        }
        category::PC_SAMPLING if header.kind == pc_record::HOST_TRAP_V0 => {
            // SAFETY: the caller's contract.
            let r = unsafe { &*header.payload.cast::<PcSamplingHostTrapRecord>() };
            out.pcs.push(PcSample {
                pid,
                agent: tool.code_object_agent(r.pc.code_object_id),
                timestamp_ns: r.timestamp,
                dispatch_id: r.dispatch_id,
                correlation_id: r.correlation_id.internal,
                pc: r.pc.code_object_offset,
                code_object_id: r.pc.code_object_id,
                code_object_offset: r.pc.code_object_offset,
                exec_mask: r.exec_mask,
                wave_id: ((r.hw_id >> 6) & 0x7f) as u32,
                hw_id: r.hw_id as u32,
                chiplet: (r.hw_id & 0x3f) as u8,
                method: 2,
                instruction_type: 0,
                stall_reason: 0,
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use rocflow_core::record::{RecordKind, wire_size};
    use rocflow_core::ring::Layout;
    use rocflow_core::wire::FRAME_HEADER;

    use super::{PART, demangle_type};

    /// A part's frame of any one kind fits a slot, so that records are never copied out of
    /// one (a frame that outgrows its slot moves to the heap).
    #[test]
    fn a_part_of_records_of_any_kind_fits_a_slot() {
        for &kind in RecordKind::ALL {
            let frame = FRAME_HEADER + PART * wire_size(kind);
            assert!(
                frame <= Layout::TOOL.slot_size,
                "{kind:?}: a part's frame is {frame} bytes"
            );
        }
    }

    #[test]
    fn argument_types_are_demangled_as_rocprofv3_writes_them() {
        for (mangled, shown) in [
            ("Pv", "void*"),
            ("PKv", "void const*"),
            ("m", "unsigned long"),
            ("13hipMemcpyKind", "hipMemcpyKind"),
            ("P12ihipStream_t", "ihipStream_t*"),
            ("PPv", "void**"),
            ("not a type!", "not a type!"),
        ] {
            assert_eq!(demangle_type(mangled), shown);
        }
    }
}
