//! The info tables, written when the run ends: nodes, processes (with their command
//! lines), threads, agents, queues, streams, counters, code objects, kernel symbols, tracks
//! and strings. A row is written for every id the records used, described by the catalog
//! where it knows the thing and bare where it does not, and for everything the catalog
//! knows of the database's processes, used or not.

use rusqlite::types::Value;
use rusqlite::{Connection, params};
use rustc_hash::FxHashMap as HashMap;
use serde_json::json;

use super::ids::Ids;
use super::schema::{self, Names};
use crate::catalog::{Catalog, StreamMeta};
use crate::sdk::AgentType;
use crate::transform::Table;

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
    let owners = register(ids, catalog, streams);
    let insert =
        |table: &str, columns: &[&str]| conn.prepare(&names.insert("INSERT", table, columns, 1));

    let mut node = insert(schema::NODE, &["id", "hash", "machine_id", "hostname"])?;
    for (host, id) in ids.nodes.entries() {
        // The host name stands for the machine: the records do not carry its machine id.
        node.execute(params![id, stable_hash(host), host, host])?;
    }

    let mut process = insert(
        schema::PROCESS,
        &[
            "id", "nid", "ppid", "pid", "init", "fini", "start", "end", "command", "extdata",
        ],
    )?;
    for (&stream, id) in ids.processes.entries() {
        let meta = catalog.stream(stream).process.as_ref();
        let seen = ids.seen.get(&stream);
        let start = meta.map(|p| p.start_ns as i64);
        let end = seen.map(|s| s.last_ns as i64);
        let rank = meta
            .and_then(|p| p.rank)
            .map(|rank| json!({ "rank": rank }));
        process.execute(params![
            id,
            owners[&stream].node,
            meta.map(|p| p.ppid),
            meta.map(|p| p.pid).or(seen.map(|s| s.pid)),
            start,
            end,
            start,
            end,
            meta.map(|p| p.command.join(" ")),
            rank.map_or_else(|| "{}".to_owned(), |r| r.to_string()),
        ])?;
    }

    let mut thread = insert(schema::THREAD, &["id", "nid", "ppid", "pid", "tid", "name"])?;
    for (&(stream, tid), id) in ids.threads.entries() {
        let meta = catalog.stream(stream);
        let name = meta
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .and_then(|t| t.name.as_deref());
        let owner = owners[&stream];
        let ppid = meta.process.as_ref().map(|p| p.ppid);
        thread.execute(params![id, owner.node, ppid, owner.process, tid, name])?;
    }

    let mut agent = insert(
        schema::AGENT,
        &[
            "id",
            "nid",
            "pid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "name",
            "product_name",
            "user_name",
            "extdata",
        ],
    )?;
    for (&(stream, index), id) in ids.agents.entries() {
        let owner = owners[&stream];
        let agents = &catalog.stream(stream).agents;
        match agents.iter().find(|a| a.index == index) {
            Some(a) => {
                let kind = match a.agent_type {
                    AgentType::Cpu => "CPU",
                    AgentType::Gpu => "GPU",
                };
                let type_index = agents
                    .iter()
                    .filter(|b| b.agent_type == a.agent_type && b.index < a.index)
                    .count();
                agent.execute(params![
                    id,
                    owner.node,
                    owner.process,
                    kind,
                    a.node_id,
                    a.logical_node_id,
                    type_index as i64,
                    a.name,
                    a.product_name,
                    a.product_name,
                    serde_json::to_string(a).expect("agents serialize"),
                ])?;
            }
            None => {
                let absent: Option<&str> = None;
                agent.execute(params![
                    id,
                    owner.node,
                    owner.process,
                    absent,
                    index,
                    absent,
                    absent,
                    UNKNOWN,
                    absent,
                    absent,
                    "{}"
                ])?;
            }
        }
    }

    let mut queue = insert(schema::QUEUE, &["id", "nid", "pid", "name"])?;
    for (&(stream, handle), id) in ids.queues.entries() {
        let owner = owners[&stream];
        queue.execute(params![
            id,
            owner.node,
            owner.process,
            format!("Queue {handle}")
        ])?;
    }

    let mut hip_stream = insert(schema::STREAM, &["id", "nid", "pid", "name"])?;
    for (&(stream, handle), id) in ids.streams.entries() {
        let owner = owners[&stream];
        let named = catalog
            .stream(stream)
            .hip_streams
            .iter()
            .find(|s| s.id == handle);
        let name = match named.and_then(|s| s.name.clone()) {
            Some(name) => name,
            None if handle == 0 => "Default Stream".to_owned(),
            None => format!("Stream {handle}"),
        };
        hip_stream.execute(params![id, owner.node, owner.process, name])?;
    }

    let mut pmc = insert(
        schema::PMC,
        &[
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
        ],
    )?;
    for (&(stream, counter), id) in ids.counters.entries() {
        let owner = owners[&stream];
        let info = catalog.stream(stream).counters.get(&counter);
        let agent = info.map(|c| ids.agents.id(&(stream, c.agent)));
        let name = info.map_or(UNKNOWN, |c| &c.name);
        let dimensions = info.map_or_else(Vec::new, |c| {
            c.dimensions
                .iter()
                .map(|(name, size)| json!({ "name": name, "size": size }))
                .collect()
        });
        pmc.execute(params![
            id,
            owner.node,
            owner.process,
            agent,
            "GPU",
            name,
            name,
            info.map(|c| &c.description),
            "rocm",
            "ABS",
            0,
            0,
            json!({ "dimensions": dimensions }).to_string(),
        ])?;
    }

    let mut code_object = insert(
        schema::CODE_OBJECT,
        &[
            "id",
            "nid",
            "pid",
            "agent_id",
            "uri",
            "load_base",
            "load_size",
            "storage_type",
        ],
    )?;
    for (&(stream, code), id) in ids.code_objects.entries() {
        let owner = owners[&stream];
        let known = catalog.stream(stream).code_objects.get(&code);
        let storage = known.and_then(|c| match c.uri.split_once("://") {
            Some(("file", _)) => Some("FILE"),
            Some(("memory", _)) => Some("MEMORY"),
            _ => None,
        });
        code_object.execute(params![
            id,
            owner.node,
            owner.process,
            known.map(|c| ids.agents.id(&(stream, c.agent))),
            known.map(|c| &c.uri),
            known.map(|c| c.load_base as i64),
            known.map(|c| c.load_size as i64),
            storage,
        ])?;
    }

    let mut symbol = insert(
        schema::KERNEL_SYMBOL,
        &[
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
        ],
    )?;
    for (&(stream, kernel), id) in ids.kernels.entries() {
        let owner = owners[&stream];
        let meta = catalog.stream(stream);
        let known = meta.kernels.get(&kernel);
        let code = ids
            .code_objects
            .id(&(stream, known.map_or(0, |k| k.code_object_id)));
        symbol.execute(params![
            id,
            owner.node,
            owner.process,
            code,
            known.map(|k| &k.name),
            meta.kernel_name(kernel),
            known.map(|k| k.kernarg_bytes),
            known.map(|k| k.lds_bytes),
            known.map(|k| k.scratch_bytes),
            known.map(|k| k.sgpr_count),
            known.map(|k| k.arch_vgpr_count),
            json!({ "kernel_id": kernel }).to_string(),
        ])?;
    }

    let mut track = insert(schema::TRACK, &["id", "nid", "pid", "tid", "name_id"])?;
    for (&(stream, tid, name), id) in ids.tracks.entries() {
        let owner = owners[&stream];
        let thread = ids.threads.id(&(stream, tid));
        track.execute(params![id, owner.node, owner.process, thread, name])?;
    }

    let mut string = insert(schema::STRING, &["id", "string"])?;
    for (text, id) in ids.strings.entries() {
        string.execute(params![id, text])?;
    }
    Ok(())
}

