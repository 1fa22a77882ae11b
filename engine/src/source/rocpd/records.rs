//! The event tables of one set of rocpd tables, as records: kernel dispatches, memory
//! copies, allocations and scratch events, host regions (API calls, markers and the other
//! host domains) with their arguments and messages, instants (marks, KFD events, PC
//! samples) and counter values. Each table is read in one pass in row order, joined to
//! its events; operations are named by strings, resolved once per (category, name).

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};
use rustc_hash::FxHashMap as HashMap;
use serde::Deserialize;

use super::emit::{Emitter, Stopped};
use super::info::Info;
use super::schema::{self, Table, Tables};
use super::value::{
    Long, Number, int, json, json_u64, opt_int, real, text, u32, u64, with_content,
};
use crate::record::{
    ApiCall, Batch, CounterSample, DeviceCounterSample, GraphLaunch, HipEventBarrier, HipStream,
    KernelDispatch, KfdEvent, Marker, MemoryAllocation, MemoryCopy, PcSample, RecordKind,
    RuntimeInitialization, ScratchMemory, SpmSample,
};
use crate::sdk::Domain;
use crate::sqlite::{Cells, Kind, Statement};

/// Adds `record` to `stream`'s batch of its kind (`$kind`, a [`Batch`] variant).
macro_rules! push {
    ($out:expr, $stream:expr, $kind:ident, $record:expr) => {{
        let record = $record;
        $out.push($stream, RecordKind::$kind, |batch| {
            if let Batch::$kind(records) = batch {
                records.push(record);
            }
        })
    }};
}

/// What ends reading a set of tables.
#[derive(Debug)]
pub enum Fault {
    Sqlite(rusqlite::Error),
    Stopped,
}

impl From<rusqlite::Error> for Fault {
    fn from(e: rusqlite::Error) -> Self {
        Fault::Sqlite(e)
    }
}

impl From<Stopped> for Fault {
    fn from(_: Stopped) -> Self {
        Fault::Stopped
    }
}

/// Rows no record could be made of.
#[derive(Debug, Default)]
pub struct Left {
    /// Rows of a process the info tables do not describe.
    pub orphans: u64,
    /// Host events by category, of categories no rocflow record kind holds.
    pub unknown: BTreeMap<String, u64>,
    /// Cells cut to [`super::value::MAX_TEXT`].
    pub long: Long,
}

/// The rows of a table that one reader turns into records: all of them, or those whose
/// row ids lie in a range, so that several readers share a large table.
#[derive(Debug, Clone)]
pub struct Part {
    pub table: Table,
    pub rows: Option<RangeInclusive<i64>>,
}

/// Reads `part` of the event tables of `tables` into `out`; returns what was left out.
pub fn read(
    conn: &Connection,
    tables: &Tables,
    info: &Info,
    part: &Part,
    out: &mut Emitter<'_>,
) -> Result<Left, Fault> {
    let mut reader = Reader {
        conn,
        tables,
        info,
        out,
        rows: part.rows.clone(),
        operations: HashMap::default(),
        left: Left::default(),
    };
    match part.table {
        Table::Dispatches => reader.dispatches()?,
        Table::Copies => reader.copies()?,
        Table::Allocations => reader.allocations()?,
        Table::Regions => reader.regions()?,
        Table::Samples => reader.samples()?,
        Table::Counters => reader.counters()?,
        Table::GraphLaunches => reader.graph_launches()?,
        Table::HipEvents => reader.hip_events()?,
    }
    Ok(reader.left)
}

/// A domain's operation, as a record stores them.
#[derive(Debug, Clone, Copy)]
struct Operation {
    domain: Domain,
    id: i32,
}

struct Reader<'r, 'e> {
    conn: &'r Connection,
    tables: &'r Tables,
    info: &'r Info,
    out: &'r mut Emitter<'e>,
    /// The row ids read, where not all.
    rows: Option<RangeInclusive<i64>>,
    /// By (category, name) string ids; `None` for a category of no domain.
    operations: HashMap<(i64, i64), Option<Operation>>,
    left: Left,
}

impl Reader<'_, '_> {
    fn each(
        &mut self,
        sql: &str,
        mut f: impl FnMut(&mut Self, &Cells<'_>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let mut statement = Statement::prepare(self.conn, sql)?;
        while let Some(row) = statement.step()? {
            f(self, &row)?;
        }
        Ok(())
    }

    /// Runs `sql` (its first column a process row id), each row of a known process to `f`
    /// with that process's stream and OS pid; then flushes `kinds`, what `f` made.
    fn records(
        &mut self,
        sql: &str,
        kinds: &[RecordKind],
        mut f: impl FnMut(&mut Self, &Cells<'_>, u16, u32) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        self.each(sql, |r, row| match r.process(int(row, 0)) {
            Some((stream, pid)) => f(r, row, stream, pid),
            None => Ok(()),
        })?;
        for kind in kinds {
            self.out.flush_kind(*kind)?;
        }
        Ok(())
    }

