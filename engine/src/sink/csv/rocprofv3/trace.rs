//! The rows of the trace files, one per record, each record's duration added to the
//! statistics of its name.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use crate::catalog::StreamMeta;
use crate::plan::sink::csv::AgentIndex;
use crate::record::{
    ApiCall, KernelDispatch, Marker, MemoryAllocation, MemoryCopy, PcSample, ScratchMemory,
};
use crate::sdk::Domain;

use super::format::Line;
use super::stats::Statistics;
use super::table::Table;

/// rocprofiler-sdk's LDS allocation granularity: dispatches' LDS sizes are reported
/// rounded up to it.
pub(super) const LDS_BLOCK: u32 = 512;

/// `rocprofiler_pc_sampling_instruction_type_t`, by value.
pub(crate) const INSTRUCTION_TYPES: &[&str] = &[
    "NONE",
    "VALU",
    "MATRIX",
    "SCALAR",
    "TEX",
    "LDS",
    "LDS_DIRECT",
    "FLAT",
    "EXPORT",
    "MESSAGE",
    "BARRIER",
    "BRANCH_NOT_TAKEN",
    "BRANCH_TAKEN",
    "JUMP",
    "OTHER",
    "NO_INST",
    "DUAL_VALU",
];

/// `rocprofiler_pc_sampling_instruction_not_issued_reason_t`, by value.
pub(crate) const NOT_ISSUED_REASONS: &[&str] = &[
    "NONE",
    "NO_INSTRUCTION_AVAILABLE",
    "ALU_DEPENDENCY",
    "WAITCNT",
    "INTERNAL_INSTRUCTION",
    "BARRIER_WAIT",
    "ARBITER_NOT_WIN",
    "ARBITER_WIN_EX_STALL",
    "OTHER_WAIT",
    "SLEEP_WAIT",
];

/// The SDK's name of a domain (its `rocprofiler_buffer_tracing_kind_t` without the
/// prefix), as rocprofv3's `Kind` and `Domain` columns have it.
fn kind_name(domain: Domain) -> &'static str {
    static NAMES: OnceLock<HashMap<Domain, String>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let upper = |d: &Domain| (*d, d.name().to_ascii_uppercase());
        Domain::ALL.iter().map(upper).collect()
    });
    &names[&domain]
}

/// The SDK's name of an operation of one of the domains whose operations rocflow names
/// by their suffix (copies, allocations, scratch memory): `MEMORY_COPY_HOST_TO_DEVICE`.
fn operation_name(domain: Domain, id: i32) -> &'static str {
    static NAMES: OnceLock<HashMap<(Domain, i32), String>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let domains = [
            Domain::MemoryCopy,
            Domain::MemoryAllocation,
            Domain::ScratchMemory,
        ];
        let named = |d: Domain| {
            let ops = d.operations().iter();
            ops.map(move |(id, op)| ((d, *id), format!("{}_{op}", kind_name(d))))
        };
        domains.into_iter().flat_map(named).collect()
    });
    names.get(&(domain, id)).map_or("NONE", String::as_str)
}

/// The rows of a chunk, per table, their durations added to the process's statistics.
pub(super) struct Rows<'a> {
    pub(super) meta: &'a StreamMeta,
    pub(super) pid: u32,
    pub(super) agent_index: AgentIndex,
    pub(super) out: BTreeMap<Table, Vec<u8>>,
    pub(super) stats: &'a mut Statistics,
    pub(super) line: Line,
}

