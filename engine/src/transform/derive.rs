//! `derive`: adds a column computed by an expression from each record's columns.

use std::sync::Arc;

use evalexpr::Value;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::chunk::{Chunk, Extra};
use crate::pipeline::{Step, TransformCheck};

use super::{Apply, At, Compiled, Declared, Expression, describe};

/// Declared and compiled alike.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Options {
    pub column: String,
    pub expression: String,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "required": ["column", "expression"],
            "properties": {
                "column": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" },
                "expression": { "type": "string" },
                "strict": super::strict_per_record()
            }
        })
    }

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Options> {
        let results = check.expression("expression", &self.expression);
        let kinds = check.kinds().to_vec();
        if let Some(kind) = kinds.iter().find(|&&k| check.has_column(k, &self.column)) {
            let message = format!(
                "`{}` is already a column of {} records",
                self.column,
                kind.name()
            );
            check.error(&[Step::Key("column")], message).hint =
                Some("choose a new column name".into());
        }
        // Later expressions see the column, with this one's value on a sample record.
        let samples = results.into_iter().chain(std::iter::repeat(Value::Empty));
        for (kind, sample) in kinds.into_iter().zip(samples) {
            check.add_column(kind, &self.column, sample);
        }
        Some(self.clone())
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        format!("{} = {}", self.column, self.expression)
    }

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        Ok(Box::new(Derive {
            column: self.column.as_str().into(),
            expression: Expression::compile(&self.expression)?,
        }))
    }
}

#[derive(Debug)]
struct Derive {
    column: Arc<str>,
    expression: Expression,
}

impl Apply for Derive {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let mut scratch = Vec::new();
        let values = (0..chunk.len())
            .map(|i| {
                (self.expression.eval(chunk, i, at.meta, &mut scratch)).unwrap_or_else(|e| {
                    at.failures
                        .record(|| format!("{}: {e}", describe(chunk, i)));
                    Value::Empty
                })
            })
            .collect();
        chunk.extra.push(Extra {
            name: Arc::clone(&self.column),
            values,
        });
    }
}