    /// The end of a query over the table aliased `alias`: the rows of this part, ordered by
    /// `column`.
    fn order(&self, alias: &str, column: &str) -> String {
        match &self.rows {
            Some(rows) => format!(
                " WHERE {alias}.rowid BETWEEN {} AND {} ORDER BY {alias}.{column}",
                rows.start(),
                rows.end()
            ),
            None => format!(" ORDER BY {alias}.{column}"),
        }
    }

    /// `SELECT` of `columns` of event table `table` (`x.`) and of its event (`e.`).
    fn with_event(&self, table: &str, columns: &str) -> String {
        let from = format!(
            "{} AS x LEFT JOIN {} AS e ON e.id = x.event_id",
            self.tables.name(table),
            self.tables.name(schema::EVENT)
        );
        self.tables
            .select(columns, &[("x", table), ("e", schema::EVENT)], &from)
    }

    /// The stream and OS pid of process row `row`.
    fn process(&mut self, row: i64) -> Option<(u16, u32)> {
        let found = self.info.process.get(&row).copied();
        self.left.orphans += u64::from(found.is_none());
        found
    }

    /// The operation that category string `category` and name string `name` say.
    fn operation(&mut self, category: i64, name: i64) -> Option<Operation> {
        if let Some(&known) = self.operations.get(&(category, name)) {
            return known;
        }
        let found = operation(self.info.string(category), self.info.string(name));
        self.operations.insert((category, name), found);
        found
    }

    fn dispatches(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::KERNEL_DISPATCH,
            "x.pid, x.tid, x.agent_id, x.kernel_id, x.dispatch_id, x.queue_id, x.start, x.end, \
             x.private_segment_size, x.group_segment_size, \
             x.workgroup_size_x, x.workgroup_size_y, x.workgroup_size_z, \
             x.grid_size_x, x.grid_size_y, x.grid_size_z, e.stack_id, e.correlation_id, \
             x.graph_exec_id, x.graph_node_id, x.stream_id",
        );
        let kinds = [RecordKind::KernelDispatch];
        self.records(
            &(sql + &self.order("x", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let kernel = r.info.kernels.get(&int(row, 3));
                let record = KernelDispatch {
                    pid,
                    tid: r.info.tid(int(row, 1)),
                    agent: r.info.agent(opt_int(row, 2)),
                    queue: r.info.queue(u64(row, 5)),
                    dispatch_id: u64(row, 4),
                    kernel_id: kernel.map_or(u64(row, 3), |k| k.id),
                    start_ns: u64(row, 6),
                    end_ns: u64(row, 7),
                    correlation_id: u64(row, 16),
                    external_id: u64(row, 17),
                    grid_x: u32(row, 13),
                    grid_y: u32(row, 14),
                    grid_z: u32(row, 15),
                    workgroup_x: u32(row, 10),
                    workgroup_y: u32(row, 11),
                    workgroup_z: u32(row, 12),
                    lds_bytes: u32(row, 9),
                    scratch_bytes: u32(row, 8),
                    vgpr_count: kernel.map_or(0, |k| k.vgpr_count),
                    sgpr_count: kernel.map_or(0, |k| k.sgpr_count),
                    // NULL (0) before rocpd 3.0.2.
                    graph_exec_id: u64(row, 18),
                    graph_node_id: u64(row, 19),
                    hip_stream: r.info.hip_stream(opt_int(row, 20)),
                };
                push!(r.out, stream, KernelDispatch, record)?;
                Ok(())
            },
        )
    }

    fn copies(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::MEMORY_COPY,
            "x.pid, x.tid, x.start, x.end, e.category_id, x.name_id, \
             x.src_agent_id, x.dst_agent_id, x.size, e.stack_id, e.correlation_id, \
             x.graph_exec_id, x.graph_node_id, x.dst_address, x.src_address, x.stream_id",
        );
        let kinds = [RecordKind::MemoryCopy];
        self.records(
            &(sql + &self.order("x", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let operation = r.operation(int(row, 4), int(row, 5));
                let record = MemoryCopy {
                    pid,
                    tid: r.info.tid(int(row, 1)),
                    src_agent: r.info.agent(opt_int(row, 6)),
                    dst_agent: r.info.agent(opt_int(row, 7)),
                    start_ns: u64(row, 2),
                    end_ns: u64(row, 3),
                    correlation_id: u64(row, 9),
                    external_id: u64(row, 10),
                    bytes: u64(row, 8),
                    operation_id: operation.map_or(0, |o| o.id as u8),
                    graph_exec_id: u64(row, 11),
                    graph_node_id: u64(row, 12),
                    dst_address: u64(row, 13),
                    src_address: u64(row, 14),
                    hip_stream: r.info.hip_stream(opt_int(row, 15)),
                };
                push!(r.out, stream, MemoryCopy, record)?;
                Ok(())
            },
        )
    }

