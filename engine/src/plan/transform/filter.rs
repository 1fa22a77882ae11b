//! `filter` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `filter` module.

use evalexpr::Value;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::diag::Step;

use super::kind::{Check, Compiled, Declared, strict_per_record};

/// Declared and compiled alike: the expression is checked, and kept as written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Options {
    pub predicate: String,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "required": ["predicate"],
            "properties": {
                "predicate": { "type": "string" },
                "strict": strict_per_record()
            }
        })
    }

    fn compile(&self, check: &mut impl Check) -> Option<Options> {
        let results = check.expression("predicate", &self.predicate);
        if let Some(value) = results.iter().find(|v| !v.is_boolean()) {
            let message = format!(
                "a filter must be true or false, but this gives {}",
                describe_value(value)
            );
            check.error(&[Step::Key("predicate")], message).hint =
                Some("compare the value, e.g. `duration_ns > 1000`".into());
        }
        Some(self.clone())
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        format!("keep where {}", self.predicate)
    }
}

fn describe_value(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Float(_) | Value::Int(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Tuple(_) => "a tuple",
        Value::Empty => "nothing",
    }
}
