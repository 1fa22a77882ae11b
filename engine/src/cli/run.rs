//! `rocflow run`: profile an application with a pipeline.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::import::paths::RunValues;
use crate::import::{self, launch::Launch};
use crate::messages;
use crate::pipeline::SimulatedGpus;
use crate::plan::{AgentSelector, ContextPlan, CounterPlan, Plan, StartPlan, describe_start};
use crate::post;
use crate::progress::{Board, Display, Mode};
use crate::record::{Exit, ToolCost};
use crate::runner::sdk::{self, Sdk, SdkError};
use crate::runner::{
    self, Device, Options, Passes, SpoolCompression, StartError, Stop, Unprofiled,
};
use crate::sdk::AgentType;
use crate::stage::Report;

use super::device::{simulated, start_error};
use super::flags::Flags;
use super::input::reopen;
use super::outputs::outputs;
use super::pipeline_args::{PipelineArgs, Use};
use super::stdio::eprint;
use crate::source::{Input, WindowArgs};

/// The template `rocflow run` runs when no pipeline is given: what `rocprofv3 --sys-trace`
/// collects.
const DEFAULT_PIPELINE: &str = "trace-all";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The pipeline (a file, or a template name such as `kernel-trace`); without one,
    /// `trace-all`, a system trace like `rocprofv3 --sys-trace`.
    pipeline: Option<PathBuf>,
    #[command(flatten)]
    options: PipelineArgs,
    /// Which rocprofiler-sdk: `rocm` (the installed one, a real GPU), `sim` (rocflow's
    /// simulated MI300X) or `sim:SCENARIO.toml`.
    #[arg(long, default_value = "rocm", value_parser = Device::parse)]
    device: Device,
    /// Where to keep the raw spool (every record, for `rocflow replay`); by default a
    /// file of the run's own in the pipeline's `spool_dir`, with `last.rfraw` beside it.
    #[arg(long)]
    spool: Option<PathBuf>,
    /// Whether to store the spool's records compressed (zstd, about 8 times smaller):
    /// `auto` does where the machine has 8 cores or more, to spare for it.
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    spool_compression: SpoolCompression,
    /// Print only warnings and errors: no progress, notes or report at the end.
    #[arg(long, short)]
    quiet: bool,
    /// Serve an in-process session (`rocflow_session_open`), which starts rocflow so: the
    /// application is the session's relay, which loads nothing; the SDK is the session's.
    #[arg(long, hide = true)]
    session_host: bool,
    /// The application and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "APP")]
    command: Vec<OsString>,
    // Last: its help heading holds for what follows it.
    #[command(flatten)]
    flags: Flags,
}

/// Runs the application under the pipeline (or under each job of rocprofv3's options);
/// exits with the application's status.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    if args.quiet {
        messages::quiet();
    }
    let simulated = simulated(&args.device)?;
    // Its work takes no time to speak of: a collection period is likely to miss it.
    let instant = (simulated.as_ref()).is_some_and(|(s, _)| s.scenario.duration_ms.is_none());
    let simulated_sdk = simulated.as_ref().map(|(s, _)| s.sdk_version());
    let gpus = simulated.map(|(_, gpus)| gpus);
    let plans = plans(&args, gpus)?;
    let sdk = match args.device {
        Device::Rocm if !args.session_host => Some(installed_sdk()?),
        _ => None,
    };
    if args.session_host {
        super::session_host::check(plans.iter().map(|p| &p.plan))?;
    }
    let version = match &sdk {
        Some(sdk) => sdk.version,
        None => simulated_sdk,
    };
    // Where the version is unknown, the tool checks it as the SDK configures it.
    if let Some(version) = version {
        for planned in &plans {
            if let Some(missing) =
                rocflow_core::availability::unavailable_to_run(&planned.plan.contexts, version)
            {
                let hint = format!(
                    "install {} or later, or leave {} out of the pipeline",
                    missing.release,
                    missing.needs.setting()
                );
                return Err(Error::user(
                    Diagnostic::error(missing.to_string()).hint(hint),
                ));
            }
        }
    }
    let mut status = 0;
    for planned in &plans {
        if plans.len() > 1 {
            let app = app_name(&args.command);
            messages::note(format_args!("{}: running `{app}`", planned.label));
        }
        let code = launch(&args, planned, sdk.clone(), instant)?;
        // Every job runs, as in rocprofv3; the first failure is the run's status.
        if status == 0 {
            status = code;
        }
    }
    Ok(ExitCode::from(status))
}

