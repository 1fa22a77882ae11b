//! `rocflow attach`: profile a process already running, for a while, and leave it running.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::messages;
use crate::pipeline::SimulatedGpus;
use crate::post;
use crate::progress::{Board, Display, Mode};
use crate::runner::attach::{self, AttachError, AttachOptions, Ended, Refusal, TargetSdk};
use crate::runner::{Device, SpoolCompression};
use crate::source::{Input, WindowArgs};

use super::device::{simulated, start_error};
use super::flags::OutputFlags;
use super::input::reopen;
use super::outputs::outputs;
use super::pipeline_args::{PipelineArgs, Use};
use super::stdio::eprint;

/// The template `rocflow attach` runs when no pipeline is given, as `rocflow run` does.
const DEFAULT_PIPELINE: &str = "trace-all";

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The process to attach to: one started with ROCP_TOOL_ATTACH=1 and
    /// rocprofiler-register preloaded (see the README's "Attaching to a running process").
    pid: u32,
    /// The pipeline (a file, or a template name); without one, `trace-all`.
    pipeline: Option<PathBuf>,
    #[command(flatten)]
    options: PipelineArgs,
    /// How long to collect (`30s`, `500ms`, `2min`); without it, until Ctrl-C or the
    /// process exits.
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Where to keep the raw spool (every record, for `rocflow replay`).
    #[arg(long)]
    spool: Option<PathBuf>,
    /// Whether to store the spool's records compressed.
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    spool_compression: SpoolCompression,
    /// Print only warnings and errors.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    output: OutputFlags,
}

fn duration(text: &str) -> std::result::Result<Duration, String> {
    match crate::units::parse_duration(text) {
        Ok(0) => Err("a duration of nothing collects nothing".into()),
        Ok(ns) => Ok(Duration::from_nanos(ns)),
        Err(e) => Err(e.to_string()),
    }
}

/// Attaches to the process, collects until the duration ends, Ctrl-C or its exit, detaches
/// and writes the outputs. Exit 0 when records were collected; 2 when the process cannot be
/// attached to; 1 when the attach collected nothing or failed on the way.
pub fn attach(args: AttachArgs) -> Result<ExitCode> {
    if args.quiet {
        messages::quiet();
    }
    let target = attach::probe(args.pid).map_err(refusal)?;
    let gpus = match &target.sdk {
        TargetSdk::Sim(scenario) => simulated(&Device::Sim(scenario.clone()))?.map(|(_, g)| g),
        TargetSdk::Rocm => None,
    };
    let plan = compile(&args, gpus)?;
    let board = Arc::new(Board::live());
    let options = AttachOptions {
        duration: args.duration,
        spool: args.spool.clone(),
        spool_compression: args.spool_compression,
        board: Arc::clone(&board),
    };
    let display = Display::start(Mode::for_stderr(args.quiet), board);
    let (collect, beside) = post::Collect::of(&plan);
    let mut outcome = match attach::attach(&plan, &target, &options, beside) {
        Ok(outcome) => outcome,
        Err(e) => {
            display.finish();
            return Err(attach_error(e));
        }
    };
    let pid = args.pid;
    let mut out = format!(
        "attached to process {pid} for {:.2} s: {}\n",
        outcome.elapsed.as_secs_f64(),
        match outcome.ended {
            Ended::Duration => "the duration ended; detached, the process goes on",
            Ended::Interrupted => "interrupted; detached, the process goes on",
            Ended::TargetExited => "the process exited",
            Ended::DetachUnconfirmed => "the process did not confirm the detach",
        }
    );
    let total: u64 = outcome.records.iter().map(|(_, n)| n).sum();
    out.push_str(&format!("{total} records"));
    for (kind, n) in &outcome.records {
        out.push_str(&format!("\n  {}: {n}", kind.name()));
    }
    out.push_str(&format!("\n  spool: {}\n", outcome.spool.display()));
    if let Some(e) = &outcome.spool_error {
        messages::error(format_args!(
            "the spool {} is incomplete: {e}",
            outcome.spool.display()
        ));
    }
    // An attach that collected nothing fails, and leaves no outputs that look like a
    // profile: only its spool.
    let collected = outcome.streams > 0 && total > 0;
    if outcome.streams == 0 {
        messages::diagnostic(&Diagnostic::error(format!(
            "process {pid} was attached, but its tool never connected: nothing was profiled and no outputs were written"
        )).hint("the process's stderr says why the tool stayed off"));
    } else if total == 0 {
        messages::diagnostic(&Diagnostic::error(format!(
            "no records were collected while attached to process {pid}, and no outputs were written"
        )).hint("the process did none of the work the pipeline traces while attached; attach for longer (--duration) or while it works"));
    }
    if collected {
        let input = Input::Spool(outcome.spool.clone());
        let reopen = || reopen(&input, &WindowArgs::default());
        outputs(
            &plan,
            &mut outcome.report,
            &outcome.spool,
            &reopen,
            collect,
            &options.board,
            &mut out,
        );
    }
    display.finish();
    if !args.quiet {
        eprint(&out);
    }
    Ok(match (outcome.stopped, collected) {
        (Some(stop), _) => ExitCode::from(stop.status().clamp(0, 255) as u8),
        (None, true) => ExitCode::SUCCESS,
        (None, false) => ExitCode::from(1),
    })
}

/// The pipeline given, or the default, with the output options.
fn compile(args: &AttachArgs, gpus: Option<SimulatedGpus>) -> Result<crate::plan::Plan> {
    let pipeline = (args.pipeline.clone()).unwrap_or_else(|| PathBuf::from(DEFAULT_PIPELINE));
    (args.options).compile(&pipeline, args.output.overlay(), Use::Run(gpus))
}

/// A process that cannot be attached to is the user's to fix: exit 2, with what to do.
fn refusal(refusal: Refusal) -> Error {
    let hint = match &refusal {
        Refusal::NoProcess(_) => "give the pid of a running process (`pgrep APP`)".to_owned(),
        Refusal::Permission { why, .. } => why.hint().to_owned(),
        Refusal::NotAttachable { why, .. } => why.hint(),
    };
    Error::user(Diagnostic::error(refusal.to_string()).hint(hint))
}

fn attach_error(e: AttachError) -> Error {
    match e {
        AttachError::Start(e) => start_error(e),
        AttachError::Link(e) => Error::Runtime(e.to_string()),
        AttachError::RealSdk(_) => Error::user(Diagnostic::error(e.to_string()).hint(
            "attach with AMD's `rocprofv3 --attach PID` for now, or start the application under `rocflow run`",
        )),
    }
}