impl Rows<'_> {
    fn push(&mut self, table: Table) {
        self.line.end(self.out.entry(table).or_default());
    }

    /// Adds a duration to the statistics of `name` in `table`.
    fn time(&mut self, table: Table, name: &str, start: u64, end: u64) {
        let ns = end.saturating_sub(start) as f64;
        let names = self.stats.entry(table).or_default();
        match names.get_mut(name) {
            Some(acc) => acc.add(ns),
            None => names.entry(name.to_owned()).or_default().add(ns),
        }
    }

    pub(super) fn kernel(&mut self, r: &KernelDispatch) {
        let meta = self.meta;
        let name = meta.kernel_name(r.kernel_id);
        let symbol = meta.kernels.get(&r.kernel_id);
        let lds = symbol.map_or(r.lds_bytes, |k| k.lds_bytes);
        let vgprs = symbol.map_or(r.vgpr_count, |k| k.arch_vgpr_count);
        let sgprs = symbol.map_or(r.sgpr_count, |k| k.sgpr_count);
        self.line
            .text(kind_name(Domain::KernelDispatch))
            .agent(meta, r.agent, self.agent_index)
            .int(r.queue)
            .int(0)
            .int(r.tid)
            .int(r.dispatch_id)
            .int(r.kernel_id)
            .text(name)
            .int(r.correlation_id)
            .int(r.start_ns)
            .int(r.end_ns)
            .int(lds.next_multiple_of(LDS_BLOCK))
            .int(r.scratch_bytes)
            .int(vgprs)
            .int(0)
            .int(sgprs)
            .int(r.workgroup_x)
            .int(r.workgroup_y)
            .int(r.workgroup_z)
            .int(r.grid_x)
            .int(r.grid_y)
            .int(r.grid_z);
        self.push(Table::KernelTrace);
        self.time(Table::KernelTrace, name, r.start_ns, r.end_ns);
    }

    pub(super) fn api(&mut self, r: &ApiCall) {
        let Some(domain) = Domain::from_sdk_value(r.domain_id.into()) else {
            return;
        };
        let Some(table) = Table::of_api(domain) else {
            return;
        };
        let function = domain.operation_name(r.operation_id).unwrap_or("<unknown>");
        // rocprofv3 traces HIP and rocDecode through their `_EXT` domains, whose names
        // scripts match.
        let named = domain.with_args().unwrap_or(domain);
        self.call(
            table,
            named,
            function,
            r.tid,
            r.correlation_id,
            r.start_ns,
            r.end_ns,
        );
    }

    pub(super) fn marker(&mut self, r: &Marker) {
        let Some(domain) = Domain::from_sdk_value(r.domain_id.into()) else {
            return;
        };
        let operation = domain.operation_name(r.operation_id).unwrap_or("<unknown>");
        // Marks and ranges are named by their message, the other calls by themselves.
        let named = domain == Domain::MarkerCoreRangeApi
            && matches!(
                operation,
                "roctxMarkA" | "roctxThreadRangeA" | "roctxProcessRangeA"
            );
        let meta = self.meta;
        let name = if named {
            meta.string(r.message)
        } else {
            operation
        };
        let table = Table::MarkerApiTrace;
        self.call(
            table,
            domain,
            name,
            r.tid,
            r.correlation_id,
            r.start_ns,
            r.end_ns,
        );
    }

    /// A row of an API or marker trace.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        table: Table,
        domain: Domain,
        name: &str,
        tid: u32,
        correlation_id: u64,
        start: u64,
        end: u64,
    ) {
        self.line
            .text(kind_name(domain))
            .text(name)
            .int(self.pid)
            .int(tid)
            .int(correlation_id)
            .int(start)
            .int(end);
        self.push(table);
        self.time(table, name, start, end);
    }

    pub(super) fn copy(&mut self, r: &MemoryCopy) {
        let direction = operation_name(Domain::MemoryCopy, r.operation_id.into());
        self.line
            .text(kind_name(Domain::MemoryCopy))
            .text(direction)
            .int(0)
            .agent(self.meta, r.src_agent, self.agent_index)
            .agent(self.meta, r.dst_agent, self.agent_index)
            .int(r.correlation_id)
            .int(r.start_ns)
            .int(r.end_ns);
        self.push(Table::MemoryCopyTrace);
        self.time(Table::MemoryCopyTrace, direction, r.start_ns, r.end_ns);
    }

    pub(super) fn allocation(&mut self, r: &MemoryAllocation) {
        let operation = operation_name(Domain::MemoryAllocation, r.operation_id.into());
        self.line
            .text(kind_name(Domain::MemoryAllocation))
            .text(operation);
        // Frees carry no agent.
        if operation.ends_with("ALLOCATE") {
            self.line.agent(self.meta, r.agent, self.agent_index);
        } else {
            self.line.text("");
        }
        self.line
            .int(r.bytes)
            .quoted(format_args!("0x{:016x}", r.address))
            .int(r.correlation_id)
            .int(r.start_ns)
            .int(r.end_ns);
        self.push(Table::MemoryAllocationTrace);
        let table = Table::MemoryAllocationTrace;
        self.time(table, operation, r.start_ns, r.end_ns);
    }

    pub(super) fn scratch(&mut self, r: &ScratchMemory) {
        let operation = operation_name(Domain::ScratchMemory, r.operation_id.into());
        self.line
            .text(kind_name(Domain::ScratchMemory))
            .text(operation)
            .agent(self.meta, r.agent, self.agent_index)
            .int(r.queue)
            .int(r.tid)
            .int(r.flags)
            .int(r.start_ns)
            .int(r.end_ns)
            .int(r.bytes);
        self.push(Table::ScratchMemoryTrace);
        self.time(Table::ScratchMemoryTrace, operation, r.start_ns, r.end_ns);
    }

    pub(super) fn pc_sample(&mut self, r: &PcSample) {
        self.line
            .int(r.timestamp_ns)
            .int(r.exec_mask)
            .int(r.dispatch_id)
            .text("")
            .quoted(format_args!(
                "Unrecognized code object id, physical virtual address of PC:{}",
                r.code_object_offset
            ))
            .int(r.correlation_id);
        // `rocprofiler_pc_sampling_method_t`: 1 stochastic, 2 host trap.
        let table = if r.method == 1 {
            let name =
                |names: &[&'static str], i: u8| *names.get(usize::from(i)).unwrap_or(&"NONE");
            let kind = name(INSTRUCTION_TYPES, r.instruction_type);
            let reason = name(NOT_ISSUED_REASONS, r.stall_reason);
            // rocflow keeps no issued flag: a sample with no reason for not issuing issued.
            self.line
                .int(u8::from(r.stall_reason == 0))
                .quoted(format_args!(
                    "ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_{kind}"
                ))
                .quoted(format_args!(
                    "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_{reason}"
                ))
                .int(0);
            Table::PcSamplingStochastic
        } else {
            Table::PcSamplingHostTrap
        };
        self.push(table);
    }
}
