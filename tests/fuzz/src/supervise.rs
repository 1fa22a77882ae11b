//! The supervisor: a worker process per target, so that a crash which kills a worker (a
//! stack overflow, an allocation past the memory limit) ends only that worker and is
//! reported like any other failure: its input is the worker's last, its kind what the
//! runtime said as it aborted. Every failure is reported here, and nowhere else.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::files::Files;
use crate::rng;
use crate::targets::{self, Target};
use crate::{Args, CAUGHT};

/// Bytes of a crashed worker's standard error shown, from its end.
const STDERR_TAIL: usize = 4000;

/// A failure, as reported.
struct Failure {
    target: &'static str,
    ended: Ended,
    /// Where the failing input is.
    input: PathBuf,
}

/// How a worker ended on a failing input.
struct Ended {
    kind: String,
    message: String,
    input: Vec<u8>,
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
        let found = match &args.replay {
            Some(file) => replay(args, target, &out, file).map(Vec::from_iter),
            None => campaign(args, target, &out),
        };
        match found {
            Ok(found) => failures.extend(found),
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
        .map(|f| format!("{}: {} ({})", f.target, f.ended.kind, f.input.display()))
        .collect();
    println!("{} failed:\n  {}", failures.len(), summary.join("\n  "));
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

/// Fuzzes `target` for its time: after a failure, a worker with the next seed goes on for
/// the time left. Each distinct failure is saved under `crashes/` and reported once.
fn campaign(args: &Args, target: &'static Target, out: &Path) -> Result<Vec<Failure>, String> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.time);
    let mut failures = Vec::new();
    let (mut seen, mut repeats, mut runs, mut workers) = (HashSet::new(), 0, 0, 0);
    let mut time = args.time;
    for seed in (0..).map(|round| args.seed.wrapping_add(round)) {
        let worker = args.worker_args(target.name, &work(out, target), seed, time);
        let (ran, ended) = supervise(target, out, worker)?;
        (runs, workers) = (runs + ran, workers + 1);
        let Some(ended) = ended else {
            break;
        };
        if seen.insert(ended.signature()) {
            let input = save(target, &ended, &out.join("crashes"))?;
            let failure = Failure {
                target: target.name,
                ended,
                input,
            };
            println!("{failure}");
            failures.push(failure);
        } else {
            repeats += 1;
        }
        time = deadline.saturating_duration_since(Instant::now()).as_secs();
        if time == 0 {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}: {runs} inputs in {seconds:.0} s ({:.0}/s); workers: {workers}, failures: {}, repeats: {repeats}",
        target.name,
        runs as f64 / seconds.max(1e-3),
        failures.len(),
    );
    Ok(failures)
}

/// Runs `file` once on `target`.
fn replay(
    args: &Args,
    target: &'static Target,
    out: &Path,
    file: &Path,
) -> Result<Option<Failure>, String> {
    let worker = args.worker_args(target.name, &work(out, target), args.seed, args.time);
    let failure = supervise(target, out, worker)?.1.map(|ended| Failure {
        target: target.name,
        ended,
        input: file.to_owned(),
    });
    failure.iter().for_each(|f| println!("{f}"));
    Ok(failure)
}

/// A worker's folder: one per target and supervisor.
fn work(out: &Path, target: &Target) -> PathBuf {
    out.join("work")
        .join(format!("{}-{}", target.name, std::process::id()))
}

/// Runs a worker with `args` and waits for it; how many inputs it ran, and the failure it
/// ended on, if any.
fn supervise(
    target: &Target,
    out: &Path,
    args: Vec<std::ffi::OsString>,
) -> Result<(u64, Option<Ended>), String> {
    let dir = work(out, target);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let files = Files::new(dir.clone());
    let stderr = std::fs::File::create(files.stderr()).map_err(|e| e.to_string())?;
    let status = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(args)
        // So that a failed allocation says where it was.
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stderr(stderr)
        .status()
        .map_err(|e| format!("starting a worker: {e}"))?;
    let stderr = std::fs::read(files.stderr()).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL)..]);
    let ended = match classify(status, &stderr, &files)? {
        Some((kind, message)) => Some(Ended {
            kind,
            message,
            input: std::fs::read(files.input()).map_err(|e| e.to_string())?,
        }),
        None => None,
    };
    let runs = files.read_runs();
    std::fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    Ok((runs, ended))
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
        return Err(format!("the worker failed ({status}):\n{stderr}"));
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

impl Ended {
    /// What tells failures apart: the kind, and the first place in the code the message
    /// names (where a panic was, the first frame of a backtrace outside the standard
    /// library).
    fn signature(&self) -> String {
        let place = self.message.lines().find_map(|line| {
            let line = line.trim_start();
            let place = line
                .strip_prefix("panicked at ")
                .or_else(|| line.strip_prefix("at "))?;
            (!place.starts_with("/rustc/")).then_some(place)
        });
        format!("{} {}", self.kind, place.unwrap_or_default())
    }
}

/// Writes the failing input to `crashes/TARGET/KIND-HASH.EXT`.
fn save(target: &Target, ended: &Ended, crashes: &Path) -> Result<PathBuf, String> {
    let dir = crashes.join(target.name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let name = format!(
        "{}-{:016x}.{}",
        ended.kind.replace(' ', "-"),
        rng::hash(&ended.input),
        target.extension
    );
    let path = dir.join(name);
    std::fs::write(&path, &ended.input).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "FAILED {}: {}", self.target, self.ended.kind)?;
        writeln!(f, "  input:  {}", self.input.display())?;
        writeln!(
            f,
            "  replay: cargo run --release -p rocflow-fuzz -- --replay {}",
            self.input.display()
        )?;
        for line in self.ended.message.lines() {
            writeln!(f, "  | {line}")?;
        }
        Ok(())
    }
}
