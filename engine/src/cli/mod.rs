//! The `rocflow` command line: one function per subcommand, and one place that prints
//! the error that ends a command and picks the exit code. What a command reports and goes
//! on after goes through [`crate::messages`].

mod agents;
mod analyze;
mod attach;
mod campaign;
mod counters;
mod device;
mod doctor;
mod flags;
mod import;
mod input;
mod job;
mod manual;
mod outputs;
mod pipeline;
mod pipeline_args;
mod plugins;
mod rocprofv3;
mod run;
mod session_host;
mod shell;
mod spool;
mod stdio;
mod unreplayed;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::Error;
use crate::messages;

/// Declarative profiling pipelines for AMD GPUs, on rocprofiler-sdk.
///
/// Write a TOML pipeline that says what to collect (tracing domains, counters, PC sampling)
/// and where it goes (Perfetto, Parquet, rocpd SQLite, OTF2), then check it with `rocflow
/// validate` and see what it becomes with `rocflow explain`.
#[derive(Debug, Parser)]
#[command(
    name = "rocflow",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    /// Threads to work on (reading, writing, compressing), at most: RAYON_NUM_THREADS
    /// otherwise, else one per core.
    #[arg(long, global = true, value_name = "N")]
    threads: Option<std::num::NonZeroUsize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check pipeline files: TOML, templates, schema and semantics. Exit 0 when valid, 2 when not.
    Validate(pipeline::ValidateArgs),
    /// Show what a pipeline compiles to: SDK contexts, buffers, counters, stages, sinks.
    Explain(pipeline::ExplainArgs),
    /// Write a starter pipeline that extends a template: `rocflow init [TEMPLATE] [-o FILE]`.
    Init(pipeline::InitArgs),
    /// List and show pipeline templates (shipped, and on ROCFLOW_PIPELINE_PATH).
    #[command(subcommand)]
    Templates(pipeline::TemplatesCommand),
    /// Profile an application: `rocflow run [PIPELINE] -- APP ARGS…` (`trace-all` by default).
    ///
    /// Stdout is the application's: rocflow's own output (progress, notes, and the report at
    /// the end of what was collected and written, with the summary's tables) goes to stderr.
    Run(run::RunArgs),
    /// Profile a process already running, then detach and leave it running:
    /// `rocflow attach PID [PIPELINE] [--duration D]`. The process must have been started
    /// attachable (ROCP_TOOL_ATTACH=1, rocprofiler-register preloaded).
    Attach(attach::AttachArgs),
    /// Rebuild a run's outputs from its raw spool (with its pipeline or another one), or run
    /// a pipeline on rocpd databases (rocprofv3's).
    Replay(spool::ReplayArgs),
    /// Show what a raw spool or rocpd databases hold: processes, agents, records per kind,
    /// time span, losses.
    Inspect(spool::InspectArgs),
    /// Statistics of a run: per kernel, API function, copy, allocation, marker and counter.
    Summary(spool::SummaryArgs),
    /// Compare two runs: per-kernel, API and counter changes; gate regressions with --fail-if.
    Diff(spool::DiffArgs),
    /// Findings on a run: where the GPU waited, copies blocked, launches cost more than
    /// kernels; each with evidence, time at stake and advice. Gate CI with --fail-if.
    Analyze(analyze::AnalyzeArgs),
    /// Analyse the runs of a job's ranks together on Dask: one Parquet dataset partitioned by
    /// host and rank, and recipes over it (kernel and API summaries, GPU busy time), on this
    /// machine or a cluster.
    Campaign(campaign::CampaignArgs),
    /// Write a synthetic run to a spool (for benchmarks, tests and demos).
    #[command(hide = true)]
    Generate(spool::GenerateArgs),
    /// Convert counter definitions from the legacy rocprofiler-sdk YAML schema to the standardized one.
    MigrateCounters(counters::MigrateArgs),
    /// List a device's agents (GPUs and CPUs) and, with --counters, their counters.
    Agents(agents::AgentsArgs),
    /// Answer `rocflow agents` from the SDK loaded into this process (it runs apart).
    #[command(hide = true)]
    DeviceQuery(agents::QueryArgs),
    /// List, show and check counter definitions.
    #[command(subcommand)]
    Counters(counters::CountersCommand),
    /// Convert a rocprofv3 input file (YAML or JSON jobs, or text pmc lines) into pipelines.
    #[command(name = "import-rocprofv3")]
    ImportRocprofv3(import::ImportArgs),
    /// List the plugins (custom transforms and sinks) pipelines can name.
    #[command(subcommand)]
    Plugins(plugins::PluginsCommand),
    /// Print the completion script of a shell: `rocflow completions bash|zsh|fish`.
    Completions(shell::CompletionsArgs),
    /// Print the manual page (roff) of rocflow or of a command, or write a page per command
    /// with --dir.
    Man(shell::ManArgs),
    /// List what a shell completes a word with (the completion scripts call it).
    #[command(name = "__complete", hide = true)]
    Complete(shell::CompleteArgs),
    /// Check this machine for profiling: SDK, /dev/kfd, visible GPUs, counters, PC sampling,
    /// AMD-SMI, performance level, ptrace scope. Exit 0 when no check failed, 1 when one did.
    Doctor(doctor::DoctorArgs),
    /// Read AMD-SMI's device metrics for `rocflow doctor` from the library loaded into this
    /// process (it runs apart).
    #[command(hide = true)]
    SmiQuery(doctor::SmiQueryArgs),
}

