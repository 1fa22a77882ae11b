//! `rocflow replay`, `rocflow inspect`, `rocflow summary`, `rocflow diff` and the hidden
//! `rocflow generate`: commands on raw spools and rocpd databases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use crate::catalog::{Catalog, StreamMeta};
use crate::column::row;
use crate::diag::Diagnostic;
use crate::diff::Diff;
use crate::error::{Error, Result};
use crate::generate;
use crate::messages;
use crate::pipeline;
use crate::plan::{Plan, StageGraph};
use crate::printable;
use crate::progress::{Board, Display, Mode};
use crate::record::{Meta, RecordKind};
use crate::source::{Ending, Input, Source, SourceError, Spool, WindowArgs};
use crate::summary::{self, Breakdown, Format, Summary};
use crate::table::Table;
use crate::wire::Payload;
use crate::{sink, stage};

use super::flags::OutputFlags;
use super::input::{open_input, reopen, spool_error};
use super::outputs::outputs;
use super::pipeline_args::{PipelineArgs, Use};
use super::stdio::print;

fn open(path: &Path) -> Result<Spool> {
    Spool::open(path).map_err(|e| spool_error(path, e))
}

/// The input and pipeline a command line names (see [`Input::from_args`]).
fn inputs(args: &[PathBuf], pipeline: bool) -> Result<(Input, Option<PathBuf>)> {
    Input::from_args(args, pipeline).map_err(|e| Error::user(Diagnostic::error(e.to_string())))
}

