//! `sample` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `sample` module.


use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};


use super::kind::{Check, Compiled, Declared};

/// Declared and compiled alike.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
pub struct Options {
    /// Keep one record in this many.
    pub every: u64,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "description": "Keeps every Nth record of each kind of each process: the first, then one in `every`.",
            "required": ["every"],
            "properties": {
                "every": { "type": "integer", "minimum": 1, "description": "Keep one record in this many." }
            }
        })
    }

    fn compile(&self, _check: &mut impl Check) -> Option<Options> {
        Some(*self)
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        format!(
            "keep one record in {} of each kind of each process",
            self.every
        )
    }
}