    fn graph_launches(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::GRAPH_LAUNCH,
            "x.pid, x.tid, x.agent_id, x.queue_id, x.start, x.end, x.graph_exec_id, \
             x.kernel_dispatch_count, e.stack_id, e.correlation_id",
        );
        let kinds = [RecordKind::GraphLaunch];
        self.records(
            &(sql + &self.order("x", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let record = GraphLaunch {
                    pid,
                    tid: r.info.tid(int(row, 1)),
                    agent: r.info.agent(opt_int(row, 2)),
                    // The SDK names no queue for most launches: rocprofv3 writes none.
                    queue: opt_int(row, 3).map_or(0, |q| r.info.queue(q as u64)),
                    start_ns: u64(row, 4),
                    end_ns: u64(row, 5),
                    correlation_id: u64(row, 8),
                    external_id: u64(row, 9),
                    graph_exec_id: u64(row, 6),
                    dispatch_count: u64(row, 7),
                };
                push!(r.out, stream, GraphLaunch, record)?;
                Ok(())
            },
        )
    }

    /// HIP event barriers: their operation by name (`RECORD`, `WAIT`, or prefixed
    /// `HIP_EVENT_` as the SDK's enumerator is), their queues where the table has them.
    fn hip_events(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::HIP_EVENT,
            "x.pid, x.tid, x.agent_id, x.queue_id, x.source_queue_id, x.start, x.end, \
             x.operation, x.hip_event_handle, e.stack_id, e.correlation_id",
        );
        let kinds = [RecordKind::HipEventBarrier];
        self.records(
            &(sql + &self.order("x", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let queue = |i| opt_int(row, i).map_or(0, |q| r.info.queue(q as u64));
                let operation = text(row, 7).unwrap_or_default();
                let operation = operation.trim_start_matches("HIP_EVENT_");
                let record = HipEventBarrier {
                    pid,
                    tid: r.info.tid(int(row, 1)),
                    agent: r.info.agent(opt_int(row, 2)),
                    queue: queue(3),
                    source_queue: queue(4),
                    start_ns: u64(row, 5),
                    end_ns: u64(row, 6),
                    correlation_id: u64(row, 9),
                    external_id: u64(row, 10),
                    event: u64(row, 8),
                    operation_id: operation_id(Domain::HipEvent, operation),
                };
                push!(r.out, stream, HipEventBarrier, record)?;
                Ok(())
            },
        )
    }

    /// Allocations and frees of memory and of scratch memory, told apart by `level`.
    fn allocations(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::MEMORY_ALLOCATE,
            "x.pid, x.tid, x.agent_id, x.type, x.level, x.start, x.end, x.address, x.size, \
             x.queue_id, e.stack_id, e.correlation_id, x.extdata",
        );
        let kinds = [RecordKind::MemoryAllocation, RecordKind::ScratchMemory];
        self.records(
            &(sql + &self.order("x", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let (kind, level) = (text(row, 3).unwrap_or_default(), text(row, 4));
                let tid = r.info.tid(int(row, 1));
                let agent = r.info.agent(opt_int(row, 2));
                let (start_ns, end_ns) = (u64(row, 5), u64(row, 6));
                let (correlation_id, external_id) = (u64(row, 10), u64(row, 11));
                if level.as_deref() == Some("SCRATCH") {
                    let op = match kind.as_str() {
                        "ALLOC" => "ALLOC",
                        "FREE" => "FREE",
                        _ => "ASYNC_RECLAIM",
                    };
                    let flags = json(row, 12).and_then(|e| json_u64(&e, "flags"));
                    let record = ScratchMemory {
                        pid,
                        tid,
                        agent,
                        queue: r.info.queue(u64(row, 9)),
                        start_ns,
                        end_ns,
                        correlation_id,
                        external_id,
                        bytes: u64(row, 8),
                        flags: flags.unwrap_or(0) as u32,
                        operation_id: operation_id(Domain::ScratchMemory, op) as u8,
                    };
                    push!(r.out, stream, ScratchMemory, record)?;
                } else {
                    let virtual_ = level.as_deref() == Some("VIRTUAL");
                    let op = match (kind.as_str(), virtual_) {
                        ("FREE", false) => "FREE",
                        ("FREE", true) => "VMEM_FREE",
                        (_, false) => "ALLOCATE",
                        (_, true) => "VMEM_ALLOCATE",
                    };
                    let record = MemoryAllocation {
                        pid,
                        tid,
                        agent,
                        start_ns,
                        end_ns,
                        correlation_id,
                        external_id,
                        address: u64(row, 7),
                        bytes: u64(row, 8),
                        operation_id: operation_id(Domain::MemoryAllocation, op) as u8,
                    };
                    push!(r.out, stream, MemoryAllocation, record)?;
                }
                Ok(())
            },
        )
    }

