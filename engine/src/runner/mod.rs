//! `rocflow run`: starts the application with the tool library (and the simulated SDK when
//! asked), takes one stream per process over a private socket, keeps every frame in the raw
//! spool as it arrives, and feeds the same frames through the stages into the sinks. The
//! run ends when the application has exited and every stream has closed.

mod libraries;
mod listen;
pub mod sdk;
mod signals;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::os::unix::net::UnixListener;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};

use listen::Intake;
use std::time::{Duration, Instant};

use crate::plan::Plan;
use crate::record::{Exit, Meta, RecordKind};
use crate::sink;
use crate::spool::SpoolWriter;
use crate::stage::{self, Report};
use crate::wire::{self, Frame};

pub use signals::Stop;

/// Frames queued between the connections and the stages.
const QUEUE: usize = 256;

/// Which rocprofiler-sdk the application runs with.
#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    /// The ROCm installation's rocprofiler-sdk (a real GPU).
    Rocm,
    /// rocflow's simulated SDK, with a scenario file or the built-in one.
    Sim(Option<PathBuf>),
}

impl Device {
    /// Parses `rocm`, `sim` or `sim:SCENARIO`.
    pub fn parse(text: &str) -> Result<Device, String> {
        match text {
            "rocm" => Ok(Device::Rocm),
            "sim" => Ok(Device::Sim(None)),
            _ => match text.strip_prefix("sim:") {
                Some(path) if !path.is_empty() => Ok(Device::Sim(Some(PathBuf::from(path)))),
                _ => Err(format!(
                    "`{text}` is not a device; use `rocm`, `sim` or `sim:SCENARIO.toml`"
                )),
            },
        }
    }
}

pub struct Options {
    pub device: Device,
    /// The rocprofiler-sdk the application is to load (on a GPU node).
    pub sdk: Option<sdk::Sdk>,
    /// Where the raw spool goes: this file (replaced), or, by default, a file of the
    /// run's own in the plan's spool directory (see [`crate::runs`]).
    pub spool: Option<PathBuf>,
    /// The application and its arguments.
    pub command: Vec<OsString>,
}

/// What a run did.
pub struct Outcome {
    /// How the application ended; `None` if rocflow stopped waiting for it.
    pub exit: Option<Exit>,
    /// The application's pid.
    pub pid: u32,
    /// Why rocflow stopped waiting for the application, if it did.
    pub stopped: Option<Stop>,
    pub report: Report,
    /// Records received, per kind (the spool holds them all; the stages decode only the
    /// kinds they take).
    pub records: Vec<(RecordKind, u64)>,
    /// Processes that connected.
    pub streams: u64,
    /// Processes whose stream ended without the tool's finalize: what the tool held since
    /// its last flush was lost.
    pub unfinalized: Vec<Unfinalized>,
    pub elapsed: Duration,
    /// The raw spool.
    pub spool: PathBuf,
    /// Why the spool is incomplete, if writing it failed.
    pub spool_error: Option<String>,
}

/// A process that ended without finalizing (`_exit`, SIGKILL): records after its last
/// frame may be missing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unfinalized {
    pub pid: u32,
    /// Its last frame, from when it connected.
    pub last_frame: Duration,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Setup(String),
    /// The simulated device's scenario file cannot be read or is wrong.
    #[error("scenario {path}: {message}")]
    Scenario { path: String, message: String },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
}

