//! Scenario files: what the simulated device has (agents, their counters and PC-sampling
//! configurations) and what each process of the application does on it (threads, and per
//! iteration of each thread: kernels, copies, allocations, other API calls and a marker
//! range). Every count
//! in a run follows from the file, so tests can compute what a run must deliver.

use crate::record::RecordKind;
use crate::sdk::{Domain, Release, SIMULATED, SdkVersion};
use crate::smi::PciLocation;
use serde::{Deserialize, Deserializer};

/// The scenario used when `ROCFLOW_SIM_SCENARIO` names none.
pub const DEFAULT: &str = include_str!("../../../examples/sim/mi300x.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub scenario: Settings,
    /// The GPUs. None is a node without a GPU driver, where rocprofiler-sdk reports no
    /// agent at all (not even the CPU) and still traces host APIs.
    #[serde(rename = "agent", default)]
    pub agents: Vec<Agent>,
    #[serde(rename = "kernel", default)]
    pub kernels: Vec<Kernel>,
    #[serde(rename = "copy", default)]
    pub copies: Vec<Copy>,
    #[serde(rename = "allocation", default)]
    pub allocations: Vec<Allocation>,
    #[serde(rename = "call", default)]
    pub calls: Vec<Call>,
    /// Driver events each iteration causes; none unless written.
    #[serde(default)]
    pub kfd: Vec<Kfd>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub name: String,
    /// Seeds the counter values.
    #[serde(default)]
    pub seed: u64,
    /// rocprofiler-sdk counter definitions (`counter_defs.yaml`) that give each agent its
    /// architecture's counters besides those it lists, relative to the scenario file;
    /// without it, those `ROCPROFILER_METRICS_PATH` names, as the SDK reads them.
    #[serde(default)]
    pub counter_definitions: Option<std::path::PathBuf>,
    /// Host threads issuing work in each process.
    pub threads: u32,
    /// Iterations of each thread.
    pub iterations: u32,
    /// Spreads each thread's iterations evenly over this much real time: iteration `i`
    /// starts `i * duration_ms / iterations` after its thread (or when the one before it
    /// ends, if later), and every operation waits for the real clock to reach its time.
    /// Without it the work is done at once (its timestamps still follow the durations),
    /// which is what most runs want; with it, collection periods and other time-based
    /// features see the work where its timestamps say it is.
    #[serde(default)]
    pub duration_ms: Option<std::num::NonZeroU64>,
    /// A marker range (`roctxThreadRangeA`) around each iteration.
    #[serde(default)]
    pub marker_ranges: bool,
    /// The ranges' message (`roctxRangePushA`'s argument); without one they are nameless.
    #[serde(default)]
    pub marker_message: Option<std::ffi::CString>,
    /// The ROCTx library the ranges' calls go to.
    #[serde(default)]
    pub marker_library: MarkerLibrary,
    /// Thread 0 calls `roctxProfilerPause` before this iteration…
    #[serde(default)]
    pub pause_at: Option<u32>,
    /// …and `roctxProfilerResume` before this one.
    #[serde(default)]
    pub resume_at: Option<u32>,
    /// The process lacks the capability (CAP_PERFMON) to lock a GPU's counters for
    /// itself: configuring device counting is refused with PERMISSION_DENIED.
    #[serde(default)]
    pub deny_perfmon: bool,
    /// The rocprofiler-sdk version the simulated SDK is (by default the newest rocflow
    /// knows, [`crate::sdk::SIMULATED`]): an older one lacks the domains added since, as
    /// the real one does, to try a pipeline against an older ROCm.
    #[serde(default)]
    pub sdk_version: Option<SdkVersion>,
}

