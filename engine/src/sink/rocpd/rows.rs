//! Records into rows, as rocprofv3 writes them: each record becomes an event (its category,
//! correlation ids and extra data) and a row of its kind's table that points at it. Host
//! calls with a duration are regions, instants are samples on a track, kernel dispatches,
//! copies and allocations have their own tables, and counter values point at their
//! dispatch's event.
//!
//! A segment's records are built into rows in runs, in parallel: each run takes its event
//! ids from a range set apart for it, and finds the ids of what its records refer to among
//! those handed out before the segment; a run that refers to something new is built again
//! once the runs before it are in, handing out its ids in the records' order ([`Resolver`]).
//! The rows are the same, to the last id, as if they had been built one after another.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use super::append::{Layouts, Out, Rows, Writers};
use super::dispatches::{Aside, Dispatches, Sorted};
use super::fault::Fault;
use super::ids::{Events, Ids, Operation, Resolver};
use super::info;
use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::record::{
    ApiCall, Batch, CounterSample, DeviceCounterSample, GraphLaunch, HipEventBarrier, HipStream,
    KernelDispatch, KfdEvent, Marker, MemoryAllocation, MemoryCopy, PcSample, RecordKind,
    RuntimeInitialization, ScratchMemory, SpmSample,
};
use crate::rocpd::schema::{self, NO_DATA};
use crate::sdk::Domain;
use crate::sqlite::btree::Pages;
use crate::sqlite::{Value, row};

macro_rules! tables {
    ($($name:ident = $table:ident ($($column:literal),+);)*) => {
        /// The tables records add rows to, in the order of their writers.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy)]
        enum Table {
            $($name,)*
        }

        /// The layouts and writers of the tables records add rows to, written as `pages`
        /// of their database, where `root` gives the root page SQLite made for each, by
        /// name.
        pub fn tables(
            pages: &Arc<Pages>,
            mut root: impl FnMut(&str) -> rusqlite::Result<u32>,
        ) -> rusqlite::Result<(Layouts, Writers)> {
            let tables = [$((
                schema::table(schema::$table),
                &[$($column),+] as &[&str],
                root(schema::$table)?,
            )),*];
            Ok(Writers::new(pages, tables))
        }
    };
}

tables! {
    event = EVENT
        ("id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata");
    region = REGION ("nid", "pid", "tid", "start", "end", "name_id", "event_id");
    sample = SAMPLE ("track_id", "timestamp", "event_id");
    kernel_dispatch = KERNEL_DISPATCH (
        "nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id", "stream_id",
        "start", "end", "private_segment_size", "group_segment_size", "workgroup_size_x",
        "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z",
        "graph_exec_id", "graph_node_id", "region_name_id", "event_id"
    );
    memory_copy = MEMORY_COPY (
        "nid", "pid", "tid", "start", "end", "name_id", "dst_agent_id", "dst_address",
        "src_agent_id", "src_address", "size", "stream_id", "graph_exec_id", "graph_node_id",
        "event_id"
    );
    memory_allocate = MEMORY_ALLOCATE (
        "nid", "pid", "tid", "agent_id", "type", "level", "start", "end", "address", "size",
        "queue_id", "stream_id", "event_id", "extdata"
    );
    graph_launch = GRAPH_LAUNCH (
        "nid", "pid", "tid", "agent_id", "queue_id", "start", "end", "graph_exec_id",
        "kernel_dispatch_count", "event_id"
    );
    hip_event = HIP_EVENT (
        "nid", "pid", "tid", "agent_id", "queue_id", "source_queue_id", "start", "end",
        "operation", "hip_event_handle", "event_id"
    );
    pmc_event = PMC_EVENT ("event_id", "pmc_id", "value");
    arg = ARG ("event_id", "position", "type", "name", "value");
}

const UNKNOWN: &str = "<unknown>";

/// The tracks of a category's samples, one per agent on the process's main thread
/// (`DEVICE_COUNTING agent 0`), the last one used at hand.
struct AgentTracks {
    category: &'static str,
    /// The agent whose track the last record was on, and the track.
    current: Option<(u32, i64)>,
}

impl AgentTracks {
    fn new(category: &'static str) -> AgentTracks {
        AgentTracks {
            category,
            current: None,
        }
    }

    fn of(&mut self, rows: &mut Builder<'_>, scope: Scope, pid: u32, agent: u32) -> i64 {
        match self.current {
            Some((at, id)) if at == agent => id,
            _ => {
                let name = format!("{} agent {agent}", self.category);
                let name = rows.ids.string(&name);
                rows.ids.thread(scope.stream, pid);
                let id = rows.ids.track((scope.stream, pid, name));
                self.current = Some((agent, id));
                id
            }
        }
    }
}

