//! `rocflow migrate-counters` and `rocflow counters …` (the counters crate's commands).
//! Placeholder wiring: the counters issue replaces this file.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::error::{Error, Result};

#[derive(Debug, Args)]
pub struct MigrateArgs {}

#[derive(Debug, Subcommand)]
pub enum CountersCommand {}

pub fn migrate(_args: MigrateArgs) -> Result<ExitCode> {
    Err(Error::Runtime("not yet implemented".into()))
}

pub fn run(command: CountersCommand) -> Result<ExitCode> {
    match command {}
}