/// Which ROCTx library a simulated application calls.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkerLibrary {
    /// rocprofiler-sdk's: the SDK's marker tracing sees the calls.
    #[default]
    Sdk,
    /// roctracer's legacy `libroctx64.so`, which the process must have loaded (PyTorch's
    /// ROCTx): its calls reach no SDK, only the tracer callback a tool registered.
    Legacy,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// Architecture, e.g. `gfx942`.
    pub name: String,
    pub product: String,
    pub cu_count: u32,
    #[serde(default = "four")]
    pub simd_per_cu: u32,
    #[serde(default = "one")]
    pub xcc: u32,
    #[serde(default = "one")]
    pub shader_engines: u32,
    #[serde(default = "wave64")]
    pub wave_front_size: u32,
    #[serde(default = "eight")]
    pub max_waves_per_simd: u32,
    #[serde(default)]
    pub lds_kb: u32,
    #[serde(default)]
    pub max_engine_clk_mhz: u32,
    #[serde(rename = "counter", default)]
    pub counters: Vec<Counter>,
    #[serde(default)]
    pub pc_sampling: Vec<PcSampling>,
    /// Its PCI location, which its SDK agent and AMD-SMI report; see [`Agent::pci`].
    #[serde(default)]
    pub pci: Option<PciLocation>,
    /// What the simulated AMD-SMI reads of it; without it, AMD-SMI lists the GPU but it
    /// reports no metric.
    #[serde(default)]
    pub smi: Option<SmiMetrics>,
}

impl Agent {
    /// Its PCI location: the scenario's, or else bus `0c`, `1c`, `2c`… by its index.
    pub fn pci(&self, index: usize) -> PciLocation {
        self.pci.unwrap_or(PciLocation {
            domain: 0,
            bus: (0x0c + 0x10 * index) as u8,
            device: 0,
            function: 0,
        })
    }
}

/// What the simulated AMD-SMI reads of a GPU, each metric as `[idle, busy]`: busy while a
/// kernel dispatched to the GPU runs (by the SDK's clock, as its dispatch records say),
/// idle otherwise. The graphics engine is 0% busy idle and 100% busy.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmiMetrics {
    /// The socket's power, W.
    pub power_w: [u32; 2],
    /// The hotspot (junction) temperature, °C.
    pub temperature_c: [i64; 2],
    pub gfx_clock_mhz: [u32; 2],
    pub mem_clock_mhz: [u32; 2],
    /// The memory controllers' activity, percent.
    #[serde(deserialize_with = "percentages")]
    pub mem_busy_percent: [u32; 2],
    /// VRAM in use, bytes, idle or busy (the scenario's allocations are freed at once).
    pub vram_used_bytes: u64,
}

fn one() -> u32 {
    1
}
fn four() -> u32 {
    4
}
fn eight() -> u32 {
    8
}
fn wave64() -> u32 {
    64
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The hardware block that counts it, as the SDK's definitions say; by default the
    /// name's first part (`SQ` for `SQ_WAVES`), which `SQC_*` counters (block SQ) need.
    pub block: Option<String>,
    /// Dimension name (`DIMENSION_XCC`, …) and size, in the SDK's dimension order.
    #[serde(default, deserialize_with = "sdk_dimensions")]
    pub dimensions: Vec<(String, u32)>,
}

/// Counter dimensions, each one of the SDK's (an error here is reported at its place).
fn sdk_dimensions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, u32)>, D::Error> {
    let dimensions = Vec::<(String, u32)>::deserialize(d)?;
    match (dimensions.iter()).find(|(d, _)| !crate::sdk::COUNTER_DIMENSIONS.contains(&d.as_str())) {
        Some((unknown, _)) => Err(serde::de::Error::custom(format!(
            "unknown dimension `{unknown}`; the SDK's are {}",
            crate::sdk::COUNTER_DIMENSIONS.join(", ")
        ))),
        None => Ok(dimensions),
    }
}

/// Percentages, 0 to 100 (an error here is reported at its place).
fn percentages<'de, D: Deserializer<'de>>(d: D) -> Result<[u32; 2], D::Error> {
    let percentages = <[u32; 2]>::deserialize(d)?;
    match percentages.iter().find(|&&p| p > 100) {
        Some(p) => Err(serde::de::Error::custom(format!(
            "{p} is not a percentage (0 to 100)"
        ))),
        None => Ok(percentages),
    }
}

