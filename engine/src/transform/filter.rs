//! `filter`: keeps the records for which an expression is true.

use evalexpr::Value;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::chunk::Chunk;
use crate::pipeline::{Step, TransformCheck};

use super::{Apply, At, Compiled, Declared, Expression, describe, retain};

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
                "strict": super::strict_per_record()
            }
        })
    }

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Options> {
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

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        Ok(Box::new(Filter(Expression::compile(&self.predicate)?)))
    }
}

#[derive(Debug)]
struct Filter(Expression);

impl Apply for Filter {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let mut scratch = Vec::new();
        let verdicts: Vec<bool> = (0..chunk.len())
            .map(|i| match self.0.eval(chunk, i, at.meta, &mut scratch) {
                Ok(Value::Boolean(keep)) => keep,
                // A call without an argument the filter reads (see `expr`).
                Ok(Value::Empty) => false,
                Ok(other) => {
                    at.failures.record(|| {
                        format!(
                            "{}: the filter gave {other}, not true or false",
                            describe(chunk, i)
                        )
                    });
                    false
                }
                Err(e) => {
                    at.failures
                        .record(|| format!("{}: {e}", describe(chunk, i)));
                    false
                }
            })
            .collect();
        retain(chunk, |i| verdicts[i]);
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
