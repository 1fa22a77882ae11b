//! The scenario's work, replayed on the process's own threads while the application runs:
//! each operation becomes the record the real SDK would buffer, for every started context
//! that traces it. Time is virtual (each thread's clock starts at its real start and moves
//! by the scenario's durations), so runs are repeatable and cost nothing to wait for;
//! a scenario with `duration_ms` paces its threads, so that the virtual clock follows the
//! real one (see [`Pace`]).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use rocflow_core::abi::graph_node::{
    EXEC_LAUNCH, HipGraphData, REQUEST_KERNEL_DISPATCH, REQUEST_MEMORY_COPY,
};
use rocflow_core::abi::{
    ApiRecord, AsyncCorrelationId, CallbackTracingRecord, CodeObjectLoadData, CorrelationId,
    CounterRecord, Dim3, DispatchCountingServiceData, DispatchCountingServiceRecord, Handle,
    HipEventRecord, HipGraphRecord, KernelDispatchInfo, KernelDispatchRecord,
    KernelSymbolRegisterData, MarkerApiData, MemoryAllocationRecord, MemoryCopyRecord, Pc,
    PcSamplingHostTrapRecord, SpmCounterRecord, SpmDispatchData, UserData, callback, category,
    counter_record, kernel_replay, pc_record,
};
use rocflow_core::agent_counters::{self, AgentCounter, Kind};
use rocflow_core::sdk::Domain;
use rocflow_counters::expr::{Dimension, Tensor};

use crate::args::{CallArgs, HipApiExtRecord, on_stack};
use crate::buffer::Staged;
use crate::device::{Counter, instance_id};
use crate::kernel_replay::Submission;
use crate::sdk::{Context, Running, Sdk, SpmService};
use crate::stream::Streams;
use rocflow_core::scenario::{HostMemory, Kernel, MarkerLibrary, Settings};

static CORRELATION: AtomicU64 = AtomicU64::new(1);
static DISPATCH: AtomicU64 = AtomicU64::new(1);

/// `ROCPROFILER_KERNEL_DISPATCH_ENQUEUE`: the operation a dispatch's external correlation
/// id is asked for at.
const DISPATCH_ENQUEUE: i32 = 1;

/// `ROCPROFILER_HIP_EVENT_OPERATION_WAIT`.
const HIP_EVENT_WAIT: i32 = 2;

/// How long each simulated host API call takes.
const API_NS: u64 = 2_000;
/// Between two passes of a replayed dispatch: the SDK restores the GPU's tracked memory.
const REPLAY_RESTORE_NS: u64 = 5_000;

/// The queue thread `index` launches `kernel` on (its stream's, on the kernel's GPU).
fn kernel_queue(index: u32, kernel: &Kernel) -> Handle {
    Handle {
        handle: 0x5000 + u64::from(index) * 16 + u64::from(kernel.agent),
    }
}

fn hip_op(name: &str) -> i32 {
    let ops = Domain::HipRuntimeApi.operations();
    ops.iter()
        .find(|(_, n)| *n == name)
        .map_or(0, |(id, _)| *id)
}

pub fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// How a thread of a scenario with `duration_ms` keeps its virtual clock on the real one:
/// its iterations start on a schedule, and each operation waits until the real clock
/// reaches the virtual time it happens at. A thread behind schedule does not wait.
struct Pace {
    /// The thread's start.
    start: u64,
    /// Between the scheduled starts of consecutive iterations.
    every_ns: u64,
}

impl Pace {
    /// The pace of a thread starting at `start`; none for a scenario without `duration_ms`.
    fn of(settings: &Settings, start: u64) -> Option<Pace> {
        let duration_ns = settings.duration_ms?.get().saturating_mul(1_000_000);
        Some(Pace {
            start,
            every_ns: duration_ns / u64::from(settings.iterations.max(1)),
        })
    }

    /// The first iteration scheduled at `t` or later.
    fn first_due(&self, t: u64) -> u32 {
        let since = t.saturating_sub(self.start);
        u32::try_from(since.div_ceil(self.every_ns.max(1))).unwrap_or(u32::MAX)
    }

    /// When iteration `i` starts, the one before it having ended at `t`.
    fn iteration(&self, i: u32, t: u64) -> u64 {
        t.max(self.start + u64::from(i) * self.every_ns)
    }

    /// Waits for the real clock to reach `t`; `idle` runs first when there is a wait: what
    /// the thread did so far reaches its buffers then, as the SDK's records do as they
    /// happen, not only when a stage fills.
    fn wait(&self, t: u64, idle: impl FnOnce()) {
        let now = crate::sdk::now();
        if t > now {
            idle();
            std::thread::sleep(std::time::Duration::from_nanos(t - now));
        }
    }
}