/// A PC-sampling configuration the agent supports.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcSampling {
    /// `host_trap` or `stochastic`.
    pub method: String,
    /// `time`, `cycles` or `instructions`.
    pub unit: String,
    pub min_interval: u64,
    pub max_interval: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// The (mangled) symbol name.
    pub name: String,
    #[serde(default)]
    pub agent: u32,
    pub duration_ns: u64,
    pub grid: [u32; 3],
    pub workgroup: [u32; 3],
    #[serde(default)]
    pub lds_bytes: u32,
    #[serde(default)]
    pub scratch_bytes: u32,
    #[serde(default)]
    pub vgpr: u32,
    #[serde(default)]
    pub sgpr: u32,
    /// PC samples per dispatch while PC sampling is on.
    #[serde(default)]
    pub pc_samples: u32,
    /// The HIP graph the kernel is a node of, if any: the kernels of one graph number are
    /// launched together by one `hipGraphLaunch` an iteration, in the order listed, where
    /// the others each have a `hipLaunchKernel` of their own.
    #[serde(default)]
    pub graph: Option<u32>,
    /// The instructions a thread trace shows the kernel's waves run, in order; empty for
    /// the simulated device's default listing.
    #[serde(default)]
    pub isa: Vec<Instruction>,
    /// What each of its dispatches counts of these counters (by name), in total over the
    /// counter's instances, in place of the values the seed gives: a kernel with a known
    /// profile (`counters = { OccupancyPercent = 8 }`) for what reads counters. Dispatch
    /// counting only; device counting and SPM keep the seed's values.
    #[serde(default)]
    pub counters: std::collections::BTreeMap<String, f64>,
    /// `[rank, duration_ns]` pairs: how long the kernel takes in the process of that MPI
    /// rank (by its launcher's variables, as the tool reads them), for a run whose ranks
    /// are out of balance.
    #[serde(default)]
    pub rank_duration_ns: Vec<(u32, u64)>,
    /// The HIP stream each thread launches it on; see [`Copy::stream`].
    #[serde(default)]
    pub stream: u32,
}

/// An instruction of a simulated kernel, as the scenario lists it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Instruction {
    /// Its disassembly, as the decoder's ISA look-up returns it.
    pub text: String,
    /// Cycles it takes to issue, once it stops stalling.
    pub latency: u32,
    /// Cycles it stalls first.
    #[serde(default)]
    pub stall: u32,
}

/// The most instructions a simulated kernel has: its code fits its slot in the code
/// object.
pub const MAX_INSTRUCTIONS: usize = 64;
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Copy {
    /// `host_to_device`, `device_to_host`, `device_to_device` or `host_to_host`.
    pub direction: String,
    pub bytes: u64,
    pub duration_ns: u64,
    #[serde(default)]
    pub agent: u32,
    /// The memory its host side is in (for a copy to or from the host).
    #[serde(default)]
    pub host: HostMemory,
    /// The HIP stream each thread enqueues it on: 0 the null stream, with a synchronous
    /// `hipMemcpy` as before streams; `n` the thread's own stream `n`, created before its
    /// first iteration and destroyed after its last, with `hipMemcpyAsync`. A created
    /// stream runs its kernels and copies one after the other, in the order listed; the
    /// null stream keeps the simulated device's timing, where a copy does not wait for
    /// the kernels before it.
    #[serde(default)]
    pub stream: u32,
}

/// What a copy's host buffer is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostMemory {
    /// Ordinary (`malloc`ed) memory, which the driver stages through a pinned buffer.
    #[default]
    Pageable,
    /// The start of the thread's first host (`hipHostMalloc`) allocation of the iteration.
    Pinned,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allocation {
    pub bytes: u64,
    #[serde(default)]
    pub agent: u32,
    /// Pinned host memory (`hipHostMalloc`, `hipHostFree`) from the host's CPU agent,
    /// instead of the GPU's memory (`hipMalloc`, `hipFree`).
    #[serde(default)]
    pub host: bool,
}

/// Host API calls each iteration makes besides the launches, copies and allocations:
/// the application's API mix (synchronizations, queries, HSA calls, RCCL, …).
#[derive(Debug, Deserialize)]
#[serde(try_from = "CallEntry")]
pub struct Call {
    /// The tracing domain, e.g. `hip_runtime_api` or `hsa_core_api`.
    pub domain: Domain,
    /// The function's operation id in its domain (the SDK's).
    pub operation: i32,
    /// Calls per iteration.
    pub count: u32,
    pub duration_ns: u64,
}

