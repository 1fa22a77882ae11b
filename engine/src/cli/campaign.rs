//! `rocflow campaign`: the runs of many processes (the ranks of a job) converted into one
//! Parquet dataset on a Dask cluster and analysed there, by rocflow's Python package
//! (`python/` in the repository; docs/campaigns.md says what runs where). This command
//! finds the package's Python and hands it the command line.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::Args;

use crate::data_home::data_home;
use crate::diag::Diagnostic;
use crate::error::{Error, Result};

/// The variable naming the Python (of an environment holding the package) to run.
const PYTHON: &str = "ROCFLOW_PYTHON";

/// How the README installs the package, for the error that says it is missing.
const INSTALL: &str = "install it from rocflow's repository: `python3 -m venv ~/.local/share/rocflow/venv && ~/.local/share/rocflow/venv/bin/pip install ./python`, or name another environment's python in ROCFLOW_PYTHON";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CampaignArgs {
    #[command(subcommand)]
    diff: Option<Diff>,
    /// The job's runs: rocpd databases (.db), raw spools (.rfraw), run folders, folders of
    /// them, globs, or @LIST (a file naming one a line).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<OsString>,
    /// The campaign's folder, new: the dataset, its processes and each recipe's tables.
    #[arg(short, long, value_name = "DIR", required = true)]
    output: Option<PathBuf>,
    #[command(flatten)]
    cluster: Cluster,
    /// Report a kernel whose slowest rank spent R times the median rank's time or more
    /// (default 1.2).
    #[arg(long, value_name = "R")]
    imbalance_ratio: Option<f64>,
    /// Report a collective whose last rank arrived NS nanoseconds or more after the median
    /// rank (default 100000).
    #[arg(long, value_name = "NS")]
    straggler_ns: Option<u64>,
}

#[derive(Debug, clap::Subcommand)]
enum Diff {
    /// Compare two campaigns' kernels across ranks; gate regressions with --fail-if, as
    /// `rocflow diff` gates two runs (exit 1 when the predicate holds).
    Diff {
        /// The baseline campaign's folder.
        a: PathBuf,
        /// The campaign compared with it.
        b: PathBuf,
        /// Exit 1 when this predicate holds, e.g. "kernel_time_ratio > 1.10".
        #[arg(long, value_name = "EXPR")]
        fail_if: Option<String>,
        /// text or json.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        /// The kernels shown (default 15).
        #[arg(long, value_name = "N")]
        top: Option<u32>,
    },
}

/// Where the tasks run: a running Dask scheduler, or a cluster on this machine.
#[derive(Debug, Args)]
#[group(multiple = false)]
struct Cluster {
    /// The address of a running Dask scheduler (tcp://HOST:PORT).
    #[arg(long, value_name = "ADDRESS")]
    scheduler: Option<String>,
    /// The file a Dask scheduler wrote its address to (`dask scheduler --scheduler-file`,
    /// dask-mpi).
    #[arg(long, value_name = "FILE")]
    scheduler_file: Option<PathBuf>,
    /// The workers of the cluster started on this machine (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    workers: Option<u32>,
}

/// Runs `python -m rocflow.campaign` with the command line, as this rocflow.
pub fn campaign(args: CampaignArgs) -> Result<ExitCode> {
    let python = python()?;
    let mut command = Command::new(&python);
    command.args(["-m", "rocflow.campaign"]);
    match args.diff {
        Some(Diff::Diff {
            a,
            b,
            fail_if,
            format,
            top,
        }) => {
            command.arg("diff").arg(a).arg(b);
            if let Some(format) = format {
                command.args(["--format", &format]);
            }
            if let Some(top) = top {
                command.args(["--top", &top.to_string()]);
            }
            if let Some(predicate) = fail_if {
                let gate = Gate::new(predicate)?;
                command.arg("--metrics").arg(gate.metrics.path());
                return gate.after(run(command, &python)?);
            }
        }
        None => {
            let output = args.output.expect("clap requires it without a subcommand");
            command.arg("-o").arg(output);
            let Cluster {
                scheduler,
                scheduler_file,
                workers,
            } = args.cluster;
            if let Some(address) = scheduler {
                command.args(["--scheduler", &address]);
            }
            if let Some(file) = scheduler_file {
                command.arg("--scheduler-file").arg(file);
            }
            if let Some(workers) = workers {
                command.args(["--workers", &workers.to_string()]);
            }
            if let Some(ratio) = args.imbalance_ratio {
                command.args(["--imbalance-ratio", &ratio.to_string()]);
            }
            if let Some(ns) = args.straggler_ns {
                command.args(["--straggler-ns", &ns.to_string()]);
            }
            command.arg("--").args(&args.inputs);
        }
    }
    Ok(ExitCode::from(run(command, &python)?))
}

