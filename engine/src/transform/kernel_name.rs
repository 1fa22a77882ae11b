//! `kernel_name`: rewrites kernel names with regex rules and cuts them to a length, after
//! the pipeline's `kernel_names` form (see [`crate::kernel_names`]) named them. Names live
//! in the run's metadata, so each kernel is renamed once (as its symbol arrives), for every
//! record that refers to it.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::kernel_name`]).

use regex::Regex;

use crate::chunk::Chunk;

use super::apply::{Apply, At};
use super::rename::Rename;
use crate::plan::transform::kernel_name::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    let rules = (plan.rename.iter())
        .map(|(p, r)| Ok((Regex::new(p).map_err(|e| e.to_string())?, r.clone())))
        .collect::<Result<_, String>>()?;
    Ok(Box::new(Rename {
        truncate: plan.truncate,
        rules,
    }))
}

impl Apply for Rename {
    /// Records pass unchanged: the renaming applies to kernel symbols as they arrive.
    fn apply(&self, _chunk: &mut Chunk, _at: &At<'_>) {}

    fn rename(&self) -> Option<&Rename> {
        Some(self)
    }
}