/// A `[[call]]` table as written: a domain and a function name, checked together (so a
/// wrong one is reported at its table's place in the file).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallEntry {
    domain: String,
    function: String,
    #[serde(default = "one")]
    count: u32,
    #[serde(default = "call_ns")]
    duration_ns: u64,
}

fn call_ns() -> u64 {
    1_000
}

/// What is wrong with a `[[call]]` table.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("`{0}` is not an API tracing domain")]
    NotApiDomain(String),
    #[error("`{function}` is not a function of {}", .domain.name())]
    UnknownFunction { function: String, domain: Domain },
}

impl TryFrom<CallEntry> for Call {
    type Error = CallError;

    fn try_from(entry: CallEntry) -> Result<Call, CallError> {
        let domain = Domain::from_name(&entry.domain)
            .filter(|d| d.record_kind() == RecordKind::Api)
            .ok_or(CallError::NotApiDomain(entry.domain))?;
        let operation = domain
            .operations()
            .iter()
            .find(|(_, name)| *name == entry.function)
            .map(|(id, _)| *id)
            .ok_or(CallError::UnknownFunction {
                function: entry.function,
                domain,
            })?;
        Ok(Call {
            domain,
            operation,
            count: entry.count,
            duration_ns: entry.duration_ns,
        })
    }
}

/// KFD events each iteration causes on the first GPU: page migrations and faults, queue
/// evictions, unmaps, dropped events, and the SDK's records pairing them.
#[derive(Debug, Deserialize)]
#[serde(try_from = "KfdEntry")]
pub struct Kfd {
    /// A KFD tracing domain, e.g. `kfd_event_page_fault` or `kfd_queue`.
    pub domain: Domain,
    /// The event's operation id in its domain (the SDK's).
    pub operation: i32,
    /// Events per iteration.
    pub count: u32,
}

/// A `[[kfd]]` table as written: a domain and an operation name, checked together.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KfdEntry {
    domain: String,
    operation: String,
    #[serde(default = "one")]
    count: u32,
}

/// What is wrong with a `[[kfd]]` table.
#[derive(Debug, thiserror::Error)]
pub enum KfdError {
    #[error("`{0}` is not a KFD tracing domain")]
    NotKfdDomain(String),
    #[error("`{operation}` is not an operation of {}", .domain.name())]
    UnknownOperation { operation: String, domain: Domain },
}

impl TryFrom<KfdEntry> for Kfd {
    type Error = KfdError;

    fn try_from(entry: KfdEntry) -> Result<Kfd, KfdError> {
        let domain = Domain::from_name(&entry.domain)
            .filter(|d| d.record_kind() == RecordKind::KfdEvent)
            .ok_or(KfdError::NotKfdDomain(entry.domain))?;
        let operation = (domain.operations().iter())
            .find(|(_, name)| *name == entry.operation)
            .map(|(id, _)| *id)
            .ok_or(KfdError::UnknownOperation {
                operation: entry.operation,
                domain,
            })?;
        Ok(Kfd {
            domain,
            operation,
            count: entry.count,
        })
    }
}

/// What is wrong with a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not TOML, or not a scenario's fields; the error says where.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error(
        "kernels, copies, allocations, graph launches, HIP events and KFD events need a GPU: add an [[agent]], or leave them out to simulate a node without one"
    )]
    NoAgent,
    #[error("the simulated SDK can be rocprofiler-sdk 1.0.0 to {SIMULATED}, not {0}")]
    SdkVersion(SdkVersion),
    #[error("calls of `{}` need {release}, which is newer than the scenario's rocprofiler-sdk {sdk}", .domain.name())]
    NewerCall {
        domain: Domain,
        release: Release,
        sdk: SdkVersion,
    },
    /// A kernel runs on an agent the scenario does not have.
    #[error("{}kernel `{kernel}` runs on agent {agent} of {agents}", Place(*.place))]
    KernelAgent {
        kernel: String,
        agent: u32,
        agents: u32,
        /// Where its `agent` is written: line and column, from 1.
        place: Option<(usize, usize)>,
    },
    #[error(
        "kernel `{kernel}` lists {instructions} instructions; a simulated kernel has at most {}",
        MAX_INSTRUCTIONS
    )]
    LongIsa { kernel: String, instructions: usize },
    #[error(
        "a copy of {bytes} bytes from pinned memory (host = \"pinned\") needs the first [[allocation]] with host = true to hold at least that many bytes"
    )]
    PinnedCopy { bytes: u64 },
}

