//! The part of the Plan the tool library reads: the rocprofiler-sdk contexts to create,
//! with their buffers, services and collection periods. The runner compiles pipelines into
//! these; the tool receives them serialized, so both sides share one definition.

use serde::{Deserialize, Serialize};

use crate::record::RecordKind;
use crate::sdk::{AgentType, BufferPolicy, Domain, PcSamplingMethod, PcSamplingUnit};

/// The Plan's serialized format; bumped whenever it changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

/// The SDK's betas that `contexts` need, as the variables of the application's environment
/// that turn them on: PC sampling's when a context samples PCs (the SDK refuses it
/// otherwise; rocprofv3 sets it for `--pc-sampling-beta-enabled`), SPM's when one streams
/// SPM.
pub fn betas(contexts: &[ContextPlan]) -> Vec<(&'static str, &'static str)> {
    let asks = |service: fn(&ContextPlan) -> bool| contexts.iter().any(service);
    let pc = asks(|c| c.pc_sampling.is_some()).then_some((crate::sdk::PC_SAMPLING_BETA, "ON"));
    let spm = asks(|c| c.spm.is_some()).then_some((crate::abi::SPM_BETA, "ON"));
    pc.into_iter().chain(spm).collect()
}

/// The contexts of a serialized Plan, which is all the tool library reads of it.
#[derive(Debug, Clone, Deserialize)]
pub struct PlanContexts {
    pub format: u32,
    pub contexts: Vec<ContextPlan>,
}

/// One rocprofiler-sdk context. All contexts are created in the tool's initialize
/// callback (the SDK allows no other time); `start` says when each is started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContextPlan {
    pub name: String,
    pub buffer: BufferPlan,
    /// Agents the context's device services apply to; empty means every GPU.
    pub agents: Vec<AgentSelector>,
    pub tracing: Vec<TracingPlan>,
    /// Callback tracing of code objects and kernel symbols, so records carry kernel names.
    pub code_objects: bool,
    pub counters: Option<CounterPlan>,
    pub pc_sampling: Option<PcSamplingPlan>,
    /// Counters of whole GPUs, sampled while the context is started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_counting: Option<DeviceCountingPlan>,
    /// Plans recorded before thread trace existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_trace: Option<ThreadTracePlan>,
    /// Plans recorded before SPM existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spm: Option<SpmPlan>,
    pub serialize: bool,
    pub start: StartPlan,
}

impl ContextPlan {
    /// The agents a service of the context applies to: its own selectors, else the
    /// context's.
    pub fn service_agents<'a>(&'a self, own: &'a [AgentSelector]) -> &'a [AgentSelector] {
        if own.is_empty() { &self.agents } else { own }
    }

    /// The agents its counters are counted on.
    pub fn counter_agents(&self) -> &[AgentSelector] {
        self.service_agents(self.counters.as_ref().map_or(&[], |c| &c.agents))
    }

    /// The record kinds this context produces.
    pub fn record_kinds(&self) -> impl Iterator<Item = RecordKind> + '_ {
        self.tracing
            .iter()
            .map(|t| t.domain.record_kind())
            .chain(
                self.tracing
                    .iter()
                    .filter_map(|t| t.domain.queue_record_kind()),
            )
            .chain(self.counters.iter().map(|_| RecordKind::CounterSample))
            .chain(self.pc_sampling.iter().map(|_| RecordKind::PcSample))
            .chain((self.device_counting.iter()).map(|_| RecordKind::DeviceCounterSample))
            .chain(self.spm.iter().map(|_| RecordKind::SpmSample))
    }

    /// The agents its device counters are sampled on.
    pub fn device_counting_agents(&self) -> &[AgentSelector] {
        self.service_agents(
            self.device_counting
                .as_ref()
                .map_or(&[], |d| &d.counters.agents),
        )
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct BufferPlan {
    pub size_bytes: u64,
    pub watermark_bytes: u64,
    pub policy: BufferPolicy,
    /// How often the tool flushes the buffer whatever its fill: an application that ends
    /// without the SDK's finalize (`_exit`, SIGKILL) loses at most this much of its run.
    /// Plans recorded before it existed get the default.
    #[serde(default = "default_flush_interval")]
    pub flush_interval_ns: u64,
}

/// A second: records reach the runner while the application runs, at no measurable cost
/// (a flush of a quiet buffer is a lock and a check).
pub const DEFAULT_FLUSH_INTERVAL_NS: u64 = 1_000_000_000;

fn default_flush_interval() -> u64 {
    DEFAULT_FLUSH_INTERVAL_NS
}

/// Which agents a service applies to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum AgentSelector {
    Index(u32),
    Type(AgentType),
    /// A gfx name or glob (`gfx942`, `gfx9*`).
    Gfx(String),
}

