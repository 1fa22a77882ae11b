//! A process's part of the document besides its records: `metadata`, `agents`,
//! `counters`, `strings`, `code_objects`, `kernel_symbols` and `host_functions`, as
//! rocprofv3's `write_json` lays them out. The arrays rocprofv3 indexes by id
//! (`kernel_symbols[kernel_id]`, `code_objects[code_object_id]`) are written so: entry 0
//! and the ids no symbol has are empty entries.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use serde::Serialize;

use super::names::{buffer_kinds, callback_kinds};
use super::records::{Dim3, Handle, agent_handle};
use crate::catalog::StreamMeta;
use crate::record::{CodeObject, CounterInfo, KernelSymbol};
use crate::sdk::COUNTER_DIMENSIONS;
use crate::sink::SinkError;
use crate::sink::rocpd::extdata::{AgentRecord, KernelSymbolRecord};
use crate::sink::rocpd::stable_hash;
use rocflow_core::abi;

/// The most empty entries an id-indexed array may hold: ids that far apart are not the
/// SDK's (it numbers from 1), and would only fill the disk.
const MOST_GAPS: u64 = 1 << 20;

/// `metadata`.
#[derive(Serialize)]
struct Metadata<'a> {
    node: Node<'a>,
    pid: u32,
    init_time: u64,
    fini_time: u64,
    command: &'a [String],
    /// rocprofv3's options; rocflow's pipeline is in the spool, not here.
    config: Empty,
}

#[derive(Serialize)]
struct Empty {}

/// The machine, as rocprofv3's `node_info` describes it: by its host name, which is all
/// rocflow learns of it.
#[derive(Serialize)]
struct Node<'a> {
    id: u64,
    hash: u64,
    machine_id: &'a str,
    system_name: &'a str,
    hostname: &'a str,
    release: &'a str,
    version: &'a str,
    hardware_name: &'a str,
    domain_name: &'a str,
}

/// A counter as `tool_counter_info` serializes it (`rocprofiler_counter_info_v1_t` after
/// its agent); rocflow does not learn whether a counter is derived, its block or its
/// expression, nor list its instances.
#[derive(Serialize)]
struct Counter<'a> {
    agent_id: Handle,
    id: Handle,
    is_constant: u8,
    is_derived: u8,
    name: &'a str,
    description: &'a str,
    block: &'a str,
    expression: &'a str,
    dimensions: Vec<Dimension<'a>>,
    instances: [(); 0],
}

/// `rocprofiler_counter_record_dimension_info_t`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
struct Dimension<'a> {
    id: u64,
    instance_size: u64,
    name: &'a str,
}

impl<'a> Counter<'a> {
    fn of(meta: &StreamMeta, c: &'a CounterInfo) -> Counter<'a> {
        Counter {
            agent_id: agent_handle(meta, c.agent),
            id: Handle {
                handle: c.id.into(),
            },
            is_constant: 0,
            is_derived: 0,
            name: &c.name,
            description: &c.description,
            block: "",
            expression: "",
            dimensions: dimensions(c),
            instances: [],
        }
    }
}

/// A counter's dimensions, each with the SDK's id (its place in `COUNTER_DIMENSIONS`).
fn dimensions(c: &CounterInfo) -> Vec<Dimension<'_>> {
    (c.dimensions.iter())
        .map(|(name, size)| Dimension {
            id: COUNTER_DIMENSIONS
                .iter()
                .position(|d| d == name)
                .unwrap_or(usize::MAX) as u64,
            instance_size: (*size).into(),
            name,
        })
        .collect()
}

/// `rocprofiler_callback_tracing_code_object_load_data_t`; rocflow does not learn how
/// the code object is stored (`storage_type` 0, `NONE`).
#[derive(Serialize)]
struct CodeObjectRecord<'a> {
    size: u64,
    code_object_id: u64,
    agent_id: Handle,
    uri: &'a str,
    load_base: u64,
    load_size: u64,
    load_delta: i64,
    storage_type: u32,
}

