//! The info tables, written when the run ends: nodes, processes (with their command
//! lines), threads, agents, queues, streams, counters, code objects, kernel symbols, tracks
//! and strings. A row is written for every id the records used, described by the catalog
//! where it knows the thing and bare where it does not, and for everything the catalog
//! knows of the database's processes, used or not.

use rocflow_core::mpi;
use rusqlite::Connection;
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map as JsonMap, json};

use super::extdata::{AgentRecord, KernelSymbolRecord};
use super::ids::Ids;
use crate::catalog::{Catalog, StreamMeta};
use crate::record::{Agent, Process, Stream, Thread};
use crate::rocpd::schema::{self, Names};
use crate::sdk::AgentType;
use crate::sqlite::{Value, row};
use crate::table::Table;

const UNKNOWN: &str = "<unknown>";

/// The node and process rows of a stream's rows.
#[derive(Debug, Clone, Copy)]
struct Owner {
    node: i64,
    process: i64,
}

/// Writes the info rows of `streams` (the catalog's streams the database holds) and of
/// every id in `ids`.
pub fn write(
    conn: &Connection,
    names: &Names,
    ids: &mut Ids,
    catalog: &Catalog,
    streams: &[u16],
) -> rusqlite::Result<()> {
    // Every process a row may name: those held, and those records came from.
    let described: HashMap<u16, Described> = (ids.processes.keys().into_iter())
        .chain(streams.iter().copied())
        .map(|stream| (stream, Described::new(catalog.stream(stream))))
        .collect();
    let owners = register(ids, catalog, &described, streams);
    let info = Info {
        conn,
        names,
        catalog,
        described,
        owners,
    };
    info.nodes(ids)?;
    info.processes(ids)?;
    info.threads(ids)?;
    info.agents(ids)?;
    info.queues(ids)?;
    info.streams(ids)?;
    info.counters(ids)?;
    info.code_objects(ids)?;
    info.kernels(ids)?;
    info.tracks(ids)?;
    info.strings(ids)
}

/// Writes the rows of each info table.
struct Info<'a> {
    conn: &'a Connection,
    names: &'a Names,
    catalog: &'a Catalog,
    described: HashMap<u16, Described<'a>>,
    owners: HashMap<u16, Owner>,
}

/// What the catalog says of one process, by the keys rows are written for: looked up at
/// once rather than searched for row by row, which made the rows of a process's 200,000
/// agents take minutes.
#[derive(Default)]
struct Described<'a> {
    /// Agents by index (the first of an index), each with its index among the process's
    /// agents of its type.
    agents: HashMap<u32, (&'a Agent, u32)>,
    threads: HashMap<u32, &'a Thread>,
    hip_streams: HashMap<u64, &'a Stream>,
    /// The index of each queue's agent, where the tool knew it (it gives `u32::MAX` for a
    /// queue whose agent it could not tell).
    queue_agents: HashMap<u64, u32>,
}

impl<'a> Described<'a> {
    fn new(meta: &'a StreamMeta) -> Described<'a> {
        let mut by_index: Vec<&Agent> = meta.agents.iter().collect();
        by_index.sort_by_key(|a| a.index);
        let mut agents = HashMap::default();
        // Agents of each type with a lower index than those of the group at hand.
        let mut below: HashMap<AgentType, u32> = HashMap::default();
        for group in by_index.chunk_by(|a, b| a.index == b.index) {
            for &a in group {
                let type_index = below.get(&a.agent_type).copied().unwrap_or(0);
                agents.entry(a.index).or_insert((a, type_index));
            }
            for a in group {
                *below.entry(a.agent_type).or_default() += 1;
            }
        }
        Described {
            agents,
            threads: first_by(&meta.threads, |t| t.tid),
            hip_streams: first_by(&meta.hip_streams, |s| s.id),
            queue_agents: (meta.queues.iter().rev())
                .filter(|q| q.agent != u32::MAX)
                .map(|q| (q.id, q.agent))
                .collect(),
        }
    }
}

/// A process's MPI rank and world size as its `extdata` and `environment`: rocprofv3 keeps
/// the process's environment, where the launcher put them, so the launcher's variables
/// go there (only these two: the rest of the environment was never recorded); `extdata`
/// has them under rocflow's own names, for a rank whose variable is unknown.
fn world(process: &Process) -> (serde_json::Value, serde_json::Value) {
    let mut extdata = JsonMap::new();
    let mut environment = JsonMap::new();
    if let Some(rank) = process.rank {
        extdata.insert("rank".into(), rank.into());
        if let Some(variable) = &process.rank_variable {
            environment.insert(variable.clone(), rank.to_string().into());
        }
    }
    if let Some(size) = process.world_size {
        extdata.insert("world_size".into(), size.into());
        let variable = process
            .rank_variable
            .as_deref()
            .and_then(mpi::size_variable);
        if let Some(variable) = variable {
            environment.insert(variable.into(), size.to_string().into());
        }
    }
    (extdata.into(), environment.into())
}

/// `items` by `key`, the first of each key as a search in order would find it.
fn first_by<T, K: std::hash::Hash + Eq>(items: &[T], key: impl Fn(&T) -> K) -> HashMap<K, &T> {
    items.iter().rev().map(|item| (key(item), item)).collect()
}

impl Info<'_> {
    fn insert<const N: usize>(
        &self,
        table: &str,
        columns: [&str; N],
        rows: impl IntoIterator<Item = [Value; N]>,
    ) -> rusqlite::Result<()> {
        let sql = self.names.insert(table, &columns);
        let mut statement = self.conn.prepare(&sql)?;
        for row in rows {
            statement.execute(rusqlite::params_from_iter(row))?;
        }
        Ok(())
    }

