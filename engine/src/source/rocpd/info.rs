//! The info tables of one set of rocpd tables, as rocflow metadata: a process's node,
//! command line and rank, its threads, agents (every property `rocpd_info_agent` and its
//! `extdata` give that rocflow's agent has), queues, streams, code objects, kernel symbols
//! and counters; and the maps from row ids to what records name them by.
//!
//! Row ids are the things' own: rocprofv3 and rocflow's sink use the OS pid and tid, the
//! agent's node id, the SDK's kernel, code object and counter ids and queue and stream
//! handles. rocflow's sink gives a thing another id where processes sharing a database
//! have its number in common, and keeps its own in `extdata`; both read the same way here.
//! Queue and stream 0 are the SDK's null handles, the default a record without one names:
//! rocprofv3 writes a row for each, which no run describes, so they are not metadata.

use std::sync::Mutex;

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

use super::schema::{self, Tables};
use super::value::{Long, int, json, json_u64, opt_int, text, u32, u64};
use crate::record::{
    Agent, CodeObject, CounterInfo, KernelSymbol, Meta, Process, Queue, Stream, Thread,
};
use crate::sdk::AgentType;
use crate::sqlite::{Cells, Statement};
use crate::wire::MAX_INSTANCES;
use rocflow_core::mpi;

/// A kernel symbol as dispatches need it.
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    pub id: u64,
    pub vgpr_count: u32,
    pub sgpr_count: u32,
}

/// A process of the database, as a stream.
#[derive(Debug)]
pub struct ProcessRow {
    pub id: i64,
    pub stream: u16,
    /// Its metadata, the process first, until the set's first piece takes it to send.
    pub meta: Mutex<Vec<Meta>>,
}

/// The rows of one set's info tables, by row id.
#[derive(Debug, Default)]
pub struct Info {
    /// The processes, in row order.
    pub processes: Vec<ProcessRow>,
    /// Process row id → (stream, OS pid).
    pub process: HashMap<i64, (u16, u32)>,
    /// Thread row id → OS tid.
    pub threads: HashMap<i64, u32>,
    /// Agent row id → the agent's index in its process.
    pub agents: HashMap<i64, u32>,
    pub kernels: HashMap<i64, Kernel>,
    /// Code object row id → its SDK id.
    pub code_objects: HashMap<i64, u64>,
    /// Queue row id → its handle.
    pub queues: HashMap<i64, u64>,
    /// HIP stream row id → its SDK id.
    pub streams: HashMap<i64, u64>,
    /// Counter row id → counter id and the agent it counts on.
    pub counters: HashMap<i64, (u32, u32)>,
    pub strings: HashMap<i64, String>,
    /// Cells of the info tables cut to [`super::value::MAX_TEXT`].
    pub long: Long,
}

impl Info {
    /// The thread's OS tid; a writer that used the tid as the row id gives it either way.
    pub fn tid(&self, row: i64) -> u32 {
        self.threads.get(&row).copied().unwrap_or(row as u32)
    }

    pub fn agent(&self, row: Option<i64>) -> u32 {
        row.map_or(0, |r| self.agents.get(&r).copied().unwrap_or(r as u32))
    }

    /// The SDK id of the code object of row `row`; a writer that used the id as the row
    /// id gives it either way.
    pub fn code_object(&self, row: u64) -> u64 {
        let known = i64::try_from(row)
            .ok()
            .and_then(|r| self.code_objects.get(&r));
        known.copied().unwrap_or(row)
    }

    /// The handle of the queue of row `row`, as [`Info::code_object`].
    pub fn queue(&self, row: u64) -> u64 {
        let known = i64::try_from(row).ok().and_then(|r| self.queues.get(&r));
        known.copied().unwrap_or(row)
    }

    /// The `hip_stream` of a record whose `stream_id` cell is `row`: the SDK id of the
    /// stream, which rocprofv3 uses as the row id; unknown where NULL.
    pub fn hip_stream(&self, row: Option<i64>) -> u64 {
        let id = row.map(|r| self.streams.get(&r).copied().unwrap_or(r as u64));
        rocflow_core::record::hip_stream::stored(id)
    }

    pub fn string(&self, id: i64) -> &str {
        self.strings.get(&id).map_or("", String::as_str)
    }
}