/// Why a scenario file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Invalid(#[from] ScenarioError),
}

/// `line L, column C: ` where a place is known, as TOML errors say where they are.
struct Place(Option<(usize, usize)>);

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, column)) => write!(f, "line {line}, column {column}: "),
            None => Ok(()),
        }
    }
}

impl Scenario {
    /// The scenario's HIP graphs, each once, in the order their first nodes are listed.
    pub fn graphs(&self) -> Vec<u32> {
        let mut graphs: Vec<u32> = Vec::new();
        for graph in self.kernels.iter().filter_map(|k| k.graph) {
            if !graphs.contains(&graph) {
                graphs.push(graph);
            }
        }
        graphs
    }

    /// The nodes of graph `graph`, with their places in the kernel list, in launch order.
    pub fn graph_nodes(&self, graph: u32) -> impl Iterator<Item = (usize, &Kernel)> {
        (self.kernels.iter().enumerate()).filter(move |(_, k)| k.graph == Some(graph))
    }

    /// The rocprofiler-sdk version the simulated SDK is.
    pub fn sdk_version(&self) -> SdkVersion {
        self.scenario.sdk_version.unwrap_or(SIMULATED)
    }

    /// Reads, parses and checks the scenario file at `path`; its paths become relative to
    /// the directory it is in.
    pub fn read(path: &std::path::Path) -> Result<Scenario, ReadError> {
        let text = std::fs::read_to_string(path)?;
        let mut scenario = Scenario::parse(&text)?;
        if let (Some(defs), Some(dir)) = (&mut scenario.scenario.counter_definitions, path.parent())
        {
            *defs = dir.join(&*defs);
        }
        Ok(scenario)
    }

    /// Parses and checks a scenario.
    /// The scenario as the process of MPI rank `rank` replays it: each kernel takes its
    /// `rank_duration_ns` for the rank, where it has one.
    pub fn for_rank(mut self, rank: Option<u32>) -> Scenario {
        for kernel in &mut self.kernels {
            let own = (kernel.rank_duration_ns.iter()).find(|(r, _)| Some(*r) == rank);
            if let Some(&(_, duration_ns)) = own {
                kernel.duration_ns = duration_ns;
            }
        }
        self
    }

    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        let agents = scenario.agents.len() as u32;
        let device_work = !(scenario.kernels.is_empty()
            && scenario.copies.is_empty()
            && scenario.allocations.is_empty()
            && !scenario.calls.iter().any(|c| c.domain.on_gpu())
            && scenario.kfd.is_empty());
        if agents == 0 && device_work {
            return Err(ScenarioError::NoAgent);
        }
        let sdk = scenario.sdk_version();
        if !(SdkVersion(1, 0, 0)..=SIMULATED).contains(&sdk) {
            return Err(ScenarioError::SdkVersion(sdk));
        }
        if let Some(call) = scenario.calls.iter().find(|c| !c.domain.in_sdk(sdk)) {
            return Err(ScenarioError::NewerCall {
                domain: call.domain,
                release: call
                    .domain
                    .since()
                    .expect("a domain of 1.0 is in every SDK"),
                sdk,
            });
        }
        if let Some((k, kernel)) =
            (scenario.kernels.iter().enumerate()).find(|(_, k)| k.agent >= agents)
        {
            return Err(ScenarioError::KernelAgent {
                kernel: kernel.name.clone(),
                agent: kernel.agent,
                agents,
                place: kernel_agent_place(text, k),
            });
        }
        if let Some(kernel) = (scenario.kernels.iter()).find(|k| k.isa.len() > MAX_INSTRUCTIONS) {
            return Err(ScenarioError::LongIsa {
                kernel: kernel.name.clone(),
                instructions: kernel.isa.len(),
            });
        }
        let pinned = scenario.pinned_allocation().map_or(0, |a| a.bytes);
        if let Some(copy) =
            (scenario.copies.iter()).find(|c| c.host == HostMemory::Pinned && c.bytes > pinned)
        {
            return Err(ScenarioError::PinnedCopy { bytes: copy.bytes });
        }
        Ok(scenario)
    }

    /// The streams each thread creates: those its kernels and copies name, the null
    /// stream (0) aside, in order.
    pub fn created_streams(&self) -> std::collections::BTreeSet<u32> {
        let kernels = self.kernels.iter().map(|k| k.stream);
        (kernels.chain(self.copies.iter().map(|c| c.stream)))
            .filter(|&s| s != 0)
            .collect()
    }

    /// The allocation of pinned host memory that copies from pinned memory use.
    pub fn pinned_allocation(&self) -> Option<&Allocation> {
        self.allocations.iter().find(|a| a.host)
    }
}

