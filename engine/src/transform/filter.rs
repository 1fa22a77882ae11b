//! `filter`: keeps the records for which an expression is true.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::filter`]).

use evalexpr::Value;

use crate::chunk::Chunk;

use super::apply::{Apply, At, describe, retain};
use super::expr::Expression;
use crate::plan::transform::filter::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(Filter(Expression::compile(&plan.predicate)?)))
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
