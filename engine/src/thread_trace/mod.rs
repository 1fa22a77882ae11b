//! Thread trace (ATT/SQTT) in the runner: the raw traces and code objects kept per
//! dispatch, and their decoding through AMD's trace decoder library.

mod decode;
mod keep;
mod rocpd;
mod tables;

use std::path::{Path, PathBuf};

use rocflow_core::thread_trace::{ThreadTracePlan, TraceMode, Traced};

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
    let mut traced: Vec<(u16, Traced)> =
        (kept.traces.iter()).map(|t| (t.stream, t.traced)).collect();
    traced.sort_unstable();
    traced.dedup();
    let of = match plan.mode {
        TraceMode::Dispatch => "dispatches",
        TraceMode::Device => "device windows",
    };
    out.push_str(&format!(
        "  thread trace `{name}`: {} traces of {} {of}, {} code objects\n",
        kept.traces.len(),
        traced.len(),
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
    let simulated = simulated(&kept);
    let Some(decoder) = find_decoder_for(plan, simulated, env) else {
        messages::note(format_args!(
            "thread trace `{name}`: AMD's trace decoder is not installed, so the traces are kept raw (rocprofv3 decodes them with it too); install ROCm's rocprof-trace-decoder package, or point `decoder_paths` or {PATH_VARIABLE} at the folder holding {DECODER_LIBRARY}"
        ));
        return;
    };
    let (decoder, library) = match (decoder, sdk_library(simulated)) {
        (Ok(decoder), Ok(library)) => (decoder, library),
        (Err(why), _) | (_, Err(why)) => {
            messages::warning(format_args!(
                "thread trace `{name}`: the traces are kept raw: {why}"
            ));
            return;
        }
    };
    let waves = match decode(&kept, &library, decoder.folder()) {
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

/// Whether the traces are the simulated device's.
fn simulated(kept: &Kept) -> bool {
    let first = kept.traces.first().map(|t| std::fs::read(&t.path));
    first.is_some_and(|bytes| rocflow_core::sim_trace::is_shader_data(&bytes.unwrap_or_default()))
}

/// The rocprofiler-sdk whose decoder API decodes the traces: rocflow's simulated one for
/// the simulated device's traces, else AMD's.
fn sdk_library(simulated: bool) -> Result<PathBuf, String> {
    if simulated {
        return libraries::find(libraries::SIM).map_err(|e| e.to_string());
    }
    crate::runner::sdk::find(|name| std::env::var(name).ok())
        .map(|sdk| sdk.path)
        .map_err(|e| e.to_string())
}

/// The folder AMD's decoder library is loaded from.
enum DecoderFolder {
    Found(PathBuf),
    /// The simulated decoder, linked under AMD's library name into a folder of its own,
    /// there while the traces decode.
    Simulated(tempfile::TempDir),
}

impl DecoderFolder {
    fn folder(&self) -> &Path {
        match self {
            DecoderFolder::Found(folder) => folder,
            DecoderFolder::Simulated(dir) => dir.path(),
        }
    }
}

/// Where the decoder is: the simulated device's traces decode with the simulated decoder
/// unless the pipeline or the user's `ROCPROF_ATT_LIBRARY_PATH` names a folder (as the simulated
/// AMD-SMI stands in for AMD's, AMD's decoder cannot read them); others as rocprofv3
/// finds it. `None` where no folder searched holds it.
fn find_decoder_for(
    plan: &ThreadTracePlan,
    simulated: bool,
    env: impl Fn(&str) -> Option<String>,
) -> Option<Result<DecoderFolder, String>> {
    let named = !plan.decoder_paths.is_empty() || env(PATH_VARIABLE).is_some_and(|v| !v.is_empty());
    if simulated && !named {
        return Some(simulated_decoder().map(DecoderFolder::Simulated));
    }
    find_decoder(&plan.decoder_paths, env).map(|folder| Ok(DecoderFolder::Found(folder)))
}

/// A folder holding the simulated decoder under AMD's library name, which the SDK loads.
fn simulated_decoder() -> Result<tempfile::TempDir, String> {
    let library = libraries::find(libraries::SIM_DECODER).map_err(|e| e.to_string())?;
    let dir = tempfile::Builder::new()
        .prefix("rocflow-decoder-")
        .tempdir()
        .map_err(|e| format!("a folder for the simulated decoder: {e}"))?;
    std::os::unix::fs::symlink(&library, dir.path().join(DECODER_LIBRARY))
        .map_err(|e| format!("linking {}: {e}", library.display()))?;
    Ok(dir)
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