    /// Host calls with a duration, with their arguments: regions in event order, merged
    /// with the arguments in event order.
    fn regions(&mut self) -> Result<(), Fault> {
        let sql = self.with_event(
            schema::REGION,
            "x.pid, x.tid, x.start, x.end, e.category_id, x.name_id, \
             e.stack_id, e.correlation_id, e.extdata, x.event_id",
        );
        let args_sql = format!(
            "SELECT event_id, position, type, name, value, rowid FROM {} \
             ORDER BY event_id, position",
            self.tables.name(schema::ARG)
        );
        let mut args = Statement::prepare(self.conn, &args_sql)?;
        let long = &mut self.left.long;
        let mut next_arg = args.step()?.as_ref().map(|row| arg_row(row, long));
        // Without arguments, row order is as good and needs no sort.
        let order = self.order(
            "x",
            if next_arg.is_some() {
                "event_id"
            } else {
                "rowid"
            },
        );
        let mut call_args = Vec::new();
        self.each(&(sql + &order), |r, row| {
            let event = int(row, 9);
            call_args.clear();
            while let Some((id, arg)) = next_arg.take() {
                if id > event {
                    next_arg = Some((id, arg));
                    break;
                }
                if id == event {
                    call_args.push(arg);
                }
                next_arg = (args.step()?.as_ref()).map(|row| arg_row(row, &mut r.left.long));
            }
            let Some((stream, pid)) = r.process(int(row, 0)) else {
                return Ok(());
            };
            let host = Host {
                stream,
                category: int(row, 4),
                pid,
                tid: r.info.tid(int(row, 1)),
                start_ns: u64(row, 2),
                end_ns: u64(row, 3),
                operation: r.operation(int(row, 4), int(row, 5)),
                correlation_id: u64(row, 6),
                external_id: u64(row, 7),
                event,
            };
            r.host(host, row, 8, &call_args)
        })?;
        for kind in HOST_KINDS {
            self.out.flush_kind(*kind)?;
        }
        Ok(())
    }

    /// Instants: samples on tracks, named by their track's category.
    fn samples(&mut self) -> Result<(), Fault> {
        let (sample, track, event) = (schema::SAMPLE, schema::TRACK, schema::EVENT);
        let from = format!(
            "{} AS s JOIN {} AS t ON t.id = s.track_id LEFT JOIN {} AS e ON e.id = s.event_id",
            self.tables.name(sample),
            self.tables.name(track),
            self.tables.name(event)
        );
        let sql = self.tables.select(
            "t.pid, t.tid, s.timestamp, e.category_id, t.name_id, \
             e.stack_id, e.correlation_id, e.extdata, s.event_id, s.id",
            &[("s", sample), ("t", track), ("e", event)],
            &from,
        );
        let kinds = [
            HOST_KINDS,
            &[
                RecordKind::PcSample,
                RecordKind::DeviceCounterSample,
                RecordKind::SpmSample,
            ],
        ]
        .concat();
        // rocpd 3.0.3 keeps an SPM sample's values in `rocpd_pmc_event` by sample.
        let pmc = schema::PMC_EVENT;
        let mut spm_values = (self.tables.has(pmc, "sample_id"))
            .then(|| {
                let sql = self.tables.select(
                    "p.pmc_id, p.value, p.xcc, p.shader_engine, p.instance",
                    &[("p", pmc)],
                    &format!(
                        "{} AS p WHERE p.sample_id = ?1 ORDER BY p.rowid",
                        self.tables.name(pmc)
                    ),
                );
                Statement::prepare(self.conn, &sql)
            })
            .transpose()?;
        self.records(
            &(sql + &self.order("s", "rowid")),
            &kinds,
            |r, row, stream, pid| {
                let category = opt_int(row, 3).unwrap_or_else(|| int(row, 4));
                let name = r.info.string(category);
                if let Some(method) = name.strip_prefix("PC_SAMPLING") {
                    let method = match method {
                        "_STOCHASTIC" => 1,
                        "_HOST_TRAP" => 2,
                        _ => 0,
                    };
                    let record = r.pc_sample(pid, row, method);
                    push!(r.out, stream, PcSample, record)?;
                    return Ok(());
                }
                if name == schema::DEVICE_COUNTING {
                    let record = r.device_counter_sample(pid, row);
                    push!(r.out, stream, DeviceCounterSample, record)?;
                    return Ok(());
                }
                if name == schema::SPM {
                    // rocflow's sink gives each value a sample and an event; rocprofv3's
                    // (rocpd 3.0.3) a sample per time, its values by sample.
                    if opt_int(row, 8).is_some() {
                        let record = r.spm_sample(pid, row);
                        push!(r.out, stream, SpmSample, record)?;
                    } else if let Some(values) = spm_values.as_mut() {
                        r.spm_values(values, stream, pid, row)?;
                    }
                    return Ok(());
                }
                // An instant's name is not stored: a mark is the one instant of markers.
                let domain = Domain::from_name(&name.to_ascii_lowercase());
                let operation = domain.map(|domain| Operation {
                    domain,
                    id: match domain.record_kind() {
                        RecordKind::Marker => operation_id(domain, "roctxMarkA"),
                        _ => -1,
                    },
                });
                let at = u64(row, 2);
                let host = Host {
                    stream,
                    category,
                    pid,
                    tid: r.info.tid(int(row, 1)),
                    start_ns: at,
                    end_ns: at,
                    operation,
                    correlation_id: u64(row, 5),
                    external_id: u64(row, 6),
                    event: int(row, 8),
                };
                r.host(host, row, 7, &[])
            },
        )
    }