/// The process a chunk's records come from, as row ids.
#[derive(Debug, Clone, Copy)]
struct Scope {
    stream: u16,
    process: i64,
    node: i64,
}

/// A chunk on its way to its database, with what its rows need of its process's metadata
/// (taken from the catalog when it is queued: the writer has no catalog).
#[derive(Debug)]
pub struct Queued {
    chunk: Arc<Chunk>,
    host: String,
    /// The process's pid, where its metadata says.
    pid: Option<u32>,
    /// The process's agents: index and node id (their rows' id).
    agents: Vec<(u32, u32)>,
    /// Marker records' messages (none for other kinds).
    messages: Messages,
    /// The arguments of API calls, one list per record (none where none were collected).
    args: Vec<Vec<Arg>>,
}

/// An argument row's columns besides its event: position, type, name, value.
type Arg = (u8, String, String, String);

/// The extra data of marker records: each distinct message's, quoted once (a program
/// repeats a few in every iteration), and which is each record's.
#[derive(Debug, Default)]
struct Messages {
    data: Vec<Value>,
    of_record: Vec<u32>,
}

impl Messages {
    fn quote(records: &[Marker], meta: &StreamMeta) -> Messages {
        let mut data = Vec::new();
        let mut numbers = HashMap::default();
        let of_record = (records.iter())
            .map(|r| {
                *numbers.entry(r.message).or_insert_with(|| {
                    data.push(message_data(meta.string(r.message)));
                    (data.len() - 1) as u32
                })
            })
            .collect();
        Messages { data, of_record }
    }

    /// The messages of the chunk's records in `records`.
    fn of(&self, records: Range<usize>) -> MessagesOf<'_> {
        MessagesOf {
            data: &self.data,
            of_record: self.of_record.get(records).unwrap_or_default(),
        }
    }
}

/// [`Messages`] of a run of records.
#[derive(Clone, Copy)]
struct MessagesOf<'q> {
    data: &'q [Value],
    of_record: &'q [u32],
}

impl MessagesOf<'_> {
    /// The `i`th record's extra data.
    fn extdata(&self, i: usize) -> Value {
        (self.of_record.get(i)).map_or(NO_DATA, |&m| self.data[m as usize].clone())
    }
}

impl Queued {
    /// Its records.
    pub fn len(&self) -> usize {
        self.chunk.len()
    }

    /// The events `records` of its records add to the event table: one each, but for
    /// dispatches and counter values, whose events are set aside.
    fn events(&self, records: usize) -> usize {
        match self.chunk.batch {
            Batch::KernelDispatch(_) | Batch::CounterSample(_) => 0,
            _ => records,
        }
    }

    pub fn new(chunk: Arc<Chunk>, meta: &StreamMeta) -> Queued {
        let messages = match &chunk.batch {
            Batch::Marker(records) => Messages::quote(records, meta),
            _ => Messages::default(),
        };
        let args = match chunk.args {
            Some(_) => (0..chunk.len())
                .map(|i| {
                    (chunk.args(i, meta).into_iter().flatten())
                        .map(|a| {
                            (
                                a.position,
                                a.type_name.into(),
                                a.name.into(),
                                a.value.into(),
                            )
                        })
                        .collect()
                })
                .collect(),
            None => Vec::new(),
        };
        Queued {
            host: info::host(meta).to_owned(),
            pid: meta.process.as_ref().map(|p| p.pid),
            agents: meta.agents.iter().map(|a| (a.index, a.node_id)).collect(),
            chunk,
            messages,
            args,
        }
    }
}

/// Records built into rows a run at a time: enough that a run outweighs its scheduling,
/// few enough that a segment's runs spread over every core.
const RUN: usize = 512;

/// Builds the rows of a segment's chunks in runs, in parallel, and sets aside their
/// dispatches' events; returns each run's rows, in order.
pub fn build(
    segment: &[Queued],
    layouts: &Layouts,
    ids: &mut Ids,
    dispatches: &mut Dispatches,
) -> Result<Vec<Rows>, Fault> {
    // Each run: its chunk, its records there, and the event id before its own.
    let mut runs: Vec<(&Queued, Range<usize>, i64)> = Vec::new();
    for queued in segment {
        let len = queued.len();
        for start in (0..len).step_by(RUN) {
            let records = start..len.min(start + RUN);
            let before = ids.events.take(queued.events(records.len()));
            runs.push((queued, records, before));
        }
    }
    let known: &Ids = ids;
    let built: Vec<Result<Built, Fault>> = (runs.par_iter())
        .map(|(queued, records, before)| {
            let ids = Resolver::Known {
                ids: known,
                missed: false,
            };
            Builder::new(layouts, ids, *before).run(queued, records.clone())
        })
        .collect();
    let mut rows = Vec::with_capacity(runs.len());
    for ((queued, records, before), built) in runs.into_iter().zip(built) {
        let built = match built {
            Ok(built) if !built.missed => built,
            // Refers to something new (or failed, maybe for want of an id): built again
            // with the ids handed out so far, handing out its own.
            _ => {
                let ids = Resolver::Assign(&mut *ids);
                Builder::new(layouts, ids, before).run(queued, records)?
            }
        };
        for aside in built.aside {
            dispatches.add(aside);
        }
        let (pid, last_ns) = built.seen;
        ids.saw(queued.chunk.stream, pid, last_ns);
        rows.push(built.rows);
    }
    Ok(rows)
}

