//! rocflow's folder of installed data: `$XDG_DATA_HOME/rocflow/`, else
//! `~/.local/share/rocflow/`, where the README's install puts the pipeline schema for
//! editors and the Python environment campaigns run in.

use std::path::PathBuf;

/// The folder, where the environment names one (an absolute `XDG_DATA_HOME` or `HOME`).
pub fn data_home() -> Option<PathBuf> {
    let absolute = |var| {
        let dir = PathBuf::from(std::env::var_os(var)?);
        dir.is_absolute().then_some(dir)
    };
    let data =
        absolute("XDG_DATA_HOME").or_else(|| Some(absolute("HOME")?.join(".local/share")))?;
    Some(data.join("rocflow"))
}
