//! `rocflow analyze`: the rules' findings on a run, a spool or rocpd databases.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::analyze::{self, Collecting, Format, Gate, Scope, Selection};
use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::source::WindowArgs;
use crate::source::campaign;

use super::input::open_input;
use super::spool::{ended, recorded_stages};
use super::stdio::print;

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A run's folder (its newest run), a raw spool, rocpd databases (files,
    /// directories, globs: rocprofv3's too), or a campaign's folder (every rank's spool,
    /// run folder or database, as `rocflow generate --ranks` writes them); several
    /// inputs are analysed together, as the ranks of one job.
    #[arg(required = true, value_name = "RUN|SPOOL|DB|CAMPAIGN")]
    inputs: Vec<PathBuf>,
    /// Run only this rule (again for more): gpu-idle, low-utilization, sync-copy,
    /// pageable-copy, serialized-copy, launch-bound, sync-hot-spot, steady-state-allocation,
    /// low-occupancy, valu-utilization, memory-bound, atomic-contention, speed-of-light,
    /// rank-imbalance, collective-straggler.
    #[arg(long = "rule", value_name = "RULE")]
    rules: Vec<String>,
    /// Run only the rules that look at each process alone (`process`), or only those
    /// that compare ranks (`ranks`): how a campaign's recipe splits the work.
    #[arg(long, value_enum, default_value_t = Scope::All)]
    scope: Scope,
    /// Change a rule's threshold: `gpu-idle.min_gap_ns=200us` (the README lists each
    /// rule's options); a duration takes a unit.
    #[arg(long = "set", value_name = "RULE.OPTION=VALUE")]
    sets: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the findings to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Exit 1 when a finding satisfies this predicate, e.g. `severity >= warning` or
    /// `rule == "sync-copy"` (names: rule, severity, at_stake_ns; severities info <
    /// warning < error).
    #[arg(long, value_name = "EXPR")]
    fail_if: Option<String>,
    #[command(flatten)]
    window: WindowArgs,
}

/// Runs the rules over a run and prints (or writes) their findings.
pub fn analyze(args: AnalyzeArgs) -> Result<ExitCode> {
    // Everything the user wrote is checked before any record is read.
    let user = |message: String| Error::user(Diagnostic::error(message));
    let gate = (args.fail_if.as_deref())
        .map(|predicate| {
            Gate::new(predicate).map_err(|e| user(format!("--fail-if `{predicate}`: {e}")))
        })
        .transpose()?;
    let selection = Selection::new(&args.rules, &args.sets)
        .map_err(|e| user(e.to_string()))?
        .within(args.scope);
    let inputs = campaign::inputs(&args.inputs).map_err(|e| user(e.to_string()))?;
    let mut collecting = Collecting::default();
    for input in &inputs {
        let stages = recorded_stages(input, "the run is analysed without them");
        let mut source = open_input(input, &args.window)?;
        let (catalog, ending) = (collecting.add(&stages, &mut *source)).map_err(Error::Runtime)?;
        ended(ending.as_ref())?;
        if let Some(partial) = &catalog.partial {
            crate::messages::diagnostic(&Diagnostic::warning(format!(
                "the findings describe part of {}: {partial}",
                input.describe()
            )));
        }
    }
    let findings = selection.check(&collecting.finish());
    let out = match args.format {
        Format::Text => analyze::text(&findings),
        Format::Markdown => analyze::markdown(&findings),
        Format::Json => format!("{:#}\n", analyze::json(&findings)),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, &out).map_err(Error::io(format!("writing {}", path.display())))?
        }
        None => print(&out)?,
    }
    if let (Some(gate), Some(predicate)) = (&gate, &args.fail_if) {
        if let Some(finding) = gate.first_holding(&findings) {
            eprintln!(
                "rocflow analyze: `{predicate}` holds for {} `{}`",
                finding.severity.name(),
                finding.rule
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
