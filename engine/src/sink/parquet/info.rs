//! The metadata tables: what records refer to by id, one table per kind of metadata, each
//! row with the `pid` of its process so tables of several processes join. Their id columns
//! are named as in the record tables (`kernel_id`, `code_object_id`, `counter_id`, `queue`),
//! so `JOIN kernel_symbols USING (pid, kernel_id)` works.

use arrow_array::RecordBatch;

use crate::arrow::columns::BatchBuilder;
use crate::catalog::StreamMeta;
use crate::record::{CounterSample, Record};
use crate::sdk::{AgentType, COUNTER_DIMENSIONS};

/// The names of the metadata tables, in the order [`tables`] gives them.
pub const TABLES: &[&str] = &[
    "processes",
    "agents",
    "kernel_symbols",
    "code_objects",
    "counters",
    "threads",
    "queues",
    "hip_streams",
    "dropped",
];

/// The metadata tables of one stream (process), named as in [`TABLES`].
pub fn tables(meta: &StreamMeta) -> impl Iterator<Item = (&'static str, RecordBatch)> {
    let pid = meta.process.as_ref().map_or(0, |p| p.pid);
    let batches = [
        processes(meta),
        agents(meta, pid),
        kernel_symbols(meta, pid),
        code_objects(meta, pid),
        counters(meta, pid),
        threads(meta),
        queues(meta),
        hip_streams(meta),
        dropped(meta, pid),
    ];
    TABLES.iter().copied().zip(batches)
}

fn processes(meta: &StreamMeta) -> RecordBatch {
    let p = meta.process.as_slice();
    let mut b = BatchBuilder::default();
    b.text("host", p.iter().map(|p| p.hostname.as_str()))
        .u32("pid", p.iter().map(|p| p.pid))
        .u32("ppid", p.iter().map(|p| p.ppid))
        .optional_u32("rank", p.iter().map(|p| p.rank))
        .optional_u32("world_size", p.iter().map(|p| p.world_size))
        .time("start_ns", p.iter().map(|p| p.start_ns))
        // The same moment by the wall clock, where known: what puts the host's clock
        // beside other hosts' (a campaign's clock offsets).
        .optional_time("start_unix_ns", p.iter().map(|p| p.start_unix_ns))
        .text_lists(
            "command",
            p.iter().map(|p| p.command.iter().map(String::as_str)),
        );
    b.finish()
}

fn agents(meta: &StreamMeta, pid: u32) -> RecordBatch {
    let a = &meta.agents;
    let mut b = BatchBuilder::default();
    b.u32("pid", a.iter().map(|_| pid))
        .u32("agent", a.iter().map(|a| a.index))
        .u64("handle", a.iter().map(|a| a.handle))
        .text(
            "type",
            a.iter().map(|a| match a.agent_type {
                AgentType::Cpu => "cpu",
                AgentType::Gpu => "gpu",
            }),
        )
        .u32("node_id", a.iter().map(|a| a.node_id))
        .u32("logical_node_id", a.iter().map(|a| a.logical_node_id))
        .text("name", a.iter().map(|a| a.name.as_str()))
        .text("product_name", a.iter().map(|a| a.product_name.as_str()))
        .u32("cu_count", a.iter().map(|a| a.cu_count))
        .u32("simd_count", a.iter().map(|a| a.simd_count))
        .u32("xcc_count", a.iter().map(|a| a.xcc_count))
        .u32("wave_front_size", a.iter().map(|a| a.wave_front_size))
        .u32("max_waves_per_simd", a.iter().map(|a| a.max_waves_per_simd))
        .u32("lds_bytes_per_cu", a.iter().map(|a| a.lds_bytes_per_cu))
        .u32("max_engine_clk_mhz", a.iter().map(|a| a.max_engine_clk_mhz));
    b.finish()
}

/// Values of a map keyed by id, in id order (so files do not depend on hashing).
fn by_id<K: Ord + Copy + std::hash::Hash, V>(map: &rustc_hash::FxHashMap<K, V>) -> Vec<&V> {
    let mut ids: Vec<&K> = map.keys().collect();
    ids.sort_unstable();
    ids.into_iter().map(|id| &map[id]).collect()
}

