//! The Plan: a validated pipeline compiled into what rocprofiler-sdk, the stage runtime and
//! the sinks need. It is the single artefact every later component reads (the tool library
//! receives it serialized through the environment); nothing downstream re-reads the TOML.

mod bounds;
mod code;
mod confine;
mod explain;
mod plugin;
mod post;
mod prose;
pub mod sink;
pub mod transform;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::kernel_names::KernelNames;
use crate::record::RecordKind;

pub use rocflow_core::contexts::{
    AgentSelector, BufferPlan, ContextPlan, CounterPlan, DEFAULT_FLUSH_INTERVAL_NS,
    DeviceCountingPlan, FORMAT_VERSION, PcSamplingPlan, ReducePlan, SampleAt, SpmPlan, StartPlan,
    TracingPlan,
};

pub use bounds::Bounds;
pub use code::Code;
pub(crate) use explain::describe_start;
pub use explain::explain;
pub use plugin::PluginRef;
pub use post::{Destination, DomainTables, PostPlan, PostStep, SummaryUnit, time_limit};
pub(crate) use prose::{list_or, ranges};
pub use sink::{SinkPlan, Writer};
pub use transform::{Metric, MetricOp, TransformOpPlan, TransformPlan};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub format: u32,
    pub pipeline: Provenance,
    /// Parameter values after `--set`.
    pub params: IndexMap<String, serde_json::Value>,
    /// The directory each run keeps its raw spool in, under a name of its own, with
    /// run-time placeholders (`{hostname}`, …) still to fill. Plans recorded before it
    /// existed kept theirs in `rocflow-out`.
    #[serde(default = "default_spool_dir")]
    pub spool_dir: String,
    pub contexts: Vec<ContextPlan>,
    pub stages: StageGraph,
    pub sinks: Vec<SinkPlan>,
    pub posts: Vec<PostPlan>,
    /// What its queries may read, for a plan followed as anyone may have written it (see
    /// [`Plan::bounded`]); none for one's own. Never recorded: whoever reads a plan decides.
    #[serde(skip)]
    pub bounds: Option<Bounds>,
}

/// Where spools go when the pipeline does not say.
pub const DEFAULT_SPOOL_DIR: &str = "rocflow-out";

fn default_spool_dir() -> String {
    DEFAULT_SPOOL_DIR.to_owned()
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

/// The records' path from the decoder through the transforms to the sinks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StageGraph {
    /// Record kinds the contexts produce.
    pub produced: Vec<RecordKind>,
    /// The form kernels' names take in every output (plans recorded before it existed
    /// had none: they get the default).
    #[serde(default)]
    pub kernel_names: KernelNames,
    /// Transforms in pipeline order.
    pub transforms: Vec<TransformPlan>,
    /// One route per sink, in sink order.
    pub routes: Vec<Route>,
}

/// Which records reach a sink, through which transforms.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Route {
    pub sink: String,
    pub kinds: Vec<RecordKind>,
    /// Indexes into [`StageGraph::transforms`] of the transforms these records pass.
    pub transforms: Vec<usize>,
}

impl Plan {
    /// What `rocflow run` adds to the application's environment, beyond its tool's own
    /// variables: AMD's PC sampling beta turned on when a context samples PCs, since the
    /// SDK refuses PC sampling without it (rocprofv3 sets it for
    /// `--pc-sampling-beta-enabled`), and its SPM beta when a context streams SPM.
    pub fn application_env(&self) -> Vec<(&'static str, &'static str)> {
        rocflow_core::contexts::betas(&self.contexts)
    }

    /// How many times the application runs: once per pass of the context that counts
    /// the most passes (the SDK lets one context count dispatches), once if it replays
    /// each dispatch instead.
    pub fn passes(&self) -> usize {
        (self.contexts.iter())
            .filter_map(|c| c.counters.as_ref())
            .map(|k| k.runs())
            .max()
            .unwrap_or(1)
    }

    /// Whether a sink or a transform takes records of `kind`; others only go to the spool.
    pub fn consumes(&self, kind: RecordKind) -> bool {
        self.sinks.iter().any(|s| s.kinds.contains(&kind))
            || self
                .stages
                .transforms
                .iter()
                .any(|t| t.kinds.contains(&kind))
    }

    /// The serialized form handed to the tool library and kept with the outputs.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan serializes")
    }

    pub fn from_json(text: &str) -> serde_json::Result<Plan> {
        serde_json::from_str(text)
    }
}
