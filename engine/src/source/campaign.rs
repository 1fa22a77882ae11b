//! A campaign's folder, as `rocflow generate --ranks` or a job of `rocflow run`s leaves
//! it: every rank's spool, run folder or rocpd database directly in it. Each is read as
//! an input of its own, so that a command sees every rank, wherever the processes' pids
//! and clocks came from.

use std::path::{Path, PathBuf};

use super::Input;
use super::rocpd;

/// The extensions of the files a campaign's folder holds per rank.
const SPOOL: &str = "rfraw";
const DATABASE: &str = "db";

/// Why a campaign's inputs cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CampaignError {
    #[error("`{}` holds no spool (.rfraw), run folder or rocpd database (.db)", .0.display())]
    Empty(PathBuf),
    #[error("`{}` is not a rocpd database", .0.display())]
    NotADatabase(PathBuf),
    #[error("cannot read the folder `{}`: {}", .0.display(), .1)]
    Unreadable(PathBuf, String),
}

/// Whether `arg` is a campaign's folder: not a run folder, and holding a spool or a run
/// folder. (A folder of rocpd databases alone is read as databases are read together.)
pub fn is_campaign(arg: &Path) -> bool {
    arg.is_dir()
        && !is_run(arg)
        && std::fs::read_dir(arg).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let path = e.path();
                is_run(&path) || has_extension(&path, SPOOL)
            })
        })
}

/// The inputs a command line's arguments name, each read on its own: a campaign's folder
/// gives each of its ranks' inputs, any other argument the input it names. Databases
/// alone stay one input, read together, as [`Input::from_args`] reads them.
pub fn inputs(args: &[PathBuf]) -> Result<Vec<Input>, CampaignError> {
    let mut inputs = Vec::new();
    for arg in args {
        if is_campaign(arg) {
            inputs.extend(of_folder(arg)?);
        } else if arg.is_dir() && !is_run(arg) && rocpd::expand(arg).is_empty() {
            return Err(CampaignError::Empty(arg.clone()));
        } else {
            inputs.push(Input::of(arg));
        }
    }
    // An input named twice (a database and its folder) is read once.
    let mut seen = std::collections::HashSet::new();
    let mut once =
        |path: &Path| seen.insert(path.canonicalize().unwrap_or_else(|_| path.to_owned()));
    if inputs.iter().all(Input::is_databases) {
        let databases = (inputs.into_iter())
            .flat_map(|input| match input {
                Input::Databases(paths) => paths,
                Input::Spool(_) => Vec::new(),
            })
            .filter(|path| once(path));
        return Ok(vec![Input::Databases(databases.collect())]);
    }
    inputs.retain(|input| once(input.path()));
    Ok(inputs)
}

/// The inputs of a campaign's folder, in the order of their names: each spool and run
/// folder, and each database but those beside a spool of the same name (the spool's
/// conversion, as `rocflow generate --rocpd` writes it).
pub fn of_folder(dir: &Path) -> Result<Vec<Input>, CampaignError> {
    let unreadable = |e: std::io::Error| CampaignError::Unreadable(dir.to_owned(), e.to_string());
    let mut paths: Vec<PathBuf> = (std::fs::read_dir(dir).map_err(unreadable)?)
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    paths.sort();
    let mut inputs = Vec::new();
    for path in &paths {
        if is_run(path) || has_extension(path, SPOOL) && path.is_file() {
            inputs.push(Input::Spool(crate::runs::resolve(path)));
        } else if has_extension(path, DATABASE) && path.is_file() {
            if paths.contains(&path.with_extension(SPOOL)) {
                continue;
            }
            if rocpd::expand(path).is_empty() {
                return Err(CampaignError::NotADatabase(path.clone()));
            }
            inputs.push(Input::Databases(vec![path.clone()]));
        }
    }
    match inputs.is_empty() {
        true => Err(CampaignError::Empty(dir.to_owned())),
        false => Ok(inputs),
    }
}

/// A run folder: one holding the newest run's `last.rfraw`.
fn is_run(path: &Path) -> bool {
    path.is_dir() && crate::runs::resolve(path).is_file()
}

fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gives_each_rank_once_and_names_what_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(!is_campaign(d));
        assert_eq!(of_folder(d), Err(CampaignError::Empty(d.to_owned())));
        for name in ["rank-0.rfraw", "rank-1.rfraw", "injected.json"] {
            std::fs::write(d.join(name), b"").unwrap();
        }
        // A database beside its spool is the spool's: read once.
        std::fs::write(d.join("rank-1.db"), b"SQLite format 3\0").unwrap();
        assert!(is_campaign(d));
        assert_eq!(
            of_folder(d).unwrap(),
            vec![
                Input::Spool(d.join("rank-0.rfraw")),
                Input::Spool(d.join("rank-1.rfraw"))
            ]
        );
        std::fs::write(d.join("rank-2.db"), b"not a database").unwrap();
        assert_eq!(
            of_folder(d),
            Err(CampaignError::NotADatabase(d.join("rank-2.db")))
        );
    }
}
