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
pub struct CampaignArgs {
    /// The job's runs: rocpd databases (.db), raw spools (.rfraw), run folders, folders of
    /// them, globs, or @LIST (a file naming one a line).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<OsString>,
    /// The campaign's folder, new: the dataset, its processes and each recipe's tables.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    #[command(flatten)]
    cluster: Cluster,
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
    command
        .args(["-m", "rocflow.campaign", "-o"])
        .arg(&args.output);
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
    command.arg("--").args(&args.inputs);
    // The workers convert with this rocflow, where it is at the same path.
    let exe = std::env::current_exe().map_err(Error::io("finding rocflow's own path"))?;
    let status = command
        .env("ROCFLOW", exe)
        .status()
        .map_err(Error::io(format!("running {}", python.display())))?;
    // A signal's end (no code) is a failure of its own.
    let code = status
        .code()
        .map_or(1, |code| u8::try_from(code).unwrap_or(1));
    Ok(ExitCode::from(code))
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