/// Runs thread `index` of the scenario to its end. A paced scenario keeps the schedule
/// begun at `origin` (by default now): in a process attached after it started, the
/// iterations scheduled before the attach went by unobserved, and the thread starts with
/// the first one due.
pub fn run_thread(sdk: &Sdk, running: &Running, index: u32, origin: Option<u64>) {
    let scenario = &sdk.scenario;
    let tid = gettid();
    let mut t = crate::sdk::now();
    let pace = Pace::of(&scenario.scenario, origin.unwrap_or(t));
    let first = pace.as_ref().map_or(0, |p| p.first_due(t));
    let emitter = Emitter::new(sdk, running, tid);
    let wait = |t: u64| {
        if let Some(pace) = &pace {
            pace.wait(t, || emitter.hand_over());
        }
    };
    let mut queue_free = vec![0u64; scenario.agents.len()];
    let mut streams = Streams::create(scenario, &emitter);
    let (launch, graph_launch, memcpy, memcpy_async, malloc, free) = (
        hip_op("hipLaunchKernel"),
        hip_op("hipGraphLaunch"),
        hip_op("hipMemcpy"),
        hip_op("hipMemcpyAsync"),
        hip_op("hipMalloc"),
        hip_op("hipFree"),
    );
    let (host_malloc, host_free) = (hip_op("hipHostMalloc"), hip_op("hipHostFree"));
    let message = scenario.scenario.marker_message.as_deref();
    let ranges = Ranges::of(&scenario.scenario);
    for iteration in first..scenario.scenario.iterations {
        if let Some(pace) = &pace {
            t = pace.iteration(iteration, t);
            // The real SDK's records are in their buffers as they happen: before the
            // thread waits for its next iteration, so are the last one's, and a flush
            // meanwhile (a session's stop, a flush interval) delivers them.
            emitter.hand_over();
        }
        wait(t);
        if index == 0 {
            if scenario.scenario.pause_at == Some(iteration) {
                emitter.control(callback::ROCTX_PROFILER_PAUSE);
            }
            if scenario.scenario.resume_at == Some(iteration) {
                emitter.control(callback::ROCTX_PROFILER_RESUME);
            }
        }
        // roctxRangePushA: its callbacks now, its record when it is popped.
        let range = ranges.push(&emitter, message, t);
        // Enqueues kernel `k` at `t` under the launch call `correlation`.
        let mut enqueue = |streams: &mut Streams,
                           k: usize,
                           kernel: &Kernel,
                           correlation: u64,
                           t: u64,
                           submission| {
            let queue = kernel_queue(index, kernel);
            let free_at = &mut queue_free[kernel.agent as usize];
            let gpu = kernel.agent as usize;
            let dispatch_id = DISPATCH.fetch_add(1, Ordering::Relaxed);
            let start = running.ledger.run(
                gpu,
                streams.ready(kernel.stream, (*free_at).max(t + 1_000)),
                kernel.duration_ns,
                dispatch_id,
                |ready| running.dispatch_start(gpu, ready, kernel.duration_ns),
            );
            *free_at = start + kernel.duration_ns;
            streams.ran(kernel.stream, *free_at);
            let now = crate::sdk::now();
            (sdk.activity).dispatch(gpu, start, *free_at, now);
            let kernel_id = k as u64 + 1;
            emitter.dispatch(
                kernel,
                kernel_id,
                dispatch_id,
                queue,
                correlation,
                start,
                submission,
            );
        };
        for (k, kernel) in scenario.kernels.iter().enumerate() {
            let first = |graph| scenario.graph_nodes(graph).next().map(|n| n.0) == Some(k);
            if kernel.graph.is_some_and(|graph| !first(graph)) {
                // Dispatched by its graph's launch.
                continue;
            }
            let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
            wait(t);
            let named = streams.named(kernel.stream);
            // The null stream's argument is the thread's queue, as before streams.
            let stream = match named.value {
                0 => kernel_queue(index, kernel).handle,
                value => value,
            };
            crate::stream::set(&emitter, named, callback::PHASE_ENTER);
            match kernel.graph {
                None => {
                    emitter.hip(
                        api_record(Domain::HipRuntimeApi, launch, t, correlation, tid),
                        [k as u64, stream, 0, 0, 0],
                    );
                    t += API_NS;
                    enqueue(&mut streams, k, kernel, correlation, t, Submission::Packet);
                }
                // A graph is launched where its first node is listed.
                Some(graph) => {
                    let exec = crate::graph::exec_id(scenario, index, graph);
                    let call = api_record(Domain::HipRuntimeApi, graph_launch, t, correlation, tid);
                    emitter.hip(call, [exec, stream, 0, 0, 0]);
                    // The launch enqueues the graph's work on this thread, between its
                    // callbacks.
                    emitter.graph_launch(exec, callback::PHASE_ENTER, correlation);
                    let mut nodes = 0;
                    for (n, node) in scenario.graph_nodes(graph) {
                        let at = t + API_NS;
                        enqueue(
                            &mut streams,
                            n,
                            node,
                            correlation,
                            at,
                            Submission::GraphLaunch,
                        );
                        nodes += 1;
                    }
                    emitter.graph_launch(exec, callback::PHASE_EXIT, correlation);
                    let at = crate::graph::Launch {
                        gpu: sdk.device.gpu_handle(kernel.agent as usize),
                        exec,
                        dispatches: nodes,
                    };
                    crate::graph::trace(&emitter, &call, &at);
                    t += API_NS;
                }
            }
            crate::stream::set(&emitter, named, callback::PHASE_EXIT);
        }
        for copy in &scenario.copies {
            let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
            let operation = match copy.direction.as_str() {
                "host_to_host" => 1,
                "host_to_device" => 2,
                "device_to_host" => 3,
                _ => 4,
            };
            // Addresses outside every allocation, but a pinned copy's host side: the start of
            // this iteration's pinned allocation.
            let (mut dst_address, mut src_address) = (0x7f00_0000_0000, 0x7e00_0000_0000);
            if let (HostMemory::Pinned, Some(pinned)) = (copy.host, scenario.pinned_allocation()) {
                let iterations = scenario.scenario.iterations;
                let host = allocation_address(index, iteration, iterations, pinned.bytes);
                match operation {
                    2 => src_address = host,
                    3 => dst_address = host,
                    _ => {}
                }
            }
            wait(t);
            // A copy on the null stream is a synchronous hipMemcpy, which names no stream;
            // on a created one, a hipMemcpyAsync.
            let named = streams.named(copy.stream);
            let kind = operation as u64 - 1;
            let args = [dst_address, src_address, copy.bytes, kind, named.value];
            let on_stream = (copy.stream != 0).then_some(named);
            let function = match on_stream {
                Some(named) => {
                    crate::stream::set(&emitter, named, callback::PHASE_ENTER);
                    memcpy_async
                }
                None => memcpy,
            };
            emitter.hip(
                api_record(Domain::HipRuntimeApi, function, t, correlation, tid),
                args,
            );
            let start = streams.ready(copy.stream, t + 500);
            let end = start + copy.duration_ns;
            streams.ran(copy.stream, end);
            let (cpu, gpu) = (
                sdk.device.agents[0].id,
                sdk.device.gpu_handle(copy.agent as usize),
            );
            let (src, dst) = match operation {
                1 => (cpu, cpu),
                2 => (cpu, gpu),
                3 => (gpu, cpu),
                _ => (gpu, gpu),
            };
            let externals = emitter.external_ids(REQUEST_MEMORY_COPY, operation, correlation);
            let record = MemoryCopyRecord {
                size: size_of::<MemoryCopyRecord>() as u64,
                kind: Domain::MemoryCopy.sdk_value(),
                operation,
                correlation_id: async_correlation(correlation),
                thread_id: tid,
                start_timestamp: start,
                end_timestamp: end,
                dst_agent_id: dst,
                src_agent_id: src,
                bytes: copy.bytes,
                dst_address,
                src_address,
            };
            emitter.trace_each(Domain::MemoryCopy, operation, |context| MemoryCopyRecord {
                correlation_id: AsyncCorrelationId {
                    internal: correlation,
                    external: UserData {
                        value: externals[context],
                    },
                },
                ..record
            });
            match on_stream {
                Some(named) => {
                    crate::stream::set(&emitter, named, callback::PHASE_EXIT);
                    t += API_NS;
                }
                None => t += API_NS.max(copy.duration_ns + 1_000),
            }
        }
        for allocation in &scenario.allocations {
            let (agent, malloc, free) = match allocation.host {
                true => (sdk.device.agents[0].id, host_malloc, host_free),
                false => (
                    sdk.device.gpu_handle(allocation.agent as usize),
                    malloc,
                    free,
                ),
            };
            let address = allocation_address(
                index,
                iteration,
                scenario.scenario.iterations,
                allocation.bytes,
            );
            let calls: [(i32, i32, CallArgs); 2] = [
                (malloc, 1, [on_stack(0x200), allocation.bytes, 0, 0, 0]),
                (free, 3, [address, 0, 0, 0, 0]),
            ];
            for (api, operation, args) in calls {
                let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
                wait(t);
                emitter.hip(
                    api_record(Domain::HipRuntimeApi, api, t, correlation, tid),
                    args,
                );
                let record = MemoryAllocationRecord {
                    size: size_of::<MemoryAllocationRecord>() as u64,
                    kind: Domain::MemoryAllocation.sdk_value(),
                    operation,
                    correlation_id: sync_correlation(correlation),
                    thread_id: tid,
                    start_timestamp: t + 100,
                    end_timestamp: t + API_NS - 100,
                    agent_id: agent,
                    address,
                    allocation_size: allocation.bytes,
                };
                emitter.trace(Domain::MemoryAllocation, operation, &record);
                t += API_NS;
            }
        }
        for call in &scenario.calls {
            for _ in 0..call.count {
                let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
                wait(t);
                let mut record = api_record(call.domain, call.operation, t, correlation, tid);
                record.end_timestamp = t + call.duration_ns;
                // A graph's or an event's work runs on the first GPU's queue of this thread.
                let gpu = || sdk.device.gpu_handle(0);
                let queue = Handle {
                    handle: 0x5000 + u64::from(index) * 16,
                };
                match call.domain {
                    Domain::HipRuntimeApi => emitter.hip(record, [0; 5]),
                    Domain::HipGraph => emitter.trace(
                        call.domain,
                        call.operation,
                        &HipGraphRecord {
                            size: size_of::<HipGraphRecord>() as u64,
                            kind: record.kind,
                            operation: record.operation,
                            correlation_id: record.correlation_id,
                            thread_id: tid,
                            start_timestamp: record.start_timestamp,
                            end_timestamp: record.end_timestamp,
                            agent_id: gpu(),
                            queue_id: queue,
                            graph_exec_id: Handle {
                                handle: crate::graph::call_exec_id(scenario, index),
                            },
                            kernel_dispatch_count: 0,
                        },
                    ),
                    Domain::HipEvent => emitter.trace(
                        call.domain,
                        call.operation,
                        &HipEventRecord {
                            size: size_of::<HipEventRecord>() as u64,
                            kind: record.kind,
                            operation: record.operation,
                            correlation_id: async_correlation(correlation),
                            thread_id: tid,
                            start_timestamp: record.start_timestamp,
                            end_timestamp: record.end_timestamp,
                            agent_id: gpu(),
                            queue_id: queue,
                            hip_event_handle: 0xe000 + u64::from(index),
                            // A wait's barrier waits for the queue the event was recorded
                            // on: another stream's.
                            source_queue_id: match call.operation {
                                HIP_EVENT_WAIT => Handle {
                                    handle: queue.handle + 8,
                                },
                                _ => queue,
                            },
                        },
                    ),
                    _ => emitter.trace(call.domain, call.operation, &record),
                }
                t += call.duration_ns;
            }
        }
        for kfd in &scenario.kfd {
            for n in 0..kfd.count {
                wait(t);
                let at = crate::kfd::At {
                    timestamp: t,
                    cpu: sdk.device.agents[0].id,
                    gpu: sdk.device.gpu_handle(0),
                    address: crate::kfd::address(index, iteration, n),
                };
                crate::kfd::emit(&emitter, kfd, &at);
                t += crate::kfd::KFD_NS;
            }
        }
        t = t.max(queue_free.iter().copied().max().unwrap_or(0));
        t = t.max(streams.drained());
        wait(t);
        ranges.pop(&emitter, message, range, t);
        t += 1_000;
    }
    streams.destroy(&emitter);
}