    fn nodes(&self, ids: &Ids) -> rusqlite::Result<()> {
        // The host name stands for the machine: the records do not carry its machine id.
        let rows = ids
            .nodes
            .entries()
            .into_iter()
            .map(|(host, id)| row![id, stable_hash(host), host.clone(), host.clone()]);
        self.insert(schema::NODE, ["id", "hash", "machine_id", "hostname"], rows)
    }

    fn processes(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids.processes.entries().into_iter().map(|(stream, id)| {
            let meta = self.catalog.stream(*stream).process.as_ref();
            let seen = ids.seen.get(stream);
            let (start, end) = (meta.map(|p| p.start_ns), seen.map(|s| s.last_ns));
            let (extdata, environment) = meta.map_or_else(|| (json!({}), json!({})), world);
            row![
                id,
                self.owners[stream].node,
                meta.map(|p| p.ppid),
                meta.map(|p| p.pid).or(seen.map(|s| s.pid)),
                start,
                end,
                start,
                end,
                meta.map(|p| p.command.join(" ")),
                environment.to_string(),
                extdata.to_string(),
            ]
        });
        let columns = [
            "id",
            "nid",
            "ppid",
            "pid",
            "init",
            "fini",
            "start",
            "end",
            "command",
            "environment",
            "extdata",
        ];
        self.insert(schema::PROCESS, columns, rows)
    }

    fn threads(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .threads
            .entries()
            .into_iter()
            .map(|(&(stream, tid), id)| {
                let process = self.catalog.stream(stream).process.as_ref();
                let thread = self.described[&stream].threads.get(&tid);
                let owner = self.owners[&stream];
                row![
                    id,
                    owner.node,
                    process.map(|p| p.ppid),
                    owner.process,
                    tid,
                    thread.and_then(|t| t.name.clone()),
                ]
            });
        let columns = ["id", "nid", "ppid", "pid", "tid", "name"];
        self.insert(schema::THREAD, columns, rows)
    }

    fn agents(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .agents
            .entries()
            .into_iter()
            .map(|(&(stream, index), id)| {
                let owner = self.owners[&stream];
                let Some(&(a, type_index)) = self.described[&stream].agents.get(&index) else {
                    let none: Option<i64> = None;
                    return row![
                        id,
                        owner.node,
                        owner.process,
                        none,
                        index,
                        none,
                        none,
                        UNKNOWN,
                        none,
                        none,
                        none,
                        json(&AgentRecord::unknown(index))
                    ];
                };
                let kind = match a.agent_type {
                    AgentType::Cpu => "CPU",
                    AgentType::Gpu => "GPU",
                };
                let record = AgentRecord::new(a, type_index);
                row![
                    id,
                    owner.node,
                    owner.process,
                    kind,
                    a.node_id,
                    a.logical_node_id,
                    type_index,
                    a.name.clone(),
                    record.vendor_name().to_owned(),
                    a.product_name.clone(),
                    a.product_name.clone(),
                    json(&record),
                ]
            });
        let columns = [
            "id",
            "nid",
            "pid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "name",
            "vendor_name",
            "product_name",
            "user_name",
            "extdata",
        ];
        self.insert(schema::AGENT, columns, rows)
    }

    /// Queues, with their handles and agents in `extdata` (the table has no column for
    /// the agent, and the handle is the id only where no other process had it).
    fn queues(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .queues
            .entries()
            .into_iter()
            .map(|(&(stream, handle), id)| {
                let owner = self.owners[&stream];
                let agent = (self.described[&stream].queue_agents.get(&handle))
                    .and_then(|agent| ids.agents.get(&(stream, *agent)));
                let extdata = match agent {
                    Some(agent) => json!({ "handle": handle, "agent_id": agent }),
                    None => json!({ "handle": handle }),
                };
                let name = format!("Queue {handle}");
                row![id, owner.node, owner.process, name, extdata.to_string()]
            });
        self.insert(schema::QUEUE, ["id", "nid", "pid", "name", "extdata"], rows)
    }

