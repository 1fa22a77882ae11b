//! What the rules read: a run's time-ordered activity, kept compact (a few dozen bytes a
//! record, names interned), collected through the same stages `rocflow summary` reads
//! through, from a spool, a run's folder or rocpd databases alike.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::call_index::CallIndex;
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::column::marker_label;
use crate::plan::StageGraph;
use crate::record::{Agent, Arg, ArgValue, Batch, RecordKind};
use crate::sdk::{AgentType, Domain};
use crate::sink::{Placeholders, Sink, SinkError};
use crate::source::{Ending, Source, SourceError};
use crate::stage;

/// A stretch of time on the SDK's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Totals of nanoseconds and bytes saturate: hostile input can hold values whose sum
/// passes 2^64, and a saturated total still reads as "at least this much".
pub trait Total {
    fn total(self) -> u64;
}

impl<I: Iterator<Item = u64>> Total for I {
    fn total(self) -> u64 {
        self.fold(0, u64::saturating_add)
    }
}

impl Span {
    pub fn len(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How long this and `other` overlap.
    pub fn overlap(&self, other: &Span) -> u64 {
        self.end_ns
            .min(other.end_ns)
            .saturating_sub(self.start_ns.max(other.start_ns))
    }
}

/// A name interned in the trace ([`Trace::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(u32);

/// A kernel dispatch.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    pub pid: u32,
    pub agent: u32,
    pub queue: u64,
    pub kernel: Name,
    pub span: Span,
    pub correlation_id: u64,
    /// The HIP stream it went on, as the SDK numbers them, where known.
    pub stream: Option<u64>,
}

/// A host API call.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub pid: u32,
    pub tid: u32,
    /// Its function (`hipMemcpy`), or `<unknown>`.
    pub function: &'static str,
    pub span: Span,
    pub correlation_id: u64,
}

/// A memory copy.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub pid: u32,
    /// The GPU whose memory it read or wrote (the destination's, the source's for a
    /// copy to the host); none between host buffers.
    pub gpu: Option<u32>,
    pub span: Span,
    pub bytes: u64,
    /// `host_to_device`, … (the SDK's operation, in rocflow's words).
    pub direction: &'static str,
    pub correlation_id: u64,
    /// Where it read or wrote on the host, for a copy between the host and a GPU whose
    /// record has its addresses.
    pub host_address: Option<u64>,
    /// The HIP stream it went on, as the SDK numbers them, where known.
    pub stream: Option<u64>,
}

/// Host memory a GPU copies from and to directly, without staging: an allocation of a CPU
/// agent's memory (`hipHostMalloc`), or a range `hipHostRegister` pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pinned {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
}

/// A memory allocation or free.
#[derive(Debug, Clone, Copy)]
pub struct Allocation {
    pub pid: u32,
    pub tid: u32,
    pub span: Span,
    pub bytes: u64,
    pub operation: &'static str,
}

/// One instance of a ROCTx range.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub pid: u32,
    pub tid: u32,
    pub label: Name,
    pub span: Span,
}

/// What a kernel's dispatches counted of one counter, on one GPU of a process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelCounter {
    pub pid: u32,
    pub agent: u32,
    pub kernel: Name,
    pub counter: Name,
    /// The dispatches with a value.
    pub dispatches: u64,
    /// The mean over those dispatches of each one's value, summed over the counter's
    /// instances (a derived metric the SDK reduces to one instance is its value).
    pub mean: f64,
}

/// The key of one dispatch's value of one counter: process, agent, dispatch, kernel,
/// counter.
type SampleKey = (u32, u32, u64, Name, Name);

/// A run's activity, each list in start order.
#[derive(Debug, Default)]
pub struct Trace {
    pub dispatches: Vec<Dispatch>,
    /// Per kernel, GPU and counter, what its dispatches counted, ordered by process,
    /// agent, kernel and counter.
    pub counters: Vec<KernelCounter>,
    /// Each process's MPI rank, where its launcher said.
    pub ranks: FxHashMap<u32, u32>,
    /// Each process's wall clock less its SDK clock (boot time), where its input keeps a
    /// wall-clock start: added to its times, it puts them where other hosts' times are.
    pub clock_offsets: FxHashMap<u32, i64>,
    /// The GPUs kernels counted on, by process and agent index: their properties bound
    /// what a kernel can reach.
    pub agents: FxHashMap<(u32, u32), Agent>,
    /// Each dispatch's value of each counter, summed over instances, until `finish`.
    samples: FxHashMap<SampleKey, f64>,
    pub calls: Vec<Call>,
    pub copies: Vec<Transfer>,
    pub allocations: Vec<Allocation>,
    /// Pinned host memory seen, whenever it was (frees are not followed: an address once
    /// pinned counts as pinned), merged per process, in order.
    pub pinned: Vec<Pinned>,
    pub ranges: Vec<Range>,
    names: Vec<String>,
    name_ids: FxHashMap<String, Name>,
    /// Each call's index in `calls`, by process and correlation id.
    by_correlation: CallIndex,
    /// The longest call's duration: how far before a span a call overlapping it may start.
    longest_call_ns: u64,
}