/// Where the iterations' ROCTx ranges go.
#[derive(Clone, Copy)]
enum Ranges {
    None,
    /// To the SDK's ROCTx: its marker callbacks and records.
    Sdk,
    /// To the legacy library, which only a tool's tracer callback hears.
    Legacy(&'static crate::legacy_roctx::Library),
}

impl Ranges {
    fn of(settings: &Settings) -> Ranges {
        match (settings.marker_ranges, settings.marker_library) {
            (false, _) => Ranges::None,
            (true, MarkerLibrary::Sdk) => Ranges::Sdk,
            (true, MarkerLibrary::Legacy) => {
                crate::legacy_roctx::library().map_or(Ranges::None, Ranges::Legacy)
            }
        }
    }

    /// `roctxRangePushA(message)` at `t`: the SDK's range's correlation id and start.
    fn push(self, emitter: &Emitter, message: Option<&CStr>, t: u64) -> Option<(u64, u64)> {
        match self {
            Ranges::None => None,
            Ranges::Sdk => Some((emitter.push_range(message), t)),
            Ranges::Legacy(library) => {
                library.push(message);
                None
            }
        }
    }

    /// `roctxRangePop()` at `t` of the range `push` began.
    fn pop(self, emitter: &Emitter, message: Option<&CStr>, range: Option<(u64, u64)>, t: u64) {
        match (self, range) {
            (Ranges::Sdk, Some((correlation, start))) => {
                emitter.pop_range(message, correlation, start, t);
            }
            (Ranges::Legacy(library), _) => library.pop(),
            _ => {}
        }
    }
}

/// Where thread `thread` allocates `bytes` in `iteration` (of `iterations`): an address of
/// its own, as an allocator gives, since the other threads' allocations may be live at
/// the same time; a thread frees each before its next.
fn allocation_address(thread: u32, iteration: u32, iterations: u32, bytes: u64) -> u64 {
    let nth = u64::from(thread) * u64::from(iterations) + u64::from(iteration);
    0x7d00_0000_0000 + nth * bytes
}

fn sync_correlation(internal: u64) -> CorrelationId {
    CorrelationId {
        internal,
        external: UserData { value: 0 },
        ancestor: 0,
    }
}

fn async_correlation(internal: u64) -> AsyncCorrelationId {
    AsyncCorrelationId {
        internal,
        external: UserData { value: 0 },
    }
}

fn api_record(domain: Domain, operation: i32, t: u64, correlation: u64, tid: u64) -> ApiRecord {
    ApiRecord {
        size: size_of::<ApiRecord>() as u64,
        kind: domain.sdk_value(),
        operation,
        correlation_id: sync_correlation(correlation),
        start_timestamp: t,
        end_timestamp: t + API_NS,
        thread_id: tid,
    }
}

/// Records a thread stages before handing them to their buffer together.
const STAGED_RECORDS: usize = 256;

/// Hands records to the contexts that want them.
pub struct Emitter<'a> {
    sdk: &'a Sdk,
    running: &'a Running,
    tid: u64,
    /// This thread's records not yet in their buffers, per buffer.
    staged: RefCell<Vec<Staged>>,
}