/// The events of dispatches set aside, joined to the event table in order of id,
/// `segment` rows at a time: each segment is merged from the sorted runs and encoded (in
/// runs, in parallel) while the one before fills its pages.
pub fn join_dispatches(
    sorted: Sorted,
    layouts: &Layouts,
    segment: usize,
    writers: &mut Writers,
) -> Result<(), Fault> {
    let mut rows = sorted.rows()?.peekable();
    let mut merged: Vec<[Value; 6]> = Vec::with_capacity(segment);
    while rows.peek().is_some() {
        writers.step(|| {
            merged.clear();
            for row in rows.by_ref().take(segment) {
                merged.push(row?);
            }
            (merged.par_chunks(RUN))
                .map(|run| {
                    let mut out = Out::new(layouts);
                    for row in run {
                        out.push(Table::event as usize, row)?;
                    }
                    Ok(out.finish())
                })
                .collect()
        })?;
    }
    Ok(())
}

/// What a run of records became.
struct Built {
    rows: Rows,
    /// The events of its dispatches, set aside in order.
    aside: Vec<Aside>,
    /// Its first record's process id, and when its last activity ended.
    seen: (u32, u64),
    /// Whether an id it refers to was missing: its rows are to be built again.
    missed: bool,
}

/// The rows of a run of records being built.
struct Builder<'a> {
    out: Out<'a>,
    ids: Resolver<'a>,
    /// The last event id taken.
    event: i64,
    aside: Vec<Aside>,
}

impl<'a> Builder<'a> {
    /// Rows of `layouts`, their ids found by `ids`, their events numbered after `event`.
    fn new(layouts: &'a Layouts, ids: Resolver<'a>, event: i64) -> Self {
        Builder {
            out: Out::new(layouts),
            ids,
            event,
            aside: Vec::new(),
        }
    }

    /// Builds the rows of `records` of a chunk's records.
    fn run(mut self, queued: &Queued, records: Range<usize>) -> Result<Built, Fault> {
        let chunk = &queued.chunk;
        let scope = Scope {
            stream: chunk.stream,
            process: self.ids.process(chunk.stream, queued.pid),
            node: self.ids.node(&queued.host),
        };
        for &(index, node_id) in &queued.agents {
            self.ids.agent_node(chunk.stream, index, node_id);
        }
        let events = self.event + queued.events(records.len()) as i64;
        let messages = queued.messages.of(records.clone());
        let args = queued.args.get(records.clone()).unwrap_or_default();
        let at = records;
        let seen = match &chunk.batch {
            Batch::KernelDispatch(r) => self.dispatches(scope, &r[at])?,
            Batch::MemoryCopy(r) => self.copies(scope, &r[at])?,
            Batch::MemoryAllocation(r) => self.allocations(scope, &r[at])?,
            Batch::ScratchMemory(r) => self.scratch(scope, &r[at])?,
            Batch::Api(r) => self.host(scope, &r[at], messages, args)?,
            Batch::Marker(r) => self.host(scope, &r[at], messages, &[])?,
            Batch::HipStream(r) => self.host(scope, &r[at], messages, &[])?,
            Batch::RuntimeInitialization(r) => self.host(scope, &r[at], messages, &[])?,
            Batch::KfdEvent(r) => self.host(scope, &r[at], messages, &[])?,
            Batch::CounterSample(r) => self.counters(scope, &r[at])?,
            Batch::PcSample(r) => self.pc_samples(scope, &r[at])?,
            Batch::DeviceCounterSample(r) => self.device_counters(scope, &r[at])?,
            Batch::GraphLaunch(r) => self.graph_launches(scope, &r[at])?,
            Batch::HipEventBarrier(r) => self.hip_event_barriers(scope, &r[at])?,
            Batch::SpmSample(r) => self.spm_samples(scope, &r[at])?,
        };
        assert_eq!(
            self.event, events,
            "a run takes the events set apart for it"
        );
        Ok(Built {
            missed: self.ids.missed(),
            rows: self.out.finish(),
            aside: self.aside,
            seen,
        })
    }

    fn push(&mut self, table: Table, row: &[Value]) -> Result<(), Fault> {
        Ok(self.out.push(table as usize, row)?)
    }