impl<'a> CodeObjectRecord<'a> {
    fn of(meta: &StreamMeta, c: &'a CodeObject) -> CodeObjectRecord<'a> {
        CodeObjectRecord {
            size: size_of::<abi::CodeObjectLoadData>() as u64,
            code_object_id: c.id,
            agent_id: agent_handle(meta, c.agent),
            uri: &c.uri,
            load_base: c.load_base,
            load_size: c.load_size,
            load_delta: 0,
            storage_type: 0,
        }
    }

    /// The entry of an id no code object has.
    fn empty() -> CodeObjectRecord<'static> {
        CodeObjectRecord {
            size: 0,
            code_object_id: 0,
            agent_id: Handle::default(),
            uri: "",
            load_base: 0,
            load_size: 0,
            load_delta: 0,
            storage_type: 0,
        }
    }
}

/// `rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t` with
/// rocprofv3's names: the empty entry 0, the only one, as rocflow does not trace host
/// functions.
#[derive(Serialize)]
struct HostFunction {
    size: u64,
    host_function_id: u64,
    kernel_id: u64,
    code_object_id: u64,
    host_function: Handle,
    modules: Handle,
    device_function: &'static str,
    thread_limit: u32,
    thread_ids: Dim3,
    block_ids: Dim3,
    block_dims: Dim3,
    grid_dims: Dim3,
    workgroup_size: u32,
    formatted_host_function_name: &'static str,
    demangled_host_function_name: &'static str,
    truncated_host_function_name: &'static str,
}

/// What the head says of a process beyond its metadata.
pub struct Facts<'a> {
    pub meta: &'a StreamMeta,
    pub pid: u32,
    /// The end of its last record (rocprofv3's `fini_time`: when its tool finished).
    pub last_ns: u64,
}

/// Writes `"metadata"` … `"host_functions"`, each followed by a comma; `marker_messages`
/// writes the entries of `strings.marker_api`.
pub fn head<W: Write>(
    out: &mut W,
    facts: &Facts,
    marker_messages: impl FnOnce(&mut W) -> io::Result<()>,
) -> Result<(), SinkError> {
    let meta = facts.meta;
    let process = meta.process.as_ref();
    let hostname = process.map_or("", |p| p.hostname.as_str());
    let node_hash = stable_hash(hostname) as u64;
    let init_time = process.map_or(0, |p| p.start_ns);
    let metadata = Metadata {
        node: Node {
            id: node_hash,
            hash: node_hash,
            machine_id: hostname,
            system_name: "",
            hostname,
            release: "",
            version: "",
            hardware_name: "",
            domain_name: "",
        },
        pid: facts.pid,
        init_time,
        fini_time: facts.last_ns.max(init_time),
        command: process.map_or(&[][..], |p| p.command.as_slice()),
        config: Empty {},
    };
    let mut counters: Vec<&CounterInfo> = meta.counters.values().collect();
    counters.sort_by_key(|c| (c.agent, c.id));
    let dimension_ids: BTreeSet<Dimension> = counters.iter().flat_map(|c| dimensions(c)).collect();
    let counters: Vec<Counter> = counters.iter().map(|c| Counter::of(meta, c)).collect();

    put(out, b"{\"metadata\":")?;
    json(out, &metadata)?;
    put(out, b",\n\"agents\":")?;
    json(out, &agents(meta))?;
    put(out, b",\n\"counters\":")?;
    json(out, &counters)?;
    put(out, b",\n\"strings\":{\"callback_records\":")?;
    json(out, &callback_kinds())?;
    put(out, b",\"buffer_records\":")?;
    json(out, &buffer_kinds())?;
    put(out, b",\"marker_api\":[")?;
    marker_messages(out).map_err(io_error)?;
    put(
        out,
        b"],\"correlation_id\":{\"external\":[]},\"counters\":{\"dimension_ids\":",
    )?;
    json(out, &dimension_ids)?;
    put(
        out,
        b"},\"pc_sample_instructions\":[],\"pc_sample_comments\":[],\"att_filenames\":[],\
          \"code_object_snapshot_filenames\":[]},\n\"code_objects\":[",
    )?;
    let code_objects: BTreeMap<u64, &CodeObject> =
        meta.code_objects.values().map(|c| (c.id, c)).collect();
    by_id(
        out,
        "code object",
        &code_objects,
        |out, _, known| match known {
            Some(c) => json(out, &CodeObjectRecord::of(meta, c)),
            None => json(out, &CodeObjectRecord::empty()),
        },
    )?;
    put(out, b"],\n\"kernel_symbols\":[")?;
    let kernels: BTreeMap<u64, &KernelSymbol> =
        meta.kernels.values().map(|k| (k.kernel_id, k)).collect();
    by_id(out, "kernel", &kernels, |out, id, known| match known {
        Some(k) => {
            let record = KernelSymbolRecord::new(k).formatted(meta.kernel_name(k.kernel_id));
            json(out, &record)
        }
        // rocprofv3 names kernel 0 "0".
        None if id == 0 => json(out, &KernelSymbolRecord::unregistered("0")),
        None => json(out, &KernelSymbolRecord::unregistered("")),
    })?;
    put(out, b"],\n\"host_functions\":[")?;
    json(out, &HostFunction::empty())?;
    put(out, b"],\n")
}