impl Trace {
    /// Replays a source's records through a pipeline's stages into a trace; says how the
    /// source ended.
    pub fn of_run(
        stages: &StageGraph,
        source: &mut dyn Source,
    ) -> Result<(Trace, Catalog, Result<Ending, SourceError>), String> {
        let mut collecting = Collecting::default();
        let (catalog, ending) = collecting.add(stages, source)?;
        Ok((collecting.finish(), catalog, ending))
    }

    /// Sorts every list by start and indexes the calls.
    fn finish(&mut self) {
        let Trace {
            dispatches,
            counters,
            samples,
            calls,
            copies,
            allocations,
            pinned,
            ranges,
            by_correlation,
            longest_call_ns,
            ..
        } = self;
        // The calls (the most records) sort on rayon's threads and are indexed while the
        // rest sort: one after another, they were a fifth of `rocflow analyze`'s time on a
        // 2 M-record trace-all run. A call's process and correlation id name it, so sorting
        // by them last makes the order total, and an unstable sort needs no copy of the
        // calls (a stable one on rayon's threads takes one as large: 260 MiB more at 20 M).
        rayon::join(
            || {
                calls.par_sort_unstable_by_key(|c| (c.span, c.pid, c.tid, c.correlation_id));
                *by_correlation = CallIndex::of(calls, |c| (c.pid, c.correlation_id));
                *longest_call_ns = calls.iter().map(|c| c.span.len()).max().unwrap_or(0);
            },
            || {
                dispatches.sort_by_key(|d| (d.span, d.pid, d.agent));
                copies.sort_by_key(|c| (c.span, c.pid));
                allocations.sort_by_key(|a| (a.span, a.pid, a.tid));
                *pinned = merged_pinned(std::mem::take(pinned));
                ranges.sort_by_key(|r| (r.span, r.pid, r.tid));
                *counters = kernel_counters(std::mem::take(samples));
            },
        );
    }

    /// The kernels' values of counter `name`, by process, agent and kernel.
    pub fn counter<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a KernelCounter> {
        (self.counters.iter()).filter(move |c| self.name(c.counter) == name)
    }

    /// The value of counter `name` that kernel `of` counted on its GPU, if collected.
    pub fn counter_of(&self, of: &KernelCounter, name: &str) -> Option<f64> {
        self.counter(name)
            .find(|c| (c.pid, c.agent, c.kernel) == (of.pid, of.agent, of.kernel))
            .map(|c| c.mean)
    }