    fn streams(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .streams
            .entries()
            .into_iter()
            .map(|(&(stream, handle), id)| {
                let owner = self.owners[&stream];
                let name = match self.described[&stream].hip_streams.get(&handle) {
                    Some(s) if s.name.is_some() => s.name.clone(),
                    _ if handle == 0 => Some("Default Stream".to_owned()),
                    _ => Some(format!("Stream {handle}")),
                };
                let extdata = json!({ "handle": handle }).to_string();
                row![id, owner.node, owner.process, name, extdata]
            });
        self.insert(
            schema::STREAM,
            ["id", "nid", "pid", "name", "extdata"],
            rows,
        )
    }

    fn counters(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .counters
            .entries()
            .into_iter()
            .map(|(&(stream, counter), id)| {
                let owner = self.owners[&stream];
                let info = self.catalog.stream(stream).counters.get(&counter);
                let name = info.map_or(UNKNOWN, |c| &c.name).to_owned();
                let dimensions: Vec<serde_json::Value> = info.map_or_else(Vec::new, |c| {
                    c.dimensions
                        .iter()
                        .map(|(name, size)| json!({ "name": name, "size": size }))
                        .collect()
                });
                row![
                    id,
                    owner.node,
                    owner.process,
                    info.and_then(|c| ids.agents.get(&(stream, c.agent))),
                    "GPU",
                    name.clone(),
                    name,
                    info.map(|c| c.description.clone()),
                    "rocm",
                    "ABS",
                    0i64,
                    0i64,
                    json!({ "counter_id": counter, "dimensions": dimensions }).to_string(),
                ]
            });
        let columns = [
            "id",
            "nid",
            "pid",
            "agent_id",
            "target_arch",
            "name",
            "symbol",
            "description",
            "component",
            "value_type",
            "is_constant",
            "is_derived",
            "extdata",
        ];
        self.insert(schema::PMC, columns, rows)
    }

    fn code_objects(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .code_objects
            .entries()
            .into_iter()
            .map(|(&(stream, code), id)| {
                let owner = self.owners[&stream];
                let known = self.catalog.stream(stream).code_objects.get(&code);
                let storage = known.and_then(|c| match c.uri.split_once("://") {
                    Some(("file", _)) => Some("FILE"),
                    Some(("memory", _)) => Some("MEMORY"),
                    _ => None,
                });
                row![
                    id,
                    owner.node,
                    owner.process,
                    known.and_then(|c| ids.agents.get(&(stream, c.agent))),
                    known.map(|c| c.uri.clone()),
                    known.map(|c| c.load_base),
                    known.map(|c| c.load_size),
                    storage,
                    json!({ "code_object_id": code }).to_string(),
                ]
            });
        let columns = [
            "id",
            "nid",
            "pid",
            "agent_id",
            "uri",
            "load_base",
            "load_size",
            "storage_type",
            "extdata",
        ];
        self.insert(schema::CODE_OBJECT, columns, rows)
    }

    fn kernels(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .kernels
            .entries()
            .into_iter()
            .map(|(&(stream, kernel), id)| {
                let owner = self.owners[&stream];
                let meta = self.catalog.stream(stream);
                let known = meta.kernels.get(&kernel);
                let code = known.map_or(0, |k| k.code_object_id);
                row![
                    id,
                    owner.node,
                    owner.process,
                    ids.code_objects.get(&(stream, code)),
                    known.map(|k| k.name.clone()),
                    meta.kernel_name(kernel).to_owned(),
                    known.map(|k| k.kernarg_bytes),
                    known.map(|k| k.lds_bytes),
                    known.map(|k| k.scratch_bytes),
                    known.map(|k| k.sgpr_count),
                    known.map(|k| k.arch_vgpr_count),
                    match known {
                        Some(k) => json(&KernelSymbolRecord::new(k)),
                        None => json!({ "kernel_id": kernel }).to_string(),
                    },
                ]
            });
        let columns = [
            "id",
            "nid",
            "pid",
            "code_object_id",
            "kernel_name",
            "display_name",
            "kernarg_segment_size",
            "group_segment_size",
            "private_segment_size",
            "sgpr_count",
            "arch_vgpr_count",
            "extdata",
        ];
        self.insert(schema::KERNEL_SYMBOL, columns, rows)
    }

