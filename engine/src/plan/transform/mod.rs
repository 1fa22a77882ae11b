//! The transforms of a Plan: each kind's specification, found through one list.
//!
//! Each kind of transform has one home, a module below, that owns its options as the
//! pipeline declares them and their JSON Schema, its checks, its compiled form in the Plan
//! and its line in `rocflow explain` (see `kind.rs`). `kinds!` lists the homes; the
//! pipeline model, the compiler, `explain` and the schema are driven from that list, so a
//! new kind is a new module, one line there, and what it does to records under
//! `crate::transform`.

mod kind;

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::record::RecordKind;

pub use aggregate::{Metric, MetricOp};
pub use kind::Check;
use kind::{Compiled, Declared};

/// A transform of the Plan: what it takes, and what it does.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TransformPlan {
    pub name: String,
    pub kinds: Vec<RecordKind>,
    /// A record the transform fails on stops the run instead of being reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    pub op: TransformOpPlan,
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

            pub(crate) fn compile(&self, check: &mut impl Check) -> Option<TransformOpPlan> {
                match self {
                    $(TransformOp::$Kind(o) => o.compile(check).map(TransformOpPlan::$Kind),)*
                }
            }
        }

        impl TransformOpPlan {
            /// The home of the kind, as compiled.
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