    /// The kernels whose value of counter `name` is `flagged`, each with its GPU time,
    /// among those that took at least `min_share` of their GPU's kernel time: counters of
    /// a kernel that barely runs are not worth a finding.
    pub fn flagged_kernels<'a>(
        &'a self,
        name: &'a str,
        min_share: f64,
        flagged: impl Fn(f64) -> bool + 'a,
    ) -> impl Iterator<Item = (&'a KernelCounter, u64)> + 'a {
        self.counter(name)
            .filter(move |c| flagged(c.mean))
            .filter_map(move |c| {
                let (own, all) = self.kernel_time(c.pid, c.agent, c.kernel);
                (own > 0 && own as f64 >= min_share * all as f64).then_some((c, own))
            })
    }

    /// The GPU time of kernel `kernel`'s dispatches on GPU `agent` of process `pid`, and
    /// of all dispatches on that GPU.
    pub fn kernel_time(&self, pid: u32, agent: u32, kernel: Name) -> (u64, u64) {
        let on_gpu = (self.dispatches.iter()).filter(|d| (d.pid, d.agent) == (pid, agent));
        on_gpu.fold((0, 0), |(own, all), d| {
            let len = d.span.len();
            let own = if d.kernel == kernel {
                own.saturating_add(len)
            } else {
                own
            };
            (own, all.saturating_add(len))
        })
    }

    /// How many times kernel `kernel` ran on GPU `agent` of process `pid`.
    pub fn dispatch_count(&self, pid: u32, agent: u32, kernel: Name) -> u64 {
        (self.dispatches.iter())
            .filter(|d| (d.pid, d.agent, d.kernel) == (pid, agent, kernel))
            .count() as u64
    }

    /// Whether process `pid` pinned the host memory at `address`.
    pub fn is_pinned(&self, pid: u32, address: u64) -> bool {
        let after = self
            .pinned
            .partition_point(|p| (p.pid, p.start) <= (pid, address));
        after > 0 && {
            let p = self.pinned[after - 1];
            p.pid == pid && address < p.end
        }
    }

    /// Whether process `pid` pinned any host memory.
    pub fn pins(&self, pid: u32) -> bool {
        let first = self.pinned.partition_point(|p| p.pid < pid);
        self.pinned.get(first).is_some_and(|p| p.pid == pid)
    }

    /// The calls of process `pid` that overlap `span`, in start order.
    pub fn calls_overlapping(&self, pid: u32, span: Span) -> impl Iterator<Item = &Call> {
        let from = span.start_ns.saturating_sub(self.longest_call_ns);
        let first = self.calls.partition_point(|c| c.span.start_ns < from);
        self.calls[first..]
            .iter()
            .take_while(move |c| c.span.start_ns < span.end_ns)
            .filter(move |c| c.pid == pid && c.span.overlap(&span) > 0)
    }

    pub fn name(&self, name: Name) -> &str {
        &self.names[name.0 as usize]
    }

    pub fn intern(&mut self, name: &str) -> Name {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = Name(self.names.len() as u32);
        self.names.push(name.to_owned());
        self.name_ids.insert(name.to_owned(), id);
        id
    }

    /// The API call that made an operation of process `pid` (a launch, a copy).
    pub fn caller(&self, pid: u32, correlation_id: u64) -> Option<&Call> {
        let i = self.by_correlation.get(pid, correlation_id)?;
        Some(&self.calls[i])
    }

    /// Process `pid`'s MPI rank, or its pid where its launcher gave none.
    pub fn rank_of(&self, pid: u32) -> u32 {
        self.ranks.get(&pid).copied().unwrap_or(pid)
    }

    /// When process `pid`'s time `ns` was by the wall clock (on its own clock where its
    /// offset is unknown): where the times of processes on different hosts meet.
    pub fn aligned(&self, pid: u32, ns: u64) -> i128 {
        i128::from(ns) + i128::from(self.clock_offsets.get(&pid).copied().unwrap_or(0))
    }

    /// The time from process `pid`'s first record's start to its last one's end.
    pub fn span_of(&self, pid: u32) -> Option<Span> {
        let spans = (self
            .dispatches
            .iter()
            .filter(|d| d.pid == pid)
            .map(|d| d.span))
        .chain(self.calls.iter().filter(|c| c.pid == pid).map(|c| c.span))
        .chain(self.copies.iter().filter(|c| c.pid == pid).map(|c| c.span))
        .chain(self.ranges.iter().filter(|r| r.pid == pid).map(|r| r.span));
        spans.reduce(|a, b| Span {
            start_ns: a.start_ns.min(b.start_ns),
            end_ns: a.end_ns.max(b.end_ns),
        })
    }

    /// Per GPU (process, agent), the time its dispatches kept it computing: their spans
    /// merged, in order.
    pub fn busy(&self) -> std::collections::BTreeMap<(u32, u32), Vec<Span>> {
        let mut spans: std::collections::BTreeMap<(u32, u32), Vec<Span>> = Default::default();
        for (gpu, span) in self.dispatches.iter().map(|d| ((d.pid, d.agent), d.span)) {
            spans.entry(gpu).or_default().push(span);
        }
        for list in spans.values_mut() {
            *list = merged(std::mem::take(list));
        }
        spans
    }
}

/// One input of a trace being collected, read by its outlet.
pub struct Input(Arc<Mutex<Collector>>);

/// A trace being collected from one input or several (the ranks of a campaign), each
/// replayed through its own stages.
#[derive(Default)]
pub struct Collecting {
    trace: Arc<Mutex<Trace>>,
    /// The pids of the inputs read so far.
    pids: FxHashSet<u32>,
}

