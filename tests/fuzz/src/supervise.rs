//! The supervisor: worker processes per target (`--jobs` at a time), so that a crash
//! which kills a worker (a stack overflow, an allocation past the memory limit) ends only
//! that worker and is reported like any other failure: its input is the worker's last,
//! its kind what the runtime said as it aborted. Every failure is reported here, and
//! nowhere else.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::files::Files;
use crate::rng;
use crate::tally::{self, Tally, Work};
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
    let work = work_root(args, &out);
    let places = Places {
        crashes: out.join("crashes"),
        work: work.clone(),
    };
    let mut failures = Vec::new();
    let mut tallies = Vec::new();
    for target in &chosen {
        let found = match &args.replay {
            Some(file) => replay(args, target, &places, file).map(Vec::from_iter),
            None => campaign(args, target, &places).map(|(found, tally)| {
                println!("{tally}");
                tallies.push(tally);
                found
            }),
        };
        match found {
            Ok(found) => failures.extend(found),
            Err(e) => {
                eprintln!("rocflow-fuzz: {}: {e}", target.name);
                return ExitCode::from(2);
            }
        }
    }
    if args.work.is_none() {
        // Empty once every worker has removed its folder.
        let _ = std::fs::remove_dir(&work);
    }
    if !tallies.is_empty() {
        print!("{}", tally::table(&tallies, usize::from(args.jobs)));
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

/// Where a campaign keeps things.
struct Places {
    /// Failing inputs, by target.
    crashes: PathBuf,
    /// The workers' folders, one each.
    work: PathBuf,
}

/// Where the workers' folders go: `--work`, else a folder of this run's in `/dev/shm` where
/// that is a RAM file system with room, else `OUT/work`. A worker rewrites its files for
/// every input, and a replay makes its outputs durable (fsync) as it would for a user:
/// on a disk, that waiting took longer than the inputs themselves.
fn work_root(args: &Args, out: &Path) -> PathBuf {
    if let Some(work) = &args.work {
        return work.clone();
    }
    let shm = Path::new("/dev/shm");
    if free_bytes(shm).is_some_and(|free| free >= RAM_ROOM) {
        return shm.join(format!("rocflow-fuzz-{}", std::process::id()));
    }
    out.join("work")
}

/// Bytes free in `/dev/shm` for it to take the workers' folders: what a few workers'
/// replays write at once, many times over.
const RAM_ROOM: u64 = 1 << 30;

/// Bytes free to an unprivileged user on the file system at `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value of the plain C struct.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the path is a NUL-terminated string and `stat` outlives the call.
    let status = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    (status == 0).then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
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

/// Fuzzes `target` for its time (and inputs) with `--jobs` workers at once, each with a
/// seed of its own. After a failure, a new worker goes on in its place, with the next seed
/// no worker had, for the time and inputs left. Each distinct failure is saved under
/// `crashes/` and reported once.
fn campaign(
    args: &Args,
    target: &'static Target,
    places: &Places,
) -> Result<(Vec<Failure>, Tally), String> {
    let started = Instant::now();
    let lanes = Lanes {
        args,
        target,
        places,
        deadline: started + Duration::from_secs(args.time),
        seeds: AtomicU64::new(args.seed),
        found: Mutex::new(Found::default()),
    };
    let work: Vec<Result<Work, String>> = std::thread::scope(|scope| {
        let lanes = &lanes;
        let running: Vec<_> = (0..usize::from(args.jobs))
            .map(|lane| scope.spawn(move || lanes.run(lane)))
            .collect();
        running
            .into_iter()
            .map(|lane| lane.join().expect("a lane does not panic"))
            .collect()
    });
    let mut tally = Tally::new(target.name, started.elapsed());
    for work in work {
        tally.add(&work?);
    }
    let found = lanes.found.into_inner().expect("no lane panicked");
    (tally.failures, tally.repeats) = (found.failures.len(), found.repeats);
    Ok((found.failures, tally))
}

/// The workers of a campaign on one target, `--jobs` of them at a time, and what they
/// found together.
struct Lanes<'a> {
    args: &'a Args,
    target: &'static Target,
    places: &'a Places,
    deadline: Instant,
    /// The seed the next worker takes.
    seeds: AtomicU64,
    found: Mutex<Found>,
}