    /// Counts a host event of a category no record kind holds.
    fn unknown(&mut self, category: i64) {
        let name = self.info.string(category);
        *self.left.unknown.entry(name.to_owned()).or_default() += 1;
    }

    /// A device counter sample, from what its event keeps (see the rocpd sink).
    fn device_counter_sample(&self, pid: u32, row: &Cells<'_>) -> DeviceCounterSample {
        let data: DeviceData = with_content(row, 7, |t| serde_json::from_slice(t).ok())
            .flatten()
            .unwrap_or_default();
        let pmc = data.pmc_id.0.unwrap_or(0) as i64;
        // A counter is defined for an agent; the sample names it otherwise.
        let (counter_id, agent) = match self.info.counters.get(&pmc) {
            Some(&known) => known,
            None => (
                pmc as u32,
                self.info.agent(data.agent_id.0.map(|a| a as i64)),
            ),
        };
        DeviceCounterSample {
            pid,
            agent,
            timestamp_ns: u64(row, 2),
            counter_id,
            value: data.value.unwrap_or(f64::NAN),
            ..DeviceCounterSample::default()
        }
        .at(data.dimensions)
    }

    /// An SPM sample of rocflow's rocpd sink, from what its event keeps.
    fn spm_sample(&self, pid: u32, row: &Cells<'_>) -> SpmSample {
        let data: SpmData = with_content(row, 7, |t| serde_json::from_slice(t).ok())
            .flatten()
            .unwrap_or_default();
        let pmc = data.pmc_id.0.unwrap_or(0) as i64;
        let (counter_id, agent) = match self.info.counters.get(&pmc) {
            Some(&known) => known,
            None => (
                pmc as u32,
                self.info.agent(data.agent_id.0.map(|a| a as i64)),
            ),
        };
        let kernel = data.kernel_id.0.unwrap_or(0) as i64;
        SpmSample {
            pid,
            agent,
            dispatch_id: data.dispatch_id.0.unwrap_or(0),
            kernel_id: self.info.kernels.get(&kernel).map_or(0, |k| k.id),
            correlation_id: u64(row, 5),
            timestamp_ns: u64(row, 2),
            counter_id,
            xcc: data.xcc,
            shader_engine: data.shader_engine,
            instance: data.instance,
            value: data.value.unwrap_or(f64::NAN),
        }
    }

    /// The values of an SPM sample of rocpd 3.0.3 (rocprofv3's), each a record at the
    /// sample's time; rocprofv3 keeps no dispatch of them.
    fn spm_values(
        &mut self,
        values: &mut Statement<'_>,
        stream: u16,
        pid: u32,
        sample: &Cells<'_>,
    ) -> Result<(), Fault> {
        values.reset();
        values.bind_int(1, int(sample, 9))?;
        while let Some(row) = values.step()? {
            let counter = int(&row, 0);
            let Some(&(counter_id, agent)) = self.info.counters.get(&counter) else {
                self.left.orphans += 1;
                continue;
            };
            let coordinate = |i| u16::try_from(int(&row, i)).unwrap_or(u16::MAX);
            let record = SpmSample {
                pid,
                agent,
                timestamp_ns: u64(sample, 2),
                counter_id,
                xcc: coordinate(2),
                shader_engine: coordinate(3),
                instance: coordinate(4),
                value: real(&row, 1),
                ..SpmSample::default()
            };
            push!(self.out, stream, SpmSample, record)?;
        }
        Ok(())
    }