/// One run of the application: what it collects and how it starts.
struct Planned {
    label: String,
    plan: Plan,
    launch: Launch,
}

/// What the run collects: the pipeline given (changed by the everyday flags), or what
/// rocprofv3 would collect with the options given, one plan per job, or the default.
fn plans(args: &RunArgs, gpus: Option<SimulatedGpus>) -> Result<Vec<Planned>> {
    let job = match &args.pipeline {
        Some(_) => None,
        None => args.flags.job()?,
    };
    if let Some(job) = job {
        let runs = import::runs(
            job.input.as_deref(),
            job.command_line,
            &RunValues::here(&args.command),
        )
        .map_err(Error::User)?;
        if runs.runs.iter().any(|run| run.launch.quiet) {
            messages::quiet();
        }
        runs.warnings.iter().for_each(messages::diagnostic);
        return (runs.runs.into_iter())
            .map(|run| {
                let plan = (args.options).compile_text(run.pipeline, Use::Run(gpus.clone()))?;
                let (label, launch) = (run.label, run.launch);
                Ok(Planned {
                    label,
                    plan,
                    launch,
                })
            })
            .collect();
    }
    let pipeline = args.pipeline.clone().unwrap_or_else(|| {
        messages::note(format_args!(
            "no pipeline given: running `{DEFAULT_PIPELINE}`, a system trace like `rocprofv3 --sys-trace` (`rocflow templates list` shows the others)"
        ));
        PathBuf::from(DEFAULT_PIPELINE)
    });
    let plan = (args.options).compile(&pipeline, args.flags.overlay()?, Use::Run(gpus))?;
    Ok(vec![Planned {
        label: pipeline.display().to_string(),
        plan,
        launch: Launch::default(),
    }])
}

/// Runs the application for one job as its launch settings say: unprofiled on an MPI
/// rank the job does not profile, else profiled.
fn launch(args: &RunArgs, planned: &Planned, sdk: Option<Sdk>, instant: bool) -> Result<u8> {
    let launch = &planned.launch;
    if launch.list_avail {
        let agents = super::device::list(&args.device, true)?;
        super::stdio::print(&crate::device::render(&agents))?;
        // A job that only lists, as rocprofv3's `-L`, runs the application as it is.
        if planned.plan.contexts.is_empty() {
            return unprofiled(&args.command, &launch.env());
        }
    }
    if let Some(rank) = launch.skips(|name| std::env::var(name).ok()) {
        messages::note(format_args!(
            "MPI rank {rank} is not among the ranks to profile: running the application unprofiled"
        ));
        return unprofiled(&args.command, &launch.env());
    }
    profile(args, &planned.plan, launch, sdk, instant)
}

/// Runs the application as it is, with the environment a profiled run would give it.
fn unprofiled(command: &[OsString], env: &[(&str, String)]) -> Result<u8> {
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .status()
        .map_err(Error::io(format!("starting `{}`", app_name(command))))?;
    Ok(runner::exit_of(status).status().clamp(0, 255) as u8)
}

fn app_name(command: &[OsString]) -> String {
    command[0].to_string_lossy().into_owned()
}