/// Hands out ids for everything the catalog knows of `streams`, and for what the rows
/// about to be written refer to; returns each process's node and process ids.
fn register(ids: &mut Ids, catalog: &Catalog, streams: &[u16]) -> HashMap<u16, Owner> {
    for &stream in streams {
        let meta = catalog.stream(stream);
        ids.processes.id(&stream);
        ids.nodes.id(host(meta));
        // Every process has a default stream, as rocprofv3's databases do.
        ids.streams.id(&(stream, 0));
        for a in &meta.agents {
            ids.agents.id(&(stream, a.index));
        }
        for t in &meta.threads {
            ids.threads.id(&(stream, t.tid));
        }
        for q in &meta.queues {
            ids.queues.id(&(stream, q.id));
        }
        for s in &meta.hip_streams {
            ids.streams.id(&(stream, s.id));
        }
        for &kernel in meta.kernels.keys() {
            ids.kernels.id(&(stream, kernel));
        }
        for &code in meta.code_objects.keys() {
            ids.code_objects.id(&(stream, code));
        }
        for &counter in meta.counters.keys() {
            ids.counters.id(&(stream, counter));
        }
    }
    // Kernels name their code objects, which name their agents, as counters do.
    for (&(stream, kernel), _) in ids.kernels.entries() {
        let code = catalog
            .stream(stream)
            .kernels
            .get(&kernel)
            .map_or(0, |k| k.code_object_id);
        ids.code_objects.id(&(stream, code));
    }
    for (&(stream, code), _) in ids.code_objects.entries() {
        if let Some(c) = catalog.stream(stream).code_objects.get(&code) {
            ids.agents.id(&(stream, c.agent));
        }
    }
    for (&(stream, counter), _) in ids.counters.entries() {
        if let Some(c) = catalog.stream(stream).counters.get(&counter) {
            ids.agents.id(&(stream, c.agent));
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
fn stable_hash(text: &str) -> i64 {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash >> 1) as i64
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
        evalexpr::Value::Int(v) => Value::Integer(*v),
        evalexpr::Value::Float(v) => Value::Real(*v),
        evalexpr::Value::Boolean(v) => Value::Integer(i64::from(*v)),
        evalexpr::Value::String(s) => Value::Text(s.clone()),
        evalexpr::Value::Empty => Value::Null,
        other => Value::Text(other.to_string()),
    }
}
