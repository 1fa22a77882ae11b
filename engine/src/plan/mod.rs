//! The Plan: a validated pipeline compiled into what rocprofiler-sdk, the stage runtime and
//! the sinks need. It is the single artefact every later component reads (the tool library
//! receives it serialized through the environment); nothing downstream re-reads the TOML.

mod explain;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::pipeline::model::{PostStep, ReduceOp, SinkKind};
use crate::pipeline::units::IterationRanges;
use crate::record::RecordKind;
use crate::sdk::{AgentType, BufferPolicy, Domain, PcSamplingMethod, PcSamplingUnit};

pub use explain::explain;

/// Bumped whenever the serialized form changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub format: u32,
    pub pipeline: Provenance,
    /// Parameter values after `--set`.
    pub params: IndexMap<String, serde_json::Value>,
    pub contexts: Vec<ContextPlan>,
    pub stages: StageGraph,
    pub sinks: Vec<SinkPlan>,
    pub posts: Vec<PostPlan>,
}

/// Where the plan came from, recorded in every output's metadata.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub name: String,
    pub description: Option<String>,
    /// The files merged into the pipeline, templates first.
    pub sources: Vec<String>,
    /// A hash of the resolved pipeline, to tell runs of different pipelines apart.
    pub hash: String,
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
    pub serialize: bool,
    pub start: StartPlan,
}

impl ContextPlan {
    /// The record kinds this context produces.
    pub fn record_kinds(&self) -> impl Iterator<Item = RecordKind> + '_ {
        self.tracing
            .iter()
            .map(|t| t.domain.record_kind())
            .chain(self.counters.iter().map(|_| RecordKind::CounterSample))
            .chain(self.pc_sampling.iter().map(|_| RecordKind::PcSample))
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct BufferPlan {
    pub size_bytes: u64,
    pub watermark_bytes: u64,
    pub policy: BufferPolicy,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracingPlan {
    pub domain: Domain,
    /// The operation ids to trace; `None` traces all of them.
    pub operations: Option<Vec<i32>>,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReducePlan {
    /// Counters the reduction applies to; empty means all.
    pub counters: Vec<String>,
    pub dimensions: Vec<String>,
    pub op: ReduceOp,
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

/// The records' path from the decoder through the transforms to the sinks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageGraph {
    /// Record kinds the contexts produce.
    pub produced: Vec<RecordKind>,
    /// Transforms in pipeline order.
    pub transforms: Vec<TransformPlan>,
    /// One route per sink, in sink order.
    pub routes: Vec<Route>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TransformPlan {
    pub name: String,
    pub kinds: Vec<RecordKind>,
    /// A record the transform fails on stops the run instead of being reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    pub op: TransformOpPlan,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransformOpPlan {
    Filter {
        predicate: String,
    },
    Derive {
        column: String,
        expression: String,
    },
    KernelName {
        demangle: bool,
        truncate: Option<u32>,
        rename: Vec<(String, String)>,
    },
    KernelFilter {
        include: Option<String>,
        exclude: Option<String>,
        iterations: Option<IterationRanges>,
    },
    /// Times are relative to the run's first record.
    TimeWindow {
        start_ns: u64,
        end_ns: Option<u64>,
    },
    ReduceDimensions {
        counters: Vec<String>,
        dimensions: Vec<String>,
        op: ReduceOp,
    },
    Aggregate {
        group_by: Vec<String>,
        metrics: Vec<Metric>,
    },
}

/// One output column of an aggregate: `name = op(column)`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    pub name: String,
    pub op: MetricOp,
    /// `None` for `count()`.
    pub column: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MetricOp {
    Count,
    Sum,
    Mean,
    Min,
    Max,
    Stddev,
    P50,
    P90,
    P95,
    P99,
}

impl MetricOp {
    pub const NAMES: &[&str] = &[
        "count", "sum", "mean", "min", "max", "stddev", "p50", "p90", "p95", "p99",
    ];

    pub fn from_name(name: &str) -> Option<MetricOp> {
        use MetricOp::*;
        let ops = [Count, Sum, Mean, Min, Max, Stddev, P50, P90, P95, P99];
        MetricOp::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| ops[i])
    }
}

/// Which records reach a sink, through which transforms.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Route {
    pub sink: String,
    pub kinds: Vec<RecordKind>,
    /// Indexes into [`StageGraph::transforms`] of the transforms these records pass.
    pub transforms: Vec<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SinkPlan {
    pub name: String,
    pub kind: SinkKind,
    /// The output path with run-time placeholders (`{pid}`, …) still in it.
    pub path: String,
    pub kinds: Vec<RecordKind>,
    pub options: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostPlan {
    pub name: String,
    /// A failure of this step fails the run.
    pub required: bool,
    pub step: PostStep,
}

impl Plan {
    /// The serialized form handed to the tool library and kept with the outputs.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan serializes")
    }

    pub fn from_json(text: &str) -> serde_json::Result<Plan> {
        serde_json::from_str(text)
    }
}