/// The failures of a campaign, each distinct one once.
#[derive(Default)]
struct Found {
    seen: HashSet<String>,
    failures: Vec<Failure>,
    repeats: u64,
}

impl Lanes<'_> {
    /// Runs workers one after another in lane `lane`, with its share of the inputs, until
    /// one ends without a failure or the time or inputs run out.
    fn run(&self, lane: usize) -> Result<Work, String> {
        let jobs = u64::from(self.args.jobs);
        let mut runs = self.args.runs / jobs + u64::from((lane as u64) < self.args.runs % jobs);
        let mut work = Work::default();
        if lane > 0 && runs == 0 {
            return Ok(work);
        }
        let dir = work_dir(&self.places.work, self.target, lane);
        let mut time = self.args.time;
        loop {
            let seed = self.seeds.fetch_add(1, Ordering::Relaxed);
            let args = (self.args).worker_args(self.target.name, &dir, seed, time, runs);
            let (done, ended) = supervise(&dir, args)?;
            work.add(&done);
            let Some(ended) = ended else {
                return Ok(work);
            };
            self.note(ended)?;
            runs = runs.saturating_sub(done.inputs);
            time = self
                .deadline
                .saturating_duration_since(Instant::now())
                .as_secs();
            if time == 0 || runs == 0 {
                return Ok(work);
            }
        }
    }

    /// Saves and reports a failure not seen before in this campaign.
    fn note(&self, ended: Ended) -> Result<(), String> {
        let mut found = self.found.lock().expect("no lane panicked");
        if !found.seen.insert(ended.signature()) {
            found.repeats += 1;
            return Ok(());
        }
        let input = save(self.target, &ended, &self.places.crashes)?;
        let failure = Failure {
            target: self.target.name,
            ended,
            input,
        };
        println!("{failure}");
        found.failures.push(failure);
        Ok(())
    }
}

/// Runs `file` once on `target`.
fn replay(
    args: &Args,
    target: &'static Target,
    places: &Places,
    file: &Path,
) -> Result<Option<Failure>, String> {
    let dir = work_dir(&places.work, target, 0);
    let worker = args.worker_args(target.name, &dir, args.seed, args.time, args.runs);
    let failure = supervise(&dir, worker)?.1.map(|ended| Failure {
        target: target.name,
        ended,
        input: file.to_owned(),
    });
    failure.iter().for_each(|f| println!("{f}"));
    Ok(failure)
}

/// A worker's folder: one per target, lane and supervisor.
fn work_dir(work: &Path, target: &Target, lane: usize) -> PathBuf {
    work.join(format!("{}-{}-{lane}", target.name, std::process::id()))
}

/// Runs a worker in `dir` with `args` and waits for it; what it did, and the failure it
/// ended on, if any.
fn supervise(dir: &Path, args: Vec<std::ffi::OsString>) -> Result<(Work, Option<Ended>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let files = Files::new(dir.to_owned());
    let stderr = std::fs::File::create(files.stderr()).map_err(|e| e.to_string())?;
    let worker = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(args)
        // So that a failed allocation says where it was.
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("starting a worker: {e}"))?;
    let (status, cpu) = wait(&worker).map_err(|e| format!("waiting for a worker: {e}"))?;
    let stderr = std::fs::read(files.stderr()).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL)..]);
    let (inputs, input) = files.read_running();
    let ended = classify(status, &stderr, &files)?.map(|(kind, message)| Ended {
        kind,
        message,
        input,
    });
    std::fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    let work = Work {
        inputs,
        cpu,
        workers: 1,
    };
    Ok((work, ended))
}

/// Waits for `child` to end: how it ended, and the processor time it used (all its
/// threads', in user and kernel mode), which a rate per core is counted in.
fn wait(child: &Child) -> std::io::Result<(ExitStatus, Duration)> {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child, which nothing else waits for; both pointers
        // are to locals that outlive the call.
        if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    let cpu = time(usage.ru_utime) + time(usage.ru_stime);
    Ok((ExitStatus::from_raw(status), cpu))
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
