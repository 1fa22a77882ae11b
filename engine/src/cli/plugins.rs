//! `rocflow plugins`: the plugins a pipeline can name.

use std::process::ExitCode;

use clap::Subcommand;

use crate::error::Result;
use crate::plugin::{Error, Plugin, Search};

use super::stdio::print;

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List the plugins found on ROCFLOW_PLUGIN_PATH and next to rocflow: the name a
    /// pipeline gives, kinds, ABI version, and whether each loads (with the error if not).
    List,
}

pub fn run(command: PluginsCommand) -> Result<ExitCode> {
    match command {
        PluginsCommand::List => list(&Search::from_env()),
    }
}

/// Loads every plugin found and prints a line on each, and one on what it is or why it
/// does not load.
fn list(search: &Search) -> Result<ExitCode> {
    let found = search.list();
    if found.is_empty() {
        let dirs: Vec<String> = search
            .dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        print(&format!(
            "no plugins in {}\nhint: put a plugin library (librocflow_plugin_NAME.so) in one of \
             them, or name its directory in ROCFLOW_PLUGIN_PATH\n",
            dirs.join(", ")
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!(
        "{:<20} {:<16} {:<4} {:<6} PATH\n",
        "NAME", "KIND", "ABI", "LOADS"
    );
    for plugin in found {
        let path = plugin.path.display();
        match Plugin::load(&plugin.path) {
            Ok(loaded) => {
                let kinds: Vec<String> = loaded.kinds().iter().map(ToString::to_string).collect();
                out.push_str(&format!(
                    "{:<20} {:<16} {:<4} {:<6} {path}\n    {} {}: {}\n",
                    plugin.name,
                    kinds.join(", "),
                    rocflow_plugin::abi::ABI_VERSION,
                    "yes",
                    loaded.name,
                    loaded.version,
                    loaded.description
                ));
            }
            Err(e) => {
                let abi = match &e {
                    Error::Version { found, .. } => found.to_string(),
                    _ => "?".into(),
                };
                out.push_str(&format!(
                    "{:<20} {:<16} {abi:<4} {:<6} {path}\n    error: {e}\n",
                    plugin.name, "?", "no"
                ));
                if let Some(hint) = e.hint() {
                    out.push_str(&format!("    hint: {hint}\n"));
                }
            }
        }
        for hidden in &plugin.shadows {
            out.push_str(&format!("    shadows {}\n", hidden.display()));
        }
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}
