//! The transforms of a pipeline, compiled from the Plan and applied to chunks.
//!
//! Each kind of transform has one home, a module below, that owns all of it: its options
//! as the pipeline declares them and their JSON Schema, its checks, its compiled form in
//! the Plan, its line in `rocflow explain`, and what it does to records. [`kinds!`] lists
//! the homes; the pipeline model, the compiler, `explain` and the schema are driven from
//! that list, so a new kind is a new module and one line there.
//!
//! Most transforms look at one record at a time and run on many chunks in parallel; those
//! that count (kernel iterations, samples), gather (a dispatch's counter values, which may
//! span chunks) or call plugins see chunks one at a time in arrival order, and hand what
//! they still hold over when the records end. A record an expression fails on is dropped
//! (filter) or gets no value (derive), a chunk a plugin fails on goes on as it came; the
//! first failures are kept for the run's report, and a strict transform's first failure
//! stops the run.

mod expr;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::pipeline::TransformCheck;
use crate::plan::TransformPlan;
use crate::record::{Meta, RecordKind};
use crate::table::Table;

pub use aggregate::{Metric, MetricOp};
pub use expr::{ARGS, Expression};
pub use kernel_name::Rename;

/// How a pipeline declares a kind of transform: the keys of its `[[transform]]` entry
/// beyond `name`, `kind`, `records` and `strict`.
trait Declared {
    /// The kind's compiled form.
    type Plan;

    /// The JSON Schema of the kind's own keys: `properties`, and `required` or a
    /// `description` where it has them.
    fn schema() -> Json;

    /// Checks the options against the records the transform takes. `None` when the
    /// transform cannot take its place in the plan (its errors were reported).
    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Self::Plan>;
}

/// A kind of transform as compiled into the Plan.
trait Compiled {
    /// What it does, in one line of `rocflow explain`.
    fn explain(&self) -> String;

    /// The transform, ready to run. The plan was validated, so a failure here means it
    /// was edited by hand; it is reported as such.
    fn build(&self) -> Result<Box<dyn Apply>, String>;
}

/// What a kind of transform does to records, at run time.
trait Apply: Send + Sync + std::fmt::Debug {
    /// Applies the transform to a chunk of a kind it takes.
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>);

    /// Whether chunks must come one at a time, in arrival order.
    fn sequential(&self) -> bool {
        false
    }

    /// Metadata for the records the transform makes, given a stream's metadata as it
    /// grows; applied to the stream before any of its later records.
    fn describe(&self, _stream: u16, _meta: &StreamMeta) -> Vec<Meta> {
        Vec::new()
    }

    /// Records the transform still holds when the run's records end.
    fn finish(&self, _failures: &Failures) -> Vec<Chunk> {
        Vec::new()
    }

    /// The renaming it applies to kernel symbols, for a kernel-name transform.
    fn rename(&self) -> Option<&Rename> {
        None
    }

    /// The table it made, for an aggregate, once every chunk has passed.
    fn table(&self, _name: &str) -> Option<Table> {
        None
    }
}

/// What a transform sees of the run besides the chunk.
struct At<'a> {
    meta: &'a StreamMeta,
    /// The run's first timestamp, for time windows.
    origin_ns: u64,
    failures: &'a Failures,
}

