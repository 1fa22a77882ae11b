//! The supervisor: a worker process per target, so that a crash which kills a worker (a
//! stack overflow, an allocation past the memory limit) ends only that target's campaign
//! and is reported like any other failure: its input is the worker's last, its kind what
//! the runtime said as it aborted. Every failure is reported here, and nowhere else.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};

use crate::campaign::Files;
use crate::rng;
use crate::targets::{self, Target};
use crate::{Args, CAUGHT};

/// Bytes of a crashed worker's standard error shown, from its end.
const STDERR_TAIL: usize = 4000;

/// A failure, as reported.
struct Failure {
    target: &'static str,
    kind: String,
    message: String,
    /// The failing input.
    input: PathBuf,
}

pub fn main(args: &Args) -> ExitCode {
    if args.list {
        targets::ALL.iter().for_each(|t| println!("{}", t.name));
        return ExitCode::SUCCESS;
    }
    let chosen = match &args.replay {
        Some(file) => replayed_target(args, file).map(|t| vec![t]),
        None => chosen_targets(&args.target),
    };
    let chosen = match chosen {
        Ok(chosen) => chosen,
        Err(e) => {
            eprintln!("rocflow-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| targets::root().join("target/fuzz"));
    let mut failures = Vec::new();
    for target in &chosen {
        match supervise(args, target, &out) {
            Ok(None) => {}
            Ok(Some(failure)) => {
                println!("{failure}");
                failures.push(failure);
            }
            Err(e) => {
                eprintln!("rocflow-fuzz: {}: {e}", target.name);
                return ExitCode::from(2);
            }
        }
    }
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    let summary: Vec<String> = failures
        .iter()
        .map(|f| format!("{}: {} ({})", f.target, f.kind, f.input.display()))
        .collect();
    println!(
        "{} of {} targets failed:\n  {}",
        failures.len(),
        chosen.len(),
        summary.join("\n  ")
    );
    ExitCode::FAILURE
}

fn chosen_targets(names: &[String]) -> Result<Vec<&'static Target>, String> {
    if names.iter().any(|n| n == "all") {
        return Ok(targets::ALL.to_vec());
    }
    names.iter().map(|name| target(name)).collect()
}

/// The target a saved input is replayed on: `--target`, else the folder it was saved in.
fn replayed_target(args: &Args, file: &Path) -> Result<&'static Target, String> {
    match args.target.as_slice() {
        [name] if name != "all" => target(name),
        _ => {
            let folder = file.parent().and_then(Path::file_name).unwrap_or_default();
            target(&folder.to_string_lossy())
                .map_err(|e| format!("{e}; say which with --target NAME"))
        }
    }
}

fn target(name: &str) -> Result<&'static Target, String> {
    targets::find(name).ok_or_else(|| {
        let names: Vec<&str> = targets::ALL.iter().map(|t| t.name).collect();
        format!("no target `{name}` (targets: {})", names.join(", "))
    })
}

/// Runs a worker on `target` and waits for it; the failure it ended on, if any.
fn supervise(args: &Args, target: &'static Target, out: &Path) -> Result<Option<Failure>, String> {
    let dir = out
        .join("work")
        .join(format!("{}-{}", target.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let files = Files::new(dir.clone());
    let stderr = std::fs::File::create(files.stderr()).map_err(|e| e.to_string())?;
    let status = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(args.worker_args(target.name, &dir))
        // So that a failed allocation says where it was.
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stderr(stderr)
        .status()
        .map_err(|e| format!("starting a worker: {e}"))?;
    let stderr = std::fs::read(files.stderr()).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL)..]);
    let failure = match classify(status, &stderr, &files) {
        Ok(None) => None,
        Ok(Some((kind, message))) => {
            let input = match &args.replay {
                Some(file) => file.clone(),
                None => save(target, &kind, &files.input(), &out.join("crashes"))?,
            };
            Some(Failure {
                target: target.name,
                kind,
                message,
                input,
            })
        }
        Err(e) => return Err(format!("{e}\n{stderr}")),
    };
    std::fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    Ok(failure)
}

/// What a worker's end says: nothing failed, a failure (its kind and message), or an
/// error of the harness itself.
fn classify(
    status: ExitStatus,
    stderr: &str,
    files: &Files,
) -> Result<Option<(String, String)>, String> {
    if status.success() {
        return Ok(None);
    }
    if status.code() == Some(CAUGHT.into()) {
        let caught = std::fs::read_to_string(files.caught()).map_err(|e| e.to_string())?;
        let (kind, message) = caught.split_once('\n').unwrap_or((&caught, ""));
        return Ok(Some((kind.to_owned(), message.to_owned())));
    }
    let Some(signal) = status.signal() else {
        return Err(format!("the worker failed ({status})"));
    };
    let kind = if stderr.contains("has overflowed its stack") {
        "stack overflow"
    } else if stderr.contains("memory allocation of") {
        "out of memory"
    } else {
        "crash"
    };
    Ok(Some((
        kind.to_owned(),
        format!("killed by signal {signal}; it said:\n{}", stderr.trim_end()),
    )))
}

/// Copies the failing input to `crashes/TARGET/KIND-HASH.EXT`.
fn save(target: &Target, kind: &str, input: &Path, crashes: &Path) -> Result<PathBuf, String> {
    let bytes = std::fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let dir = crashes.join(target.name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let name = format!(
        "{}-{:016x}.{}",
        kind.replace(' ', "-"),
        rng::hash(&bytes),
        target.extension
    );
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "FAILED {}: {}", self.target, self.kind)?;
        writeln!(f, "  input:  {}", self.input.display())?;
        writeln!(
            f,
            "  replay: cargo run --release -p rocflow-fuzz -- --replay {}",
            self.input.display()
        )?;
        for line in self.message.lines() {
            writeln!(f, "  | {line}")?;
        }
        Ok(())
    }
}
