//! `rocflow import-rocprofv3`: rocprofv3 input files as rocflow pipelines.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::error::{Error, Result};
use crate::import::{self, Request, Several};
use crate::messages;
use crate::pipeline::{Library, Options};

use super::stdio::print;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// rocprofv3 input: YAML (.yaml, .yml) or JSON (.json) with `jobs`, or text (.txt) with
    /// one `pmc:` line per pass.
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Write the pipeline to this file (default: standard output); with --split, the
    /// directory the pipelines are written to.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Several jobs become one pipeline each: DIR/job-1.toml, DIR/job-2.toml, …
    #[arg(long, requires = "output", conflicts_with = "params")]
    split: bool,
    /// Several jobs become one pipeline whose parameters select each job's values; its
    /// first lines say how to run each job.
    #[arg(long)]
    params: bool,
    /// Counter definitions to check the counter names against (default: $ROCM_PATH or
    /// /opt/rocm when installed).
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
}

/// Converts the input, shows what was not converted, and writes the pipelines only once
/// every one of them compiles.
pub fn import(args: ImportArgs) -> Result<ExitCode> {
    let options = Options {
        library: Library::from_env(),
        counters: args.counters.clone(),
        ..Options::default()
    };
    let several = if args.split {
        Some(Several::Split)
    } else {
        args.params.then_some(Several::Params)
    };
    let request = Request {
        input: &args.input,
        several,
        output: args.output.as_deref(),
        options: &options,
    };
    let imported = import::import(&request).map_err(Error::User)?;
    imported.warnings.iter().for_each(messages::diagnostic);
    let Some(output) = &args.output else {
        for pipeline in &imported.pipelines {
            print(&pipeline.text)?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let mut written = String::new();
    for pipeline in &imported.pipelines {
        let path = if args.split {
            output.join(&pipeline.file_name)
        } else {
            output.clone()
        };
        crate::atomic::write(&path, &pipeline.text)
            .map_err(Error::io(format!("writing {}", path.display())))?;
        written.push_str(&format!("{}\n", path.display()));
    }
    print(&written)?;
    Ok(ExitCode::SUCCESS)
}