impl Drop for Emitter<'_> {
    fn drop(&mut self) {
        self.hand_over();
    }
}

impl<'a> Emitter<'a> {
    pub fn new(sdk: &'a Sdk, running: &'a Running, tid: u64) -> Self {
        let staged = running.buffers.iter().map(|_| Staged::default()).collect();
        Emitter {
            sdk,
            running,
            tid,
            staged: RefCell::new(staged),
        }
    }

    /// Buffers a record for `buffer`; a full stage moves into the buffer.
    fn push<T: Copy>(&self, buffer: usize, category: u32, kind: u32, record: &T) {
        let mut staged = self.staged.borrow_mut();
        let stage = &mut staged[buffer];
        stage.push(category, kind, record);
        if stage.len() >= STAGED_RECORDS {
            self.running.buffers[buffer].push(stage);
        }
    }

    /// Moves every staged record into its buffer.
    fn hand_over(&self) {
        for (buffer, stage) in self
            .running
            .buffers
            .iter()
            .zip(self.staged.borrow_mut().iter_mut())
        {
            buffer.push(stage);
        }
    }

    fn active(&self) -> impl Iterator<Item = &Context> {
        self.running
            .contexts
            .iter()
            .filter(|c| c.active.load(Ordering::Acquire))
    }

    pub fn trace<T: Copy>(&self, domain: Domain, operation: i32, record: &T) {
        self.trace_each(domain, operation, |_| *record);
    }

    /// As [`Emitter::trace`], each context's record made by `record_of` from the context's
    /// index.
    fn trace_each<T: Copy>(&self, domain: Domain, operation: i32, record_of: impl Fn(usize) -> T) {
        let value = domain.sdk_value();
        for (index, ctx) in self.running.contexts.iter().enumerate() {
            if !ctx.active.load(Ordering::Acquire) {
                continue;
            }
            if let Some(buffer) = ctx.setup.traces(value, operation) {
                self.push(buffer, category::TRACING, value as u32, &record_of(index));
            }
        }
    }