/// The process row ids of a set, in order (streams are numbered before reading).
pub fn process_rows(conn: &rusqlite::Connection, tables: &Tables) -> rusqlite::Result<Vec<i64>> {
    let sql = format!(
        "SELECT id FROM {} ORDER BY id",
        tables.name(schema::PROCESS)
    );
    let mut statement = conn.prepare(&sql)?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// Reads the info tables of `tables`, its processes numbered from stream `first`.
pub fn read(conn: &rusqlite::Connection, tables: &Tables, first: u16) -> rusqlite::Result<Info> {
    let mut reader = Reader {
        conn,
        tables,
        long: Long::default(),
    };
    let mut info = Info::default();
    reader.each(schema::STRING, "id, string", |row| {
        info.strings
            .insert(int(row, 0), text(row, 1).unwrap_or_default());
    })?;
    let mut hosts: HashMap<i64, String> = HashMap::default();
    reader.each(schema::NODE, "id, hostname, machine_id", |row| {
        let host = text(row, 1)
            .filter(|h| !h.is_empty())
            .or_else(|| text(row, 2));
        hosts.insert(int(row, 0), host.unwrap_or_default());
    })?;
    let mut meta: HashMap<i64, Vec<Meta>> = HashMap::default();
    let columns = "id, nid, ppid, pid, init, start, command, environment, extdata";
    let mut stream = first;
    reader.each(schema::PROCESS, columns, |row| {
        let id = int(row, 0);
        let pid = u32(row, 3);
        let environment = json(row, 7);
        let extdata = json(row, 8);
        let world = world(extdata.as_ref(), environment.as_ref());
        let process = Process {
            pid,
            ppid: u32(row, 2),
            hostname: hosts.get(&int(row, 1)).cloned().unwrap_or_default(),
            command: words(&text(row, 6).unwrap_or_default()),
            start_ns: opt_int(row, 5).or(opt_int(row, 4)).unwrap_or(0) as u64,
            rank: world.rank,
            world_size: world.size,
            rank_variable: world.variable,
            start_unix_ns: None,
            kernel_start: None,
        };
        info.process.insert(id, (stream, pid));
        info.processes.push(ProcessRow {
            id,
            stream,
            meta: Mutex::default(),
        });
        add(&mut meta, id, Meta::Process(process));
        stream = stream.wrapping_add(1);
    })?;
    let pid_of = |info: &Info, row: i64| info.process.get(&row).map_or(row as u32, |p| p.1);
    let columns = "id, pid, type, absolute_index, logical_index, name, product_name, extdata";
    reader.each(schema::AGENT, columns, |row| {
        let agent_type = match text(row, 2).as_deref() {
            Some("CPU") => AgentType::Cpu,
            Some("GPU") | None => AgentType::Gpu,
            // A NIC (rocpd 3.0.1) or a kind of agent still newer: no record runs on one,
            // and rocflow's agents are CPUs and GPUs.
            Some(_) => return,
        };
        let extdata = json(row, 7).unwrap_or_default();
        let node_id = u32(row, 3);
        let index = field(&extdata, &["index"]).unwrap_or(node_id);
        let agent = Agent {
            index,
            handle: json_u64(&extdata, "handle")
                .or_else(|| {
                    extdata
                        .get("id")
                        .and_then(|id| id.as_object()?.get("handle")?.as_u64())
                })
                .unwrap_or(0),
            agent_type,
            node_id,
            logical_node_id: u32(row, 4),
            name: text(row, 5).unwrap_or_default(),
            product_name: text(row, 6).unwrap_or_default(),
            cu_count: field(&extdata, &["cu_count"]).unwrap_or(0),
            simd_count: field(&extdata, &["simd_count"]).unwrap_or(0),
            xcc_count: field(&extdata, &["xcc_count", "num_xcc"]).unwrap_or(0),
            wave_front_size: field(&extdata, &["wave_front_size"]).unwrap_or(0),
            max_waves_per_simd: field(&extdata, &["max_waves_per_simd"]).unwrap_or(0),
            lds_bytes_per_cu: field(&extdata, &["lds_bytes_per_cu"]).unwrap_or_else(|| {
                field(&extdata, &["lds_size_in_kb"]).map_or(0, |kb| kb.saturating_mul(1024))
            }),
            max_engine_clk_mhz: field(&extdata, &["max_engine_clk_mhz", "max_engine_clk_fcompute"])
                .unwrap_or(0),
        };
        info.agents.insert(int(row, 0), index);
        add(&mut meta, int(row, 1), Meta::Agent(agent));
    })?;
    let columns = "id, pid, agent_id, uri, load_base, load_size, extdata";
    reader.each(schema::CODE_OBJECT, columns, |row| {
        let extdata = json(row, 6).unwrap_or_default();
        let id = json_u64(&extdata, "code_object_id").unwrap_or(u64(row, 0));
        info.code_objects.insert(int(row, 0), id);
        let code_object = CodeObject {
            id,
            agent: info.agent(opt_int(row, 2)),
            uri: text(row, 3).unwrap_or_default(),
            load_base: u64(row, 4),
            load_size: u64(row, 5),
        };
        add(&mut meta, int(row, 1), Meta::CodeObject(code_object));
    })?;
    let columns = "id, pid, code_object_id, kernel_name, kernarg_segment_size, \
                   group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, extdata";
    reader.each(schema::KERNEL_SYMBOL, columns, |row| {
        let extdata = json(row, 9).unwrap_or_default();
        let symbol = KernelSymbol {
            kernel_id: json_u64(&extdata, "kernel_id").unwrap_or(u64(row, 0)),
            code_object_id: info.code_object(u64(row, 2)),
            name: text(row, 3).unwrap_or_default(),
            lds_bytes: u32(row, 5),
            scratch_bytes: u32(row, 6),
            arch_vgpr_count: u32(row, 8),
            sgpr_count: u32(row, 7),
            kernarg_bytes: u32(row, 4),
        };
        let kernel = Kernel {
            id: symbol.kernel_id,
            vgpr_count: symbol.arch_vgpr_count,
            sgpr_count: symbol.sgpr_count,
        };
        info.kernels.insert(int(row, 0), kernel);
        add(&mut meta, int(row, 1), Meta::KernelSymbol(symbol));
    })?;
    let columns = "id, pid, agent_id, name, description, extdata";
    reader.each(schema::PMC, columns, |row| {
        let extdata = json(row, 5).unwrap_or_default();
        let id = json_u64(&extdata, "counter_id").map_or(u32(row, 0), |id| id as u32);
        let mut counter = CounterInfo {
            id,
            agent: info.agent(opt_int(row, 2)),
            name: text(row, 3).unwrap_or_default(),
            description: text(row, 4).unwrap_or_default(),
            dimensions: dimensions(&extdata),
        };
        // A description no GPU has is the file's, not the hardware's: not set aside for.
        if counter.instances() > MAX_INSTANCES {
            counter.dimensions.clear();
        }
        info.counters
            .insert(int(row, 0), (counter.id, counter.agent));
        add(&mut meta, int(row, 1), Meta::Counter(counter));
    })?;
    reader.each(schema::THREAD, "id, pid, tid, name", |row| {
        let thread = Thread {
            pid: pid_of(&info, int(row, 1)),
            tid: u32(row, 2),
            name: text(row, 3),
        };
        info.threads.insert(int(row, 0), thread.tid);
        add(&mut meta, int(row, 1), Meta::Thread(thread));
    })?;
    reader.each(schema::QUEUE, "id, pid, extdata", |row| {
        let extdata = json(row, 2).unwrap_or_default();
        let id = json_u64(&extdata, "handle").unwrap_or(u64(row, 0));
        info.queues.insert(int(row, 0), id);
        if id == 0 {
            return;
        }
        let agent = json_u64(&extdata, "agent_id").and_then(|a| i64::try_from(a).ok());
        let queue = Queue {
            id,
            agent: agent.map_or(0, |a| info.agent(Some(a))),
            pid: pid_of(&info, int(row, 1)),
        };
        add(&mut meta, int(row, 1), Meta::Queue(queue));
    })?;
    reader.each(schema::STREAM, "id, pid, name, extdata", |row| {
        let extdata = json(row, 3).unwrap_or_default();
        let id = json_u64(&extdata, "handle").unwrap_or(u64(row, 0));
        info.streams.insert(int(row, 0), id);
        if id == 0 {
            return;
        }
        let stream = Stream {
            id,
            pid: pid_of(&info, int(row, 1)),
            name: text(row, 2),
        };
        add(&mut meta, int(row, 1), Meta::Stream(stream));
    })?;
    info.long = reader.long;
    for process in &mut info.processes {
        let items = process.meta.get_mut().expect("not shared yet");
        *items = meta.remove(&process.id).unwrap_or_default();
        // Agents in index order, as a run describes them; the rest as read.
        items.sort_by_key(|m| match m {
            Meta::Process(_) => (0, 0),
            Meta::Agent(a) => (1, a.index),
            _ => (2, 0),
        });
    }
    Ok(info)
}

/// Adds `item` to the metadata of process row `process`.
fn add(meta: &mut HashMap<i64, Vec<Meta>>, process: i64, item: Meta) {
    meta.entry(process).or_default().push(item);
}

/// The most words a command line is split into: the rest of it is the last.
const MAX_WORDS: usize = 4096;

/// The words of command line `line`, at most [`MAX_WORDS`].
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if words.len() == MAX_WORDS - 1 {
            words.push(rest.trim_end().to_owned());
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        words.push(rest[..end].to_owned());
        rest = rest[end..].trim_start();
    }
    words
}