/// Lists the kinds of transform by their homes, and derives from the list the homes'
/// modules, the model's `kind`s, the Plan's compiled forms, and the dispatch to each home.
macro_rules! kinds {
    (
        declared: $($kind:literal => $Kind:ident($home:ident),)*
        compiled: $($Internal:ident($internal:ident),)*
    ) => {
        $(pub mod $home;)*
        $(pub mod $internal;)*

        /// A transform as the pipeline declares it, by its `kind`.
        #[derive(Debug, Deserialize, Serialize)]
        #[serde(tag = "kind")]
        pub enum TransformOp {
            $(#[serde(rename = $kind)] $Kind($home::Options),)*
        }

        /// A transform as compiled into the Plan. Besides the declared kinds, a counter
        /// context compiles into its own stages (see [`counters`]).
        #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum TransformOpPlan {
            $(#[serde(rename = $kind)] $Kind($home::Plan),)*
            $($Internal($internal::Plan),)*
        }

        impl TransformOp {
            /// Every kind a pipeline may declare, with the schema of its own keys.
            pub(crate) fn schemas() -> Vec<(&'static str, Json)> {
                vec![$(($kind, <$home::Options as Declared>::schema()),)*]
            }

            pub(crate) fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<TransformOpPlan> {
                match self {
                    $(TransformOp::$Kind(o) => o.compile(check).map(TransformOpPlan::$Kind),)*
                }
            }
        }

        impl TransformOpPlan {
            fn home(&self) -> &dyn Compiled {
                match self {
                    $(TransformOpPlan::$Kind(p) => p,)*
                    $(TransformOpPlan::$Internal(p) => p,)*
                }
            }
        }
    };
}

kinds! {
    declared:
        "filter" => Filter(filter),
        "derive" => Derive(derive),
        "kernel_name" => KernelName(kernel_name),
        "kernel_filter" => KernelFilter(kernel_filter),
        "time_window" => TimeWindow(time_window),
        "reduce_dimensions" => ReduceDimensions(reduce),
        "aggregate" => Aggregate(aggregate),
        "sample" => Sample(sample),
        "plugin" => Plugin(plugin),
    compiled:
        DeriveCounters(counters),
}

impl TransformOp {
    /// The `$defs/transform` schema: the keys every transform has, and each kind's own.
    pub(crate) fn schema() -> Json {
        let common = ["name", "enabled", "kind", "records"];
        let kinds: Vec<Json> = Self::schemas()
            .into_iter()
            .map(|(kind, mut own)| {
                let properties = own["properties"]
                    .as_object_mut()
                    .expect("kinds list properties");
                for (i, key) in common.iter().enumerate() {
                    properties.shift_insert(i, (*key).to_owned(), Json::Bool(true));
                }
                own["additionalProperties"] = Json::Bool(false);
                json!({ "if": { "properties": { "kind": { "const": kind } } }, "then": own })
            })
            .collect();
        let names: Vec<&str> = Self::schemas().into_iter().map(|(kind, _)| kind).collect();
        json!({
            "type": "object",
            "required": ["name", "kind"],
            "properties": {
                "name": { "$ref": "#/$defs/name" },
                "enabled": { "$ref": "#/$defs/enabled" },
                "kind": { "enum": names },
                "records": { "$ref": "#/$defs/record_kinds" }
            },
            "allOf": kinds
        })
    }
}

impl TransformOpPlan {
    /// What the transform does, in one line of `rocflow explain`.
    pub fn explain(&self) -> String {
        self.home().explain()
    }
}

/// The schema of `strict` for a kind whose records can each fail (an expression's).
fn strict_per_record() -> Json {
    json!({
        "type": "boolean",
        "description": "Stop the run at the first record the expression fails on, instead of reporting the first failures and going on."
    })
}

/// How many failures of one transform are kept with their record for the report.
const KEPT_FAILURES: usize = 5;

/// One transform, ready to run.
#[derive(Debug)]
pub struct Transform {
    pub name: String,
    kinds: Vec<RecordKind>,
    op: Box<dyn Apply>,
    strict: bool,
    failures: Failures,
}

/// Failures of a transform on individual records.
#[derive(Debug, Default)]
pub struct Failures {
    /// Records failed on.
    pub count: AtomicU64,
    /// Failures (each of one or more records), for the first messages.
    failures: AtomicU64,
    pub first: Mutex<Vec<String>>,
}

impl Failures {
    fn record(&self, message: impl FnOnce() -> String) {
        self.record_many(1, message);
    }

    /// A failure that concerns `records` records.
    fn record_many(&self, records: u64, message: impl FnOnce() -> String) {
        self.count.fetch_add(records, Ordering::Relaxed);
        if self.failures.fetch_add(1, Ordering::Relaxed) < KEPT_FAILURES as u64 {
            self.first
                .lock()
                .expect("no panics while holding the lock")
                .push(message());
        }
    }
}

impl Transform {
    /// Compiles a planned transform.
    pub fn new(plan: &TransformPlan) -> Result<Transform, String> {
        Ok(Transform {
            name: plan.name.clone(),
            kinds: plan.kinds.clone(),
            op: plan.op.home().build()?,
            strict: plan.strict,
            failures: Failures::default(),
        })
    }

    pub fn applies_to(&self, kind: RecordKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// Whether chunks must come one at a time, in arrival order.
    pub fn sequential(&self) -> bool {
        self.op.sequential()
    }

    /// Metadata for the records the transform makes (derived counters), given a stream's
    /// metadata as it grows; applied to the stream before any of its later records.
    pub fn describe(&self, stream: u16, meta: &StreamMeta) -> Vec<Meta> {
        self.op.describe(stream, meta)
    }

    /// Records the transform still holds when the run's records end, for the transforms
    /// after it and the sinks.
    pub fn finish(&self) -> Vec<Chunk> {
        self.op.finish(&self.failures)
    }

    /// The renaming a kernel-name transform applies to kernel symbols, if this is one.
    pub fn rename(&self) -> Option<&Rename> {
        self.op.rename()
    }

    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    /// For a strict transform that failed on a record: what it failed on.
    pub fn strict_failure(&self) -> Option<String> {
        if !self.strict || self.failures.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let first = self.failures.first.lock().expect("no poison");
        Some(format!(
            "transform `{}` is strict and failed on a record: {}",
            self.name,
            first.first().map_or("", String::as_str)
        ))
    }

    /// Applies the transform to a chunk of a kind it takes. `origin_ns` is the run's first
    /// timestamp, for time windows.
    pub fn apply(&self, chunk: &mut Chunk, meta: &StreamMeta, origin_ns: u64) {
        let at = At {
            meta,
            origin_ns,
            failures: &self.failures,
        };
        self.op.apply(chunk, &at);
    }

    /// The aggregate table, for an aggregate transform, once every chunk has passed.
    pub fn table(&self) -> Option<Table> {
        self.op.table(&self.name)
    }
}

/// Names a record in a failure message.
fn describe(chunk: &Chunk, i: usize) -> String {
    format!(
        "{} record #{i} of stream {}",
        chunk.batch.kind().name(),
        chunk.stream
    )
}

/// Keeps the records of a chunk for which `keep` holds.
fn retain(chunk: &mut Chunk, keep: impl FnMut(usize) -> bool) {
    let keep: Vec<bool> = (0..chunk.len()).map(keep).collect();
    chunk.retain(&keep);
}
