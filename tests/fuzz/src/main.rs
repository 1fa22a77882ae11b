//! rocflow-fuzz: a seeded mutation fuzzer for rocflow's parsers and decoders that runs on
//! stable Rust. Each target is fuzzed in a worker process of its own; a crash, panic,
//! hang or memory blow-up saves the input under `crashes/` and is reported with its
//! target and kind, and the exit status is 1.
//!
//! ```text
//! rocflow-fuzz --target all --time 3600 --seed 7    # an hour per target
//! rocflow-fuzz --target all --jobs 16 --runs 10000000 --time 3600   # on 16 cores
//! rocflow-fuzz --replay target/fuzz/crashes/pipeline/panic-….toml
//! ```

mod campaign;
mod corpus;
mod database;
mod files;
mod frames;
mod mutate;
mod rng;
mod runner;
mod supervise;
mod tally;
mod targets;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use campaign::Budget;
use files::Files;
use runner::Limits;

/// Fuzzes rocflow's spool reader, wire decoder, pipeline compiler, expression languages,
/// counter definitions and rocprofv3 import.
#[derive(Debug, Parser)]
#[command(name = "rocflow-fuzz")]
struct Args {
    /// Targets, comma-separated, or `all` (`--list` names them).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    target: Vec<String>,
    /// The seed of the mutations: the same seed and budget give the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds to fuzz each target, at most. After a failure a new worker goes on, with
    /// the next seed, for the time left: a campaign reports every distinct failure it meets.
    #[arg(long, default_value_t = 60)]
    time: u64,
    /// Mutated inputs to run on each target, at most, shared by its workers.
    #[arg(long, default_value_t = u64::MAX, hide_default_value = true)]
    runs: u64,
    /// Workers fuzzing each target at once, each with a seed of its own: one per core.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
    /// Seconds an input may run before it counts as a hang.
    #[arg(long, default_value_t = 2.0)]
    timeout: f64,
    /// MiB of address space a worker may use; a larger allocation aborts it.
    #[arg(long, default_value_t = 2048)]
    memory: u64,
    /// MiB of stack of the thread inputs run on.
    #[arg(long, default_value_t = 8)]
    stack: usize,
    /// Where `crashes/` and the workers' folders go [default: target/fuzz].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Where the workers' folders go [default: a folder in /dev/shm, a RAM file system,
    /// where it has room; else OUT/work].
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Run one saved input again; its target is the folder it is in, unless --target names one.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
    /// Run as the worker of a supervisor, in this folder.
    #[arg(long, hide = true, value_name = "DIR")]
    worker: Option<PathBuf>,
}

/// A worker's exit status when it caught a failure and wrote it down.
const CAUGHT: u8 = 3;

fn main() -> ExitCode {
    // SAFETY: called before any other thread exists; a closed pipe (`| head`) then ends
    // the process quietly instead of making `println!` panic.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args = Args::parse();
    match &args.worker {
        Some(dir) => worker(&args, Files::new(dir.clone())),
        None => supervise::main(&args),
    }
}

/// Runs a campaign (or a replay) on the one target the supervisor names.
fn worker(args: &Args, files: Files) -> ExitCode {
    let target = targets::find(&args.target[0]).expect("the supervisor names a target");
    let outcome = match &args.replay {
        Some(file) => campaign::replay(target, file, args.limits(), &files),
        None => campaign::fuzz(target, args.seed, args.budget(), args.limits(), &files),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(caught) => {
            let text = format!("{}\n{}", caught.kind, caught.message);
            std::fs::write(files.caught(), text).expect("the worker folder is writable");
            ExitCode::from(CAUGHT)
        }
    }
}

impl Args {
    fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_secs_f64(self.timeout),
            memory: self.memory << 20,
            stack: self.stack << 20,
        }
    }

    fn budget(&self) -> Budget {
        Budget {
            runs: self.runs,
            time: Duration::from_secs(self.time),
        }
    }

    /// The arguments of a worker on `target` in `dir`: these, less the choice of targets,
    /// with its own seed, seconds and inputs.
    fn worker_args(
        &self,
        target: &str,
        dir: &Path,
        seed: u64,
        time: u64,
        runs: u64,
    ) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--worker".into(), dir.into(), "--target".into()];
        args.push(target.into());
        for (flag, value) in [
            ("--seed", seed.to_string()),
            ("--time", time.to_string()),
            ("--runs", runs.to_string()),
            ("--timeout", self.timeout.to_string()),
            ("--memory", self.memory.to_string()),
            ("--stack", self.stack.to_string()),
        ] {
            args.extend([flag.into(), value.into()]);
        }
        if let Some(file) = &self.replay {
            args.extend(["--replay".into(), file.into()]);
        }
        args
    }
}