impl AgentSelector {
    /// Whether the selector picks a GPU, given its index among the GPUs and its gfx name.
    pub fn selects_gpu(&self, index: u32, gfx: &str) -> bool {
        match self {
            AgentSelector::Index(i) => *i == index,
            AgentSelector::Type(t) => *t == AgentType::Gpu,
            AgentSelector::Gfx(pattern) => glob(pattern, gfx),
        }
    }

    /// Whether any of `selectors` picks the GPU, where no selector at all picks every GPU.
    pub fn any_selects_gpu(selectors: &[AgentSelector], index: u32, gfx: &str) -> bool {
        selectors.is_empty() || selectors.iter().any(|s| s.selects_gpu(index, gfx))
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len()).any(|i| tail.is_char_boundary(i) && glob(rest, &tail[i..]))
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracingPlan {
    pub domain: Domain,
    /// The operation ids to trace; `None` traces all of them.
    pub operations: Option<Vec<i32>>,
    /// The other contexts that asked for this service. rocprofiler-sdk gives a record to
    /// every context that traces its kind, so each service is traced in one context only,
    /// and its records reach the outputs once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_for: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CounterPlan {
    /// Counter names as requested (hardware or derived).
    pub collect: Vec<String>,
    /// Derived counters the pipeline defines: name and expression.
    pub derived: Vec<(String, String)>,
    pub reduce: Vec<ReducePlan>,
    pub kernel_include: Option<String>,
    pub kernel_exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
    pub agents: Vec<AgentSelector>,
    /// The counter definition file the names were checked against, if one was found.
    pub definitions: Option<String>,
    /// The counted counters, split into the passes that together count them, each run of
    /// the application counting one (see [`CounterPlan::pass`]). Plans recorded before
    /// passes existed have none: one pass counts all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<Vec<String>>,
    /// How the passes run: one run of the application each, or every dispatch replayed
    /// once per pass in one run. Plans recorded before kernel replay existed run the
    /// application.
    #[serde(default, skip_serializing_if = "Replay::is_application")]
    pub replay: Replay,
}

/// How a counter context's passes are run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Replay {
    /// The application runs once per pass; the runs are merged.
    #[default]
    Application,
    /// rocprofiler-sdk's kernel replay: the application runs once and each dispatch it
    /// counts runs once per pass, its device memory restored between passes.
    Kernel,
}

impl Replay {
    pub const NAMES: &[&str] = &["application", "kernel"];

    pub fn is_application(&self) -> bool {
        *self == Replay::Application
    }
}

impl CounterPlan {
    /// How many passes count every counter.
    pub fn pass_count(&self) -> usize {
        self.passes.len().max(1)
    }

    /// How many runs of the application count every counter: one per pass, unless each
    /// dispatch is replayed.
    pub fn runs(&self) -> usize {
        match self.replay {
            Replay::Application => self.pass_count(),
            Replay::Kernel => 1,
        }
    }

