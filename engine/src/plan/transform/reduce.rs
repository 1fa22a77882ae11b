//! `reduce_dimensions` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `reduce` module.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use rocflow_core::contexts::ReduceOp;
use crate::diag::Step;
use crate::record::RecordKind;

use super::kind::{Check, Compiled, Declared};

/// Declared and compiled alike.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Options {
    /// Counter names the reduction applies to; empty means all.
    #[serde(default)]
    pub counters: Vec<String>,
    pub dimensions: Vec<String>,
    pub op: ReduceOp,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "required": ["dimensions", "op"],
            "properties": {
                "counters": { "type": "array", "items": { "type": "string" } },
                "dimensions": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                "op": { "enum": ["sum", "avg", "min", "max"] }
            }
        })
    }

    fn compile(&self, check: &mut impl Check) -> Option<Options> {
        check.dimensions(&[Step::Key("dimensions")], &self.dimensions);
        if check
            .kinds()
            .iter()
            .any(|&k| k != RecordKind::CounterSample)
        {
            check
                .error(
                    &[Step::Key("kind")],
                    "dimension reductions apply to counter samples only",
                )
                .hint = Some("add `records = [\"counter_sample\"]`".into());
        }
        Some(self.clone())
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        let counters = if self.counters.is_empty() {
            "all counters".to_owned()
        } else {
            self.counters.join(", ")
        };
        format!(
            "{:?} of {counters} over {}",
            self.op,
            self.dimensions.join(", ")
        )
    }
}