    /// Asks each started context with the request service for `kind` for the external
    /// correlation id of the operation `correlation` this thread is enqueueing: per
    /// context (by index), the id its records of it carry; 0 where it asks for none or
    /// the tool declines (no id is pushed here).
    fn external_ids(&self, kind: i32, operation: i32, correlation: u64) -> Vec<u64> {
        let contexts = self.running.contexts.iter().enumerate();
        (contexts.map(|(index, ctx)| {
            let requests = (ctx.setup.requests.as_ref())
                .filter(|r| r.asks(kind) && ctx.active.load(Ordering::Acquire));
            let Some(requests) = requests else {
                return 0;
            };
            let context = Handle {
                handle: crate::sdk::CONTEXT_HANDLE_BASE + index as u64,
            };
            let mut external = UserData { value: 0 };
            // SAFETY: the tool's callback with the arguments the SDK passes.
            let declined = unsafe {
                (requests.callback)(
                    self.tid,
                    context,
                    kind,
                    operation,
                    correlation,
                    &mut external,
                    requests.data,
                )
            };
            if declined == 0 { external.value } else { 0 }
        }))
        .collect()
    }

    /// `hipGraphLaunch`'s `HIP_GRAPH` callbacks (`phase` enter before the graph's work is
    /// enqueued, exit after), where the SDK has them.
    fn graph_launch(&self, exec: u64, phase: i32, correlation: u64) {
        if !Domain::HipGraph.in_sdk(crate::sdk::version()) {
            return;
        }
        let mut data = HipGraphData {
            size: size_of::<HipGraphData>() as u64,
            graph_exec_id: Handle { handle: exec },
            graph_exec_value: (0xe7ec_0000 + exec) as *const c_void,
        };
        let payload = (&mut data as *mut HipGraphData).cast();
        self.callbacks(crate::graph::KIND, EXEC_LAUNCH, phase, correlation, payload);
    }

