//! `derive`: adds a column computed by an expression from each record's columns.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::derive`]).

use std::sync::Arc;

use evalexpr::Value;

use crate::chunk::{Chunk, Extra};

use super::apply::{Apply, At, describe};
use super::expr::Expression;
use crate::plan::transform::derive::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(Derive {
        column: plan.column.as_str().into(),
        expression: Expression::compile(&plan.expression)?,
    }))
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
