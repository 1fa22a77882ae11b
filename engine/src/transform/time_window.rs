//! `time_window`: keeps the records that start inside a window of the run, its times
//! relative to the run's first record.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::time_window`]).

use crate::chunk::Chunk;
use crate::column::row;

use super::apply::{Apply, At, retain};
use crate::plan::transform::time_window::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(*plan))
}

impl Apply for Plan {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let inside: Vec<bool> = (0..chunk.len())
            .map(|i| {
                let start = row(&chunk.batch, i).start_ns().saturating_sub(at.origin_ns);
                start >= self.start_ns && self.end_ns.is_none_or(|end| start < end)
            })
            .collect();
        retain(chunk, |i| inside[i]);
    }
}