    /// A HIP call: its plain record, and its `_EXT` one with its arguments, to the
    /// contexts that trace either.
    fn hip(&self, record: ApiRecord, args: CallArgs) {
        let operation = record.operation;
        self.trace(Domain::HipRuntimeApi, operation, &record);
        let ext = HipApiExtRecord {
            base: ApiRecord {
                size: size_of::<HipApiExtRecord>() as u64,
                kind: Domain::HipRuntimeApiExt.sdk_value(),
                ..record
            },
            args,
        };
        self.trace(Domain::HipRuntimeApiExt, operation, &ext);
    }

    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &self,
        kernel: &Kernel,
        kernel_id: u64,
        dispatch_id: u64,
        queue: Handle,
        correlation: u64,
        start: u64,
        submission: Submission,
    ) {
        let [gx, gy, gz] = kernel.grid;
        let [wx, wy, wz] = kernel.workgroup;
        let info = KernelDispatchInfo {
            size: size_of::<KernelDispatchInfo>() as u64,
            agent_id: self.sdk.device.gpu_handle(kernel.agent as usize),
            queue_id: queue,
            kernel_id,
            dispatch_id,
            private_segment_size: kernel.scratch_bytes,
            group_segment_size: kernel.lds_bytes,
            workgroup_size: Dim3 {
                x: wx,
                y: wy,
                z: wz,
            },
            grid_size: Dim3 {
                x: gx,
                y: gy,
                z: gz,
            },
            reserved_padding: [0; 56],
        };
        let end = start + kernel.duration_ns;
        let externals = self.external_ids(REQUEST_KERNEL_DISPATCH, DISPATCH_ENQUEUE, correlation);
        let record = KernelDispatchRecord {
            size: size_of::<KernelDispatchRecord>() as u64,
            kind: Domain::KernelDispatch.sdk_value(),
            operation: 2,
            correlation_id: async_correlation(correlation),
            thread_id: self.tid,
            start_timestamp: start,
            end_timestamp: end,
            dispatch_info: info,
        };
        // Each execution of the dispatch, `strides` passes from its own time (0 unless
        // kernel replay runs it more than once), has its trace record and its counters,
        // with that execution's times, as every pass has on the SDK.
        let execute = |strides: i64| {
            let shift = strides * (kernel.duration_ns + REPLAY_RESTORE_NS) as i64;
            let (start, end) = (
                start.saturating_add_signed(shift),
                end.saturating_add_signed(shift),
            );
            self.trace_each(Domain::KernelDispatch, 2, |context| KernelDispatchRecord {
                start_timestamp: start,
                end_timestamp: end,
                correlation_id: AsyncCorrelationId {
                    internal: correlation,
                    external: UserData {
                        value: externals[context],
                    },
                },
                ..record
            });
            for ctx in self.active() {
                if let Some(counting) = ctx.setup.counting {
                    self.count(counting, &info, &kernel.counters, correlation, start, end);
                }
            }
        };
        let replay = crate::kernel_replay::KIND;
        let replayer =
            (self.active()).find_map(|c| c.setup.subscribed(replay, kernel_replay::CONFIG));
        match replayer.filter(|_| crate::kernel_replay::replays(submission)) {
            Some(replayer) => {
                let mut record = callback_record(self.tid, replay, 0, 0, std::ptr::null_mut());
                record.correlation_id = sync_correlation(correlation);
                crate::kernel_replay::run(replayer, &info, record, execute);
            }
            None => execute(0),
        }
        for ctx in self.active() {
            for pc in &ctx.setup.pc_sampling {
                if pc.gpu == kernel.agent as usize {
                    self.pc_samples(pc.buffer, kernel, &info, correlation, start);
                }
            }
            crate::device_trace::ran(ctx, kernel, kernel_id as usize - 1, start);
            if let Some(spm) = &ctx.setup.spm {
                self.stream_spm(spm, &info, correlation, start, end);
            }
            for service in &ctx.setup.thread_trace {
                let k = kernel_id as usize - 1;
                let correlation = async_correlation(correlation);
                crate::traced::trace_dispatch(self.sdk, service, kernel, k, &info, correlation);
            }
        }
    }

    /// Asks the tool's counting callback for the dispatch's counters and, when it picks a
    /// configuration for this agent, buffers a header and one value per counter instance.
    fn count(
        &self,
        counting: crate::sdk::Counting,
        info: &KernelDispatchInfo,
        pinned: &std::collections::BTreeMap<String, f64>,
        correlation: u64,
        start: u64,
        end: u64,
    ) {
        let data = DispatchCountingServiceData {
            size: size_of::<DispatchCountingServiceData>() as u64,
            correlation_id: async_correlation(correlation),
            start_timestamp: start,
            end_timestamp: end,
            dispatch_info: *info,
        };
        let mut config = Handle { handle: 0 };
        let mut user_data = UserData { value: 0 };
        // SAFETY: the tool's callback with the arguments the SDK passes.
        unsafe { (counting.callback)(data, &mut config, &mut user_data, counting.data) };
        let Some((gpu, counters)) = crate::sdk::counter_config(self.sdk, config) else {
            return;
        };
        if self.sdk.device.gpu_handle(gpu).handle != info.agent_id.handle {
            return;
        }
        let counters: Vec<_> = counters
            .iter()
            .map(|&i| &self.sdk.device.counters[i])
            .collect();
        let header = DispatchCountingServiceRecord {
            size: size_of::<DispatchCountingServiceRecord>() as u64,
            num_records: counters.iter().map(|c| c.instances()).sum(),
            correlation_id: data.correlation_id,
            start_timestamp: start,
            end_timestamp: end,
            dispatch_info: *info,
        };
        self.push(
            counting.buffer,
            category::COUNTERS,
            counter_record::DISPATCH_HEADER,
            &header,
        );
        let seed = self.sdk.scenario.scenario.seed;
        for counter in counters {
            let mut values = counter_values(self.sdk, counter, seed, &[info.dispatch_id]);
            // A kernel that pins the counter counts its value, spread evenly over the
            // instances.
            if let Some(&total) = pinned.get(counter.counter.name.as_str()) {
                let share = total / values.len().max(1) as f64;
                values.iter_mut().for_each(|v| v.1 = share);
            }
            for (id, counter_value) in values {
                let record = CounterRecord {
                    id,
                    counter_value,
                    dispatch_id: info.dispatch_id,
                    user_data,
                    agent_id: info.agent_id,
                };
                self.push(
                    counting.buffer,
                    category::COUNTERS,
                    counter_record::VALUE,
                    &record,
                );
            }
        }
    }

    /// Asks the tool's SPM callback for the dispatch's configuration and, when it picks
    /// one of the dispatch's GPU, buffers a header and the samples in time order, as a
    /// counted dispatch's: each counter instance's value split, in whole numbers, over
    /// the intervals of the dispatch's span at the agent's clock.
    fn stream_spm(
        &self,
        spm: &SpmService,
        info: &KernelDispatchInfo,
        correlation: u64,
        start: u64,
        end: u64,
    ) {
        let header = SpmDispatchData {
            size: size_of::<SpmDispatchData>() as u64,
            correlation_id: async_correlation(correlation),
            dispatch_info: *info,
        };
        let mut chosen = Handle { handle: 0 };
        let mut user_data = UserData { value: 0 };
        // SAFETY: the tool's callback with the arguments the SDK passes.
        unsafe { (spm.callback)(&header, &mut chosen, &mut user_data, spm.data) };
        let Some(config) = crate::sdk::spm_config(chosen) else {
            return;
        };
        if self.sdk.device.gpu_handle(config.gpu).handle != info.agent_id.handle {
            return;
        }
        let mhz = self.sdk.scenario.agents[config.gpu]
            .max_engine_clk_mhz
            .max(1);
        let period = (config.interval_cycles * 1000)
            .div_ceil(u64::from(mhz))
            .max(1);
        let intervals = (end - start).div_ceil(period).max(1);
        let seed = self.sdk.scenario.scenario.seed;
        let totals: Vec<(u64, u64)> = (config.counters.iter())
            .map(|&i| &self.sdk.device.counters[i])
            .flat_map(|counter| counter_values(self.sdk, counter, seed, &[info.dispatch_id]))
            .map(|(id, value)| (id, value as u64))
            .collect();
        let (counters, value) = (category::COUNTERS, counter_record::VALUE);
        self.push(
            spm.buffer,
            counters,
            counter_record::DISPATCH_HEADER,
            &header,
        );
        for k in 0..intervals {
            let timestamp = (start + (k + 1) * period).min(end);
            for &(id, total) in &totals {
                // Whole shares of the total, which add up to it exactly.
                let share =
                    |k: u64| (u128::from(total) * u128::from(k) / u128::from(intervals)) as u64;
                let sample = SpmCounterRecord {
                    size: size_of::<SpmCounterRecord>() as u64,
                    dispatch_id: info.dispatch_id,
                    id,
                    agent_id: info.agent_id,
                    timestamp,
                    value: (share(k + 1) - share(k)) as f64,
                };
                self.push(spm.buffer, counters, value, &sample);
            }
        }
    }

    fn pc_samples(
        &self,
        buffer: usize,
        kernel: &Kernel,
        info: &KernelDispatchInfo,
        correlation: u64,
        start: u64,
    ) {
        let step = kernel.duration_ns / u64::from(kernel.pc_samples.max(1));
        for i in 0..u64::from(kernel.pc_samples) {
            let record = PcSamplingHostTrapRecord {
                size: size_of::<PcSamplingHostTrapRecord>() as u64,
                hw_id: (i % 64) | ((i % 16) << 6),
                pc: Pc {
                    code_object_id: u64::from(kernel.agent) + 1,
                    code_object_offset: 0x1000 * info.kernel_id + 4 * i,
                },
                exec_mask: u64::MAX,
                timestamp: start + i * step,
                dispatch_id: info.dispatch_id,
                correlation_id: async_correlation(correlation),
                workgroup_id: Dim3 {
                    x: i as u32,
                    y: 0,
                    z: 0,
                },
                wave_in_group: 0,
            };
            self.push(
                buffer,
                category::PC_SAMPLING,
                pc_record::HOST_TRAP_V0,
                &record,
            );
        }
    }

    /// `roctxProfilerPause`/`Resume`: the marker-control callbacks of started contexts.
    fn control(&self, operation: i32) {
        // What happened before the pause or resume reaches the buffers first.
        self.hand_over();
        for phase in [callback::PHASE_ENTER, callback::PHASE_EXIT] {
            let kind = callback::MARKER_CONTROL_API;
            self.callbacks(kind, operation, phase, 0, std::ptr::null_mut());
        }
    }

    /// `roctxRangePushA(message)` entering: the marker range callbacks, with the message
    /// in the arguments as the real SDK passes it. Returns the range's correlation id.
    pub fn push_range(&self, message: Option<&CStr>) -> u64 {
        let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
        self.range_callbacks(message, callback::PHASE_ENTER, correlation);
        correlation
    }

    /// `roctxRangePop()` returning: the callbacks, then the range's buffered record, which
    /// carries no message (as the real SDK's does not).
    pub fn pop_range(&self, message: Option<&CStr>, correlation: u64, start: u64, end: u64) {
        self.range_callbacks(message, callback::PHASE_EXIT, correlation);
        let mut record = api_record(Domain::MarkerCoreRangeApi, 1, start, correlation, self.tid);
        record.end_timestamp = end;
        self.trace(Domain::MarkerCoreRangeApi, 1, &record);
    }

    fn range_callbacks(&self, message: Option<&CStr>, phase: i32, correlation: u64) {
        let mut data = MarkerApiData {
            size: size_of::<MarkerApiData>() as u64,
            args: [
                message.map_or(std::ptr::null(), CStr::as_ptr),
                std::ptr::null(),
            ],
            retval: 0,
        };
        let payload = (&mut data as *mut MarkerApiData).cast();
        let (kind, operation) = (
            callback::MARKER_CORE_RANGE_API,
            callback::ROCTX_THREAD_RANGE,
        );
        self.callbacks(kind, operation, phase, correlation, payload);
    }

    /// Calls the callbacks of the started contexts subscribed to `kind`, `operation`.
    pub(crate) fn callbacks(
        &self,
        kind: i32,
        operation: i32,
        phase: i32,
        correlation: u64,
        payload: *mut c_void,
    ) {
        for ctx in self.active() {
            if let Some(s) = ctx.setup.subscribed(kind, operation) {
                let mut record = callback_record(self.tid, kind, operation, phase, payload);
                record.correlation_id = sync_correlation(correlation);
                let mut user = UserData { value: 0 };
                // SAFETY: the tool's callback with the arguments the SDK passes.
                unsafe { (s.callback)(record, &mut user, s.data) };
            }
        }
    }
}

