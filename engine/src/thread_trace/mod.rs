//! Thread trace (ATT/SQTT) in the runner: the raw traces and code objects kept per
//! dispatch, and their decoding through AMD's trace decoder library.

mod decoder;
mod keep;

use std::path::Path;

use rocflow_core::thread_trace::ThreadTracePlan;

use crate::catalog::Catalog;
use crate::messages;

pub use decoder::{DECODER_LIBRARY, PATH_VARIABLE, decoder_search, find_decoder};
pub use keep::{KeepError, Kept, KeptCodeObject, KeptTrace, keep};

/// Keeps the thread traces of context `name` from the run's spool, says what was kept on
/// `out`, and reports what went wrong as messages.
pub fn outputs(
    name: &str,
    plan: &ThreadTracePlan,
    spool: &Path,
    catalog: &Catalog,
    out: &mut String,
) {
    let kept = match keep(&plan.path, spool, catalog) {
        Ok(kept) => kept,
        Err(e) => {
            messages::error(format_args!("thread trace `{name}`: {e}"));
            return;
        }
    };
    for refused in &kept.refused {
        messages::warning(format_args!("thread trace `{name}`: left out {refused}"));
    }
    let mut dispatches: Vec<(u16, u64)> = kept
        .traces
        .iter()
        .map(|t| (t.stream, t.dispatch_id))
        .collect();
    dispatches.sort_unstable();
    dispatches.dedup();
    out.push_str(&format!(
        "  thread trace `{name}`: {} traces of {} dispatches, {} code objects\n",
        kept.traces.len(),
        dispatches.len(),
        kept.code_objects.len()
    ));
    let mut folders: Vec<&Path> = (kept.traces.iter().map(|t| t.path.as_path()))
        .chain(kept.code_objects.iter().map(|c| c.path.as_path()))
        .filter_map(Path::parent)
        .collect();
    folders.sort_unstable();
    folders.dedup();
    for folder in folders {
        out.push_str(&format!("    {}\n", folder.display()));
    }
}