/// Writes `bytes` of the document.
pub fn put(out: &mut impl Write, bytes: &[u8]) -> Result<(), SinkError> {
    out.write_all(bytes).map_err(io_error)
}

/// Writes `value` as JSON.
pub fn json(out: &mut impl Write, value: &impl Serialize) -> Result<(), SinkError> {
    serde_json::to_writer(out, value).map_err(|e| io_error(e.into()))
}

pub fn io_error(source: io::Error) -> SinkError {
    SinkError::Io {
        context: "writing the JSON document".into(),
        source,
    }
}

impl HostFunction {
    fn empty() -> HostFunction {
        HostFunction {
            size: 0,
            host_function_id: 0,
            kernel_id: 0,
            code_object_id: 0,
            host_function: Handle::default(),
            modules: Handle::default(),
            device_function: "",
            thread_limit: 0,
            thread_ids: Dim3::default(),
            block_ids: Dim3::default(),
            block_dims: Dim3::default(),
            grid_dims: Dim3::default(),
            workgroup_size: 0,
            formatted_host_function_name: "",
            demangled_host_function_name: "",
            truncated_host_function_name: "",
        }
    }
}

/// The process's agents by node id, each as the SDK describes it, with rocprofv3's
/// `gpu_index`.
fn agents(meta: &StreamMeta) -> Vec<AgentRecord> {
    let mut agents: Vec<_> = meta.agents.iter().collect();
    agents.sort_by_key(|a| a.node_id);
    (agents.iter())
        .map(|a| {
            let type_index = (meta.agents.iter())
                .filter(|b| b.agent_type == a.agent_type && b.index < a.index)
                .count() as u32;
            AgentRecord::new(a, type_index)
        })
        .collect()
}

/// Writes the entries of an array indexed by id, from 0 to the largest id in `known`,
/// comma-separated: `entry` writes each, given what has that id, if anything does.
fn by_id<W: Write, T>(
    out: &mut W,
    what: &str,
    known: &BTreeMap<u64, T>,
    mut entry: impl FnMut(&mut W, u64, Option<&T>) -> Result<(), SinkError>,
) -> Result<(), SinkError> {
    let last = known.keys().next_back().copied().unwrap_or(0);
    if last - known.len() as u64 > MOST_GAPS {
        return Err(SinkError::Unrepresentable {
            context: "writing the JSON document".into(),
            reason: format!(
                "rocprofv3's JSON lists {what}s by id, and the {what} ids reach {last} for {} {what}s",
                known.len()
            ),
        });
    }
    for id in 0..=last {
        if id > 0 {
            put(out, b",\n")?;
        }
        entry(out, id, known.get(&id))?;
    }
    Ok(())
}