impl Collecting {
    /// Adds a source's records; says how it ended. A process whose pid one of an earlier
    /// input had (another host's) is told apart by a new pid, above every pid read.
    pub fn add(
        &mut self,
        stages: &StageGraph,
        source: &mut dyn Source,
    ) -> Result<(Catalog, Result<Ending, SourceError>), String> {
        let (input, outlet) = self.input();
        let report = stage::run_into(stages, source, vec![outlet], &Default::default())
            .map_err(|e| e.to_string())?;
        self.added(input, report.sinks.into_iter().next())?;
        Ok((report.catalog, report.source))
    }

    /// The next input and the outlet that reads it into the trace, one of a stage run's
    /// outlets: of a run of its own, or of one pass over a run's records that other readers
    /// share. [`Collecting::added`] ends it.
    pub fn input(&mut self) -> (Input, stage::Outlet<'static>) {
        let collector = Arc::new(Mutex::new(Collector {
            trace: Arc::clone(&self.trace),
            earlier: std::mem::take(&mut self.pids),
            pids: FxHashMap::default(),
        }));
        let shared = Arc::clone(&collector);
        let outlet = stage::Outlet {
            name: "analyze".into(),
            kinds: KINDS.to_vec(),
            open: Box::new(
                move |_: &Placeholders| -> Result<Box<dyn Sink>, SinkError> {
                    Ok(Box::new(Shared(Arc::clone(&shared))))
                },
            ),
        };
        (Input(collector), outlet)
    }

    /// Ends `input`, whose stage run ended with `sink` (its outlet's report).
    pub fn added(&mut self, input: Input, sink: Option<stage::SinkReport>) -> Result<(), String> {
        let collector = input.0.lock().expect("no panics while holding the lock");
        self.pids = (collector.earlier.iter().copied())
            .chain(collector.pids.values().copied())
            .collect();
        match sink.map(|s| s.outcome) {
            Some(Err(e)) => Err(e.to_string()),
            _ => Ok(()),
        }
    }

    /// The trace of every source added.
    pub fn finish(self) -> Trace {
        let mut trace = std::mem::take(&mut *self.trace.lock().expect("no panics"));
        trace.finish();
        trace
    }
}

/// Per kernel, GPU and counter, the mean of its dispatches' values, from each dispatch's
/// value (summed over instances), ordered by process, agent, kernel and counter.
fn kernel_counters(samples: FxHashMap<SampleKey, f64>) -> Vec<KernelCounter> {
    let mut sums: std::collections::BTreeMap<(u32, u32, Name, Name), (u64, f64)> =
        Default::default();
    for ((pid, agent, _, kernel, counter), value) in samples {
        let sum = sums.entry((pid, agent, kernel, counter)).or_default();
        sum.0 += 1;
        sum.1 += value;
    }
    (sums.into_iter())
        .map(
            |((pid, agent, kernel, counter), (dispatches, sum))| KernelCounter {
                pid,
                agent,
                kernel,
                counter,
                dispatches,
                mean: sum / dispatches as f64,
            },
        )
        .collect()
}

/// Spans merged where they overlap or touch, in order.
pub fn merged(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        match out.last_mut() {
            Some(last) if span.start_ns <= last.end_ns => {
                last.end_ns = last.end_ns.max(span.end_ns)
            }
            _ => out.push(span),
        }
    }
    out
}

/// Pinned ranges merged where they overlap or touch, per process, in order.
fn merged_pinned(mut pinned: Vec<Pinned>) -> Vec<Pinned> {
    pinned.sort_unstable();
    let mut out: Vec<Pinned> = Vec::with_capacity(pinned.len());
    for p in pinned {
        match out.last_mut() {
            Some(last) if last.pid == p.pid && p.start <= last.end => {
                last.end = last.end.max(p.end)
            }
            _ => out.push(p),
        }
    }
    out
}

/// `hipHostRegister`'s arguments: the pointer, then the size.
const REGISTERED_POINTER: u8 = 0;
const REGISTERED_SIZE: u8 = 1;

/// The range a `hipHostRegister` call pinned, from its arguments.
fn registered(args: &[Arg]) -> Option<(u64, u64)> {
    let arg = |position| {
        args.iter()
            .find(|a| a.position == position)
            .map(|a| a.value)
    };
    match (arg(REGISTERED_POINTER)?, arg(REGISTERED_SIZE)?) {
        (ArgValue::Address(start), ArgValue::Int(size)) => {
            Some((start, start.saturating_add(u64::try_from(size).ok()?)))
        }
        _ => None,
    }
}

