//! `rocflow completions` and `rocflow man`: shell completions and manual pages, made from
//! the command line's own definition so they never fall behind it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;

use crate::error::{Error, Result};

use super::stdio::print;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of a shell.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "rocflow", &mut script);
    print(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write a page per command into DIR (rocflow.1, rocflow-run.1, …) instead of printing
    /// rocflow.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the manual page in roff, or writes one page per command.
pub fn man(args: ManArgs, command: clap::Command) -> Result<ExitCode> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
            clap_mangen::generate_to(command, &dir).map_err(Error::io(format!(
                "writing manual pages to {}",
                dir.display()
            )))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .map_err(Error::io("rendering the manual page"))?;
            print(&String::from_utf8_lossy(&page))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