/// Says how a spool's records ended: a warning if it was cut short, and a fault that
/// ended them part-way as a runtime error.
pub(super) fn ended(ending: std::result::Result<&Ending, &SourceError>) -> Result<()> {
    let ending = ending.map_err(|e| Error::Runtime(e.to_string()))?;
    for warning in [&ending.warning, &ending.partial].into_iter().flatten() {
        messages::diagnostic(&Diagnostic::warning(warning.as_str()));
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The raw spool of a run (or the directory of runs: its `last.rfraw`), or rocpd
    /// databases (files, directories, globs); then, optionally, a pipeline (file or
    /// template name) to use instead of the one the run was recorded with. Databases
    /// record no pipeline: without one they replay with `trace-all`.
    #[arg(required = true, value_name = "INPUT… [PIPELINE]")]
    inputs: Vec<PathBuf>,
    /// Run the plugins and commands of the recorded pipeline too: only for a spool from
    /// someone you trust (without it they are left out, and named on stderr).
    #[arg(long)]
    trust_plan: bool,
    #[command(flatten)]
    window: WindowArgs,
    #[command(flatten)]
    options: PipelineArgs,
    #[command(flatten)]
    flags: OutputFlags,
    /// Print only warnings and errors: no progress, notes or report of what was written.
    #[arg(long, short)]
    quiet: bool,
}

/// Rebuilds outputs from a spool, with the recorded pipeline or another one.
pub fn replay(args: ReplayArgs) -> Result<ExitCode> {
    if args.quiet {
        messages::quiet();
    }
    let (input, pipeline) = inputs(&args.inputs, true)?;
    if args.trust_plan && pipeline.is_some() {
        return Err(Error::user(Diagnostic::error(
            "--trust-plan runs the recorded pipeline: give it or a pipeline, not both",
        )));
    }
    let overlay = args.flags.overlay();
    if pipeline.is_none() && !input.is_databases() && overlay.changes_steps() {
        return Err(Error::user(
            Diagnostic::error(
                "--stats and -d change a pipeline, and the recorded one is replayed as it was",
            )
            .hint("give a pipeline: rocflow replay RUN.rfraw PIPELINE.toml --stats"),
        ));
    }
    // A compiled plan has the flag's form already; a recorded one takes it.
    let kernel_names = overlay.kernel_names();
    let mut plan = match (&pipeline, &input) {
        (Some(file), _) => args.options.compile(file, overlay, Use::Records)?,
        (None, Input::Databases(_)) => {
            let notice = Diagnostic::notice(format!(
                "rocpd databases record no pipeline: replaying with `{DATABASE_PIPELINE}`"
            ))
            .hint("give another: rocflow replay DB… PIPELINE");
            messages::diagnostic(&notice);
            args.options
                .compile(Path::new(DATABASE_PIPELINE), overlay, Use::Records)?
        }
        (None, Input::Spool(spool)) if args.trust_plan => recorded_plan(spool)?,
        (None, Input::Spool(spool)) => untrusted_outputs(
            spool,
            recorded_plan(spool)?,
            "if you trust whoever made the spool, replay it with --trust-plan; or give a \
             pipeline: rocflow replay RUN.rfraw PIPELINE.toml",
        )?,
    };
    if let Some(form) = kernel_names {
        plan.stages.kernel_names = form;
    }
    let mut source = open_input(&input, &args.window)?;
    let board = Arc::new(Board::default());
    let display = Display::start(Mode::for_stderr(args.quiet), Arc::clone(&board));
    let (collect, beside) = crate::post::Collect::of(&plan);
    let mut report = stage::run_watched(&plan, &mut *source, &sink::open, beside, &board)?;
    ended(report.source.as_ref())?;
    if input.is_databases() {
        let wanted = plan.contexts.iter().flat_map(|c| c.record_kinds());
        let missing = crate::source::missing_kinds(wanted, &report.records_in);
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|k| k.name()).collect();
            let warning = Diagnostic::warning(format!(
                "the pipeline collects {} records, which the databases hold none of",
                names.join(", ")
            ));
            messages::diagnostic(&warning);
        }
        // A database keeps decoded thread traces at most, never the raw ones a trace is
        // kept and decoded from.
        if plan.contexts.iter().any(|c| c.thread_trace.is_some()) {
            messages::diagnostic(&Diagnostic::warning(
                "the pipeline traces threads, and rocpd databases keep no raw thread trace: none is kept or decoded",
            ));
            plan.contexts.iter_mut().for_each(|c| c.thread_trace = None);
        }
    }
    let total: u64 = report.records_in.iter().map(|(_, n)| n).sum();
    let mut out = format!("replayed {total} records from {}\n", input.describe());
    let reopen = || reopen(&input, &args.window);
    outputs(
        &plan,
        &mut report,
        input.path(),
        &reopen,
        collect,
        &board,
        &mut out,
    );
    display.finish();
    if !args.quiet {
        print(&out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The pipeline databases replay with when none is given: they fix what was collected,
/// and this one writes everything.
const DATABASE_PIPELINE: &str = "trace-all";

#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// The raw spool of a run (or the directory of runs: its `last.rfraw`), or rocpd
    /// databases (files, directories, globs); then, optionally, a pipeline whose
    /// transforms apply first (default: the one the run was recorded with, or none).
    #[arg(required = true, value_name = "INPUT… [PIPELINE]")]
    inputs: Vec<PathBuf>,
    /// Rows of each printed table, those with the most time (or counter value) first.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Write the tables into this directory (CSV per table, summary.md, summary.json).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Formats: printed to stdout without --output, written with it.
    #[arg(long, value_enum, value_delimiter = ',')]
    format: Vec<Format>,
    /// Split the statistics per node (hostname), process and/or agent: across the
    /// databases of many nodes, `--by node,process,agent` keeps each apart.
    #[arg(long, value_enum, value_delimiter = ',')]
    by: Vec<By>,
    #[command(flatten)]
    window: WindowArgs,
    #[command(flatten)]
    options: PipelineArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum By {
    Node,
    Process,
    Agent,
}

/// The summary tables of the run `input` holds, through `stages`, and why they are
/// partial, if they are.
fn summary_tables(
    input: &Input,
    window: &WindowArgs,
    stages: &StageGraph,
    breakdown: Breakdown,
) -> Result<(Vec<Table>, Option<String>)> {
    let mut source = open_input(input, window)?;
    let (summary, ending) =
        Summary::of_run(stages, &mut *source, breakdown).map_err(Error::Runtime)?;
    ended(ending.as_ref())?;
    Ok((summary.tables(), summary.catalog.partial))
}

/// The stages a spool was recorded with, plugins left out (see [`untrusted`]; no
/// transforms for a spool written without a pipeline, or for a database).
pub(super) fn recorded_stages(input: &Input, hint: &str) -> StageGraph {
    let Input::Spool(spool) = input else {
        return StageGraph::default();
    };
    recorded_plan(spool).map_or_else(
        |_| StageGraph::default(),
        |plan| untrusted(spool, plan, hint).stages,
    )
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline run: its spool (or directory of runs), or rocpd databases (a file, a
    /// directory of them, a glob).
    a: PathBuf,
    /// The run compared with it, named the same ways.
    b: PathBuf,
    /// Output: a terminal table, Markdown or JSON.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    format: DiffFormat,
    /// Rows shown per section.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// Exit 1 when this predicate holds, e.g. "kernel_time_ratio > 1.10" (names:
    /// kernel_time_ratio, api_time_ratio, worst_kernel_ratio, worst_counter_ratio,
    /// kernels_added, kernels_removed).
    #[arg(long, value_name = "EXPR")]
    fail_if: Option<String>,
    /// The same window of both runs (a percentage or marker of each).
    #[command(flatten)]
    window: WindowArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DiffFormat {
    Text,
    Md,
    Json,
}

/// Compares two runs per kernel, API function, copy and counter.
pub fn diff(args: DiffArgs) -> Result<ExitCode> {
    let hint = "the runs are compared without them";
    let tables = |arg: &Path| {
        let input = Input::of(arg);
        let stages = recorded_stages(&input, hint);
        summary_tables(&input, &args.window, &stages, Breakdown::default()).map(|t| t.0)
    };
    let diff = Diff::new(&tables(&args.a)?, &tables(&args.b)?);
    // Check the predicate before printing anything: a typo is a usage error.
    let failed = match &args.fail_if {
        Some(predicate) => diff
            .fails(predicate)
            .map_err(|e| Error::user(Diagnostic::error(format!("--fail-if `{predicate}`: {e}"))))?,
        None => false,
    };
    print(&match args.format {
        DiffFormat::Text => diff.text(args.top, false),
        DiffFormat::Md => diff.text(args.top, true),
        DiffFormat::Json => format!("{:#}\n", diff.json()),
    })?;
    if failed {
        eprintln!(
            "rocflow diff: `{}` holds",
            args.fail_if.as_deref().unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Statistics of a run: per kernel, API function, copy, allocation, marker and counter.
pub fn summary(args: SummaryArgs) -> Result<ExitCode> {
    let (input, pipeline) = inputs(&args.inputs, true)?;
    let stages = match &pipeline {
        Some(file) => {
            pipeline::compile_file(file, &args.options.records_options()?)
                .map_err(Error::User)?
                .plan
                .stages
        }
        None => recorded_stages(
            &input,
            "to run them, give the pipeline: rocflow summary RUN.rfraw PIPELINE.toml",
        ),
    };
    let breakdown = Breakdown {
        node: args.by.contains(&By::Node),
        process: args.by.contains(&By::Process),
        agent: args.by.contains(&By::Agent),
    };
    let (tables, partial) = summary_tables(&input, &args.window, &stages, breakdown)?;
    let mut out = String::new();
    match &args.output {
        Some(dir) => {
            let formats = if args.format.is_empty() {
                vec![Format::Csv, Format::Md, Format::Json]
            } else {
                args.format.clone()
            };
            let paths = summary::write_files(&tables, partial.as_deref(), dir, &formats)
                .map_err(Error::io(format!("writing {}", dir.display())))?;
            for path in paths {
                out.push_str(&format!("{}\n", path.display()));
            }
        }
        None => {
            for format in &args.format {
                out.push_str(&summary::render_of_run(
                    &tables,
                    partial.as_deref(),
                    *format,
                ));
            }
        }
    }
    if args.format.is_empty() || args.output.is_some() {
        out.push_str(&summary::terminal(&tables, args.top));
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The plan recorded in `spool`, as anyone may have written it: without what would run
/// code. What was left out is named on stderr, with `hint` on how to run it.
fn untrusted(spool: &Path, plan: Plan, hint: &str) -> Plan {
    let (plan, left_out) = plan.without_code();
    if !left_out.is_empty() {
        let names: Vec<String> = left_out.iter().map(ToString::to_string).collect();
        let warning = Diagnostic::warning(format!(
            "the pipeline recorded in `{}` runs code, left out: {}",
            spool.display(),
            names.join(", ")
        ))
        .hint(hint);
        messages::diagnostic(&warning);
    }
    plan
}

/// The plan recorded in `spool`, to write outputs with as anyone may have written it:
/// refused if it reaches outside this directory or past [`crate::plan::Bounds::STRANGER`],
/// its queries bounded, and without what would run code.
fn untrusted_outputs(spool: &Path, plan: Plan, hint: &str) -> Result<Plan> {
    let plan = plan.bounded().map_err(|refused| {
        Error::user(
            Diagnostic::error(format!(
                "the pipeline recorded in `{}` asks for more than a spool from anyone may: {}",
                spool.display(),
                refused.join("; ")
            ))
            .hint(hint),
        )
    })?;
    Ok(untrusted(spool, plan, hint))
}

/// The plan stored in the spool's first metadata frames.
fn recorded_plan(path: &Path) -> Result<Plan> {
    let mut source = open(path)?;
    while let Some(frame) = source.next_frame() {
        match frame.payload {
            Payload::Meta(items) => {
                if let Some(json) = items.into_iter().find_map(|m| match m {
                    Meta::Plan { json } => Some(json),
                    _ => None,
                }) {
                    return Plan::from_json(&json).map_err(|e| {
                        Error::user(
                            Diagnostic::error(format!(
                                "the pipeline recorded in `{}` cannot be read by this rocflow: {e}",
                                path.display()
                            ))
                            .hint("give a pipeline: rocflow replay RUN.rfraw PIPELINE.toml"),
                        )
                    });
                }
            }
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) => break,
        }
    }
    source.finish().map_err(|e| Error::Runtime(e.to_string()))?;
    Err(Error::user(
        Diagnostic::error(format!("`{}` holds no pipeline to replay", path.display()))
            .hint("give one: rocflow replay RUN.rfraw PIPELINE.toml"),
    ))
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The raw spool of a run (or the directory of runs: its `last.rfraw`), or rocpd
    /// databases (files, directories, globs).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    window: WindowArgs,
}

/// Prints what a spool holds: processes, agents, records per kind, time span, losses.
/// The counters the SDK resolved for a process, by agent and name, with the SDK's counter
/// id and dimensions (name and size, in the SDK's order).
fn counters(meta: &StreamMeta) -> Vec<serde_json::Value> {
    let mut counters: Vec<_> = meta.counters.values().collect();
    counters.sort_by(|a, b| (a.agent, &a.name).cmp(&(b.agent, &b.name)));
    counters
        .into_iter()
        .map(|c| {
            let dimensions: Vec<_> = c
                .dimensions
                .iter()
                .map(|(name, size)| serde_json::json!({ "name": name, "size": size }))
                .collect();
            serde_json::json!({
                "agent": c.agent, "name": c.name, "id": c.id, "dimensions": dimensions,
            })
        })
        .collect()
}

pub fn inspect(args: InspectArgs) -> Result<ExitCode> {
    let (input, _) = inputs(&args.inputs, false)?;
    let mut source = open_input(&input, &args.window)?;
    let mut catalog = Catalog::default();
    let mut counts: BTreeMap<RecordKind, u64> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    while let Some(frame) = source.next_frame() {
        match frame.payload {
            Payload::Meta(items) => catalog.apply(frame.stream, items),
            Payload::Args(_) | Payload::Trace(_) => {}
            Payload::Records(batch) => {
                *counts.entry(batch.kind()).or_default() += batch.len() as u64;
                for i in 0..batch.len() {
                    let start = row(&batch, i).start_ns();
                    first = first.min(start);
                    last = last.max(start);
                }
            }
        }
    }
    let ending = source.finish();
    ended(ending.as_ref())?;
    let (warning, partial) = ending.map_or_else(|_| (None, None), |e| (e.warning, e.partial));
    let processes: Vec<serde_json::Value> = catalog
        .streams()
        .map(|(stream, meta)| {
            let p = meta.process.as_ref();
            serde_json::json!({
                "stream": stream,
                "pid": p.map(|p| p.pid),
                "hostname": p.map(|p| p.hostname.clone()),
                "command": p.map(|p| p.command.join(" ")),
                "agents": meta.agents.iter().map(|a| serde_json::json!({
                    "index": a.index, "type": a.agent_type, "name": a.name, "product": a.product_name,
                    "node_id": a.node_id, "cu_count": a.cu_count, "simd_count": a.simd_count,
                    "xcc_count": a.xcc_count, "wave_front_size": a.wave_front_size,
                    "max_waves_per_simd": a.max_waves_per_simd, "lds_bytes_per_cu": a.lds_bytes_per_cu,
                    "max_engine_clk_mhz": a.max_engine_clk_mhz,
                })).collect::<Vec<_>>(),
                "counters": counters(meta),
                "kernels": meta.kernels.len(),
                "dropped": meta.dropped.iter().map(|(k, n)| (k.name(), *n)).collect::<BTreeMap<_, _>>(),
                "replayed_passes": meta.replayed_passes,
                "unreplayed_dispatches": meta.unreplayed.values().sum::<u64>(),
            })
        })
        .collect();
    let records: BTreeMap<&str, u64> = counts.iter().map(|(k, n)| (k.name(), *n)).collect();
    let span = (first <= last).then_some((first, last));
    if args.json {
        let json = serde_json::json!({
            "spool": input.describe(),
            "complete": partial.is_none(),
            "warning": partial.or(warning),
            "processes": processes,
            "records": records,
            "total_records": counts.values().sum::<u64>(),
            "first_ns": span.map(|s| s.0),
            "last_ns": span.map(|s| s.1),
            "has_pipeline": catalog.plan.is_some(),
        });
        print(&format!("{json:#}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!("{}\n", input.describe());
    for (stream, meta) in catalog.streams() {
        let p = meta.process.as_ref();
        out.push_str(&format!(
            "  process {} on {} (stream {stream}): {}\n",
            p.map_or("?".into(), |p| p.pid.to_string()),
            p.map_or("?".into(), |p| printable::name(&p.hostname)),
            p.map_or(String::new(), |p| printable::name(&p.command.join(" "))
                .into_owned())
        ));
        for a in &meta.agents {
            out.push_str(&format!(
                "    agent {}: {:?} {} ({}, {} CUs)\n",
                a.index,
                a.agent_type,
                printable::name(&a.name),
                printable::name(&a.product_name),
                a.cu_count
            ));
        }
        for (kind, n) in &meta.dropped {
            out.push_str(&format!("    dropped: {n} {} records\n", kind.name()));
        }
        if meta.replayed_passes > 0 {
            out.push_str(&format!(
                "    replayed passes: {} dispatch records left out\n",
                meta.replayed_passes
            ));
        }
        let unreplayed: u64 = meta.unreplayed.values().sum();
        if unreplayed > 0 {
            out.push_str(&format!(
                "    not replayed: {unreplayed} dispatches, with the first pass's counters only\n"
            ));
        }
    }
    out.push_str("  records:\n");
    for (kind, n) in &records {
        out.push_str(&format!("    {kind:<24} {n:>12}\n"));
    }
    if let Some((first, last)) = span {
        out.push_str(&format!(
            "  time span: {:.3} ms\n",
            (last - first) as f64 / 1e6
        ));
    }
    out.push_str(&format!(
        "  pipeline: {}\n",
        if catalog.plan.is_some() {
            "recorded (replay needs no pipeline file)"
        } else {
            "none recorded"
        }
    ));
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Where to write the spool (the folder of a job's spools with --ranks).
    out: PathBuf,
    /// How many records to generate.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// How many processes (streams).
    #[arg(long, default_value_t = 1)]
    processes: u16,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A pipeline (file or template name) to record with the run, for `replay` without one.
    #[arg(long)]
    pipeline: Option<PathBuf>,
    #[command(flatten)]
    options: PipelineArgs,
    #[command(flatten)]
    job: super::job::JobArgs,
}

/// Writes a realistic synthetic run to a spool (for benchmarks, tests and demos), or a
/// simulated MPI job's spools into a folder.
pub fn generate(args: GenerateArgs) -> Result<ExitCode> {
    if let Some(job) = args.job.job(args.seed) {
        return super::job::generate(&job, args.job.rocpd(), &args.out);
    }
    let plan = match &args.pipeline {
        Some(file) => Some(
            pipeline::compile_file(file, &args.options.records_options()?)
                .map_err(Error::User)?
                .plan
                .to_json(),
        ),
        None => None,
    };
    let options = generate::Options {
        records: args.records,
        processes: args.processes,
        seed: args.seed,
        plan,
    };
    // Written under a temporary name and renamed when complete.
    let partial = args.out.with_extension("rfraw.partial");
    let context = || format!("writing {}", args.out.display());
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(Error::io(context()))?;
    }
    let counts = generate::to_spool(&options, &partial).map_err(Error::io(context()))?;
    std::fs::rename(&partial, &args.out).map_err(Error::io(context()))?;
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    print(&format!(
        "generated {total} records into {}\n",
        args.out.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}