    fn tracks(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = ids
            .tracks
            .entries()
            .into_iter()
            .map(|(&(stream, tid, name), id)| {
                let owner = self.owners[&stream];
                let thread = ids.threads.get(&(stream, tid));
                row![id, owner.node, owner.process, thread, name]
            });
        self.insert(schema::TRACK, ["id", "nid", "pid", "tid", "name_id"], rows)
    }

    fn strings(&self, ids: &Ids) -> rusqlite::Result<()> {
        let rows = (ids.strings.entries().into_iter()).map(|(text, id)| row![id, text.clone()]);
        self.insert(schema::STRING, ["id", "string"], rows)
    }
}

/// Hands out ids for everything the catalog knows of `streams`, and for what the rows
/// about to be written refer to; returns each process's node and process ids.
fn register(
    ids: &mut Ids,
    catalog: &Catalog,
    described: &HashMap<u16, Described>,
    streams: &[u16],
) -> HashMap<u16, Owner> {
    for &stream in streams {
        let meta = catalog.stream(stream);
        ids.process(stream, meta.process.as_ref().map(|p| p.pid));
        ids.nodes.id(host(meta));
        // Every process has a default stream, as rocprofv3's databases do.
        ids.hip_stream(stream, 0);
        for a in &meta.agents {
            ids.agent_node(stream, a.index, a.node_id);
        }
        for t in &meta.threads {
            ids.thread(stream, t.tid);
        }
        for q in &meta.queues {
            ids.queue(stream, q.id);
        }
        for s in &meta.hip_streams {
            ids.hip_stream(stream, s.id);
        }
        for &kernel in meta.kernels.keys() {
            ids.kernel(stream, kernel);
        }
        for &code in meta.code_objects.keys() {
            ids.code_object(stream, code);
        }
        for &counter in meta.counters.keys() {
            ids.counter(stream, counter);
        }
    }
    // Kernels name their code objects, which name their agents, as counters and queues do.
    for (stream, kernel) in ids.kernels.keys() {
        let kernels = &catalog.stream(stream).kernels;
        ids.code_object(stream, kernels.get(&kernel).map_or(0, |k| k.code_object_id));
    }
    for (stream, code) in ids.code_objects.keys() {
        if let Some(c) = catalog.stream(stream).code_objects.get(&code) {
            ids.agent(stream, c.agent);
        }
    }
    for (stream, queue) in ids.queues.keys() {
        if let Some(&agent) = described[&stream].queue_agents.get(&queue) {
            ids.agent(stream, agent);
        }
    }
    for (stream, counter) in ids.counters.keys() {
        if let Some(c) = catalog.stream(stream).counters.get(&counter) {
            ids.agent(stream, c.agent);
        }
    }
    // Rows of a process were only ever given ids after the process and its node.
    ids.processes
        .entries()
        .into_iter()
        .map(|(&stream, process)| {
            let node = ids.nodes.id(host(catalog.stream(stream)));
            (stream, Owner { node, process })
        })
        .collect()
}

/// The host a stream's process ran on, as the rows name it.
pub fn host(meta: &StreamMeta) -> &str {
    meta.process.as_ref().map_or(UNKNOWN, |p| &p.hostname)
}

/// A hash of `text` that stays the same from run to run (FNV-1a), as a non-negative
/// SQLite integer.
pub(crate) fn stable_hash(text: &str) -> i64 {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash >> 1) as i64
}

/// `value` as JSON text.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("extdata serializes")
}

/// Writes an aggregate transform's table as `rocflow_<name>`, beside the rocpd tables.
pub fn table(conn: &Connection, table: &Table) -> rusqlite::Result<()> {
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let name = quote(&format!("rocflow_{}", table.name));
    let columns: Vec<String> = table.columns.iter().map(|c| quote(c)).collect();
    conn.execute_batch(&format!("CREATE TABLE {name} ({});", columns.join(", ")))?;
    let params = vec!["?"; columns.len()].join(", ");
    let mut insert = conn.prepare(&format!("INSERT INTO {name} VALUES ({params})"))?;
    for row in &table.rows {
        insert.execute(rusqlite::params_from_iter(row.iter().map(value)))?;
    }
    Ok(())
}

fn value(value: &evalexpr::Value) -> Value {
    match value {
        evalexpr::Value::Int(v) => Value::Int(*v),
        evalexpr::Value::Float(v) => Value::Real(*v),
        evalexpr::Value::Boolean(v) => Value::Int(i64::from(*v)),
        evalexpr::Value::String(s) => Value::Text(s.clone()),
        evalexpr::Value::Empty => Value::Null,
        other => Value::Text(other.to_string()),
    }
}