/// Runs queries over one table's rows, with NULL for the columns it lacks, noting the
/// cells too long to read whole.
struct Reader<'a> {
    conn: &'a rusqlite::Connection,
    tables: &'a Tables,
    long: Long,
}

impl Reader<'_> {
    /// Runs `f` on each row of `columns` of `table`, the first of them its id.
    fn each(
        &mut self,
        table: &str,
        columns: &str,
        mut f: impl FnMut(&Cells<'_>),
    ) -> rusqlite::Result<()> {
        let names: Vec<&str> = columns.split(',').map(str::trim).collect();
        let list: Vec<String> = (names.iter())
            .map(|c| self.tables.column(table, "t", c))
            .collect();
        let sql = format!(
            "SELECT {} FROM {} AS t ORDER BY t.rowid",
            list.join(", "),
            self.tables.name(table)
        );
        let mut statement = Statement::prepare(self.conn, &sql)?;
        while let Some(row) = statement.step()? {
            for (i, column) in names.iter().enumerate() {
                self.long.check(&row, i, table, column, int(&row, 0));
            }
            f(&row);
        }
        Ok(())
    }
}

/// The first of `keys` the object has, as a `u32` (saturating).
fn field(map: &Map<String, Value>, keys: &[&str]) -> Option<u32> {
    keys.iter()
        .find_map(|k| json_u64(map, k))
        .map(|v| v.min(u64::from(u32::MAX)) as u32)
}