/// The record kinds the trace keeps.
const KINDS: [RecordKind; 6] = [
    RecordKind::KernelDispatch,
    RecordKind::CounterSample,
    RecordKind::Api,
    RecordKind::MemoryCopy,
    RecordKind::MemoryAllocation,
    RecordKind::Marker,
];

const UNKNOWN: &str = "<unknown>";

/// `roctxMarkA`, operation 0 of both marker domains: an instant, not a range.
const ROCTX_MARK: i32 = 0;

fn operation(domain: Domain, id: i32) -> &'static str {
    domain.operation_name(id).unwrap_or(UNKNOWN)
}

/// What adds one input's records to a trace.
struct Collector {
    trace: Arc<Mutex<Trace>>,
    /// The pids of earlier inputs.
    earlier: FxHashSet<u32>,
    /// This input's pids, and the pid each has in the trace.
    pids: FxHashMap<u32, u32>,
}

impl Collector {
    /// The pid process `pid` of this input has in the trace: its own, unless an earlier
    /// input's process had it.
    fn pid(&mut self, pid: u32) -> u32 {
        if let Some(&known) = self.pids.get(&pid) {
            return known;
        }
        let taken = |p: &u32| self.earlier.contains(p) || self.pids.values().any(|q| q == p);
        let new = match taken(&pid) {
            false => pid,
            true => {
                let highest = self.earlier.iter().chain(self.pids.values()).max();
                highest.map_or(pid, |h| h.saturating_add(1))
            }
        };
        self.pids.insert(pid, new);
        new
    }
}

/// The sink a stage runner writes to: the input's collector, which outlives it.
struct Shared(Arc<Mutex<Collector>>);