/// Runs the application once under `plan`, writes its outputs and reports; gives the
/// status the run ends with.
fn profile(
    args: &RunArgs,
    plan: &Plan,
    launch: &Launch,
    sdk: Option<Sdk>,
    instant: bool,
) -> Result<u8> {
    let board = Arc::new(Board::live());
    let options = Options {
        // A session's relay is started with no SDK: the session's process has its own.
        device: match args.session_host {
            true => Device::Rocm,
            false => args.device.clone(),
        },
        sdk,
        spool: args.spool.clone(),
        spool_compression: args.spool_compression,
        command: args.command.clone(),
        preload: launch.preload.iter().map(OsString::from).collect(),
        env: (launch.env().into_iter())
            .map(|(name, value)| (name.into(), value.into()))
            .collect(),
        board: Arc::clone(&board),
    };
    let display = Display::start(Mode::for_stderr(args.quiet), board);
    let (collect, beside) = post::Collect::of(plan);
    let mut outcome = runner::run(plan, &options, beside).map_err(start_error)?;
    let mut out = String::new();
    let app = options.command[0].to_string_lossy();
    if let Some(passes) = outcome.passes.as_ref().filter(|p| p.of > 1) {
        match passes_done(passes) {
            Ok(done) => out.push_str(&done),
            Err(stopped) => messages::warning(stopped),
        }
    }
    match outcome.exit {
        Some(Exit::Code(code)) => out.push_str(&format!("{app} exited with {code}\n")),
        Some(Exit::Signal(signal)) => messages::warning(format_args!(
            "{app} was killed by signal {signal}; the outputs hold everything received until then"
        )),
        None => messages::warning(format_args!(
            "{app} (pid {}) was left running; the outputs hold what arrived until rocflow stopped",
            outcome.pid
        )),
    }
    for lost in &outcome.unfinalized {
        messages::warning(format_args!(
            "process {} ended without finalizing; records after {:.1} s may be missing",
            lost.pid,
            lost.last_frame.as_secs_f64()
        ));
    }
    if let Some(message) = unprofiled_message(&outcome.unprofiled) {
        messages::error(message);
    }
    // A run that profiled nothing fails (with the application's status, or 1), and
    // leaves no empty outputs that look like a profile: only its spool.
    let connected = outcome.streams > 0;
    if !connected {
        messages::error(no_stream_message(&options.device, &options.command[0]));
    }
    let total: u64 = outcome.records.iter().map(|(_, n)| n).sum();
    out.push_str(&format!(
        "{total} records from {} process{} in {:.2} s",
        outcome.streams,
        if outcome.streams == 1 { "" } else { "es" },
        outcome.elapsed.as_secs_f64()
    ));
    for (kind, n) in &outcome.records {
        out.push_str(&format!("\n  {}: {n}", kind.name()));
    }
    let dropped: u64 = outcome
        .report
        .catalog
        .streams()
        .flat_map(|(_, s)| s.dropped.values())
        .sum();
    out.push_str(&format!("\n  dropped: {dropped}"));
    let replayed: u64 = (outcome.report.catalog.streams())
        .map(|(_, s)| s.replayed_passes)
        .sum();
    if replayed > 0 {
        out.push_str(&format!(
            "\n  replayed passes: {replayed} dispatch records of kernel replay's earlier passes left out, each dispatch's last (the application's) kept"
        ));
    }
    let unreplayed: u64 = super::unreplayed::by_kernel(&outcome.report.catalog)
        .values()
        .sum();
    if unreplayed > 0 {
        out.push_str(&format!(
            "\n  not replayed: {unreplayed} dispatches, with the first pass's counters only"
        ));
    }
    let costs: Vec<ToolCost> = outcome
        .report
        .catalog
        .streams()
        .filter_map(|(_, s)| s.tool_cost)
        .collect();
    let sum = |f: fn(&ToolCost) -> u64| costs.iter().map(f).sum::<u64>();
    let cost = ToolCost {
        records: sum(|c| c.records),
        callback_ns: sum(|c| c.callback_ns),
        writer_ns: sum(|c| c.writer_ns),
    };
    if let Some(ns) = cost.ns_per_record() {
        out.push_str(&format!(
            "\n  tool cost: {ns:.1} ns/record ({:.3} s in buffer callbacks, {:.3} s writing)",
            cost.callback_ns as f64 / 1e9,
            cost.writer_ns as f64 / 1e9
        ));
    }
    out.push_str(&format!("\n  spool: {}\n", outcome.spool.display()));
    if let Some(e) = &outcome.spool_error {
        messages::error(format_args!(
            "the spool {} is incomplete: {e}",
            outcome.spool.display()
        ));
    }
    if connected && total == 0 && !plan.stages.produced.is_empty() {
        messages::diagnostic(&nothing_collected(plan, instant));
    } else if connected {
        valueless_counters(plan, &outcome.report);
    }
    if let Some(warning) = super::unreplayed::warning(plan, &outcome.report.catalog) {
        messages::warning(warning);
    }
    let input = Input::Spool(outcome.spool.clone());
    let reopen = || reopen(&input, &WindowArgs::default());
    if connected {
        outputs(
            plan,
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
    // SIGTERM at any point ends the run as the signal would have, for the scheduler.
    let stopped = crate::cancel::requested().then_some(Stop::Terminated);
    let status = match (stopped.or(outcome.stopped), outcome.exit) {
        (Some(stop), _) => stop.status(),
        (None, Some(exit)) => exit.status(),
        // Waiting for the application failed, which only a broken system does.
        (None, None) => 1,
    };
    // An error reported on the way fails a run whose application succeeded (see `cli::main`).
    Ok(status.clamp(0, 255) as u8)
}

/// What the run says of its processes that went unprofiled, if any did: it fails, as its
/// outputs lack them.
fn unprofiled_message(unprofiled: &Unprofiled) -> Option<String> {
    let Unprofiled { pids, connections } = unprofiled;
    let mut parts = Vec::new();
    if let [pid] = pids.as_slice() {
        parts.push(format!("process {pid} could not reach rocflow"));
    } else if !pids.is_empty() {
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        parts.push(format!(
            "{} processes could not reach rocflow (pids {})",
            pids.len(),
            pids.join(", ")
        ));
    }
    if *connections > 0 {
        parts.push(format!(
            "{connections} connection{} could not be read",
            if *connections == 1 { "" } else { "s" }
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "{}: the outputs lack what those processes did (the messages above say why)",
            parts.join("; ")
        )
    })
}

/// The error of a run whose pipeline asked for records and got none, with what rocflow
/// can tell of why: when its contexts collected, and whether the application was the
/// simulated device's scenario that does its work at once.
fn nothing_collected(plan: &Plan, instant: bool) -> Diagnostic {
    let timed: Vec<String> = (plan.contexts.iter())
        .filter(|c| c.start != StartPlan::default())
        .map(|c| format!("context `{}` {}", c.name, describe_start(&c.start)))
        .collect();
    let mut message = "no records were collected".to_owned();
    if !timed.is_empty() {
        message.push_str(&format!(": {}", timed.join("; ")));
    }
    let hint = match instant && !timed.is_empty() {
        true => {
            "the simulated device does its scenario's work at once, unless `duration_ms` in the scenario spreads it over time"
        }
        false => {
            "where the tool knew why a context collected nothing, it said so above; otherwise the application did none of the work the pipeline traces while its contexts collected"
        }
    };
    Diagnostic::error(message).hint(hint)
}

/// Warns of the counters the pipeline asked for that gave no value: those no profiled GPU
/// offered (the tool said so for each GPU as it started), and those no dispatch was
/// counted for. A context that counted on none of the run's GPUs is left out: the tool
/// said that it collects no counters.
fn valueless_counters(plan: &Plan, report: &Report) {
    let catalog = &report.catalog;
    let counts_here = |context: &ContextPlan| {
        let selectors = context.counter_agents();
        catalog.streams().any(|(_, stream)| {
            let gpus = (stream.agents.iter()).filter(|a| a.agent_type == AgentType::Gpu);
            (0..)
                .zip(gpus)
                .any(|(i, gpu)| AgentSelector::any_selects_gpu(selectors, i, &gpu.name))
        })
    };
    let valued: HashSet<&str> = (report.counted.iter())
        .map(|&(stream, id)| catalog.stream(stream).counter_name(id))
        .collect();
    let offered: HashSet<&str> = (catalog.streams())
        .flat_map(|(_, s)| s.counters.values().map(|c| c.name.as_str()))
        .collect();
    let mut requested: Vec<&str> = Vec::new();
    for name in (plan.contexts.iter())
        .filter(|c| counts_here(c))
        .filter_map(|c| c.counters.as_ref())
        .flat_map(CounterPlan::counted)
    {
        if !valued.contains(name.as_str()) && !requested.contains(&name.as_str()) {
            requested.push(name);
        }
    }
    let (unoffered, uncounted): (Vec<&str>, Vec<&str>) =
        requested.iter().partition(|name| !offered.contains(*name));
    let list = |names: &[&str]| {
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "counter{} {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    };
    if !unoffered.is_empty() {
        messages::warning(format_args!(
            "{} gave no value: no GPU the run profiled offers {}",
            list(&unoffered),
            if unoffered.len() == 1 { "it" } else { "them" }
        ));
    }
    if !uncounted.is_empty() {
        messages::warning(format_args!(
            "{} gave no value: no dispatch was counted (kernel filters, iteration ranges and collection periods choose them)",
            list(&uncounted)
        ));
    }
}

/// A counter pass that stopped the run, and why.
#[derive(Debug, thiserror::Error)]
enum PassStopped<'a> {
    #[error("pass {pass} of {of} failed to start ({why}); the run stops there")]
    NotStarted {
        pass: u32,
        of: u32,
        why: &'a StartError,
    },
    #[error(
        "pass {pass} of {of} failed; the run stops there, the outputs hold the passes before it and what it sent"
    )]
    Failed { pass: u32, of: u32 },
}

