//! `PREFIX_counter_collection.csv`: a row per dispatch and counter, written when the run
//! ends, the counter's instances summed.

use std::collections::BTreeMap;

use crate::catalog::StreamMeta;
use crate::plan::sink::csv::AgentIndex;
use crate::record::{CounterSample, KernelDispatch};

use super::format::Line;
use super::trace::LDS_BLOCK;

/// What a dispatch's counter rows need of the dispatch.
#[derive(Default)]
pub(super) struct Counted {
    agent: u32,
    kernel_id: u64,
    /// Per counter id, the sum over its instances, as rocprofv3 reports it.
    values: BTreeMap<u32, f64>,
}

impl Counted {
    /// Adds a counter sample of the dispatch to its sums.
    pub(super) fn add(&mut self, sample: &CounterSample) {
        self.agent = sample.agent;
        self.kernel_id = sample.kernel_id;
        *self.values.entry(sample.counter_id).or_default() += sample.value;
    }
}

/// The counter rows of one dispatch: one per counter, its instances summed.
pub(super) fn counter_rows(
    meta: &StreamMeta,
    pid: u32,
    dispatch_id: u64,
    counted: &Counted,
    dispatch: Option<&KernelDispatch>,
    agent_index: AgentIndex,
    out: &mut Vec<u8>,
) {
    let d = dispatch.copied().unwrap_or_default();
    let symbol = meta.kernels.get(&counted.kernel_id);
    let lds = symbol.map_or(d.lds_bytes, |k| k.lds_bytes);
    let vgprs = symbol.map_or(d.vgpr_count, |k| k.arch_vgpr_count);
    let sgprs = symbol.map_or(d.sgpr_count, |k| k.sgpr_count);
    let grid = u64::from(d.grid_x) * u64::from(d.grid_y) * u64::from(d.grid_z);
    let workgroup = u64::from(d.workgroup_x) * u64::from(d.workgroup_y) * u64::from(d.workgroup_z);
    let mut line = Line::default();
    for (&counter, &value) in &counted.values {
        line.int(d.correlation_id)
            .int(dispatch_id)
            .agent(meta, counted.agent, agent_index)
            .int(d.queue)
            .int(pid)
            .int(d.tid)
            .int(grid)
            .int(counted.kernel_id)
            .text(meta.kernel_name(counted.kernel_id))
            .int(workgroup)
            .int(lds.next_multiple_of(LDS_BLOCK))
            .int(d.scratch_bytes)
            .int(vgprs)
            .int(0)
            .int(sgprs)
            .text(meta.counter_name(counter))
            .float(value)
            .int(d.start_ns)
            .int(d.end_ns);
        line.end(out);
    }
}
