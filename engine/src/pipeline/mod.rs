//! The pipeline language: a TOML file, merged with the templates it extends, parameters
//! applied, checked against the JSON Schema and semantically, and compiled into a
//! [`Plan`](crate::plan::Plan).

mod compile;
mod counters;
mod glob;
pub mod model;
pub mod params;
mod passes;
pub mod schema;
pub mod starter;
pub mod template;
pub mod value;

use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::diag::{Diagnostic, SourceFile};
use crate::plan::Plan;

pub(crate) use compile::name_of;
pub use counters::SimulatedGpus;
pub use params::Override;
use template::Merged;
pub use template::{Library, Origin};
pub use value::Node;

/// Changes a command line makes to the merged document, applied before its parameters as
/// the entries of a pipeline extending it would be (rocprofv3's options: see
/// `crate::import::Overlay`).
pub trait Edit: std::fmt::Debug + Send + Sync {
    /// Applies the changes; `overrides` are the `--set` ones, which a change may not
    /// contradict. Gives notices of changes that asked for what the pipeline does already.
    fn apply(
        &self,
        doc: &mut Node,
        overrides: &[Override],
    ) -> Result<Vec<Diagnostic>, Vec<Diagnostic>>;

    /// The changes, for the plan's sources (`rocflow explain`).
    fn describe(&self) -> Option<String>;
}

/// What a pipeline is compiled with besides its file.
#[derive(Debug, Default)]
pub struct Options {
    /// `--set name=value`, in command-line order.
    pub overrides: Vec<Override>,
    /// rocprofv3's options given on the command line (`--pmc`, `-d`, …), if any.
    pub overlay: Option<Box<dyn Edit>>,
    /// Where `extends` looks beyond the including file's directory.
    pub library: Library,
    /// Counter definitions to check counter names against (`--counters FILE`), when a
    /// pipeline names none; otherwise the installed ones are used if there are any.
    pub counters: Option<std::path::PathBuf>,
    /// The simulated device the pipeline is to run on, whose counters are all it has.
    pub simulated: Option<SimulatedGpus>,
    /// Where plugins named by `plugin = "NAME"` are found.
    pub plugins: crate::plugin::Search,
    /// Whether plugins are loaded to be checked, which runs their code.
    pub plugin_check: crate::plugin::Check,
    /// The plan only shapes records that exist or are made up (`replay`, `summary`,
    /// `generate`): no SDK is configured with it, so what rocprofiler-sdk refuses to
    /// combine in one process is not an error.
    pub records_only: bool,
}

/// A compiled pipeline.
#[derive(Debug)]
pub struct Compiled {
    pub plan: Plan,
    /// The fully merged document, parameters applied (`rocflow explain --resolved`).
    pub resolved: Node,
    /// What does not stop the pipeline from running: warnings, and notes such as a team
    /// template shadowing a shipped one.
    pub warnings: Vec<Diagnostic>,
}

/// Reads, merges, validates and compiles the pipeline at `path`. On failure every error
/// found is returned (warnings and notes after them), so a user fixes them in one round.
pub fn compile_file(path: &Path, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let merged = options.library.load(path).map_err(|d| vec![d])?;
    compile(path, merged, options)
}

/// Compiles `file` as the pipeline file it is about to become at `path`, so a generated
/// pipeline is checked before anything is written.
pub fn compile_text(
    path: &Path,
    file: Arc<SourceFile>,
    options: &Options,
) -> Result<Compiled, Vec<Diagnostic>> {
    let merged = options.library.load_text(path, file).map_err(|d| vec![d])?;
    compile(path, merged, options)
}

/// Compiles a document already merged (see [`Library`]), which a caller may look at
/// first without reading and merging it twice.
pub fn compile(
    path: &Path,
    merged: Merged,
    options: &Options,
) -> Result<Compiled, Vec<Diagnostic>> {
    let Merged {
        doc,
        sources,
        notes,
    } = merged;
    match compile_document(path, doc, &sources, options) {
        Ok(mut compiled) => {
            compiled.warnings.extend(notes);
            Ok(compiled)
        }
        Err(mut errors) => {
            errors.extend(notes);
            Err(errors)
        }
    }
}

/// Compiles a merged document; relative counter definition paths start next to `path`.
fn compile_document(
    path: &Path,
    mut doc: Node,
    sources: &[Origin],
    options: &Options,
) -> Result<Compiled, Vec<Diagnostic>> {
    let notices = match &options.overlay {
        Some(overlay) => overlay.apply(&mut doc, &options.overrides)?,
        None => Vec::new(),
    };
    let params = params::apply(&mut doc, &options.overrides)?;
    let json = doc.to_json();
    let structural = schema::validate(&doc, &json);
    if !structural.is_empty() {
        return Err(structural);
    }
    let pipeline = model::Pipeline::deserialize(&json).map_err(|err| {
        // The schema accepted the document, so this is rocflow's fault, not the user's.
        vec![Diagnostic::error(format!(
            "internal error: the schema accepted a pipeline the model rejects: {err}"
        ))]
    })?;
    let params: IndexMap<String, serde_json::Value> = params
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json()))
        .collect();
    let sources = (sources.iter().map(Origin::display))
        .chain(options.overlay.as_ref().and_then(|o| o.describe()))
        .collect();
    let base = path
        .parent()
        .map_or_else(Default::default, Path::to_path_buf);
    let plugins = compile::Plugins {
        search: &options.plugins,
        check: options.plugin_check,
    };
    let counters =
        counters::CounterCheck::new(options.counters.clone(), options.simulated.clone(), base);
    let compiler = compile::Compiler::new(&doc, counters, plugins, options.records_only);
    let (plan, mut warnings) = compiler.compile(&pipeline, &json, sources, params)?;
    warnings.extend(notices);
    Ok(Compiled {
        plan,
        resolved: doc,
        warnings,
    })
}