    /// The counters pass `index` (from 0) counts.
    pub fn pass(&self, index: usize) -> Vec<&String> {
        match self.passes.get(index) {
            Some(pass) => pass.iter().collect(),
            None if self.passes.is_empty() => self.counted().collect(),
            None => Vec::new(),
        }
    }

    /// The counters the SDK counts: those collected that the pipeline does not derive
    /// itself (a derived counter may take the name of one the SDK defines).
    pub fn counted(&self) -> impl Iterator<Item = &String> {
        (self.collect.iter()).filter(|name| !self.derived.iter().any(|(d, _)| d == *name))
    }
}

/// rocprofiler-sdk's device counting service: the counters of whole GPUs, read on demand
/// while the application runs at full speed (no dispatch is intercepted or serialized).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceCountingPlan {
    /// What is counted, in the counter language of dispatch counting; its kernel filters
    /// and iterations stay unset, since no dispatch is singled out.
    pub counters: CounterPlan,
    /// When the counters are read.
    pub at: SampleAt,
    /// Between two reads, while the context is started.
    pub interval_ns: u64,
    /// The device metrics AMD-SMI gives, read with the counters at each read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<crate::smi::Metric>,
}

/// SPM, streaming performance monitors (a beta of rocprofiler-sdk since 1.3.0): the
/// hardware counters of each selected dispatch, streamed at an interval of shader clock
/// cycles, so a kernel's counters become a time series over its run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpmPlan {
    /// Hardware counters by name (SPM streams no derived counter).
    pub counters: Vec<String>,
    /// Between two samples, in shader clock (SCLK) cycles, as the SDK takes it.
    pub interval_cycles: u64,
    pub kernel_include: Option<String>,
    pub kernel_exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
    pub agents: Vec<AgentSelector>,
}

/// When a device counting context reads its counters.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SampleAt {
    /// Every interval.
    Interval,
    /// Every interval, and when a ROCTx range is pushed or popped.
    Markers,
}

impl SampleAt {
    pub const NAMES: &[&str] = &["interval", "markers"];
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReducePlan {
    /// Counters the reduction applies to; empty means all.
    pub counters: Vec<String>,
    pub dimensions: Vec<String>,
    pub op: ReduceOp,
}

/// Thread trace of a context: which dispatches, on which agents, with the SDK's
/// parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadTracePlan {
    #[serde(default)]
    pub mode: TraceMode,
    /// The folder the raw traces and code objects are kept in, and the decoded tables
    /// written to (run-time placeholders filled per process).
    pub path: String,
    pub target_cu: u8,
    /// Bitmask of SIMDs (gfx9) or a SIMD id (gfx10 on).
    pub simd_select: u8,
    pub shader_engine_mask: u64,
    pub buffer_bytes: u64,
    /// Counters sampled into the trace (gfx9), each with its SIMD mask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perfcounters: Vec<TracePerfcounter>,
    /// Their sampling period; 0 when there are none.
    pub perfcounter_period: u8,
    /// Serialize the dispatches that are not traced as well.
    pub serialize_all: bool,
    pub kernel_include: Option<String>,
    pub kernel_exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
    pub agents: Vec<AgentSelector>,
    /// Where the runner looks for AMD's trace decoder library first (rocprofv3's
    /// `--att-library-path`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decoder_paths: Vec<String>,
}

/// Which of the SDK's thread-trace services a context uses.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TraceMode {
    /// The dispatches the kernel filter takes, one trace each (the dispatch service).
    #[default]
    Dispatch,
    /// All the agent runs while the context is started (the device service): the
    /// context's start and stop, a collection period or a ROCTx range bound the trace.
    Device,
}

impl TraceMode {
    pub const NAMES: &[&str] = &["dispatch", "device"];
}

/// A counter sampled into the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracePerfcounter {
    pub name: String,
    pub simd_mask: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PcSamplingPlan {
    pub method: PcSamplingMethod,
    pub unit: PcSamplingUnit,
    pub interval: u64,
    pub agents: Vec<AgentSelector>,
}

