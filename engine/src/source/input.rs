//! What a command reads, as its command line names it: a spool (or a directory of runs,
//! meaning its newest), or rocpd databases (files, directories of them, globs), told
//! apart by their contents rather than their names.

use std::path::{Path, PathBuf};

use super::rocpd::{self, OpenError, Rocpd};
use super::{Source, Spool};
use crate::record::RecordKind;
use crate::wire::WireError;

/// A command's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Spool(PathBuf),
    Databases(Vec<PathBuf>),
}

/// Why an input cannot be read.
#[derive(Debug)]
pub enum OpenFault {
    Spool(PathBuf, WireError),
    Rocpd(OpenError),
}

/// Why a command line names no input.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("name a spool or rocpd databases")]
    Nothing,
    /// One of several inputs is not a database.
    #[error("`{}` is not a rocpd database: only databases are read together", .0.display())]
    NotADatabase(PathBuf),
}

impl Input {
    /// The input one argument names: the databases it names, else a spool (a directory of
    /// runs meaning its newest).
    pub fn of(arg: &Path) -> Input {
        if !is_runs(arg) {
            let databases = rocpd::expand(arg);
            if !databases.is_empty() {
                return Input::Databases(databases);
            }
        }
        Input::Spool(crate::runs::resolve(arg))
    }

    /// Splits a command line's arguments into the input and, when the command takes one
    /// (`pipeline`), a pipeline last: the last argument is the pipeline unless it names
    /// databases. Several inputs must all be databases.
    pub fn from_args(
        args: &[PathBuf],
        pipeline: bool,
    ) -> Result<(Input, Option<PathBuf>), ArgsError> {
        let (inputs, pipeline) = match args {
            [_, .., last] if pipeline && !is_databases(last) => {
                (&args[..args.len() - 1], Some(last.clone()))
            }
            _ => (args, None),
        };
        match inputs {
            [] => return Err(ArgsError::Nothing),
            [one] => return Ok((Input::of(one), pipeline)),
            _ => {}
        }
        let mut databases = Vec::new();
        for arg in inputs {
            match Input::of(arg) {
                Input::Databases(found) => databases.extend(found),
                Input::Spool(_) => return Err(ArgsError::NotADatabase(arg.clone())),
            }
        }
        // A database named twice (a file and its directory) is one run's, read once.
        let mut seen = std::collections::HashSet::new();
        databases.retain(|path| seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())));
        Ok((Input::Databases(databases), pipeline))
    }

    /// The input in a sentence's words.
    pub fn describe(&self) -> String {
        match self {
            Input::Spool(path) => path.display().to_string(),
            Input::Databases(paths) if paths.len() == 1 => paths[0].display().to_string(),
            Input::Databases(paths) => format!(
                "{} rocpd databases ({} … {})",
                paths.len(),
                paths[0].display(),
                paths[paths.len() - 1].display()
            ),
        }
    }

    /// The path post-steps and messages name the run by: the spool, or the first database.
    pub fn path(&self) -> &Path {
        match self {
            Input::Spool(path) => path,
            Input::Databases(paths) => &paths[0],
        }
    }

    pub fn is_databases(&self) -> bool {
        matches!(self, Input::Databases(_))
    }

    /// Starts reading the input; a note on what databases hold that was ignored comes
    /// with it.
    pub fn open(&self) -> Result<(Box<dyn Source>, Option<String>), OpenFault> {
        match self {
            Input::Spool(path) => Spool::open(path)
                .map(|s| (Box::new(s) as Box<dyn Source>, None))
                .map_err(|e| OpenFault::Spool(path.clone(), e)),
            Input::Databases(paths) => {
                let source = Rocpd::open(paths).map_err(OpenFault::Rocpd)?;
                let note = source.note().map(str::to_owned);
                Ok((Box::new(source), note))
            }
        }
    }
}

fn is_databases(arg: &Path) -> bool {
    !is_runs(arg) && !rocpd::expand(arg).is_empty()
}

/// Whether `arg` is a directory of runs (it has a newest run).
fn is_runs(arg: &Path) -> bool {
    arg.is_dir() && crate::runs::resolve(arg).is_file()
}

/// The kinds a pipeline collects that a replay of databases got none of: the databases
/// fixed what was collected, so the pipeline's contexts may ask for more.
pub fn missing_kinds(
    wanted: impl IntoIterator<Item = RecordKind>,
    got: &[(RecordKind, u64)],
) -> Vec<RecordKind> {
    let mut missing: Vec<RecordKind> = wanted
        .into_iter()
        .filter(|k| !got.iter().any(|(g, n)| g == k && *n > 0))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    missing
}
