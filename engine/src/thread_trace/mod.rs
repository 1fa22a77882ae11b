//! Thread trace (ATT/SQTT) in the runner: the raw traces and code objects kept per
//! dispatch, and their decoding through AMD's trace decoder library.

mod decode;
mod keep;
mod rocpd;
mod tables;

use std::path::Path;

use rocflow_core::thread_trace::ThreadTracePlan;

use crate::catalog::Catalog;
use crate::messages;
use crate::runner::libraries;
use crate::sink::Placeholders;

pub use decode::{DecodeError, DecodedInstruction, DecodedWave, decode};
pub use keep::{KeepError, Kept, KeptCodeObject, KeptTrace, keep};
pub use rocflow_core::thread_trace::{
    DECODER_LIBRARY, PATH_VARIABLE, decoder_search, find_decoder,
};
pub use tables::{INSTRUCTIONS, InstructionRow, WAVES, instructions, read_instructions};

/// Keeps the thread traces of context `name` from the run's spool, says what was kept on
/// `out`, and reports what went wrong as messages.
/// The decoded tables also go into the rocpd databases `databases`.
pub fn outputs(
    name: &str,
    plan: &ThreadTracePlan,
    spool: &Path,
    catalog: &Catalog,
    databases: &[&Path],
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
    if kept.traces.is_empty() {
        return;
    }
    let env = |name: &str| std::env::var(name).ok();
    let Some(folder) = find_decoder(&plan.decoder_paths, env) else {
        messages::note(format_args!(
            "thread trace `{name}`: AMD's trace decoder is not installed, so the traces are kept raw (rocprofv3 decodes them with it too); install ROCm's rocprof-trace-decoder package, or point `decoder_paths` or {PATH_VARIABLE} at the folder holding {DECODER_LIBRARY}"
        ));
        return;
    };
    let library = match sdk_library(&kept) {
        Ok(library) => library,
        Err(why) => {
            messages::warning(format_args!(
                "thread trace `{name}`: the traces are kept raw: {why}"
            ));
            return;
        }
    };
    let waves = match decode(&kept, &library, &folder) {
        Ok(waves) => waves,
        Err(e) => {
            messages::warning(format_args!(
                "thread trace `{name}`: the traces are kept raw: {e}"
            ));
            return;
        }
    };
    let rows = instructions(&waves, &kept, catalog);
    let dir = Placeholders::for_run(catalog).expand(&plan.path);
    match tables::write(&dir, &rows, &waves, catalog) {
        Ok(paths) => {
            out.push_str(&format!(
                "  thread trace `{name}` decoded: {} waves, {} instructions\n",
                waves.len(),
                rows.len()
            ));
            for path in paths {
                out.push_str(&format!("    {}\n", path.display()));
            }
        }
        Err(e) => messages::error(format_args!(
            "thread trace `{name}`: writing its tables: {e}"
        )),
    }
    for db in databases {
        match rocpd::add(db, &rows, &waves, catalog) {
            Ok(added) => out.push_str(&format!("    {} ({added} rows)\n", db.display())),
            Err(e) => messages::error(format_args!(
                "thread trace `{name}`: adding its tables to {}: {e}",
                db.display()
            )),
        }
    }
}

/// The rocprofiler-sdk whose decoder API decodes the traces: rocflow's simulated one for
/// the simulated device's traces, else AMD's.
fn sdk_library(kept: &Kept) -> Result<std::path::PathBuf, String> {
    let first = kept
        .traces
        .first()
        .map(|t| std::fs::read(&t.path).unwrap_or_default());
    if first.is_some_and(|bytes| rocflow_core::sim_trace::is_shader_data(&bytes)) {
        return libraries::find(libraries::SIM).map_err(|e| e.to_string());
    }
    crate::runner::sdk::find(|name| std::env::var(name).ok())
        .map(|sdk| sdk.path)
        .map_err(|e| e.to_string())
}

/// The decoded instructions of the plan's thread traces in a run described by `catalog`,
/// for the report; a table that is not there (the decoder was missing) gives none.
pub fn decoded(plan: &crate::plan::Plan, catalog: &Catalog) -> Vec<InstructionRow> {
    let run = Placeholders::for_run(catalog);
    (plan.contexts.iter())
        .filter_map(|c| c.thread_trace.as_ref())
        .map(|t| run.expand(&t.path).join(INSTRUCTIONS))
        .filter(|path| path.is_file())
        .flat_map(|path| {
            read_instructions(&path).unwrap_or_else(|e| {
                messages::warning(format_args!(
                    "the report shows no thread trace of {}: {e}",
                    path.display()
                ));
                Vec::new()
            })
        })
        .collect()
}