    fn pc_sample(&self, pid: u32, row: &Cells<'_>, method: u8) -> PcSample {
        let data: SampleData = with_content(row, 7, |t| serde_json::from_slice(t).ok())
            .flatten()
            .unwrap_or_default();
        let field = |n: Number| n.0.unwrap_or(0);
        PcSample {
            pid,
            agent: self.info.agent(data.agent_id.0.map(|a| a as i64)),
            timestamp_ns: u64(row, 2),
            dispatch_id: field(data.dispatch_id),
            correlation_id: u64(row, 5),
            pc: field(data.pc),
            code_object_id: self.info.code_object(field(data.code_object_id)),
            code_object_offset: field(data.code_object_offset),
            exec_mask: field(data.exec_mask),
            wave_id: field(data.wave_id) as u32,
            hw_id: field(data.hw_id) as u32,
            chiplet: field(data.chiplet) as u8,
            method,
            instruction_type: field(data.instruction_type) as u8,
            stall_reason: field(data.stall_reason) as u8,
        }
    }

    /// A host call or instant as the record of its domain's kind; `extdata` is the
    /// column of its event's extra data (a marker's message).
    fn host(
        &mut self,
        h: Host,
        row: &Cells<'_>,
        extdata: usize,
        args: &[(u8, String, String, String)],
    ) -> Result<(), Fault> {
        let Some(Operation { domain, id }) = h.operation else {
            self.unknown(h.category);
            return Ok(());
        };
        let domain_id = domain.sdk_value() as u8;
        let (pid, tid, start_ns, end_ns) = (h.pid, h.tid, h.start_ns, h.end_ns);
        let (correlation_id, external_id) = (h.correlation_id, h.external_id);
        let stream = h.stream;
        match domain.record_kind() {
            RecordKind::Api => {
                if !args.is_empty() {
                    self.out.args(stream, correlation_id, args);
                }
                let record = ApiCall {
                    pid,
                    tid,
                    start_ns,
                    end_ns,
                    correlation_id,
                    external_id,
                    domain_id,
                    operation_id: id,
                };
                push!(self.out, stream, Api, record)
            }
            RecordKind::Marker => {
                (self.left.long).check(row, extdata, schema::EVENT, "extdata", h.event);
                let message = json(row, extdata)
                    .and_then(|e| e.get("message")?.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let record = Marker {
                    pid,
                    tid,
                    start_ns,
                    end_ns,
                    correlation_id,
                    external_id,
                    domain_id,
                    operation_id: id,
                    message: self.out.sym(stream, &message),
                };
                push!(self.out, stream, Marker, record)
            }
            RecordKind::HipStream => {
                let record = HipStream {
                    pid,
                    tid,
                    start_ns,
                    end_ns,
                    correlation_id,
                    external_id,
                    stream: 0,
                    operation_id: id as u8,
                };
                push!(self.out, stream, HipStream, record)
            }
            RecordKind::RuntimeInitialization => {
                let record = RuntimeInitialization {
                    pid,
                    tid,
                    start_ns,
                    end_ns,
                    correlation_id,
                    external_id,
                    version: 0,
                    operation_id: id as u8,
                };
                push!(self.out, stream, RuntimeInitialization, record)
            }
            RecordKind::KfdEvent => {
                let record = KfdEvent {
                    pid,
                    agent: 0,
                    timestamp_ns: start_ns,
                    address: 0,
                    domain_id,
                    operation_id: id,
                };
                push!(self.out, stream, KfdEvent, record)
            }
            // Device activity has tables of its own, not regions.
            _ => {
                self.unknown(h.category);
                return Ok(());
            }
        }?;
        Ok(())
    }

    /// Counter values, each at its dispatch (found by the event they share). The values
    /// of a dispatch are consecutive rows, so its dispatch is looked up once for them all,
    /// not joined row by row (the join was half the time of reading a counter run).
    fn counters(&mut self) -> Result<(), Fault> {
        let (pmc, dispatch) = (schema::PMC_EVENT, schema::KERNEL_DISPATCH);
        let sql = self.tables.select(
            "p.event_id, p.pmc_id, p.value",
            &[("p", pmc)],
            &format!("{} AS p", self.tables.name(pmc)),
        );
        // The first of an event's dispatches, as a LEFT JOIN would have paired with it:
        // found by its event, or where the database has no index for that (a search would
        // scan the dispatches for each event), by its row id in an index of our own.
        let firsts = (self.tables)
            .scanned(dispatch, "event_id")
            .then(|| self.first_dispatches())
            .transpose()?;
        let by = match firsts {
            Some(_) => "d.rowid = ?1",
            None => "d.event_id = ?1 ORDER BY d.rowid LIMIT 1",
        };
        let lookup = self.tables.select(
            "d.pid, d.agent_id, d.dispatch_id, d.kernel_id, d.end",
            &[("d", dispatch)],
            &format!("{} AS d WHERE {by}", self.tables.name(dispatch)),
        );
        let mut lookup = Statement::prepare(self.conn, &lookup)?;
        // A dispatch's values reach the stages in one batch, as the tool sends them (the
        // summary and the sinks total a dispatch's values batch by batch): a part starts
        // and ends between dispatches, and a full batch is sent only when the next value
        // is of another dispatch.
        // Values of device counter samples are read with their samples.
        let of_dispatches = format!(
            " WHERE p.event_id NOT IN (SELECT event_id FROM {} WHERE event_id IS NOT NULL)",
            self.tables.name(schema::SAMPLE)
        );
        let order = of_dispatches
            + &match self.rows.clone() {
                Some(rows) => {
                    let start = self.dispatch_start(*rows.start())?;
                    let end = self.dispatch_start(rows.end().saturating_add(1))?;
                    match (start, end) {
                        (None, _) => return Ok(()),
                        (Some(start), None) => format!(" AND p.rowid >= {start}"),
                        (Some(start), Some(end)) => {
                            format!(" AND p.rowid >= {start} AND p.rowid < {end}")
                        }
                    }
                }
                None => String::new(),
            }
            + " ORDER BY p.rowid";
        // The event of the values read last, and what they take from its dispatch.
        let mut event = None;
        let mut at: Option<Dispatch> = None;
        let mut last = None;
        // Values of the dispatch `last`.
        let mut group = 0;
        self.each(&(sql + &order), |r, row| {
            let this = int(row, 0);
            if event != Some(this) {
                let key = match &firsts {
                    Some(firsts) => firsts.get(&this).copied(),
                    None => Some(this),
                };
                at = match key {
                    Some(key) => {
                        lookup.reset();
                        lookup.bind_int(1, key)?;
                        lookup.step()?.as_ref().map(|d| r.dispatch(d))
                    }
                    None => None,
                };
                event = Some(this);
            }
            // Values of no dispatch, or of a process the info tables do not describe.
            let Some((d, (stream, pid))) = at.as_ref().and_then(|d| Some((d, d.process?))) else {
                r.left.orphans += 1;
                return Ok(());
            };
            let counter = int(row, 1);
            // A counter is defined for an agent; the dispatch's says where it ran otherwise.
            let (counter_id, agent) = match r.info.counters.get(&counter) {
                Some(&known) => known,
                None => (counter as u32, d.agent),
            };
            let record = CounterSample {
                pid,
                agent,
                dispatch_id: d.dispatch_id,
                kernel_id: d.kernel_id,
                timestamp_ns: d.end_ns,
                counter_id,
                value: real(row, 2),
                ..CounterSample::default()
            };
            let dispatch = Some((stream, record.dispatch_id));
            if let Some((stream, _)) = last.filter(|_| last != dispatch) {
                // The next dispatch most likely has as many values as this one: a batch
                // without room for them is sent now rather than grown.
                r.out
                    .flush_unless_room(stream, RecordKind::CounterSample, group)?;
                group = 0;
            }
            last = dispatch;
            group += 1;
            r.out.hold(stream, RecordKind::CounterSample, |batch| {
                if let Batch::CounterSample(records) = batch {
                    records.push(record);
                }
            });
            Ok(())
        })?;
        Ok(self.out.flush_kind(RecordKind::CounterSample)?)
    }

    /// The row id of each event's first dispatch, in one pass over the dispatches (of
    /// events named by an integer, as every writer names them).
    fn first_dispatches(&self) -> rusqlite::Result<HashMap<i64, i64>> {
        let sql = format!(
            "SELECT event_id, rowid FROM {} ORDER BY rowid",
            self.tables.name(schema::KERNEL_DISPATCH)
        );
        let mut statement = Statement::prepare(self.conn, &sql)?;
        let mut firsts = HashMap::default();
        while let Some(row) = statement.step()? {
            if row.kind(0) == Kind::Integer {
                firsts.entry(row.int(0)).or_insert(row.int(1));
            }
        }
        Ok(firsts)
    }

    /// What the values of the dispatch at `row` take from it.
    fn dispatch(&self, row: &Cells<'_>) -> Dispatch {
        let kernel = int(row, 3);
        Dispatch {
            process: self.info.process.get(&int(row, 0)).copied(),
            agent: self.info.agent(opt_int(row, 1)),
            dispatch_id: u64(row, 2),
            kernel_id: self
                .info
                .kernels
                .get(&kernel)
                .map_or(kernel as u64, |k| k.id),
            end_ns: u64(row, 4),
        }
    }

    /// The first counter value row at or after row id `at` that is not of the dispatch
    /// (the event) of the row before `at`: where a part of the table starts so that no
    /// dispatch's values are split between parts. `None` past the table's last row.
    fn dispatch_start(&self, at: i64) -> rusqlite::Result<Option<i64>> {
        let table = self.tables.name(schema::PMC_EVENT);
        // Read as whatever it holds: an untrusted cell need not be an integer.
        let before: Option<Value> = self
            .conn
            .query_row(
                &format!(
                    "SELECT event_id FROM {table} WHERE rowid < ?1 ORDER BY rowid DESC LIMIT 1"
                ),
                [at],
                |row| row.get(0),
            )
            .optional()?;
        let Some(before) = before else {
            return Ok(Some(at));
        };
        // Not `min(rowid)`, which reads on to the table's end.
        self.conn
            .query_row(
                &format!(
                    "SELECT rowid FROM {table} WHERE rowid >= ?1 AND event_id IS NOT ?2 \
                     ORDER BY rowid LIMIT 1"
                ),
                rusqlite::params![at, before],
                |row| row.get(0),
            )
            .optional()
    }
}

/// The kinds host regions and instants become.
const HOST_KINDS: &[RecordKind] = &[
    RecordKind::Api,
    RecordKind::Marker,
    RecordKind::HipStream,
    RecordKind::RuntimeInitialization,
    RecordKind::KfdEvent,
];

/// A host call or instant, before its domain says its record kind.
struct Host {
    stream: u16,
    /// The category's string id, to name it if no record kind holds it.
    category: i64,
    pid: u32,
    tid: u32,
    start_ns: u64,
    end_ns: u64,
    operation: Option<Operation>,
    correlation_id: u64,
    external_id: u64,
    /// Its event's id.
    event: i64,
}

/// An argument row: its event, then position, type, name and value (its long cells noted
/// in `long`).
fn arg_row(row: &Cells<'_>, long: &mut Long) -> (i64, (u8, String, String, String)) {
    for (i, column) in [(2, "type"), (3, "name"), (4, "value")] {
        long.check(row, i, schema::ARG, column, int(row, 5));
    }
    let position = int(row, 1).clamp(0, i64::from(u8::MAX)) as u8;
    let text = |i| text(row, i).unwrap_or_default();
    (int(row, 0), (position, text(2), text(3), text(4)))
}

/// The id of operation `name` of `domain`, or -1 if the domain has none of that name.
fn operation_id(domain: Domain, name: &str) -> i32 {
    (domain.operations().iter())
        .find(|(_, n)| *n == name)
        .map_or(-1, |(id, _)| *id)
}

/// The operation a category (`HIP_RUNTIME_API`, `MEMORY_COPY`) and a name say: API and
/// marker operations are named after their functions, the others after their category
/// and operation (`MEMORY_COPY_HOST_TO_DEVICE`).
fn operation(category: &str, name: &str) -> Option<Operation> {
    let domain = Domain::from_name(&category.to_ascii_lowercase())?;
    let op = name
        .strip_prefix(category)
        .and_then(|n| n.strip_prefix('_'))
        .unwrap_or(name);
    Some(Operation {
        domain,
        id: operation_id(domain, op),
    })
}

/// What counter values take from their dispatch.
struct Dispatch {
    /// Its process's stream and OS pid, where the info tables describe the process.
    process: Option<(u16, u32)>,
    agent: u32,
    dispatch_id: u64,
    kernel_id: u64,
    end_ns: u64,
}

/// What a device counter sample's event keeps in its `extdata`.
#[derive(Default, Deserialize)]
#[serde(default)]
struct DeviceData {
    agent_id: Number,
    pmc_id: Number,
    value: Option<f64>,
    dimensions: [u16; 7],
}

/// What an SPM sample's event keeps in its `extdata` (see the rocpd sink).
#[derive(Default, Deserialize)]
#[serde(default)]
struct SpmData {
    agent_id: Number,
    pmc_id: Number,
    value: Option<f64>,
    dispatch_id: Number,
    kernel_id: Number,
    xcc: u16,
    shader_engine: u16,
    instance: u16,
}

/// What a PC sample's event keeps in its `extdata`, parsed into these fields alone (one
/// sample in twenty of a sampled run's rows: a general JSON value was a tenth of reading
/// one). Text that is not such an object reads as no fields.
#[derive(Default, Deserialize)]
#[serde(default)]
struct SampleData {
    agent_id: Number,
    dispatch_id: Number,
    pc: Number,
    code_object_id: Number,
    code_object_offset: Number,
    exec_mask: Number,
    wave_id: Number,
    hw_id: Number,
    chiplet: Number,
    instruction_type: Number,
    stall_reason: Number,
}
