//! The Plan: a validated pipeline compiled into what rocprofiler-sdk, the stage runtime and
//! the sinks need. It is the single artefact every later component reads (the tool library
//! receives it serialized through the environment); nothing downstream re-reads the TOML.

mod code;
mod confine;
mod explain;
mod plugin;
mod post;
mod prose;
pub mod transform;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::kernel_names::KernelNames;
use crate::pipeline::model::SinkKind;
use crate::record::RecordKind;
use crate::sink::Format;

pub use rocflow_core::contexts::{
    AgentSelector, BufferPlan, ContextPlan, CounterPlan, DEFAULT_FLUSH_INTERVAL_NS, FORMAT_VERSION,
    PcSamplingPlan, ReducePlan, StartPlan, TracingPlan,
};

pub use code::Code;
pub use confine::Bounds;
pub(crate) use explain::describe_start;
pub use explain::explain;
pub use plugin::PluginRef;
pub use post::{PostPlan, PostStep};
pub(crate) use prose::{list_or, ranges};
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "RecordedSink", into = "RecordedSink")]
pub struct SinkPlan {
    pub name: String,
    pub writer: Writer,
    /// The output path with run-time placeholders (`{pid}`, …) still in it.
    pub path: String,
    pub kinds: Vec<RecordKind>,
}

/// What writes a sink's output, with its options: a format's are read when the pipeline
/// is compiled, a plugin's are handed to it as JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Writer {
    /// One of rocflow's formats.
    Builtin(Format),
    Plugin {
        plugin: PluginRef,
        options: serde_json::Map<String, serde_json::Value>,
    },
}

impl SinkPlan {
    /// Whether the sink writes rocflow's format `kind`.
    pub fn writes(&self, kind: SinkKind) -> bool {
        matches!(&self.writer, Writer::Builtin(format) if format.kind() == kind)
    }

    /// The options as a pipeline writes them: a format's where they differ from its
    /// defaults, a plugin's all.
    pub fn options(&self) -> serde_json::Map<String, serde_json::Value> {
        match &self.writer {
            Writer::Builtin(format) => format.written(),
            Writer::Plugin { options, .. } => options.clone(),
        }
    }
}

/// A sink as a serialized plan holds it, as plans have since before options were typed:
/// the format's name (or the plugin) in `kind`, the options as JSON.
#[derive(Serialize, Deserialize)]
struct RecordedSink {
    name: String,
    kind: RecordedWriter,
    path: String,
    kinds: Vec<RecordKind>,
    options: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RecordedWriter {
    Builtin(SinkKind),
    Plugin(PluginRef),
}

impl TryFrom<RecordedSink> for SinkPlan {
    type Error = String;

    fn try_from(sink: RecordedSink) -> Result<SinkPlan, String> {
        let writer = match sink.kind {
            RecordedWriter::Builtin(kind) => Writer::Builtin(
                Format::parse(kind, &sink.options)
                    .map_err(|e| format!("the options of sink `{}`: {e}", sink.name))?,
            ),
            RecordedWriter::Plugin(plugin) => Writer::Plugin {
                plugin,
                options: sink.options,
            },
        };
        Ok(SinkPlan {
            name: sink.name,
            writer,
            path: sink.path,
            kinds: sink.kinds,
        })
    }
}

impl From<SinkPlan> for RecordedSink {
    fn from(sink: SinkPlan) -> RecordedSink {
        let options = sink.options();
        let kind = match sink.writer {
            Writer::Builtin(format) => RecordedWriter::Builtin(format.kind()),
            Writer::Plugin { plugin, .. } => RecordedWriter::Plugin(plugin),
        };
        RecordedSink {
            name: sink.name,
            kind,
            path: sink.path,
            kinds: sink.kinds,
            options,
        }
    }
}

impl Plan {
    /// What `rocflow run` adds to the application's environment, beyond its tool's own
    /// variables: AMD's PC sampling beta turned on when a context samples PCs, since the
    /// SDK refuses PC sampling without it (rocprofv3 sets it for
    /// `--pc-sampling-beta-enabled`).
    pub fn application_env(&self) -> Vec<(&'static str, &'static str)> {
        let sampled = self.contexts.iter().any(|c| c.pc_sampling.is_some());
        sampled
            .then_some((crate::sdk::PC_SAMPLING_BETA, "ON"))
            .into_iter()
            .collect()
    }

    /// How many times the application runs: once per pass of the context that counts
    /// the most passes (the SDK lets one context count dispatches).
    pub fn passes(&self) -> usize {
        (self.contexts.iter())
            .filter_map(|c| c.counters.as_ref())
            .map(|k| k.pass_count())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Plans recorded in spools before there were plugins name a sink's format in `kind`.
    #[test]
    fn sinks_serialize_their_writer_as_kind() {
        let recorded = r#"{"name":"t","kind":"csv","path":"out","kinds":[],"options":{}}"#;
        let sink: SinkPlan = serde_json::from_str(recorded).unwrap();
        assert!(sink.writes(SinkKind::Csv));
        assert_eq!(serde_json::to_string(&sink).unwrap(), recorded);
        let plugin = SinkPlan {
            writer: Writer::Plugin {
                plugin: PluginRef {
                    name: "openmetrics".into(),
                    library: "/lib/librocflow_plugin_openmetrics.so".into(),
                },
                options: serde_json::from_str(r#"{"labels":{"job":"x"}}"#).unwrap(),
            },
            ..sink
        };
        let json = serde_json::to_string(&plugin).unwrap();
        assert!(
            json.contains(r#""kind":{"name":"openmetrics","library":"/lib/"#),
            "{json}"
        );
        assert!(
            json.ends_with(r#""options":{"labels":{"job":"x"}}}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<SinkPlan>(&json).unwrap(), plugin);
    }

    /// A sink recorded before options were typed (as JSON, every value as the pipeline
    /// wrote it) reads into its format's options, and is written back the same.
    #[test]
    fn recorded_sink_options_read_typed() {
        let recorded = r#"{"name":"trace","kind":"perfetto","path":"t.pftrace","kinds":["api"],"options":{"split_size":"512MiB","time_unit":"us"}}"#;
        let sink: SinkPlan = serde_json::from_str(recorded).unwrap();
        let Writer::Builtin(Format::Perfetto(options)) = &sink.writer else {
            panic!("{sink:?}")
        };
        assert_eq!(
            options.split_size.as_ref().map(|s| s.bytes),
            Some(512 << 20)
        );
        assert!(options.flows);
        assert_eq!(serde_json::to_string(&sink).unwrap(), recorded);
        let bad = recorded.replace("512MiB", "512 parsecs");
        let e = serde_json::from_str::<SinkPlan>(&bad).unwrap_err();
        assert!(
            e.to_string().starts_with("the options of sink `trace`: "),
            "{e}"
        );
    }
}