fn kernel_symbols(meta: &StreamMeta, pid: u32) -> RecordBatch {
    let k = by_id(&meta.kernels);
    let mut b = BatchBuilder::default();
    b.u32("pid", k.iter().map(|_| pid))
        .u64("kernel_id", k.iter().map(|k| k.kernel_id))
        .u64("code_object_id", k.iter().map(|k| k.code_object_id))
        .text(
            "kernel_name",
            k.iter().map(|k| meta.kernel_name(k.kernel_id)),
        )
        .text("mangled_name", k.iter().map(|k| k.name.as_str()))
        .u32("lds_bytes", k.iter().map(|k| k.lds_bytes))
        .u32("scratch_bytes", k.iter().map(|k| k.scratch_bytes))
        .u32("arch_vgpr_count", k.iter().map(|k| k.arch_vgpr_count))
        .u32("sgpr_count", k.iter().map(|k| k.sgpr_count))
        .u32("kernarg_bytes", k.iter().map(|k| k.kernarg_bytes));
    b.finish()
}

fn code_objects(meta: &StreamMeta, pid: u32) -> RecordBatch {
    let c = by_id(&meta.code_objects);
    let mut b = BatchBuilder::default();
    b.u32("pid", c.iter().map(|_| pid))
        .u64("code_object_id", c.iter().map(|c| c.id))
        .u32("agent", c.iter().map(|c| c.agent))
        .text("uri", c.iter().map(|c| c.uri.as_str()))
        .u64("load_base", c.iter().map(|c| c.load_base))
        .u64("load_size", c.iter().map(|c| c.load_size));
    b.finish()
}

/// Counters with the size of each dimension they have, in columns named after the
/// coordinate columns of `counter_sample` (`xcc_size`, …; null where a counter lacks one).
fn counters(meta: &StreamMeta, pid: u32) -> RecordBatch {
    let c = by_id(&meta.counters);
    let mut b = BatchBuilder::default();
    b.u32("pid", c.iter().map(|_| pid))
        .u32("counter_id", c.iter().map(|c| c.id))
        .u32("agent", c.iter().map(|c| c.agent))
        .text("counter", c.iter().map(|c| c.name.as_str()))
        .text("description", c.iter().map(|c| c.description.as_str()));
    let first = CounterSample::FIELDS
        .iter()
        .position(|(name, _)| *name == "xcc")
        .expect("counter samples have coordinates");
    let coordinates = &CounterSample::FIELDS[first..first + COUNTER_DIMENSIONS.len()];
    for (dimension, (coordinate, _)) in COUNTER_DIMENSIONS.iter().zip(coordinates) {
        let size = |c: &&crate::record::CounterInfo| {
            c.dimensions
                .iter()
                .find(|(name, _)| name == dimension)
                .map(|&(_, size)| size)
        };
        b.optional_u32(&format!("{coordinate}_size"), c.iter().map(size));
    }
    b.finish()
}

fn threads(meta: &StreamMeta) -> RecordBatch {
    let t = &meta.threads;
    let mut b = BatchBuilder::default();
    b.u32("pid", t.iter().map(|t| t.pid))
        .u32("tid", t.iter().map(|t| t.tid))
        .optional_text("name", t.iter().map(|t| t.name.as_deref()));
    b.finish()
}

fn queues(meta: &StreamMeta) -> RecordBatch {
    let q = &meta.queues;
    let mut b = BatchBuilder::default();
    b.u32("pid", q.iter().map(|q| q.pid))
        .u64("queue", q.iter().map(|q| q.id))
        .u32("agent", q.iter().map(|q| q.agent));
    b.finish()
}

fn hip_streams(meta: &StreamMeta) -> RecordBatch {
    let s = &meta.hip_streams;
    let mut b = BatchBuilder::default();
    b.u32("pid", s.iter().map(|s| s.pid))
        .u64("stream", s.iter().map(|s| s.id))
        .optional_text("name", s.iter().map(|s| s.name.as_deref()));
    b.finish()
}

/// Records the tool reported lost, per kind.
fn dropped(meta: &StreamMeta, pid: u32) -> RecordBatch {
    let d = &meta.dropped;
    let mut b = BatchBuilder::default();
    b.u32("pid", d.iter().map(|_| pid))
        .text("kind", d.keys().map(|k| k.name()))
        .u64("count", d.values().copied());
    b.finish()
}
