//! Whole dispatches (or device reads) of counter samples and the derived counters computed
//! from them, as a counter context compiles into its own stage (what it does: `crate::transform::counters`).

use serde::{Deserialize, Serialize};

use super::kind::Compiled;
use crate::plan::list_or;

/// Gathers each dispatch's counter samples, or each device read's (every value of the
/// `collected` counters), into one chunk, and adds the `derived` counters computed from
/// them. Compiled from a context's counters, before the reductions, which need whole
/// dispatches (and reads) too.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    /// The counters the GPU collects, derived ones left out.
    pub collected: Vec<String>,
    /// Name and expression of each derived counter, as the pipeline defines them.
    pub derived: Vec<(String, String)>,
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        let derived: Vec<String> = (self.derived.iter())
            .map(|(n, e)| format!("{n} = {e}"))
            .collect();
        format!(
            "each dispatch's or read's values of {} together; derive {}",
            self.collected.join(", "),
            list_or(&derived, "nothing")
        )
    }
}
