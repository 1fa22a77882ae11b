//! Records into rows, as rocprofv3 writes them: each record becomes an event (its category,
//! correlation ids and extra data) and a row of its kind's table that points at it. Host
//! calls with a duration are regions, instants are samples on a track, kernel dispatches,
//! copies and allocations have their own tables, and counter values point at their
//! dispatch's event.

use std::sync::Arc;

use super::append::{Appender, Rows, Writers};
use super::dispatches::Dispatches;
use super::fault::Fault;
use super::ids::{Events, Ids, Operation};
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
        /// The tables records append rows to, each written as its pages.
        pub struct Tables {
            $($name: Appender,)*
        }

        impl Tables {
            /// The tables, written as `pages` of their database, where `root` gives the
            /// root page SQLite made for each, by name; and the writers of their pages.
            pub fn new(
                pages: &Arc<Pages>,
                mut root: impl FnMut(&str) -> rusqlite::Result<u32>,
            ) -> rusqlite::Result<(Tables, Writers)> {
                $(let $name = Appender::new(
                    Arc::clone(pages),
                    root(schema::$table)?,
                    schema::table(schema::$table),
                    &[$($column),+],
                );)*
                let tables = Tables { $($name: $name.0,)* };
                Ok((tables, Writers::new(vec![$($name.1),*])))
            }

            /// The event table, which dispatches' events join at the end.
            pub fn events(&mut self) -> &mut Appender {
                &mut self.event
            }

            /// The rows gathered in every table.
            pub fn gathered(&self) -> usize {
                0 $(+ self.$name.gathered())*
            }

            /// Takes every table's rows gathered, in the order [`Writers`] has the tables,
            /// leaving `spare`'s (written, so empty) in their place.
            pub fn swap(&mut self, spare: &mut [Rows]) {
                let mut spare = spare.iter_mut();
                $(self.$name.swap(spare.next().expect("spare rows for every table"));)*
            }
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

    fn of(&mut self, rows: &mut Window<'_>, scope: Scope, pid: u32, agent: u32) -> i64 {
        match self.current {
            Some((at, id)) if at == agent => id,
            _ => {
                let name = format!("{} agent {agent}", self.category);
                let name = rows.ids.strings.id(name.as_str());
                rows.ids.thread(scope.stream, pid);
                let id = rows.ids.tracks.id(&(scope.stream, pid, name));
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
    /// The messages of marker records, one per record (none for other kinds).
    messages: Vec<String>,
    /// The arguments of API calls, one list per record (none where none were collected).
    args: Vec<Vec<Arg>>,
}

/// An argument row's columns besides its event: position, type, name, value.
type Arg = (u8, String, String, String);

impl Queued {
    /// Its records.
    pub fn len(&self) -> usize {
        self.chunk.len()
    }

    pub fn new(chunk: Arc<Chunk>, meta: &StreamMeta) -> Queued {
        let messages = match &chunk.batch {
            Batch::Marker(records) => records
                .iter()
                .map(|r| meta.string(r.message).to_owned())
                .collect(),
            _ => Vec::new(),
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

/// One window's writes into one database.
pub struct Window<'a> {
    tables: &'a mut Tables,
    dispatches: &'a mut Dispatches,
    ids: &'a mut Ids,
}

impl<'a> Window<'a> {
    pub fn new(tables: &'a mut Tables, dispatches: &'a mut Dispatches, ids: &'a mut Ids) -> Self {
        Window {
            tables,
            dispatches,
            ids,
        }
    }

    /// Writes the rows of a chunk's records.
    pub fn chunk(&mut self, queued: &Queued) -> Result<(), Fault> {
        let chunk = &queued.chunk;
        if chunk.is_empty() {
            return Ok(());
        }
        let scope = Scope {
            stream: chunk.stream,
            process: self.ids.process(chunk.stream, queued.pid),
            node: self.ids.nodes.id(queued.host.as_str()),
        };
        for &(index, node_id) in &queued.agents {
            self.ids.agent_node(chunk.stream, index, node_id);
        }
        let messages = &queued.messages;
        let (pid, last_ns) = match &chunk.batch {
            Batch::KernelDispatch(r) => self.dispatches(scope, r)?,
            Batch::MemoryCopy(r) => self.copies(scope, r)?,
            Batch::MemoryAllocation(r) => self.allocations(scope, r)?,
            Batch::ScratchMemory(r) => self.scratch(scope, r)?,
            Batch::Api(r) => self.host(scope, r, messages, &queued.args)?,
            Batch::Marker(r) => self.host(scope, r, messages, &[])?,
            Batch::HipStream(r) => self.host(scope, r, messages, &[])?,
            Batch::RuntimeInitialization(r) => self.host(scope, r, messages, &[])?,
            Batch::KfdEvent(r) => self.host(scope, r, messages, &[])?,
            Batch::CounterSample(r) => self.counters(scope, r)?,
            Batch::PcSample(r) => self.pc_samples(scope, r)?,
            Batch::DeviceCounterSample(r) => self.device_counters(scope, r)?,
            Batch::GraphLaunch(r) => self.graph_launches(scope, r)?,
            Batch::HipEventBarrier(r) => self.hip_event_barriers(scope, r)?,
            Batch::SpmSample(r) => self.spm_samples(scope, r)?,
        };
        self.ids.saw(chunk.stream, pid, last_ns);
        Ok(())
    }

    /// The category and name of operation `op` of the domain with SDK value `domain`.
    fn operation(&mut self, domain: u8, op: i32) -> Operation {
        if let Some(&known) = self.ids.operations.get(&(domain, op)) {
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
            category: self.ids.strings.id(category.as_str()),
            name: self.ids.strings.id(name.as_str()),
        };
        self.ids.operations.insert((domain, op), operation);
        operation
    }

    fn category(&mut self, domain: Domain) -> i64 {
        self.ids.strings.id(category_name(domain).as_str())
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
        let id = self.ids.events.next();
        let row = row![id, category, stack, parent, correlation, extdata];
        self.tables.event.push(row);
        Ok(id)
    }

    fn dispatches(
        &mut self,
        scope: Scope,
        records: &[KernelDispatch],
    ) -> Result<(u32, u64), Fault> {
        let category = self.category(Domain::KernelDispatch);
        // Dispatches without an external correlation belong to no named region.
        let no_region = self.ids.strings.id("");
        let mut last = 0;
        for r in records {
            let event = dispatch_event(scope, r.dispatch_id)?;
            let (internal, external) = (r.correlation_id as i64, r.external_id as i64);
            self.dispatches
                .dispatched(event, category, internal, external)?;
            let ids = &mut *self.ids;
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
            self.tables.kernel_dispatch.push(row);
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
            let ids = &mut *self.ids;
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
            self.tables.graph_launch.push(row);
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
            let ids = &mut *self.ids;
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
            self.tables.hip_event.push(row);
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
            let ids = &mut *self.ids;
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
            self.tables.memory_copy.push(row);
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
        let ids = &mut *self.ids;
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
        self.tables.memory_allocate.push(row);
        Ok(())
    }

    /// Host calls and instants: regions when they last, samples on their thread's track of
    /// their category when they do not; with their messages and arguments, if they have
    /// any (one list per record).
    fn host<R: HostEvent>(
        &mut self,
        scope: Scope,
        records: &[R],
        messages: &[String],
        args: &[Vec<Arg>],
    ) -> Result<(u32, u64), Fault> {
        let mut last = 0;
        for (i, r) in records.iter().enumerate() {
            let (domain, op) = r.operation();
            let operation = self.operation(domain, op);
            let extdata = match messages.get(i).filter(|m| !m.is_empty()) {
                Some(message) => {
                    let quoted = serde_json::to_string(message).expect("strings serialize");
                    Value::Text(format!("{{\"message\":{quoted}}}"))
                }
                None => NO_DATA,
            };
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
                self.tables.arg.push(row);
            }
            let (start, end) = r.span();
            let thread = self.ids.thread(scope.stream, r.tid());
            if start == end {
                let track = (scope.stream, r.tid(), operation.category);
                let row = row![self.ids.tracks.id(&track), start, event];
                self.tables.sample.push(row);
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
                self.tables.region.push(row);
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
                self.dispatches.counted(event, category)?;
                counted = Some(event);
            }
            let counter = self.ids.counter(scope.stream, r.counter_id);
            self.tables.pmc_event.push(row![event, counter, r.value]);
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
        let category = self.ids.strings.id(schema::DEVICE_COUNTING);
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
            self.tables.pmc_event.push(row![event, counter, r.value]);
            self.tables.sample.push(row![track, r.timestamp_ns, event]);
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }

    /// SPM samples: instants on a track per agent, as device counter samples are (see
    /// there), under the `SPM` category, each with its dispatch, kernel and coordinates.
    fn spm_samples(&mut self, scope: Scope, records: &[SpmSample]) -> Result<(u32, u64), Fault> {
        let category = self.ids.strings.id(schema::SPM);
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
            self.tables.pmc_event.push(row![event, counter, r.value]);
            self.tables.sample.push(row![track, r.timestamp_ns, event]);
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
            let category = self.ids.strings.id(method);
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
            let track = self.ids.tracks.id(&(scope.stream, r.pid, category));
            self.tables.sample.push(row![track, r.timestamp_ns, event]);
            last = last.max(r.timestamp_ns);
        }
        Ok((records[0].pid, last))
    }
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
    use crate::record::{CounterSample, KernelDispatch};
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
}