impl Sink for Shared {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        let mut collector = self.0.lock().expect("no panics while holding the lock");
        let collector = &mut *collector;
        let trace = Arc::clone(&collector.trace);
        let mut trace = trace.lock().expect("no panics while holding the lock");
        let t = &mut *trace;
        for chunk in window {
            let meta = catalog.stream(chunk.stream);
            if let Some(process) = &meta.process {
                if let Some(rank) = process.rank {
                    t.ranks.insert(collector.pid(process.pid), rank);
                }
                if let Some(unix) = process.start_unix_ns {
                    let offset = i128::from(unix) - i128::from(process.start_ns);
                    // Hostile clocks further apart than i64 holds are taken as one.
                    t.clock_offsets.insert(
                        collector.pid(process.pid),
                        i64::try_from(offset).unwrap_or(0),
                    );
                }
            }
            let span = |start_ns, end_ns| Span { start_ns, end_ns };
            match &chunk.batch {
                Batch::KernelDispatch(records) => {
                    for r in records {
                        let kernel = t.intern(meta.kernel_name(r.kernel_id));
                        t.dispatches.push(Dispatch {
                            pid: collector.pid(r.pid),
                            agent: r.agent,
                            queue: r.queue,
                            kernel,
                            span: span(r.start_ns, r.end_ns),
                            correlation_id: r.correlation_id,
                            stream: r.stream_id(),
                        });
                    }
                }
                Batch::CounterSample(records) => {
                    for r in records {
                        let kernel = t.intern(meta.kernel_name(r.kernel_id));
                        let counter = t.intern(meta.counter_name(r.counter_id));
                        let key = (
                            collector.pid(r.pid),
                            r.agent,
                            r.dispatch_id,
                            kernel,
                            counter,
                        );
                        if !t.agents.contains_key(&(collector.pid(r.pid), r.agent))
                            && let Some(agent) = meta.agents.iter().find(|a| a.index == r.agent)
                        {
                            t.agents
                                .insert((collector.pid(r.pid), r.agent), agent.clone());
                        }
                        *t.samples.entry(key).or_default() += r.value;
                    }
                }
                Batch::Api(records) => {
                    for (i, r) in records.iter().enumerate() {
                        let function = Domain::from_sdk_value(r.domain_id.into())
                            .and_then(|d| d.operation_name(r.operation_id))
                            .unwrap_or(UNKNOWN);
                        if function == "hipHostRegister"
                            && let Some((start, end)) = chunk.call_args(i).and_then(registered)
                        {
                            t.pinned.push(Pinned {
                                pid: collector.pid(r.pid),
                                start,
                                end,
                            });
                        }
                        t.calls.push(Call {
                            pid: collector.pid(r.pid),
                            tid: r.tid,
                            function,
                            span: span(r.start_ns, r.end_ns),
                            correlation_id: r.correlation_id,
                        });
                    }
                }
                Batch::MemoryCopy(records) => t.copies.extend(records.iter().map(|r| {
                    let direction = operation(Domain::MemoryCopy, r.operation_id.into());
                    let host_address = match direction {
                        "HOST_TO_DEVICE" => r.src_address,
                        "DEVICE_TO_HOST" => r.dst_address,
                        _ => 0,
                    };
                    Transfer {
                        pid: collector.pid(r.pid),
                        gpu: match direction {
                            "HOST_TO_HOST" => None,
                            "DEVICE_TO_HOST" => Some(r.src_agent),
                            _ => Some(r.dst_agent),
                        },
                        span: span(r.start_ns, r.end_ns),
                        bytes: r.bytes,
                        direction,
                        correlation_id: r.correlation_id,
                        host_address: (host_address != 0).then_some(host_address),
                        stream: r.stream_id(),
                    }
                })),
                Batch::MemoryAllocation(records) => {
                    for r in records {
                        let operation = operation(Domain::MemoryAllocation, r.operation_id.into());
                        let on_cpu = (meta.agents.iter())
                            .any(|a| a.index == r.agent && a.agent_type == AgentType::Cpu);
                        if on_cpu && operation == "ALLOCATE" {
                            t.pinned.push(Pinned {
                                pid: collector.pid(r.pid),
                                start: r.address,
                                end: r.address.saturating_add(r.bytes),
                            });
                        }
                        t.allocations.push(Allocation {
                            pid: collector.pid(r.pid),
                            tid: r.tid,
                            span: span(r.start_ns, r.end_ns),
                            bytes: r.bytes,
                            operation,
                        });
                    }
                }
                Batch::Marker(records) => {
                    for r in records.iter().filter(|r| r.operation_id != ROCTX_MARK) {
                        if r.end_ns <= r.start_ns {
                            continue;
                        }
                        let label = t.intern(marker_label(r, meta));
                        t.ranges.push(Range {
                            pid: collector.pid(r.pid),
                            tid: r.tid,
                            label,
                            span: span(r.start_ns, r.end_ns),
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn finish(self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge_where_they_overlap_or_touch() {
        let s = |start_ns, end_ns| Span { start_ns, end_ns };
        assert_eq!(
            merged(vec![s(10, 20), s(0, 5), s(5, 8), s(15, 30), s(40, 50)]),
            vec![s(0, 8), s(10, 30), s(40, 50)]
        );
        assert_eq!(s(0, 10).overlap(&s(5, 20)), 5);
        assert_eq!(s(0, 10).overlap(&s(20, 30)), 0);
    }

    #[test]
    fn an_address_is_pinned_inside_a_pinned_range_of_its_process() {
        let p = |pid, start, end| Pinned { pid, start, end };
        let trace = Trace {
            pinned: merged_pinned(vec![p(2, 100, 200), p(1, 150, 160), p(1, 100, 150)]),
            ..Default::default()
        };
        assert_eq!(trace.pinned, vec![p(1, 100, 160), p(2, 100, 200)]);
        assert!(trace.is_pinned(1, 100) && trace.is_pinned(1, 159));
        assert!(!trace.is_pinned(1, 160) && !trace.is_pinned(1, 99));
        assert!(trace.is_pinned(2, 199) && !trace.is_pinned(3, 150));
        assert!(trace.pins(1) && trace.pins(2) && !trace.pins(0) && !trace.pins(3));
    }

    #[test]
    fn host_register_pins_the_range_its_arguments_name() {
        let arg = |position, value| Arg {
            position,
            name: crate::record::Sym(0),
            type_name: crate::record::Sym(0),
            value,
        };
        let args = [
            arg(0, ArgValue::Address(0x1000)),
            arg(1, ArgValue::Int(4096)),
            arg(2, ArgValue::Int(0)),
        ];
        assert_eq!(registered(&args), Some((0x1000, 0x2000)));
        assert_eq!(registered(&args[..1]), None);
        assert_eq!(
            registered(&[arg(0, ArgValue::Address(1)), arg(1, ArgValue::Int(-1))]),
            None
        );
    }
}