/// The line and column of the `agent` of the `k`th `[[kernel]]`, if it can be found.
fn kernel_agent_place(text: &str, k: usize) -> Option<(usize, usize)> {
    #[derive(Deserialize)]
    struct Kernels {
        #[serde(default)]
        kernel: Vec<Placed>,
    }
    #[derive(Deserialize)]
    struct Placed {
        agent: Option<toml::Spanned<u32>>,
    }
    let kernels = toml::from_str::<Kernels>(text).ok()?;
    let agent = kernels.kernel.get(k)?.agent.as_ref()?;
    let before = &text[..agent.span().start];
    let line = before.lines().count().max(1) + usize::from(before.ends_with('\n'));
    let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the error the default scenario with `extra` is refused with.
    fn refused(extra: &str) -> String {
        let scenario = Scenario::parse(&format!("{DEFAULT}\n{extra}"));
        scenario.unwrap_err().to_string()
    }

    #[test]
    fn shipped_scenario_reads_with_its_api_mix() {
        let scenario = Scenario::parse(DEFAULT).unwrap();
        assert!(
            scenario
                .calls
                .iter()
                .any(|c| c.domain == Domain::HsaCoreApi)
        );
    }

    #[test]
    fn calls_name_real_functions_of_api_domains() {
        let e = refused("[[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipLaunchKernal\"\n");
        assert!(
            e.contains("`hipLaunchKernal` is not a function of hip_runtime_api"),
            "{e}"
        );
        assert!(e.contains("line "), "the error says where: {e}");
        let e = refused("[[call]]\ndomain = \"kernel_dispatch\"\nfunction = \"x\"\n");
        assert!(
            e.contains("`kernel_dispatch` is not an API tracing domain"),
            "{e}"
        );
    }

    #[test]
    fn kfd_events_name_real_operations_of_kfd_domains() {
        let e = refused("[[kfd]]\ndomain = \"kfd_queue\"\noperation = \"RESTORE\"\n");
        assert!(
            e.contains("`RESTORE` is not an operation of kfd_queue"),
            "{e}"
        );
        assert!(e.contains("line "), "the error says where: {e}");
        let e = refused("[[kfd]]\ndomain = \"hip_runtime_api\"\noperation = \"x\"\n");
        assert!(
            e.contains("`hip_runtime_api` is not a KFD tracing domain"),
            "{e}"
        );
        let kfd = "[[kfd]]\ndomain = \"kfd_event_queue\"\noperation = \"RESTORE\"\ncount = 3\n";
        let scenario = Scenario::parse(&format!("{DEFAULT}\n{kfd}")).unwrap();
        let (kfd, restore) = (&scenario.kfd[0], 7);
        assert_eq!(
            (kfd.domain, kfd.operation, kfd.count),
            (Domain::KfdEventQueue, restore, 3)
        );
    }

    #[test]
    fn kernels_and_counters_are_checked_where_they_are_written() {
        let kernel = "[[kernel]]\nname = \"k\"\nagent = 7\nduration_ns = 1\ngrid = [1, 1, 1]\nworkgroup = [1, 1, 1]\n";
        let text = format!("{DEFAULT}\n{kernel}");
        let line = text.lines().position(|l| l == "agent = 7").unwrap() + 1;
        let e = Scenario::parse(&text).unwrap_err();
        assert!(
            matches!(&e, ScenarioError::KernelAgent { kernel, agent: 7, place, .. } if kernel == "k" && *place == Some((line, 9))),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("kernel `k` runs on agent 7 of"), "{e}");
        assert!(e.starts_with(&format!("line {line}, column 9: ")), "{e}");
        let e = refused(
            "[[agent]]\nname = \"gfx942\"\n[[agent.counter]]\nname = \"X\"\ndimensions = [[\"DIMENSION_NOPE\", 2]]\n",
        );
        assert!(e.contains("unknown dimension `DIMENSION_NOPE`"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
    }

    #[test]
    fn pacing_takes_a_duration_of_a_millisecond_or_more() {
        let paced = |duration: &str| {
            Scenario::parse(&DEFAULT.replace(
                "iterations = 100\n",
                &format!("iterations = 100\nduration_ms = {duration}\n"),
            ))
        };
        let scenario = paced("2000").unwrap();
        assert_eq!(scenario.scenario.duration_ms.map(|d| d.get()), Some(2000));
        assert_eq!(Scenario::parse(DEFAULT).unwrap().scenario.duration_ms, None);
        let e = paced("0").unwrap_err().to_string();
        assert!(e.contains("expected a nonzero u64"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
    }

    #[test]
    fn counter_definitions_are_found_beside_the_scenario_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let text = DEFAULT.replace(
            "seed = 2025\n",
            "seed = 2025\ncounter_definitions = \"defs/counter_defs.yaml\"\n",
        );
        std::fs::write(&path, text).unwrap();
        let scenario = Scenario::read(&path).unwrap();
        assert_eq!(
            scenario.scenario.counter_definitions,
            Some(dir.path().join("defs/counter_defs.yaml"))
        );
    }

    #[test]
    fn agents_have_a_pci_location_and_what_amd_smi_reads_of_them() {
        let scenario = Scenario::parse(DEFAULT).unwrap();
        let mi300x = &scenario.agents[0];
        assert_eq!(mi300x.pci(0).to_string(), "0000:0c:00.0");
        let smi = mi300x.smi.as_ref().unwrap();
        assert_eq!(smi.power_w, [140, 750]);
        let mut bare = scenario.agents.into_iter().last().unwrap();
        bare.pci = None;
        assert_eq!(bare.pci(2).to_string(), "0000:2c:00.0", "by its index");
        let e = refused(
            "[[agent]]\nname = \"gfx942\"\nproduct = \"p\"\ncu_count = 1\npci = \"0c:00.0\"\n",
        );
        assert!(e.contains("`0c:00.0` is not a PCI location"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
        let smi = "[agent.smi]\npower_w = [1, 2]\ntemperature_c = [1, 2]\ngfx_clock_mhz = [1, 2]\nmem_clock_mhz = [1, 2]\nvram_used_bytes = 0\n";
        let agent = "[[agent]]\nname = \"gfx942\"\nproduct = \"p\"\ncu_count = 1\n";
        let e = refused(&format!("{agent}{smi}mem_busy_percent = [0, 101]\n"));
        assert!(e.contains("101 is not a percentage (0 to 100)"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
        assert!(
            Scenario::parse(&format!(
                "{DEFAULT}\n{agent}{smi}mem_busy_percent = [0, 100]\n"
            ))
            .is_ok()
        );
    }

    /// What rocprofiler-sdk sees on a node without a GPU driver: host API calls, no agent.
    const NO_GPU: &str = "[scenario]\nname = \"no-gpu\"\nthreads = 1\niterations = 2\nmarker_ranges = true\n\n[[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipGetDeviceCount\"\n";

    #[test]
    fn a_node_without_a_gpu_has_host_calls_only() {
        let scenario = Scenario::parse(NO_GPU).unwrap();
        assert!(scenario.agents.is_empty());
        assert_eq!(scenario.calls.len(), 1);
        let allocation = format!("{NO_GPU}[[allocation]]\nbytes = 4096\n");
        let e = Scenario::parse(&allocation).unwrap_err();
        assert!(matches!(e, ScenarioError::NoAgent), "{e:?}");
        assert!(e.to_string().contains("need a GPU"), "{e}");
        let kfd = format!("{NO_GPU}[[kfd]]\ndomain = \"kfd_queue\"\noperation = \"EVICT_SVM\"\n");
        let e = Scenario::parse(&kfd).unwrap_err();
        assert!(matches!(e, ScenarioError::NoAgent), "{e:?}");
    }

    #[test]
    fn a_copy_from_pinned_memory_needs_a_host_allocation_that_holds_it() {
        let copy = "[[copy]]\ndirection = \"host_to_device\"\nbytes = 8192\nduration_ns = 1000\nhost = \"pinned\"\n";
        let e = Scenario::parse(&format!("{DEFAULT}\n{copy}")).unwrap_err();
        assert!(
            matches!(e, ScenarioError::PinnedCopy { bytes: 8192 }),
            "{e:?}"
        );
        let small = "[[allocation]]\nbytes = 4096\nhost = true\n";
        let e = Scenario::parse(&format!("{DEFAULT}\n{small}{copy}")).unwrap_err();
        assert!(matches!(e, ScenarioError::PinnedCopy { .. }), "{e:?}");
        let enough = "[[allocation]]\nbytes = 8192\nhost = true\n";
        let scenario = Scenario::parse(&format!("{DEFAULT}\n{enough}{copy}")).unwrap();
        assert_eq!(scenario.pinned_allocation().unwrap().bytes, 8192);
        assert_eq!(scenario.copies.last().unwrap().host, HostMemory::Pinned);
    }

    /// Work is on the null stream unless it names another, which each thread creates.
    #[test]
    fn work_names_the_streams_each_thread_creates() {
        assert!(
            Scenario::parse(DEFAULT)
                .unwrap()
                .created_streams()
                .is_empty()
        );
        let copy = "[[copy]]\ndirection = \"device_to_host\"\nbytes = 64\nduration_ns = 10\n";
        let text = format!("{DEFAULT}\n{copy}stream = 3\n{copy}stream = 1\n{copy}");
        let scenario = Scenario::parse(&text).unwrap();
        assert_eq!(Vec::from_iter(scenario.created_streams()), [1, 3]);
        assert_eq!(scenario.copies.last().unwrap().stream, 0);
        let example = include_str!("../../../examples/sim/analyze-serialized-copy.toml");
        let scenario = Scenario::parse(example).unwrap();
        assert_eq!(Vec::from_iter(scenario.created_streams()), [1]);
    }

    #[test]
    fn the_simulated_sdk_can_be_an_older_one_without_the_newer_domains() {
        let at = |version: &str, call: &str| {
            Scenario::parse(&format!(
                "{}sdk_version = \"{version}\"\n{call}",
                NO_GPU.split("[[call]]").next().unwrap()
            ))
        };
        assert_eq!(Scenario::parse(NO_GPU).unwrap().sdk_version(), SIMULATED);
        let rocshmem =
            "[[call]]\ndomain = \"rocshmem_api\"\nfunction = \"rocshmem_quiet_on_stream\"\n";
        let older = at("1.3.0", rocshmem).unwrap();
        assert_eq!(older.sdk_version(), SdkVersion(1, 3, 0));
        let e = at("1.0.0", rocshmem).unwrap_err().to_string();
        assert_eq!(
            e,
            "calls of `rocshmem_api` need rocprofiler-sdk 1.3.0 (ROCm 7.13), which is newer than the scenario's rocprofiler-sdk 1.0.0"
        );
        let e = at("0.6.0", "").unwrap_err().to_string();
        assert!(
            e.contains("rocprofiler-sdk 1.0.0 to 1.4.1, not 0.6.0"),
            "{e}"
        );
        let e = at("1.4", "").unwrap_err().to_string();
        assert!(e.contains("`1.4` is not a version such as 1.4.1"), "{e}");
    }
}