    /// The category and name of operation `op` of the domain with SDK value `domain`.
    fn operation(&mut self, domain: u8, op: i32) -> Operation {
        self.ids.find(
            |ids| ids.operations.get(&(domain, op)).copied(),
            |ids| name_operation(ids, domain, op),
        )
    }

    fn category(&mut self, domain: Domain) -> i64 {
        self.ids.string(&category_name(domain))
    }

    /// Adds an event with the next id and returns the id.
    fn event(
        &mut self,
        category: i64,
        stack: Option<u64>,
        parent: Option<u64>,
        correlation: u64,
        extdata: Value,
    ) -> Result<i64, Fault> {
        self.event += 1;
        let id = self.event;
        self.push(
            Table::event,
            &row![id, category, stack, parent, correlation, extdata],
        )?;
        Ok(id)
    }

    fn dispatches(
        &mut self,
        scope: Scope,
        records: &[KernelDispatch],
    ) -> Result<(u32, u64), Fault> {
        let category = self.category(Domain::KernelDispatch);
        // Dispatches without an external correlation belong to no named region.
        let no_region = self.ids.string("");
        let mut last = 0;
        for r in records {
            let event = dispatch_event(scope, r.dispatch_id)?;
            let (internal, external) = (r.correlation_id as i64, r.external_id as i64);
            self.aside.push(Aside::Dispatched {
                id: event,
                category,
                internal,
                external,
            });
            let ids = &mut self.ids;
            let row = row![
                scope.node,
                scope.process,
                ids.thread(scope.stream, r.tid),
                ids.agent(scope.stream, r.agent),
                ids.kernel(scope.stream, r.kernel_id),
                r.dispatch_id,
                ids.queue(scope.stream, r.queue),
                ids.hip_stream(scope.stream, r.stream_id().unwrap_or(0)),
                r.start_ns,
                r.end_ns,
                r.scratch_bytes,
                r.lds_bytes,
                r.workgroup_x,
                r.workgroup_y,
                r.workgroup_z,
                r.grid_x,
                r.grid_y,
                r.grid_z,
                r.graph_exec_id,
                r.graph_node_id,
                no_region,
                event,
            ];
            self.push(Table::kernel_dispatch, &row)?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    /// Graph launches, as rocpd 3.0.2 keeps them; one the SDK names no queue for has none.
    fn graph_launches(
        &mut self,
        scope: Scope,
        records: &[GraphLaunch],
    ) -> Result<(u32, u64), Fault> {
        let category = self.category(Domain::HipGraph);
        let mut last = 0;
        for r in records {
            let stack = Some(r.correlation_id);
            let event = self.event(category, stack, stack, r.external_id, NO_DATA)?;
            let ids = &mut self.ids;
            let queue = (r.queue != 0).then(|| ids.queue(scope.stream, r.queue));
            let row = row![
                scope.node,
                scope.process,
                ids.thread(scope.stream, r.tid),
                ids.agent(scope.stream, r.agent),
                queue,
                r.start_ns,
                r.end_ns,
                r.graph_exec_id,
                r.dispatch_count,
                event,
            ];
            self.push(Table::graph_launch, &row)?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    /// HIP event barriers, their operation by its SDK name (`RECORD`, `WAIT`).
    fn hip_event_barriers(
        &mut self,
        scope: Scope,
        records: &[HipEventBarrier],
    ) -> Result<(u32, u64), Fault> {
        let category = self.category(Domain::HipEvent);
        let mut last = 0;
        for r in records {
            let stack = Some(r.correlation_id);
            let event = self.event(category, stack, stack, r.external_id, NO_DATA)?;
            let ids = &mut self.ids;
            let operation = Domain::HipEvent.operation_name(r.operation_id);
            let row = row![
                scope.node,
                scope.process,
                ids.thread(scope.stream, r.tid),
                ids.agent(scope.stream, r.agent),
                ids.queue(scope.stream, r.queue),
                ids.queue(scope.stream, r.source_queue),
                r.start_ns,
                r.end_ns,
                operation.unwrap_or(UNKNOWN),
                r.event,
                event,
            ];
            self.push(Table::hip_event, &row)?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    fn copies(&mut self, scope: Scope, records: &[MemoryCopy]) -> Result<(u32, u64), Fault> {
        let domain = Domain::MemoryCopy.sdk_value() as u8;
        let mut last = 0;
        for r in records {
            let operation = self.operation(domain, r.operation_id.into());
            let stack = Some(r.correlation_id);
            let event = self.event(operation.category, stack, stack, r.external_id, NO_DATA)?;
            let ids = &mut self.ids;
            let row = row![
                scope.node,
                scope.process,
                ids.thread(scope.stream, r.tid),
                r.start_ns,
                r.end_ns,
                operation.name,
                ids.agent(scope.stream, r.dst_agent),
                known(r.dst_address),
                ids.agent(scope.stream, r.src_agent),
                known(r.src_address),
                r.bytes,
                ids.hip_stream(scope.stream, r.stream_id().unwrap_or(0)),
                r.graph_exec_id,
                r.graph_node_id,
                event,
            ];
            self.push(Table::memory_copy, &row)?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    fn allocations(
        &mut self,
        scope: Scope,
        records: &[MemoryAllocation],
    ) -> Result<(u32, u64), Fault> {
        let domain = Domain::MemoryAllocation.sdk_value() as u8;
        let mut last = 0;
        for r in records {
            let (kind, level) = match Domain::MemoryAllocation.operation_name(r.operation_id.into())
            {
                Some("ALLOCATE") => (Some("ALLOC"), Some("REAL")),
                Some("VMEM_ALLOCATE") => (Some("ALLOC"), Some("VIRTUAL")),
                Some("FREE") => (Some("FREE"), Some("REAL")),
                Some("VMEM_FREE") => (Some("FREE"), Some("VIRTUAL")),
                _ => (None, None),
            };
            let allocation = Allocation {
                tid: r.tid,
                // Only an allocation says on which agent the memory is.
                agent: (kind == Some("ALLOC")).then_some(r.agent),
                kind,
                level,
                span: (r.start_ns, r.end_ns),
                address: Some(r.address),
                bytes: r.bytes,
                queue: None,
                extdata: NO_DATA,
            };
            let operation = self.operation(domain, r.operation_id.into());
            self.allocation(
                scope,
                operation,
                r.correlation_id,
                r.external_id,
                allocation,
            )?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    fn scratch(&mut self, scope: Scope, records: &[ScratchMemory]) -> Result<(u32, u64), Fault> {
        let domain = Domain::ScratchMemory.sdk_value() as u8;
        let mut last = 0;
        for r in records {
            let kind = match Domain::ScratchMemory.operation_name(r.operation_id.into()) {
                Some("ALLOC") => Some("ALLOC"),
                Some("FREE") => Some("FREE"),
                Some("ASYNC_RECLAIM") => Some("RECLAIM"),
                _ => None,
            };
            let allocation = Allocation {
                tid: r.tid,
                agent: (kind == Some("ALLOC")).then_some(r.agent),
                kind,
                level: Some("SCRATCH"),
                span: (r.start_ns, r.end_ns),
                address: None,
                bytes: r.bytes,
                queue: Some(r.queue),
                extdata: Value::Text(format!("{{\"flags\":\"{}\"}}", r.flags)),
            };
            let operation = self.operation(domain, r.operation_id.into());
            self.allocation(
                scope,
                operation,
                r.correlation_id,
                r.external_id,
                allocation,
            )?;
            last = last.max(r.end_ns);
        }
        Ok((records[0].pid, last))
    }

    fn allocation(
        &mut self,
        scope: Scope,
        operation: Operation,
        correlation: u64,
        external: u64,
        a: Allocation,
    ) -> Result<(), Fault> {
        let event = self.event(
            operation.category,
            Some(correlation),
            None,
            external,
            NO_DATA,
        )?;
        let ids = &mut self.ids;
        let row = row![
            scope.node,
            scope.process,
            ids.thread(scope.stream, a.tid),
            a.agent.map(|agent| ids.agent(scope.stream, agent)),
            a.kind,
            a.level,
            a.span.0,
            a.span.1,
            a.address,
            a.bytes,
            a.queue.map(|queue| ids.queue(scope.stream, queue)),
            ids.hip_stream(scope.stream, 0),
            event,
            a.extdata,
        ];
        self.push(Table::memory_allocate, &row)?;
        Ok(())
    }

    /// Host calls and instants: regions when they last, samples on their thread's track of
    /// their category when they do not; with their messages and arguments, if they have
    /// any (one list per record).
    fn host<R: HostEvent>(
        &mut self,
        scope: Scope,
        records: &[R],
        messages: MessagesOf<'_>,
        args: &[Vec<Arg>],
    ) -> Result<(u32, u64), Fault> {
        let mut last = 0;
        for (i, r) in records.iter().enumerate() {
            let (domain, op) = r.operation();
            let operation = self.operation(domain, op);
            let extdata = messages.extdata(i);
            let (correlation, external) = r.correlation();
            let event = self.event(operation.category, correlation, None, external, extdata)?;
            for (position, type_name, name, value) in args.get(i).into_iter().flatten() {
                let row = row![
                    event,
                    i64::from(*position),
                    type_name.clone(),
                    name.clone(),
                    value.clone()
                ];
                self.push(Table::arg, &row)?;
            }
            let (start, end) = r.span();
            let thread = self.ids.thread(scope.stream, r.tid());
            if start == end {
                let track = (scope.stream, r.tid(), operation.category);
                let row = row![self.ids.track(track), start, event];
                self.push(Table::sample, &row)?;
            } else {
                let row = row![
                    scope.node,
                    scope.process,
                    thread,
                    start,
                    end,
                    operation.name,
                    event
                ];
                self.push(Table::region, &row)?;
            }
            last = last.max(end);
        }
        Ok((records[0].pid(), last))
    }

    /// Counter values, each pointing at its dispatch's event (set aside bare, which the
    /// dispatch's own event stands in for if it comes, so that the id resolves).
    fn counters(&mut self, scope: Scope, records: &[CounterSample]) -> Result<(u32, u64), Fault> {
        let category = self.category(Domain::KernelDispatch);
        let mut counted = None;
        let mut last = 0;
        for r in records {
            let event = dispatch_event(scope, r.dispatch_id)?;
            // A dispatch's samples come together.
            if counted != Some(event) {
                self.aside.push(Aside::Counted {
                    id: event,
                    category,
                });
                counted = Some(event);
            }
            let counter = self.ids.counter(scope.stream, r.counter_id);
            self.push(Table::pmc_event, &row![event, counter, r.value])?;
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }

    /// Device counter samples: instants on a track per agent, on the process's main thread
    /// (the device counted them), each value in `pmc_event` as a dispatch's values are,
    /// under the `DEVICE_COUNTING` category.
    fn device_counters(
        &mut self,
        scope: Scope,
        records: &[DeviceCounterSample],
    ) -> Result<(u32, u64), Fault> {
        let category = self.ids.string(schema::DEVICE_COUNTING);
        let mut last = 0;
        let mut tracks = AgentTracks::new(schema::DEVICE_COUNTING);
        for r in records {
            let agent = self.ids.agent(scope.stream, r.agent);
            let track = tracks.of(self, scope, r.pid, r.agent);
            let counter = self.ids.counter(scope.stream, r.counter_id);
            // As a PC sample's (AMD's converter reads every sample's `message`), with the
            // counter, value and coordinates, so that the sample reads back whole.
            let [xcc, aid, se, index, sa, wgp, instance] = r.coordinates();
            let value = Some(r.value).filter(|v| v.is_finite());
            let extdata = format!(
                "{{\"message\":\"\",\"agent_id\":{agent},\"pmc_id\":{counter},\"value\":{},\
                 \"dimensions\":[{xcc},{aid},{se},{index},{sa},{wgp},{instance}]}}",
                value.map_or("null".to_owned(), |v| v.to_string())
            );
            let event = self.event(category, None, None, 0, Value::Text(extdata))?;
            self.push(Table::pmc_event, &row![event, counter, r.value])?;
            self.push(Table::sample, &row![track, r.timestamp_ns, event])?;
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }

    /// SPM samples: instants on a track per agent, as device counter samples are (see
    /// there), under the `SPM` category, each with its dispatch, kernel and coordinates.
    fn spm_samples(&mut self, scope: Scope, records: &[SpmSample]) -> Result<(u32, u64), Fault> {
        let category = self.ids.string(schema::SPM);
        let mut last = 0;
        let mut tracks = AgentTracks::new(schema::SPM);
        for r in records {
            let agent = self.ids.agent(scope.stream, r.agent);
            let track = tracks.of(self, scope, r.pid, r.agent);
            let counter = self.ids.counter(scope.stream, r.counter_id);
            let kernel = self.ids.kernel(scope.stream, r.kernel_id);
            let value = Some(r.value).filter(|v| v.is_finite());
            let extdata = format!(
                "{{\"message\":\"\",\"agent_id\":{agent},\"pmc_id\":{counter},\"value\":{},\
                 \"dispatch_id\":{},\"kernel_id\":{kernel},\"xcc\":{},\"shader_engine\":{},\
                 \"instance\":{}}}",
                value.map_or("null".to_owned(), |v| v.to_string()),
                r.dispatch_id,
                r.xcc,
                r.shader_engine,
                r.instance,
            );
            let stack = Some(r.correlation_id);
            let event = self.event(category, stack, None, 0, Value::Text(extdata))?;
            self.push(Table::pmc_event, &row![event, counter, r.value])?;
            self.push(Table::sample, &row![track, r.timestamp_ns, event])?;
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }

    /// PC samples: instants on a track per sampling method, on the process's main thread
    /// (the device sampled them; no host thread did), with what they sampled as extra data.
    fn pc_samples(&mut self, scope: Scope, records: &[PcSample]) -> Result<(u32, u64), Fault> {
        let mut last = 0;
        for r in records {
            let method = match r.method {
                1 => "PC_SAMPLING_STOCHASTIC",
                2 => "PC_SAMPLING_HOST_TRAP",
                _ => "PC_SAMPLING",
            };
            let category = self.ids.string(method);
            let agent = self.ids.agent(scope.stream, r.agent);
            let code_object = self.ids.code_object(scope.stream, r.code_object_id);
            // Numbers only: written directly, as a JSON builder would cost more than the
            // sample's rows. AMD's converter reads every sample's `message` (a marker's
            // text); a PC sample has none, and the empty one keeps the sample's name.
            let extdata = format!(
                "{{\"message\":\"\",\"agent_id\":{agent},\"dispatch_id\":{},\"pc\":{},\"code_object_id\":{code_object},\
                 \"code_object_offset\":{},\"exec_mask\":{},\"wave_id\":{},\"hw_id\":{},\
                 \"chiplet\":{},\"instruction_type\":{},\"stall_reason\":{}}}",
                r.dispatch_id,
                r.pc,
                r.code_object_offset,
                r.exec_mask,
                r.wave_id,
                r.hw_id,
                r.chiplet,
                r.instruction_type,
                r.stall_reason
            );
            let stack = Some(r.correlation_id);
            let event = self.event(category, stack, stack, 0, Value::Text(extdata))?;
            self.ids.thread(scope.stream, r.pid);
            let track = self.ids.track((scope.stream, r.pid, category));
            self.push(Table::sample, &row![track, r.timestamp_ns, event])?;
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }
}

/// A marker's extra data: its message, if it has one.
fn message_data(message: &str) -> Value {
    if message.is_empty() {
        return NO_DATA;
    }
    let quoted = serde_json::to_string(message).expect("strings serialize");
    Value::Text(format!("{{\"message\":{quoted}}}"))
}

/// Hands out the string ids of the category and name of operation `op` of the domain with
/// SDK value `domain`, the first time the operation is seen.
fn name_operation(ids: &mut Ids, domain: u8, op: i32) -> Operation {
    if let Some(&known) = ids.operations.get(&(domain, op)) {
        return known;
    }
    let (category, name) = match Domain::from_sdk_value(domain.into()) {
        Some(d) => {
            let category = category_name(d);
            let op = d.operation_name(op).unwrap_or(UNKNOWN);
            // The SDK names API operations after their functions, and prefixes the
            // others with their domain (`MEMORY_COPY_HOST_TO_DEVICE`).
            let name = match d.record_kind() {
                RecordKind::Api | RecordKind::Marker => op.to_owned(),
                _ => format!("{category}_{op}"),
            };
            (category, name)
        }
        None => (UNKNOWN.to_owned(), UNKNOWN.to_owned()),
    };
    let operation = Operation {
        category: ids.strings.id(category.as_str()),
        name: ids.strings.id(name.as_str()),
    };
    ids.operations.insert((domain, op), operation);
    operation
}

/// An address the record knows (the SDK's), or NULL: 0 is none.
fn known(address: u64) -> Option<u64> {
    (address != 0).then_some(address)
}

/// The SDK's name of a domain (`HIP_RUNTIME_API`), rocpd's category of its events.
fn category_name(domain: Domain) -> String {
    domain.name().to_ascii_uppercase()
}

fn dispatch_event(scope: Scope, dispatch_id: u64) -> Result<i64, Fault> {
    Events::dispatch(scope.process, dispatch_id).ok_or(Fault::DispatchId(dispatch_id))
}

/// A row of `rocpd_memory_allocate`: a memory or scratch allocation, free or reclaim.
struct Allocation {
    tid: u32,
    agent: Option<u32>,
    /// `ALLOC`, `FREE`, `REALLOC` or `RECLAIM`.
    kind: Option<&'static str>,
    /// `REAL`, `VIRTUAL` or `SCRATCH`.
    level: Option<&'static str>,
    span: (u64, u64),
    address: Option<u64>,
    bytes: u64,
    queue: Option<u64>,
    extdata: Value,
}

/// A record of host activity: a call or an instant on a thread, of a domain's operation.
trait HostEvent {
    fn pid(&self) -> u32;
    /// The thread; the process's main thread for what no host thread did.
    fn tid(&self) -> u32;
    fn span(&self) -> (u64, u64);
    /// The internal correlation id, if the record has one, and the external one.
    fn correlation(&self) -> (Option<u64>, u64);
    /// The domain's and the operation's SDK values.
    fn operation(&self) -> (u8, i32);
}

/// Host records with a thread, a span and correlation ids, of a domain given by a field or
/// fixed for their kind.
macro_rules! host_event {
    ($($record:ty => |$r:ident| $operation:expr),*) => {$(
        impl HostEvent for $record {
            fn pid(&self) -> u32 {
                self.pid
            }
            fn tid(&self) -> u32 {
                self.tid
            }
            fn span(&self) -> (u64, u64) {
                (self.start_ns, self.end_ns)
            }
            fn correlation(&self) -> (Option<u64>, u64) {
                (Some(self.correlation_id), self.external_id)
            }
            fn operation(&self) -> (u8, i32) {
                let $r = self;
                $operation
            }
        }
    )*};
}

host_event!(
    ApiCall => |r| (r.domain_id, r.operation_id),
    Marker => |r| (r.domain_id, r.operation_id),
    HipStream => |r| (Domain::HipStream.sdk_value() as u8, r.operation_id.into()),
    RuntimeInitialization => |r| (
        Domain::RuntimeInitialization.sdk_value() as u8,
        r.operation_id.into()
    )
);

impl HostEvent for KfdEvent {
    fn pid(&self) -> u32 {
        self.pid
    }
    fn tid(&self) -> u32 {
        self.pid
    }
    fn span(&self) -> (u64, u64) {
        (self.timestamp_ns, self.timestamp_ns)
    }
    fn correlation(&self) -> (Option<u64>, u64) {
        (None, 0)
    }
    fn operation(&self) -> (u8, i32) {
        (self.domain_id, self.operation_id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::database::{Database, Streams};
    use super::*;
    use crate::catalog::Catalog;
    use crate::record::{CounterSample, KernelDispatch, Sym};
    use crate::sink::Written;

    /// Counter samples come before their dispatches here, for one dispatch more than come,
    /// and in the other order.
    #[test]
    fn counted_dispatches_are_written_bare_only_if_their_dispatch_never_comes() {
        let dir = tempfile::tempdir().unwrap();
        let mut database = Database::create(dir.path().join("t.db"), 0, Streams::All).unwrap();
        let meta = StreamMeta::default();
        let (came, counted) = (100, 101);
        let samples = (1..=counted).rev().map(|dispatch_id| CounterSample {
            dispatch_id,
            value: 1.0,
            ..CounterSample::default()
        });
        let dispatches = (1..=came).map(|dispatch_id| KernelDispatch {
            dispatch_id,
            correlation_id: dispatch_id,
            ..KernelDispatch::default()
        });
        let window: Vec<Queued> = [
            Batch::CounterSample(samples.collect()),
            Batch::KernelDispatch(dispatches.collect()),
        ]
        .into_iter()
        .map(|batch| Queued::new(Arc::new(Chunk::new(0, batch)), &meta))
        .collect();
        let written = Written::default();
        database.write(&window, &written).unwrap();
        let path = database.finish(&Catalog::default(), &[]).unwrap();

        let conn = rusqlite::Connection::open(path).unwrap();
        let count = |sql: &str| -> u64 {
            let sql = sql.replace("EVENT", "rocpd_event");
            let sql = sql.replace("PMC", "rocpd_pmc_event");
            let sql = sql.replace("DISPATCH", "rocpd_kernel_dispatch");
            conn.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
        };
        let rows =
            ["EVENT", "PMC", "DISPATCH"].map(|t| count(&format!("SELECT count(*) FROM {t}")));
        assert_eq!(rows, [counted, counted, came]);
        let bare = count("SELECT count(*) FROM EVENT WHERE stack_id IS NULL");
        assert_eq!(
            bare, 1,
            "only the dispatch that did not come has a bare event"
        );
        let resolved = count("SELECT count(*) FROM PMC P JOIN EVENT E ON E.id = P.event_id");
        assert_eq!(resolved, counted, "every counter value names an event");
    }

    /// Each marker's event gets its own message's extra data, however the chunk's messages
    /// repeat and interleave, in a run that starts inside the chunk; each is quoted once.
    #[test]
    fn each_marker_keeps_its_own_message() {
        let mut meta = StreamMeta::default();
        meta.strings = ["", "solve", "halo \"x\""].map(String::from).to_vec();
        let order = [1, 2, 1, 0, 2, 2, 1];
        let records = (order.iter())
            .map(|&m| Marker {
                message: Sym(m),
                ..Marker::default()
            })
            .collect();
        let queued = Queued::new(Arc::new(Chunk::new(0, Batch::Marker(records))), &meta);
        let solve = Value::Text(r#"{"message":"solve"}"#.into());
        let halo = Value::Text(r#"{"message":"halo \"x\""}"#.into());
        let run = queued.messages.of(1..order.len());
        let data: Vec<Value> = (0..order.len() - 1).map(|i| run.extdata(i)).collect();
        assert_eq!(
            data,
            [
                halo.clone(),
                solve.clone(),
                NO_DATA,
                halo.clone(),
                halo,
                solve
            ]
        );
        assert_eq!(queued.messages.data.len(), 3);
    }
}