/// The scenario file's absolute path, once it reads as a scenario: the simulated SDK
/// inside the application could only say so on its stderr and profile nothing.
fn checked_scenario(path: &std::path::Path) -> Result<PathBuf, StartError> {
    let fail = |message: String| StartError::Scenario {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    rocflow_core::scenario::Scenario::parse(&text).map_err(fail)?;
    path.canonicalize().map_err(|e| fail(e.to_string()))
}

/// Creates the run's spool, once the application started (a run that cannot start
/// leaves no file behind).
fn create_spool(
    plan: &Plan,
    options: &Options,
    pid: u32,
) -> std::io::Result<(PathBuf, SpoolWriter)> {
    if let Some(path) = &options.spool {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        return Ok((path.clone(), SpoolWriter::create(path)?));
    }
    let mut placeholders = sink::Placeholders::for_run(&crate::catalog::Catalog::default());
    placeholders.pid = pid;
    let dir = placeholders.expand(&plan.spool_dir);
    crate::runs::create(&dir, &placeholders.fill("run-{timestamp}-{pid}"))
}

/// Runs the application under the plan.
pub fn run(plan: &Plan, options: &Options) -> Result<Outcome, StartError> {
    let started = Instant::now();
    let setup = |e: String| StartError::Setup(e);
    // Checked before anything is created.
    let scenario = match &options.device {
        Device::Sim(Some(path)) => Some(checked_scenario(path)?),
        _ => None,
    };
    let tool = libraries::find(libraries::TOOL).map_err(setup)?;
    let sim = match &options.device {
        Device::Sim(_) => Some(libraries::find(libraries::SIM).map_err(setup)?),
        Device::Rocm => None,
    };
    let dir = tempfile::Builder::new()
        .prefix("rocflow-")
        .tempdir()
        .map_err(|e| setup(format!("cannot create the socket directory: {e}")))?;
    let socket = dir.path().join("rocflow.sock");
    let plan_file = dir.path().join("plan.json");
    let plan_json = plan.to_json();
    std::fs::write(&plan_file, &plan_json)
        .map_err(|e| setup(format!("cannot write the plan: {e}")))?;
    let listener = UnixListener::bind(&socket)
        .map_err(|e| setup(format!("cannot listen on {}: {e}", socket.display())))?;

    let (program, args) = options
        .command
        .split_first()
        .ok_or_else(|| setup("no application to run".into()))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .env("ROCFLOW_SOCKET", &socket)
        .env("ROCFLOW_PLAN", &plan_file)
        .env("ROCP_TOOL_LIBRARIES", &tool);
    if let Some(sim) = &sim {
        let mut preload = OsString::from(sim);
        if let Some(existing) = std::env::var_os("LD_PRELOAD") {
            preload.push(":");
            preload.push(existing);
        }
        command.env("LD_PRELOAD", preload);
    }
    for (name, value) in plan.application_env() {
        // The user's own value wins: `…=OFF` keeps AMD's beta off (it can hang the
        // machine, AMD warns), for a site that forbids it.
        if std::env::var_os(name).is_none() {
            command.env(name, value);
        }
    }
    if let Some(scenario) = scenario {
        command.env("ROCFLOW_SIM_SCENARIO", scenario);
    }
    if let Some(sdk) = &options.sdk {
        // rocprofiler-register loads this one, not another its loader might find first.
        command.env("ROCPROFILER_REGISTER_LIBRARY", &sdk.path);
    }
    let mut child = command.spawn().map_err(|source| StartError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    let pid = child.id();
    signals::forward_to(pid);
    // The application waits on the socket's backlog meanwhile; nothing is read yet.
    let (spool_path, spool) = match create_spool(plan, options, pid) {
        Ok(created) => created,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(setup(format!("cannot create the spool: {e}")));
        }
    };

    let (frames_in, frames) = sync_channel::<Frame>(QUEUE);
    let intake = Arc::new(Intake::new(spool, |kind| plan.consumes(kind)));
    let mut plan_frame = Vec::new();
    wire::encode_meta(0, &[Meta::Plan { json: plan_json }], &mut plan_frame);
    let _ = intake.take(&plan_frame, &frames_in);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(listen::Counts::default());
    let listener_thread = {
        let (intake, frames_in, stop, counts) = (
            Arc::clone(&intake),
            frames_in.clone(),
            Arc::clone(&stop),
            Arc::clone(&counts),
        );
        std::thread::spawn(move || listen::serve(listener, intake, frames_in, stop, counts))
    };
    let waiter = {
        let (intake, stop) = (Arc::clone(&intake), Arc::clone(&stop));
        std::thread::spawn(move || {
            let status = child.wait();
            let exit = status.ok().map(|s| match (s.code(), s.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(signal)) => Exit::Signal(signal),
                (None, None) => Exit::Code(1),
            });
            if let Some(exit) = exit {
                let mut frame = Vec::new();
                wire::encode_meta(0, &[Meta::Exit(exit)], &mut frame);
                let _ = intake.take(&frame, &frames_in);
            }
            stop.store(true, Ordering::Release);
            exit
        })
    };
    let progress = std::io::stderr().is_terminal().then(|| {
        let (stop, counts) = (Arc::clone(&stop), Arc::clone(&counts));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(500));
                eprint!(
                    "\rrocflow: {} records from {} processes",
                    counts.total(),
                    counts.streams.load(Ordering::Relaxed)
                );
            }
            eprintln!();
        })
    });

    let mut stopped = None;
    let mut spool_error = None;
    let incoming = std::iter::from_fn(|| {
        loop {
            match frames.recv_timeout(Duration::from_millis(100)) {
                Ok(frame) => return Some(frame),
                Err(RecvTimeoutError::Timeout) => {
                    stopped = signals::stop_waiting();
                    if stopped.is_some() {
                        break;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        // Every frame that arrived is in the spool before the sinks finish (which can
        // take long enough for a scheduler's SIGKILL to come first).
        spool_error = intake.finish();
        None
    })
    .fuse();
    let report = stage::run(plan, incoming, &sink::open).map_err(setup)?;
    // In case the stages stopped before the end of their input.
    if let Some(e) = intake.finish() {
        spool_error.get_or_insert(e);
    }
    let exit = if stopped.is_some() {
        None
    } else {
        waiter.join().ok().flatten()
    };
    stop.store(true, Ordering::Release);
    if stopped.is_none() {
        let _ = listener_thread.join();
    }
    if let Some(p) = progress {
        let _ = p.join();
    }
    let unfinalized = unfinalized(&report, &counts);
    Ok(Outcome {
        exit,
        pid,
        stopped,
        report,
        records: counts.per_kind(),
        streams: counts.streams.load(Ordering::Relaxed),
        unfinalized,
        elapsed: started.elapsed(),
        spool: spool_path,
        spool_error,
    })
}

/// The processes whose stream ended without the tool's closing frame (its cost, which the
/// tool sends when it finalizes or dies of a signal it catches).
fn unfinalized(report: &Report, counts: &listen::Counts) -> Vec<Unfinalized> {
    report
        .catalog
        .streams()
        .filter(|(_, meta)| meta.tool_cost.is_none())
        .filter_map(|(stream, meta)| {
            let life = counts.life(stream).filter(|life| life.ended)?;
            Some(Unfinalized {
                pid: meta.process.as_ref()?.pid,
                last_frame: life.last_frame - life.connected,
            })
        })
        .collect()
}
