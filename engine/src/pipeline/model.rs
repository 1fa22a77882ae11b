//! The pipeline document as typed Rust values, read from the merged tree once the schema
//! has accepted it. Values stay as the user wrote them (sizes as text, names as strings);
//! the checks and the compiler turn them into the Plan.
//!
//! The types also serialize, for programs that write pipelines (`rocflow import-rocprofv3`):
//! defaults are left out, so a written pipeline holds only what was set.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub use crate::kernel_names::KernelNames;
use crate::plan::PostStep;
use crate::plan::sink::SinkKind;
use crate::plan::transform::TransformOp;
use crate::units::Quantity;

/// An agent selector: an index, or a type or gfx name (globs allowed).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AgentRef {
    Index(u32),
    Name(String),
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    #[serde(default)]
    pub pipeline: Header,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub params: IndexMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<Context>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transform: Vec<Transform>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sink: Vec<Sink>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post: Vec<Post>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Where runs keep their raw spools (one file per run).
    pub spool_dir: Option<String>,
    /// The form kernel names take in every output (demangled when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_names: Option<KernelNames>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tracing: Vec<Tracing>,
    #[serde(default, skip_serializing_if = "Buffer::is_empty")]
    pub buffer: Buffer,
    pub counters: Option<Counters>,
    pub pc_sampling: Option<PcSampling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_counters: Option<DeviceCounters>,
    pub thread_trace: Option<ThreadTrace>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spm: Option<Spm>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serialize: bool,
    /// Collect the arguments of the traced API calls.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub args: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
    pub period: Option<Period>,
}

/// A traced domain, with an optional filter on its operations.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Tracing {
    Domain(String),
    Filtered {
        domain: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        include: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exclude: Vec<String>,
    },
}

impl Tracing {
    pub fn domain(&self) -> &str {
        match self {
            Tracing::Domain(d) | Tracing::Filtered { domain: d, .. } => d,
        }
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    pub size: Option<Quantity>,
    pub watermark: Option<Quantity>,
    pub policy: Option<crate::sdk::BufferPolicy>,
    pub flush_interval: Option<Quantity>,
}

impl Buffer {
    /// Nothing set: the compiler's defaults apply.
    pub fn is_empty(&self) -> bool {
        self.size.is_none()
            && self.watermark.is_none()
            && self.policy.is_none()
            && self.flush_interval.is_none()
    }
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Counters {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<String>,
    pub definitions: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<DerivedCounter>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reduce: Vec<Reduction>,
    #[serde(default, skip_serializing_if = "KernelFilter::is_empty")]
    pub kernels: KernelFilter,
    pub iterations: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
    /// At most this many collected counters per pass (more passes than the hardware
    /// needs, e.g. to test a multi-pass run on a small context).
    pub per_pass: Option<usize>,
    /// How the passes run: `"application"` (the default) or `"kernel"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<rocflow_core::contexts::Replay>,
}

/// `[context.device_counters]`: a counter table as `[context.counters]` writes one, less
/// what singles out dispatches (none is), and when the counters are read.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceCounters {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<String>,
    pub definitions: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<DerivedCounter>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reduce: Vec<Reduction>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
    /// Between two reads (`"10ms"`).
    pub interval: Option<Quantity>,
    pub at: Option<rocflow_core::contexts::SampleAt>,
    /// Device metrics read through AMD-SMI at each read (`power_w`, `temperature_c`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<rocflow_core::smi::Metric>,
}

impl DeviceCounters {
    /// The table as a `[context.counters]` one, which the counter checks read.
    pub fn counter_table(&self) -> Counters {
        Counters {
            collect: self.collect.clone(),
            definitions: self.definitions.clone(),
            derived: self.derived.clone(),
            reduce: self.reduce.clone(),
            kernels: KernelFilter::default(),
            iterations: None,
            agents: self.agents.clone(),
            per_pass: None,
            replay: None,
        }
    }
}

/// `[context.spm]`: SPM's hardware counters of each selected dispatch, streamed at an
/// interval of shader clock cycles; a counter table less what the runner computes
/// (derived counters, reductions).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spm {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<String>,
    pub definitions: Option<String>,
    /// Between two samples, in shader clock (SCLK) cycles.
    pub interval: Option<u64>,
    #[serde(default, skip_serializing_if = "KernelFilter::is_empty")]
    pub kernels: KernelFilter,
    pub iterations: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
}

impl Spm {
    /// The table as a `[context.counters]` one, which the counter checks read.
    pub fn counter_table(&self) -> Counters {
        Counters {
            collect: self.collect.clone(),
            definitions: self.definitions.clone(),
            derived: Vec::new(),
            reduce: Vec::new(),
            kernels: self.kernels.clone(),
            iterations: self.iterations.clone(),
            agents: self.agents.clone(),
            per_pass: None,
            replay: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DerivedCounter {
    pub name: String,
    pub expression: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reduction {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<String>,
    pub dimensions: Vec<String>,
    pub op: ReduceOp,
}

pub use rocflow_core::contexts::ReduceOp;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFilter {
    pub include: Option<String>,
    pub exclude: Option<String>,
}

impl KernelFilter {
    /// No filter: every kernel is profiled.
    pub fn is_empty(&self) -> bool {
        self.include.is_none() && self.exclude.is_none()
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PcSampling {
    pub method: crate::sdk::PcSamplingMethod,
    pub unit: Option<crate::sdk::PcSamplingUnit>,
    pub interval: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
}

/// `[context.thread_trace]`: rocprofv3's `--att` options.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadTrace {
    /// `dispatch` (the default) or `device`.
    pub mode: Option<rocflow_core::contexts::TraceMode>,
    pub path: String,
    pub target_cu: Option<u64>,
    pub simd_select: Option<u64>,
    pub shader_engine_mask: Option<u64>,
    pub buffer_size: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perfcounters: Vec<TracePerfcounter>,
    pub perfcounter_period: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serialize_all: bool,
    #[serde(default, skip_serializing_if = "KernelFilter::is_empty")]
    pub kernels: KernelFilter,
    pub iterations: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decoder_paths: Vec<String>,
}

/// A counter sampled into a thread trace: its name, or its name and SIMD mask.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum TracePerfcounter {
    Name(String),
    Masked { name: String, simd_mask: u64 },
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Period {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    pub delay: Option<Quantity>,
    pub duration: Option<Quantity>,
    pub interval: Option<Quantity>,
    pub repeat: Option<u32>,
}

/// A `[[transform]]` entry: what every transform has, and its kind's own options (each
/// kind's home in [`crate::transform`] defines them).
#[derive(Debug, Deserialize, Serialize)]
pub struct Transform {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<String>,
    /// Stop the run at the first record the transform fails on (filter and derive).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    #[serde(flatten)]
    pub op: TransformOp,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sink {
    pub name: String,
    pub kind: SinkType,
    /// The plugin of a `kind = "plugin"` sink: a name or a path (the schema requires it
    /// there, and only there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// A sink's `kind`: one of rocflow's formats, or `"plugin"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SinkType {
    Builtin(SinkKind),
    Plugin(PluginWord),
}

/// The word `plugin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginWord {
    Plugin,
}

#[derive(Debug, Deserialize, Serialize)]
pub struct Post {
    pub name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(flatten)]
    pub step: PostStep,
}
