//! The CSV sink's `rocprofv3` flavour: the files `rocprofv3 --output-format csv --stats`
//! writes, so that scripts written against them read rocflow's. One set of files per
//! process, `<pid>_kernel_trace.csv`, `<pid>_hip_api_trace.csv`, …, `<pid>_agent_info.csv`,
//! the statistics files `<pid>_kernel_stats.csv`, … and `<pid>_domain_stats.csv`, each
//! with rocprofv3's columns in its order and its value formats. The reference is rocprofv3's
//! writer (`source/lib/output/generateCSV.cpp`, `csv.hpp` and `statistics.cpp` of
//! rocprofiler-sdk in ROCm/rocm-systems) and files it wrote.
//!
//! As rocprofv3 does, every text field is quoted and no number is; a quote inside a text
//! is doubled (rocprofv3 leaves it alone, which no CSV reader reads back). What rocflow's
//! records do not hold is written as rocprofv3 writes an absent value: `0` for the HIP
//! stream of dispatches and copies and the accumulation registers of kernels, an empty
//! instruction for PC samples (rocflow does not disassemble).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::record::{
    ApiCall, Batch, CounterSample, KernelDispatch, Marker, MemoryAllocation, MemoryCopy, PcSample,
    RecordKind, ScratchMemory,
};
use crate::sdk::Domain;
use crate::sink::rocpd::extdata::AgentRecord;
use crate::sink::staging::Staging;
use crate::sink::{Sink, SinkError};
use crate::stats::Accumulator;

use super::{earlier_output, push_int};

/// One of rocprofv3's CSV files: its name after `<pid>_`, and its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    KernelTrace,
    HipApiTrace,
    HsaApiTrace,
    MarkerApiTrace,
    RcclApiTrace,
    RocdecodeApiTrace,
    RocjpegApiTrace,
    MemoryCopyTrace,
    MemoryAllocationTrace,
    ScratchMemoryTrace,
    CounterCollection,
    PcSamplingHostTrap,
    PcSamplingStochastic,
    AgentInfo,
}