/// When a context runs: rocprofv3's collection period plus starting paused.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct StartPlan {
    /// Stays stopped until `roctxProfilerResume`.
    pub paused: bool,
    pub delay_ns: u64,
    /// Collect for this long, then stop; `None` collects until the end.
    pub duration_ns: Option<u64>,
    /// Pause between repeated collection periods.
    pub interval_ns: u64,
    /// Further periods after the first (0 = just one).
    pub repeat: u32,
}

impl StartPlan {
    /// Whether a context that runs by this plan is started whenever one running by `other`
    /// is: it collects from initialization to the end, or by the same plan.
    pub fn covers(&self, other: &StartPlan) -> bool {
        self == other || *self == StartPlan::default()
    }
}

/// How counter values are combined across a dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReduceOp {
    Sum,
    Avg,
    Min,
    Max,
}

/// A set of kernel iterations (1-based dispatch counts per kernel), as rocprofv3's
/// `--kernel-iteration-range` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRanges(pub Vec<IterationRange>);

/// An inclusive range; `last = None` means "and every later iteration".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRange {
    pub first: u64,
    pub last: Option<u64>,
}

/// What is wrong with a part of written iteration ranges; each variant holds the part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangesError {
    #[error("`{0}` is not a range; write `[first-last]` or `[n]`")]
    NotARange(String),
    #[error("`{number}` in `{part}` is not an iteration number")]
    NotANumber { number: String, part: String },
    #[error("`{0}`: iterations count from 1")]
    FromZero(String),
    #[error("`{0}` ends before it starts")]
    Backwards(String),
}

impl IterationRanges {
    /// Parses "[1-10],[20]" or "[5-]".
    pub fn parse(text: &str) -> Result<Self, RangesError> {
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim) {
            let inner = part
                .strip_prefix('[')
                .and_then(|p| p.strip_suffix(']'))
                .ok_or_else(|| RangesError::NotARange(part.into()))?;
            let number = |s: &str| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| RangesError::NotANumber {
                        number: s.trim().into(),
                        part: part.into(),
                    })
            };
            let range = match inner.split_once('-') {
                Some((first, "")) => IterationRange {
                    first: number(first)?,
                    last: None,
                },
                Some((first, last)) => IterationRange {
                    first: number(first)?,
                    last: Some(number(last)?),
                },
                None => {
                    let n = number(inner)?;
                    IterationRange {
                        first: n,
                        last: Some(n),
                    }
                }
            };
            if range.first == 0 {
                return Err(RangesError::FromZero(part.into()));
            }
            if range.last.is_some_and(|last| last < range.first) {
                return Err(RangesError::Backwards(part.into()));
            }
            ranges.push(range);
        }
        Ok(IterationRanges(ranges))
    }

    /// Whether the n-th dispatch (1-based) of a kernel is profiled.
    pub fn contains(&self, iteration: u64) -> bool {
        self.0
            .iter()
            .any(|r| iteration >= r.first && r.last.is_none_or(|last| iteration <= last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_selectors() {
        let gfx = |p: &str| AgentSelector::Gfx(p.into());
        assert!(gfx("gfx9*").selects_gpu(0, "gfx942"));
        assert!(gfx("gfx942").selects_gpu(3, "gfx942"));
        assert!(!gfx("gfx94*").selects_gpu(0, "gfx90a"));
        assert!(gfx("gfx*a").selects_gpu(0, "gfx90a"));
        assert!(AgentSelector::Index(1).selects_gpu(1, "gfx90a"));
        assert!(!AgentSelector::Index(1).selects_gpu(0, "gfx90a"));
        assert!(AgentSelector::Type(AgentType::Gpu).selects_gpu(5, "gfx1100"));
        assert!(!AgentSelector::Type(AgentType::Cpu).selects_gpu(0, "gfx942"));
    }
}