/// How far the counter passes went: all of them, for the report, or the one that stopped
/// the run, for a warning.
fn passes_done(passes: &runner::Passes) -> std::result::Result<String, PassStopped<'_>> {
    let &Passes { pass, of, .. } = passes;
    let failed = passes.exit.is_none_or(|e| e.status() != 0);
    match &passes.failed_to_start {
        Some(why) => Err(PassStopped::NotStarted { pass, of, why }),
        None if failed => Err(PassStopped::Failed { pass, of }),
        None => Ok(format!("{of} passes, merged into one run\n")),
    }
}

/// The installed rocprofiler-sdk, said on stderr; a missing or too old one is the user's
/// to fix before anything starts.
fn installed_sdk() -> Result<Sdk> {
    let sdk = sdk::find(|name| std::env::var(name).ok()).map_err(|e| {
        let hint = match e {
            SdkError::Missing { .. } => "install ROCm 7.0 or later, or set ROCM_PATH to its installation; `--device sim` runs the pipeline on the simulated SDK",
            SdkError::TooOld { .. } => "install ROCm 7.0 or later (rocprofiler-sdk 1.0), or set ROCM_PATH to such an installation",
        };
        Error::user(Diagnostic::error(e.to_string()).hint(hint))
    })?;
    let version = sdk
        .version
        .map_or("(version unknown)".into(), |v| v.to_string());
    messages::note(format_args!(
        "rocprofiler-sdk {version} at {} (found through {})",
        sdk.path.display(),
        sdk.found_by
    ));
    Ok(sdk)
}

/// Why no process connected, as far as rocflow can tell from outside.
fn no_stream_message(device: &Device, app: &std::ffi::OsStr) -> String {
    let app = app.to_string_lossy();
    let why = match device {
        Device::Sim(_) => format!(
            "the simulated SDK did not load the tool into `{app}` (a statically linked or setuid program ignores LD_PRELOAD)"
        ),
        Device::Rocm => format!(
            "`{app}` did not load rocprofiler-sdk with the rocflow tool. Is it a HIP/ROCm application (a ROCm runtime loads the SDK as it starts)? Messages from the tool above say why it stayed off; `--device sim` runs the pipeline on the simulated SDK"
        ),
    };
    format!("no process connected, nothing was profiled and no outputs were written: {why}")
}