/// The columns of the API and marker traces.
const API: &[&str] = &[
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// The columns of both PC sampling files; the host-trap one has the first six.
const PC_SAMPLES: &[&str] = &[
    "Sample_Timestamp",
    "Exec_Mask",
    "Dispatch_Id",
    "Instruction",
    "Instruction_Comment",
    "Correlation_Id",
    "Wave_Issued_Instruction",
    "Instruction_Type",
    "Stall_Reason",
    "Wave_Count",
];

/// The columns of every statistics file.
pub const STATS: &[&str] = &[
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

impl Table {
    /// The file's name after `<pid>_`, without `.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Table::KernelTrace => "kernel_trace",
            Table::HipApiTrace => "hip_api_trace",
            Table::HsaApiTrace => "hsa_api_trace",
            Table::MarkerApiTrace => "marker_api_trace",
            Table::RcclApiTrace => "rccl_api_trace",
            Table::RocdecodeApiTrace => "rocdecode_api_trace",
            Table::RocjpegApiTrace => "rocjpeg_api_trace",
            Table::MemoryCopyTrace => "memory_copy_trace",
            Table::MemoryAllocationTrace => "memory_allocation_trace",
            Table::ScratchMemoryTrace => "scratch_memory_trace",
            Table::CounterCollection => "counter_collection",
            Table::PcSamplingHostTrap => "pc_sampling_host_trap",
            Table::PcSamplingStochastic => "pc_sampling_stochastic",
            Table::AgentInfo => "agent_info",
        }
    }

    /// The statistics file of the table's durations and the name of its domain in
    /// `domain_stats.csv`, for the tables that have them.
    pub fn stats(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Table::KernelTrace => ("kernel_stats", "KERNEL_DISPATCH"),
            Table::HipApiTrace => ("hip_api_stats", "HIP_API"),
            Table::HsaApiTrace => ("hsa_api_stats", "HSA_API"),
            Table::MarkerApiTrace => ("marker_api_stats", "MARKER_API"),
            Table::RcclApiTrace => ("rccl_api_stats", "RCCL_API"),
            Table::RocdecodeApiTrace => ("rocdecode_api_stats", "ROCDECODE_API"),
            Table::RocjpegApiTrace => ("rocjpeg_api_stats", "ROCJPEG_API"),
            Table::MemoryCopyTrace => ("memory_copy_stats", "MEMORY_COPY"),
            Table::MemoryAllocationTrace => ("memory_allocation_stats", "MEMORY_ALLOCATION"),
            Table::ScratchMemoryTrace => ("scratch_memory_stats", "SCRATCH_MEMORY"),
            _ => return None,
        })
    }

    pub fn header(self) -> &'static [&'static str] {
        match self {
            Table::KernelTrace => &[
                "Kind",
                "Agent_Id",
                "Queue_Id",
                "Stream_Id",
                "Thread_Id",
                "Dispatch_Id",
                "Kernel_Id",
                "Kernel_Name",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
                "LDS_Block_Size",
                "Scratch_Size",
                "VGPR_Count",
                "Accum_VGPR_Count",
                "SGPR_Count",
                "Workgroup_Size_X",
                "Workgroup_Size_Y",
                "Workgroup_Size_Z",
                "Grid_Size_X",
                "Grid_Size_Y",
                "Grid_Size_Z",
            ],
            Table::HipApiTrace
            | Table::HsaApiTrace
            | Table::MarkerApiTrace
            | Table::RcclApiTrace
            | Table::RocdecodeApiTrace
            | Table::RocjpegApiTrace => API,
            Table::MemoryCopyTrace => &[
                "Kind",
                "Direction",
                "Stream_Id",
                "Source_Agent_Id",
                "Destination_Agent_Id",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::MemoryAllocationTrace => &[
                "Kind",
                "Operation",
                "Agent_Id",
                "Allocation_Size",
                "Address",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::ScratchMemoryTrace => &[
                "Kind",
                "Operation",
                "Agent_Id",
                "Queue_Id",
                "Thread_Id",
                "Alloc_Flags",
                "Start_Timestamp",
                "End_Timestamp",
                "Allocation_Size",
            ],
            Table::CounterCollection => &[
                "Correlation_Id",
                "Dispatch_Id",
                "Agent_Id",
                "Queue_Id",
                "Process_Id",
                "Thread_Id",
                "Grid_Size",
                "Kernel_Id",
                "Kernel_Name",
                "Workgroup_Size",
                "LDS_Block_Size",
                "Scratch_Size",
                "VGPR_Count",
                "Accum_VGPR_Count",
                "SGPR_Count",
                "Counter_Name",
                "Counter_Value",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::PcSamplingHostTrap => &PC_SAMPLES[..6],
            Table::PcSamplingStochastic => PC_SAMPLES,
            Table::AgentInfo => AGENT_INFO,
        }
    }

    /// The API trace of a domain's calls; `None` for a domain rocprofv3 writes no CSV of.
    fn of_api(domain: Domain) -> Option<Table> {
        Some(match domain.plain() {
            Domain::HipRuntimeApi | Domain::HipCompilerApi => Table::HipApiTrace,
            Domain::HsaCoreApi
            | Domain::HsaAmdExtApi
            | Domain::HsaImageExtApi
            | Domain::HsaFinalizeExtApi => Table::HsaApiTrace,
            Domain::RcclApi => Table::RcclApiTrace,
            Domain::RocdecodeApi => Table::RocdecodeApiTrace,
            Domain::RocjpegApi => Table::RocjpegApiTrace,
            _ => return None,
        })
    }
}

/// The columns of `agent_info.csv`: `rocprofiler_agent_v0_t`'s fields.
const AGENT_INFO: &[&str] = &[
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
];

/// rocprofiler-sdk's LDS allocation granularity: dispatches' LDS sizes are reported
/// rounded up to it.
const LDS_BLOCK: u32 = 512;

/// `rocprofiler_pc_sampling_instruction_type_t`, by value.
const INSTRUCTION_TYPES: &[&str] = &[
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
const NOT_ISSUED_REASONS: &[&str] = &[
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

/// A line of a rocprofv3 CSV file being formatted.
#[derive(Default)]
pub struct Line {
    bytes: Vec<u8>,
}

impl Line {
    fn separate(&mut self) {
        if !self.bytes.is_empty() {
            self.bytes.push(b',');
        }
    }

    /// A text, quoted.
    pub fn text(&mut self, s: &str) -> &mut Line {
        self.separate();
        self.bytes.push(b'"');
        for (i, part) in s.split('"').enumerate() {
            if i > 0 {
                self.bytes.extend_from_slice(b"\"\"");
            }
            self.bytes.extend_from_slice(part.as_bytes());
        }
        self.bytes.push(b'"');
        self
    }

    /// A whole number.
    pub fn int(&mut self, v: impl Into<i128>) -> &mut Line {
        self.separate();
        let v: i128 = v.into();
        match i64::try_from(v) {
            Ok(v) => push_int(&mut self.bytes, v),
            Err(_) => self.bytes.extend_from_slice(v.to_string().as_bytes()),
        }
        self
    }

    /// A fractional number of a trace (a counter value), as rocprofv3's
    /// `numerical_formatter` writes it: six decimals from 1 up, eight significant
    /// digits in scientific notation below.
    pub fn float(&mut self, v: f64) -> &mut Line {
        self.fraction(v, v >= 1.0, 6, 8)
    }

    /// A mean or standard deviation of a statistics file, as rocprofv3's
    /// `stats_formatter` writes it: six decimals above 0.01, scientific below.
    pub fn stat(&mut self, v: f64) -> &mut Line {
        self.fraction(v, v > 0.01, 6, 8)
    }

    /// A percentage of a statistics file: two decimals from 1 up, four above 0.01,
    /// three significant digits in scientific notation below.
    pub fn percent(&mut self, v: f64) -> &mut Line {
        if v >= 1.0 {
            self.fraction(v, true, 2, 0)
        } else {
            self.fraction(v, v > 0.01, 4, 3)
        }
    }

    /// `v` with `decimals` decimals where `fixed`, else in scientific notation with
    /// `digits` decimals: C++'s `std::fixed` and `std::scientific`.
    fn fraction(&mut self, v: f64, fixed: bool, decimals: usize, digits: usize) -> &mut Line {
        self.separate();
        let text = if fixed {
            format!("{v:.decimals$}")
        } else {
            scientific(v, digits)
        };
        self.bytes.extend_from_slice(text.as_bytes());
        self
    }

    /// `"Agent N"`: an agent as rocprofv3's traces name it, N its logical node id
    /// (rocprofv3's default, `--agent-index relative`).
    pub fn agent(&mut self, meta: &StreamMeta, index: u32) -> &mut Line {
        let agent = meta.agents.iter().find(|a| a.index == index);
        let number = agent.map_or(index, |a| a.logical_node_id);
        self.separate();
        self.bytes.extend_from_slice(b"\"Agent ");
        push_int(&mut self.bytes, number.into());
        self.bytes.push(b'"');
        self
    }

    /// Ends the line, appending it to `out`.
    pub fn end(&mut self, out: &mut Vec<u8>) {
        self.bytes.push(b'\n');
        out.extend_from_slice(&self.bytes);
        self.bytes.clear();
    }
}

/// `v` as C++'s `std::scientific` with `digits` decimals writes it: `1.50000000e-05`, the
/// exponent signed and of two digits at least.
fn scientific(v: f64, digits: usize) -> String {
    let text = format!("{v:.digits$e}");
    let (mantissa, exponent) = text.split_once('e').expect("`e` formats have an exponent");
    let (sign, magnitude) = match exponent.strip_prefix('-') {
        Some(m) => ('-', m),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{magnitude:0>2}")
}

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

/// The statistics of one process, per table, per name.
type Statistics = BTreeMap<Table, HashMap<String, Accumulator>>;

/// What a dispatch's counter rows need of the dispatch.
#[derive(Default)]
struct Counted {
    agent: u32,
    kernel_id: u64,
    /// Per counter id, the sum over its instances, as rocprofv3 reports it.
    values: BTreeMap<u32, f64>,
}

/// One process's files and what is written at the end.
#[derive(Default)]
struct Process {
    files: HashMap<Table, BufWriter<File>>,
    stats: Statistics,
    /// Counter values per dispatch id, written when the run ends.
    counted: BTreeMap<u64, Counted>,
    /// The dispatches that counted, for their counter rows.
    dispatches: HashMap<u64, KernelDispatch>,
}

pub struct Rocprofv3Sink {
    staging: Staging,
    processes: BTreeMap<u32, Process>,
    written: Vec<PathBuf>,
    /// Whether the sink takes counter samples: only then are dispatches kept for them.
    counters: bool,
}

impl Rocprofv3Sink {
    pub fn create(path: PathBuf, kinds: &[RecordKind]) -> Result<Rocprofv3Sink, SinkError> {
        Ok(Rocprofv3Sink {
            staging: Staging::create(path)?,
            processes: BTreeMap::new(),
            written: Vec::new(),
            counters: kinds.contains(&RecordKind::CounterSample),
        })
    }

    /// Opens `<pid>_<name>.csv` and writes its header line.
    fn open(
        &mut self,
        pid: u32,
        name: &str,
        header: &[&str],
    ) -> Result<BufWriter<File>, SinkError> {
        let file = format!("{pid}_{name}.csv");
        let path = self.staging.dir().join(&file);
        let context = || format!("writing {}", self.staging.target().join(&file).display());
        let mut out = BufWriter::new(File::create(&path).map_err(SinkError::io(context()))?);
        let (mut line, mut text) = (Line::default(), Vec::new());
        header.iter().for_each(|h| {
            line.text(h);
        });
        line.end(&mut text);
        out.write_all(&text).map_err(SinkError::io(context()))?;
        self.written.push(self.staging.target().join(file));
        Ok(out)
    }

    /// Appends `lines` to the process's `table` file, opening it with its header first.
    fn append(&mut self, pid: u32, table: Table, lines: &[u8]) -> Result<(), SinkError> {
        if !self
            .processes
            .entry(pid)
            .or_default()
            .files
            .contains_key(&table)
        {
            let file = self.open(pid, table.name(), table.header())?;
            self.process(pid).files.insert(table, file);
        }
        let out = self
            .process(pid)
            .files
            .get_mut(&table)
            .expect("opened above");
        out.write_all(lines)
            .map_err(SinkError::io(format!("writing {pid}_{}.csv", table.name())))
    }

    fn process(&mut self, pid: u32) -> &mut Process {
        self.processes.entry(pid).or_default()
    }

    /// Writes the rows of one chunk, and adds its durations to the statistics.
    fn chunk(&mut self, chunk: &Chunk, meta: &StreamMeta) -> Result<(), SinkError> {
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let keep_dispatches = self.counters;
        let process = self.processes.entry(pid).or_default();
        match &chunk.batch {
            Batch::KernelDispatch(records) if keep_dispatches => {
                (process.dispatches).extend(records.iter().map(|r| (r.dispatch_id, *r)));
            }
            Batch::CounterSample(records) => records.iter().for_each(|r| count(process, r)),
            _ => {}
        }
        let mut rows = Rows {
            meta,
            pid,
            out: BTreeMap::new(),
            stats: &mut process.stats,
            line: Line::default(),
        };
        match &chunk.batch {
            Batch::KernelDispatch(records) => records.iter().for_each(|r| rows.kernel(r)),
            Batch::Api(records) => records.iter().for_each(|r| rows.api(r)),
            Batch::Marker(records) => records.iter().for_each(|r| rows.marker(r)),
            Batch::MemoryCopy(records) => records.iter().for_each(|r| rows.copy(r)),
            Batch::MemoryAllocation(records) => records.iter().for_each(|r| rows.allocation(r)),
            Batch::ScratchMemory(records) => records.iter().for_each(|r| rows.scratch(r)),
            Batch::PcSample(records) => records.iter().for_each(|r| rows.pc_sample(r)),
            // Written when the run ends, their dispatches' values summed.
            Batch::CounterSample(_) => {}
            // rocprofv3 writes no CSV of these.
            Batch::KfdEvent(_) | Batch::HipStream(_) | Batch::RuntimeInitialization(_) => {}
        }
        for (table, lines) in rows.out {
            self.append(pid, table, &lines)?;
        }
        Ok(())
    }

    /// Writes a process's counter rows, statistics and agents.
    fn finish_process(&mut self, pid: u32, meta: &StreamMeta) -> Result<(), SinkError> {
        let process = std::mem::take(self.process(pid));
        let mut lines = Vec::new();
        for (dispatch_id, counted) in &process.counted {
            let dispatch = process.dispatches.get(dispatch_id);
            counter_rows(meta, pid, *dispatch_id, counted, dispatch, &mut lines);
        }
        if !lines.is_empty() {
            self.append(pid, Table::CounterCollection, &lines)?;
        }
        let mut domains: Vec<(&str, Accumulator)> = Vec::new();
        for (table, names) in &process.stats {
            let Some((file, domain)) = table.stats() else {
                continue;
            };
            let rows: Vec<(&str, &Accumulator)> =
                names.iter().map(|(n, a)| (n.as_str(), a)).collect();
            let total = stats_rows(&rows);
            let mut out = self.open(pid, file, STATS)?;
            out.write_all(&total.1)
                .map_err(SinkError::io(format!("writing {pid}_{file}.csv")))?;
            out.flush()
                .map_err(SinkError::io(format!("writing {pid}_{file}.csv")))?;
            domains.push((domain, total.0));
        }
        if !domains.is_empty() {
            let rows: Vec<(&str, &Accumulator)> = domains.iter().map(|(n, a)| (*n, a)).collect();
            let (_, text) = stats_rows(&rows);
            let mut out = self.open(pid, "domain_stats", STATS)?;
            out.write_all(&text)
                .and_then(|()| out.flush())
                .map_err(SinkError::io(format!("writing {pid}_domain_stats.csv")))?;
        }
        for (table, mut out) in process.files {
            out.flush()
                .map_err(SinkError::io(format!("writing {pid}_{}.csv", table.name())))?;
        }
        if !meta.agents.is_empty() {
            let mut out = self.open(pid, Table::AgentInfo.name(), AGENT_INFO)?;
            out.write_all(&agent_rows(meta))
                .and_then(|()| out.flush())
                .map_err(SinkError::io(format!("writing {pid}_agent_info.csv")))?;
        }
        Ok(())
    }
}

/// Adds a counter sample to its dispatch's sums.
fn count(process: &mut Process, sample: &CounterSample) {
    let counted = process.counted.entry(sample.dispatch_id).or_default();
    counted.agent = sample.agent;
    counted.kernel_id = sample.kernel_id;
    *counted.values.entry(sample.counter_id).or_default() += sample.value;
}

/// The rows of a chunk, per table, their durations added to the process's statistics.
struct Rows<'a> {
    meta: &'a StreamMeta,
    pid: u32,
    out: BTreeMap<Table, Vec<u8>>,
    stats: &'a mut Statistics,
    line: Line,
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

    fn kernel(&mut self, r: &KernelDispatch) {
        let meta = self.meta;
        let name = meta.kernel_name(r.kernel_id);
        let symbol = meta.kernels.get(&r.kernel_id);
        let lds = symbol.map_or(r.lds_bytes, |k| k.lds_bytes);
        let vgprs = symbol.map_or(r.vgpr_count, |k| k.arch_vgpr_count);
        let sgprs = symbol.map_or(r.sgpr_count, |k| k.sgpr_count);
        self.line
            .text(kind_name(Domain::KernelDispatch))
            .agent(meta, r.agent)
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

    fn api(&mut self, r: &ApiCall) {
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

    fn marker(&mut self, r: &Marker) {
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

    fn copy(&mut self, r: &MemoryCopy) {
        let direction = operation_name(Domain::MemoryCopy, r.operation_id.into());
        self.line
            .text(kind_name(Domain::MemoryCopy))
            .text(direction)
            .int(0)
            .agent(self.meta, r.src_agent)
            .agent(self.meta, r.dst_agent)
            .int(r.correlation_id)
            .int(r.start_ns)
            .int(r.end_ns);
        self.push(Table::MemoryCopyTrace);
        self.time(Table::MemoryCopyTrace, direction, r.start_ns, r.end_ns);
    }

    fn allocation(&mut self, r: &MemoryAllocation) {
        let operation = operation_name(Domain::MemoryAllocation, r.operation_id.into());
        self.line
            .text(kind_name(Domain::MemoryAllocation))
            .text(operation);
        // Frees carry no agent.
        if operation.ends_with("ALLOCATE") {
            self.line.agent(self.meta, r.agent);
        } else {
            self.line.text("");
        }
        self.line
            .int(r.bytes)
            .text(&format!("0x{:016x}", r.address))
            .int(r.correlation_id)
            .int(r.start_ns)
            .int(r.end_ns);
        self.push(Table::MemoryAllocationTrace);
        let table = Table::MemoryAllocationTrace;
        self.time(table, operation, r.start_ns, r.end_ns);
    }

    fn scratch(&mut self, r: &ScratchMemory) {
        let operation = operation_name(Domain::ScratchMemory, r.operation_id.into());
        self.line
            .text(kind_name(Domain::ScratchMemory))
            .text(operation)
            .agent(self.meta, r.agent)
            .int(r.queue)
            .int(r.tid)
            .int(r.flags)
            .int(r.start_ns)
            .int(r.end_ns)
            .int(r.bytes);
        self.push(Table::ScratchMemoryTrace);
        self.time(Table::ScratchMemoryTrace, operation, r.start_ns, r.end_ns);
    }

    fn pc_sample(&mut self, r: &PcSample) {
        let comment = format!(
            "Unrecognized code object id, physical virtual address of PC:{}",
            r.code_object_offset
        );
        self.line
            .int(r.timestamp_ns)
            .int(r.exec_mask)
            .int(r.dispatch_id)
            .text("")
            .text(&comment)
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
                .text(&format!("ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_{kind}"))
                .text(&format!(
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

/// The counter rows of one dispatch: one per counter, its instances summed.
fn counter_rows(
    meta: &StreamMeta,
    pid: u32,
    dispatch_id: u64,
    counted: &Counted,
    dispatch: Option<&KernelDispatch>,
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
            .agent(meta, counted.agent)
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

/// The rows of a statistics file, the longest total first, and the statistics of all of
/// them together.
pub fn stats_rows(rows: &[(&str, &Accumulator)]) -> (Accumulator, Vec<u8>) {
    let mut total = Accumulator::default();
    rows.iter().for_each(|(_, acc)| total.merge(acc));
    let mut sorted = rows.to_vec();
    sorted.sort_by(|a, b| b.1.sum().total_cmp(&a.1.sum()).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    let mut line = Line::default();
    for (name, acc) in sorted {
        line.text(name)
            .int(acc.count())
            .int(acc.sum() as u64)
            .stat(acc.mean())
            .percent(100.0 * acc.sum() / total.sum())
            .int(acc.min() as u64)
            .int(acc.max() as u64)
            .stat(acc.stddev());
        line.end(&mut out);
    }
    (total, out)
}

/// The rows of `agent_info.csv`, by node id: each agent as the rocpd sink describes it in
/// full (`rocprofiler_agent_v0_t`), in rocprofv3's columns.
fn agent_rows(meta: &StreamMeta) -> Vec<u8> {
    let mut agents: Vec<_> = meta.agents.iter().collect();
    agents.sort_by_key(|a| a.node_id);
    let mut out = Vec::new();
    let mut line = Line::default();
    for a in agents {
        let type_index = meta
            .agents
            .iter()
            .filter(|b| b.agent_type == a.agent_type && b.index < a.index)
            .count() as u32;
        let record =
            serde_json::to_value(AgentRecord::new(a, type_index)).expect("agent records serialize");
        for column in AGENT_INFO {
            match agent_field(&record, column) {
                serde_json::Value::String(s) => line.text(&s),
                value => line.int(value.as_u64().unwrap_or_default()),
            };
        }
        line.end(&mut out);
    }
    out
}

/// The value of an `agent_info.csv` column in an agent's record: the field of the
/// column's name, the 32-bit value of the firmware and capability bit fields, the agent
/// type by name.
fn agent_field(record: &serde_json::Value, column: &str) -> serde_json::Value {
    use serde_json::Value;
    let field = column.to_ascii_lowercase();
    let bits = |value: &Value, fields: &[(&str, u32)]| {
        let mut packed = 0u64;
        let mut shift = 0;
        for (name, width) in fields {
            let v = value[name].as_u64().unwrap_or_default() & ((1 << width) - 1);
            packed |= v << shift;
            shift += width;
        }
        Value::from(packed)
    };
    match field.as_str() {
        "agent_type" => Value::from(match record["type"].as_u64() {
            Some(1) => "CPU",
            Some(2) => "GPU",
            _ => "UNK",
        }),
        // `HSA_ENGINE_VERSION` and `HSA_ENGINE_ID`.
        "sdma_fw_version" => bits(&record[&field], &[("uCodeSDMA", 10), ("uCodeRes", 10)]),
        "fw_version" => bits(
            &record[&field],
            &[("uCode", 10), ("Major", 6), ("Minor", 8), ("Stepping", 8)],
        ),
        // rocflow does not learn the capability bits.
        "capability" => Value::from(0),
        _ => match field.rsplit_once("_dim_") {
            Some((dim, axis)) => record[format!("{dim}_dim")][axis].clone(),
            None => record[&field].clone(),
        },
    }
}

impl Sink for Rocprofv3Sink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        for chunk in window {
            self.chunk(chunk, catalog.stream(chunk.stream))?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        // Every process the run described has its agents written, records or not.
        for (_, meta) in catalog.streams() {
            if let Some(p) = &meta.process {
                self.processes.entry(p.pid).or_default();
            }
        }
        let pids: Vec<u32> = self.processes.keys().copied().collect();
        for pid in pids {
            let meta = catalog
                .streams()
                .map(|(_, m)| m)
                .find(|m| m.process.as_ref().is_some_and(|p| p.pid == pid));
            let empty = StreamMeta::default();
            self.finish_process(pid, meta.unwrap_or(&empty))?;
        }
        let Rocprofv3Sink {
            staging, written, ..
        } = *self;
        staging.commit(earlier_output)?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_as_rocprofv3s_stream_manipulators_do() {
        let mut line = Line::default();
        line.float(6144.0)
            .float(0.5)
            .float(0.0)
            .stat(1234.5)
            .stat(0.001)
            .percent(45.678)
            .percent(0.5)
            .percent(0.001)
            .text("a \"b\"")
            .int(u64::MAX);
        let mut out = Vec::new();
        line.end(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "6144.000000,5.00000000e-01,0.00000000e+00,1234.500000,1.00000000e-03,\
             45.68,0.5000,1.000e-03,\"a \"\"b\"\"\",18446744073709551615\n"
        );
        assert_eq!(scientific(1.5e-120, 3), "1.500e-120");
    }

    /// Each column of `agent_info.csv` is read from a field of the agent's record, none
    /// falls back to nothing.
    #[test]
    fn every_agent_info_column_is_a_field_of_the_agent_record() {
        let agent = crate::generate::mi300x(1);
        let record = serde_json::to_value(AgentRecord::new(&agent, 0)).unwrap();
        for column in AGENT_INFO {
            assert!(!agent_field(&record, column).is_null(), "{column}");
        }
        assert_eq!(agent_field(&record, "Agent_Type"), "GPU");
        assert_eq!(
            agent_field(&record, "Workgroup_Max_Dim_X"),
            record["workgroup_max_dim"]["x"]
        );
    }

    /// Scratch memory, which the simulated device does not produce: rocprofv3's columns
    /// (`generateCSV.cpp`), the operation by the SDK's name, the agent as `Agent N`.
    #[test]
    fn scratch_memory_is_written_with_rocprofv3s_columns() {
        use crate::record::{Meta, Process as ProcessMeta};
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::default();
        let process = ProcessMeta {
            pid: 42,
            ppid: 1,
            hostname: "node".into(),
            command: vec!["app".into()],
            start_ns: 0,
            rank: None,
            start_unix_ns: None,
        };
        let agent = crate::generate::mi300x(1);
        catalog.apply(0, vec![Meta::Process(process), Meta::Agent(agent.clone())]);
        let scratch = ScratchMemory {
            pid: 42,
            tid: 43,
            agent: agent.index,
            queue: 7,
            start_ns: 100,
            end_ns: 250,
            bytes: 4096,
            flags: 1,
            operation_id: 1,
            ..Default::default()
        };
        let chunk = Chunk::new(0, Batch::ScratchMemory(vec![scratch]));
        let mut sink = Box::new(Rocprofv3Sink::create(dir.path().join("out"), &[]).unwrap());
        sink.write(&[Arc::new(chunk)], &catalog).unwrap();
        sink.finish(&catalog).unwrap();
        let text = std::fs::read_to_string(dir.path().join("out/42_scratch_memory_trace.csv"));
        let logical = agent.logical_node_id;
        assert_eq!(
            text.unwrap(),
            format!(
                "\"Kind\",\"Operation\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Alloc_Flags\",\
                 \"Start_Timestamp\",\"End_Timestamp\",\"Allocation_Size\"\n\
                 \"SCRATCH_MEMORY\",\"SCRATCH_MEMORY_ALLOC\",\"Agent {logical}\",7,43,1,100,250,4096\n"
            )
        );
        let stats = std::fs::read_to_string(dir.path().join("out/42_scratch_memory_stats.csv"));
        assert!(stats.unwrap().ends_with(
            "\"SCRATCH_MEMORY_ALLOC\",1,150,150.000000,100.00,150,150,0.00000000e+00\n"
        ));
    }
}