/// A counter's dimensions, where its `extdata` lists them (`{"dimensions": [{"name",
/// "size"}]}`, as rocflow's sink writes; rocprofv3 keeps none per counter).
fn dimensions(extdata: &Map<String, Value>) -> Vec<(String, u32)> {
    let Some(Value::Array(list)) = extdata.get("dimensions") else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|d| {
            let d = d.as_object()?;
            Some((d.get("name")?.as_str()?.to_owned(), field(d, &["size"])?))
        })
        .collect()
}

/// A process's place in its MPI job: rank, world size and the launcher's rank variable.
#[derive(Debug, Default, PartialEq)]
struct World {
    rank: Option<u32>,
    size: Option<u32>,
    variable: Option<String>,
}

/// The process's MPI rank and world size: rocprofv3 keeps the process's environment, where
/// the launcher put them (rocflow's sink writes the launcher's two variables there);
/// rocflow's sink keeps them in `extdata` too, where older databases have them alone.
fn world(extdata: Option<&Map<String, Value>>, environment: Option<&Map<String, Value>>) -> World {
    let launcher = environment.and_then(|env| {
        let variable = mpi::rank_variables().find(|v| field(env, &[v]).is_some())?;
        let size = mpi::size_variable(variable).and_then(|size| field(env, &[size]));
        Some(World {
            rank: field(env, &[variable]),
            size,
            variable: Some(variable.to_owned()),
        })
    });
    let own = |key| extdata.and_then(|map| field(map, &[key]));
    let launcher = launcher.unwrap_or_default();
    World {
        rank: own("rank").or(launcher.rank),
        size: own("world_size").or(launcher.size),
        variable: launcher.variable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_split_into_at_most_max_words() {
        assert_eq!(words("  ./app  --size 1024 "), ["./app", "--size", "1024"]);
        assert!(words(" \t ").is_empty());
        let line = format!("./app{}", " a".repeat(2 * MAX_WORDS));
        let split = words(&line);
        assert_eq!(split.len(), MAX_WORDS);
        assert!(split[..MAX_WORDS - 1].iter().skip(1).all(|w| w == "a"));
        // The rest of the line, as it was.
        assert_eq!(split[MAX_WORDS - 1], "a ".repeat(MAX_WORDS + 2).trim_end());
        assert_eq!(split.join(" "), line);
    }
}