/// A hardware counter's values in a dispatch, each with its instance id, the last
/// dimension fastest.
fn hardware_values(
    counter: &AgentCounter,
    seed: u64,
    dispatch: u64,
) -> impl Iterator<Item = (u64, f64)> + '_ {
    let handle = Handle {
        handle: counter.handle,
    };
    (0..counter.instances()).map(move |instance| {
        let mut rest = instance;
        let mut positions: Vec<(u64, u64)> = (counter.dimensions.iter().rev())
            .map(|&(d, size)| {
                let position = rest % u64::from(size);
                rest /= u64::from(size);
                (d, position)
            })
            .collect();
        positions.reverse();
        let id = instance_id(handle, positions.into_iter());
        (id, counter_value(seed, dispatch, id))
    })
}

/// What a counter counted over `dispatches`, per instance with its id: a hardware
/// counter's values from the generator, summed over the dispatches, one per instance, the
/// last dimension fastest; a derived counter's computed, as the SDK computes it, from its
/// inputs' values summed over the dispatches (for one dispatch, its dispatch counting; for
/// those in a read's window, its device counting).
pub fn counter_values(
    sdk: &Sdk,
    counter: &Counter,
    seed: u64,
    dispatches: &[u64],
) -> Vec<(u64, f64)> {
    let summed = |input: &AgentCounter| -> Vec<(u64, f64)> {
        let mut values: Vec<(u64, f64)> = hardware_values(input, seed, 0)
            .map(|(id, _)| (id, 0.0))
            .collect();
        for &dispatch in dispatches {
            for (total, (_, value)) in values
                .iter_mut()
                .zip(hardware_values(input, seed, dispatch))
            {
                total.1 += value;
            }
        }
        values
    };
    let device = &sdk.device;
    let Kind::Derived { .. } = counter.counter.kind else {
        return summed(&counter.counter);
    };
    let (Some(definitions), Some(agent)) =
        (&device.definitions, sdk.scenario.agents.get(counter.gpu))
    else {
        return Vec::new();
    };
    let value = agent_counters::evaluate(definitions, agent, &counter.counter.name, &mut |name| {
        let input = &device.counters[device.position(counter.gpu, name)?].counter;
        let values: Vec<f64> = summed(input).into_iter().map(|v| v.1).collect();
        Some(Tensor::from_shape(&input.shape(), &values))
    });
    let instances = value.map(|v| v.instances().to_vec()).unwrap_or_default();
    let dimensions = &counter.counter.dimensions;
    (instances.into_iter())
        .map(|instance| {
            let positions = (dimensions.iter()).map(|&(d, _)| {
                let coordinate = instance.coordinates.get(Dimension::ALL[d as usize]);
                (d, u64::from(coordinate))
            });
            (instance_id(counter.id, positions), instance.value)
        })
        .collect()
}