/// Runs the package's `command` with this rocflow named to it; its exit code.
fn run(mut command: Command, python: &std::path::Path) -> Result<u8> {
    // The workers convert with this rocflow, where it is at the same path.
    let exe = std::env::current_exe().map_err(Error::io("finding rocflow's own path"))?;
    let status = command
        .env("ROCFLOW", exe)
        .status()
        .map_err(Error::io(format!("running {}", python.display())))?;
    // A signal's end (no code) is a failure of its own.
    Ok(status
        .code()
        .map_or(1, |code| u8::try_from(code).unwrap_or(1)))
}

/// `campaign diff --fail-if`: the predicate, decided by `rocflow diff`'s own evaluator over
/// the metrics the package writes to a file.
struct Gate {
    predicate: String,
    metrics: tempfile::NamedTempFile,
}

impl Gate {
    /// Checks the predicate before anything runs, every campaign metric at 1: a typo or a
    /// name campaigns lack is a usage error, not a pass.
    fn new(predicate: String) -> Result<Gate> {
        let names = crate::diff::METRICS.iter().map(|(name, _)| *name);
        let campaigns = names.filter(|name| *name != "worst_counter_ratio");
        crate::diff::fails(&predicate, campaigns.map(|name| (name, 1.0)))
            .map_err(|e| gate_error(&predicate, e))?;
        let metrics = tempfile::NamedTempFile::new()
            .map_err(Error::io("making a file for the campaigns' metrics"))?;
        Ok(Gate { predicate, metrics })
    }

    /// The exit code of a comparison that ended with `code`: 1 where it succeeded and the
    /// predicate holds over its metrics.
    fn after(self, code: u8) -> Result<ExitCode> {
        if code != 0 {
            return Ok(ExitCode::from(code));
        }
        let path = self.metrics.path();
        let text = std::fs::read_to_string(path)
            .map_err(Error::io(format!("reading {}", path.display())))?;
        let metrics: std::collections::BTreeMap<String, f64> = serde_json::from_str(&text)
            .map_err(|e| Error::io(format!("reading {}", path.display()))(e.into()))?;
        let named = metrics.iter().map(|(name, &value)| (name.as_str(), value));
        if crate::diff::fails(&self.predicate, named).map_err(|e| gate_error(&self.predicate, e))? {
            eprintln!("rocflow campaign diff: `{}` holds", self.predicate);
            return Ok(ExitCode::from(1));
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn gate_error(predicate: &str, e: crate::diff::FailIfError) -> Error {
    Error::user(
        Diagnostic::error(format!("--fail-if `{predicate}`: {e}"))
            .hint("campaigns have every `rocflow diff` metric but worst_counter_ratio"),
    )
}

/// The Python that runs campaigns: ROCFLOW_PYTHON's, else the README's environment's, if it
/// has the package.
fn python() -> Result<PathBuf> {
    let python = match std::env::var_os(PYTHON) {
        Some(python) => PathBuf::from(python),
        None => data_home()
            .map(|home| home.join("venv/bin/python"))
            .ok_or_else(|| missing("no HOME nor XDG_DATA_HOME to find it in".into()))?,
    };
    let finds = Command::new(&python)
        .args([
            "-c",
            "import importlib.util as u, sys; sys.exit(u.find_spec('rocflow.campaign') is None)",
        ])
        .output();
    match finds {
        Ok(out) if out.status.success() => Ok(python),
        Ok(_) => Err(missing(format!(
            "{} has no rocflow package",
            python.display()
        ))),
        Err(e) => Err(missing(format!("cannot run {}: {e}", python.display()))),
    }
}

fn missing(why: String) -> Error {
    Error::user(
        Diagnostic::error(format!("campaigns need rocflow's Python package: {why}")).hint(INSTALL),
    )
}
