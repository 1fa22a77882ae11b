//! `rocflow doctor`: checks this machine for profiling and says what to fix (see
//! [`crate::doctor`]). Exit 0 when no check failed, 1 when one did, 2 when the doctor
//! itself could not examine.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::diag::Diagnostic;
use crate::doctor::{self, Machine, Report, Status};
use crate::error::{Error, Result};
use crate::runner::Device;

use super::device::start_error;
use super::stdio::print;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The device to check for: `rocm` (this machine's GPUs), `sim` or `sim:SCENARIO.toml`
    /// (the simulated device's).
    #[arg(long, default_value = "rocm", value_parser = Device::parse)]
    device: Device,
    /// How to print the findings.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Examine the machine laid out under DIR (its dev/, sys/, proc/, opt/, …) instead of
    /// this one.
    #[arg(long, value_name = "DIR", hide = true)]
    root: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// A line a check: status, check, what was found, and a hint to fix it.
    Text,
    /// One JSON document, for scripts and CI.
    Json,
}

/// The hidden command that reads AMD-SMI in a process of its own (see [`crate::smi`]).
#[derive(Debug, Args)]
pub struct SmiQueryArgs {
    /// The AMD-SMI library to load.
    library: PathBuf,
    /// Where to write the answer (JSON).
    #[arg(long)]
    answer: PathBuf,
}

/// Answers the query as JSON in the answer file: what was read, or why nothing was.
pub fn smi_query(args: SmiQueryArgs) -> Result<ExitCode> {
    let json = serde_json::to_vec(&crate::smi::read(&args.library)).expect("readings serialize");
    std::fs::write(&args.answer, json).map_err(Error::io("writing the AMD-SMI query's answer"))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the checks and prints their findings.
pub fn doctor(args: DoctorArgs) -> Result<ExitCode> {
    examine(args).map_err(tool_error)
}

fn examine(args: DoctorArgs) -> Result<ExitCode> {
    let machine = match &args.root {
        None => Machine::this(),
        Some(root) if root.is_dir() => Machine::under(root.clone(), std::env::vars_os()),
        Some(root) => {
            return Err(Error::user(Diagnostic::error(format!(
                "--root {} is not a directory",
                root.display()
            ))));
        }
    };
    let report = doctor::examine(&machine, &args.device).map_err(start_error)?;
    print(&match args.format {
        Format::Text => text(&report),
        Format::Json => json(&report, &args.device),
    })?;
    Ok(if report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The doctor's own failures exit 2, apart from the 1 of a failed check.
fn tool_error(error: Error) -> Error {
    match error {
        Error::User(_) => error,
        other => Error::user(Diagnostic::error(other.to_string())),
    }
}

fn text(report: &Report) -> String {
    let width = (report.findings.iter())
        .map(|f| f.check.name().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for finding in &report.findings {
        let status = finding.status.name();
        let check = finding.check.name();
        out.push_str(&format!("{status:<5} {check:<width$}  {}", finding.found));
        if let Some(hint) = &finding.hint {
            out.push_str(&format!("; hint: {hint}"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{} ok, {} warning(s), {} failed, {} skipped\n",
        report.count(Status::Ok),
        report.count(Status::Warn),
        report.count(Status::Fail),
        report.count(Status::Skip)
    ));
    out
}

fn json(report: &Report, device: &Device) -> String {
    let summary = |status| report.count(status);
    let document = serde_json::json!({
        "device": device.to_string(),
        "summary": {
            "ok": summary(Status::Ok),
            "warn": summary(Status::Warn),
            "fail": summary(Status::Fail),
            "skip": summary(Status::Skip),
        },
        "checks": report.findings,
    });
    let mut text = serde_json::to_string_pretty(&document).expect("findings serialize");
    text.push('\n');
    text
}