/// A counter value from the scenario's seed, the dispatch and the instance: repeatable,
/// and different across all three.
pub fn counter_value(seed: u64, dispatch_id: u64, instance: u64) -> f64 {
    let mut x = seed ^ dispatch_id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ instance.rotate_left(17);
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x % 1_000_000) as f64
}

fn callback_record(
    tid: u64,
    kind: i32,
    operation: i32,
    phase: i32,
    payload: *mut c_void,
) -> CallbackTracingRecord {
    CallbackTracingRecord {
        context_id: Handle { handle: 0 },
        thread_id: tid,
        correlation_id: sync_correlation(0),
        kind,
        operation,
        phase,
        payload,
    }
}

/// Reports the scenario's code objects (one per GPU) and kernel symbols to a context that
/// subscribed to them, once, when it first starts.
pub fn report_code_objects(sdk: &Sdk, ctx: &Context) {
    let Some(s) = ctx
        .setup
        .subscriptions
        .iter()
        .find(|s| s.kind == callback::CODE_OBJECT)
    else {
        return;
    };
    if ctx.code_objects_sent.swap(true, Ordering::AcqRel) {
        return;
    }
    let tid = gettid();
    let scenario = &sdk.scenario;
    // A thread trace is decoded with the code objects' bytes, which a tool reads from
    // the loaded code object in memory.
    let traced =
        (sdk.running()).is_some_and(|r| (r.contexts.iter()).any(|c| c.setup.traces_threads()));
    for (gpu, agent) in scenario.agents.iter().enumerate() {
        let image = traced.then(|| crate::traced::code_object_image(sdk, gpu));
        let uri = match image {
            Some(image) => format!(
                "memory://{}#offset={:#x}&size={}",
                std::process::id(),
                image.as_ptr() as u64,
                image.len()
            ),
            None => format!(
                "file:///opt/sim/{}.hsaco#offset=0&size=65536&agent={}",
                scenario.scenario.name, agent.name
            ),
        };
        let uri = CString::new(uri).unwrap_or_default();
        let mut load = CodeObjectLoadData {
            size: size_of::<CodeObjectLoadData>() as u64,
            code_object_id: gpu as u64 + 1,
            agent_id: sdk.device.gpu_handle(gpu),
            hsa_agent: 0,
            uri: uri.as_ptr(),
            load_base: 0x7000_0000_0000 + gpu as u64 * 0x100_0000,
            load_size: 65536,
            load_delta: 0,
            storage_type: if image.is_some() { 2 } else { 1 },
            memory_base: image.map_or(0, |i| i.as_ptr() as u64),
            memory_size: image.map_or(0, |i| i.len() as u64),
        };
        let record = callback_record(
            tid,
            s.kind,
            callback::CODE_OBJECT_LOAD,
            callback::PHASE_LOAD,
            (&mut load as *mut CodeObjectLoadData).cast(),
        );
        let mut user = UserData { value: 0 };
        // SAFETY: the tool's callback; the payload lives until it returns.
        unsafe { (s.callback)(record, &mut user, s.data) };
        for (k, kernel) in scenario.kernels.iter().enumerate() {
            if kernel.agent as usize != gpu {
                continue;
            }
            let name = CString::new(kernel.name.as_str()).unwrap_or_default();
            let mut symbol = KernelSymbolRegisterData {
                size: size_of::<KernelSymbolRegisterData>() as u64,
                kernel_id: k as u64 + 1,
                code_object_id: gpu as u64 + 1,
                kernel_name: name.as_ptr(),
                kernel_object: 0x7000_0000_1000 + k as u64 * 0x100,
                kernarg_segment_size: 64,
                kernarg_segment_alignment: 8,
                group_segment_size: kernel.lds_bytes,
                private_segment_size: kernel.scratch_bytes,
                sgpr_count: kernel.sgpr,
                arch_vgpr_count: kernel.vgpr,
                accum_vgpr_count: 0,
                kernel_code_entry_byte_offset: 0x100,
                kernel_address: 0x7000_0000_1000 + k as u64 * 0x100,
            };
            let record = callback_record(
                tid,
                s.kind,
                callback::CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER,
                callback::PHASE_LOAD,
                (&mut symbol as *mut KernelSymbolRegisterData).cast(),
            );
            // SAFETY: as above.
            unsafe { (s.callback)(record, &mut user, s.data) };
        }
    }
}

impl crate::kfd::Trace for Emitter<'_> {
    fn trace<T: Copy>(&self, domain: Domain, operation: i32, record: &T) {
        Emitter::trace(self, domain, operation, record);
    }
}

impl crate::stream::Callbacks for Emitter<'_> {
    fn stream_callback(&self, operation: i32, phase: i32, payload: *mut c_void) {
        // The SDK passes no correlation id with these callbacks.
        self.callbacks(
            rocflow_core::abi::hip_stream::KIND,
            operation,
            phase,
            0,
            payload,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::allocation_address;

    /// The threads of a process allocate at the same time: no two of their allocations
    /// have one address, or a free would end the other thread's allocation.
    #[test]
    fn no_two_threads_allocate_at_one_address() {
        let (threads, iterations, bytes) = (4, 50, 4096);
        let mut seen = std::collections::HashSet::new();
        for thread in 0..threads {
            for iteration in 0..iterations {
                let address = allocation_address(thread, iteration, iterations, bytes);
                assert!(seen.insert(address), "{thread} {iteration}: {address:#x}");
            }
        }
    }
}