/// Runs the command line and maps its outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let variable = std::env::var_os(crate::threads::VARIABLE);
    match crate::threads::resolve(cli.threads, variable.as_deref()) {
        Ok(threads) => crate::threads::init(threads),
        Err(message) => {
            let hint = "set it to a number, or pass --threads N";
            return report(&Error::user(
                crate::diag::Diagnostic::error(message).hint(hint),
            ));
        }
    }
    let outcome = match cli.command {
        Command::Validate(args) => pipeline::validate(args),
        Command::Explain(args) => pipeline::explain(args),
        Command::Init(args) => pipeline::init(args),
        Command::Templates(command) => pipeline::templates(command),
        Command::Run(args) => run::run(args),
        Command::Attach(args) => attach::attach(args),
        Command::Replay(args) => spool::replay(args),
        Command::Inspect(args) => spool::inspect(args),
        Command::Summary(args) => spool::summary(args),
        Command::Diff(args) => spool::diff(args),
        Command::Analyze(args) => analyze::analyze(args),
        Command::Campaign(args) => campaign::campaign(args),
        Command::Generate(args) => spool::generate(args),
        Command::MigrateCounters(args) => counters::migrate(args),
        Command::Agents(args) => agents::agents(args),
        Command::DeviceQuery(args) => agents::query(args),
        Command::Counters(command) => counters::run(command),
        Command::ImportRocprofv3(args) => import::import(args),
        Command::Plugins(command) => plugins::run(command),
        Command::Completions(args) => shell::completions(args, Cli::command()),
        Command::Man(args) => shell::man(args, Cli::command()),
        Command::Complete(args) => shell::complete(args),
        Command::Doctor(args) => doctor::doctor(args),
        Command::SmiQuery(args) => doctor::smi_query(args),
    };
    match outcome {
        // An error reported on the way (a sink that failed) fails a command that would
        // have succeeded.
        Ok(code) if code == ExitCode::SUCCESS && messages::errored() => ExitCode::from(1),
        Ok(code) => code,
        Err(err) => report(&err),
    }
}

/// Prints an error to stderr: each user diagnostic with its snippet, or one line.
fn report(err: &Error) -> ExitCode {
    match err {
        Error::User(diagnostics) => diagnostics.iter().for_each(messages::diagnostic),
        other => messages::error(other),
    }
    err.exit_code()
}

#[cfg(test)]
mod tests {
    /// clap's own checks of the whole command line (clashing names or flags, defaults its
    /// parser rejects, …), which it otherwise makes only when a faulty subcommand is used.
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
