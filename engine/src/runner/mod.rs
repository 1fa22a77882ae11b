//! `rocflow run`: starts the application with the tool library (and the simulated SDK when
//! asked), takes one stream per process over a private socket, keeps every frame in the raw
//! spool as it arrives, and feeds the same frames through the stages into the sinks. The
//! run ends when the application has exited and every stream has closed.

mod libraries;
mod listen;
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
    /// Where the raw spool goes.
    pub spool: PathBuf,
    /// The application and its arguments.
    pub command: Vec<OsString>,
}

/// What a run did.
pub struct Outcome {
    /// How the application ended; `None` if rocflow stopped waiting for it.
    pub exit: Option<Exit>,
    pub report: Report,
    /// Records received, per kind (the spool holds them all; the stages decode only the
    /// kinds they take).
    pub records: Vec<(RecordKind, u64)>,
    /// Processes that connected.
    pub streams: u64,
    pub elapsed: Duration,
    /// Why the spool is incomplete, if writing it failed.
    pub spool_error: Option<String>,
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
    if let Some(parent) = options.spool.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| setup(format!("cannot create {}: {e}", parent.display())))?;
    }
    let spool = SpoolWriter::create(&options.spool).map_err(|e| {
        setup(format!(
            "cannot create the spool {}: {e}",
            options.spool.display()
        ))
    })?;

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
    if let Some(scenario) = scenario {
        command.env("ROCFLOW_SIM_SCENARIO", scenario);
    }
    let mut child = command.spawn().map_err(|source| StartError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    signals::forward_to(child.id());

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

    let incoming = std::iter::from_fn(|| {
        loop {
            match frames.recv_timeout(Duration::from_millis(100)) {
                Ok(frame) => return Some(frame),
                Err(RecvTimeoutError::Timeout) if signals::gave_up() => return None,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    });
    let report = stage::run(plan, incoming, &sink::open).map_err(setup)?;
    let exit = if signals::gave_up() {
        None
    } else {
        waiter.join().ok().flatten()
    };
    stop.store(true, Ordering::Release);
    let _ = listener_thread.join();
    if let Some(p) = progress {
        let _ = p.join();
    }
    // Readers still running (after a second Ctrl-C) keep their share; the spool is
    // completed with what they wrote so far.
    let spool_error = match Arc::try_unwrap(intake) {
        Ok(intake) => intake.finish(),
        Err(_) => Some("processes were still sending when rocflow stopped waiting".into()),
    };
    Ok(Outcome {
        exit,
        report,
        records: counts.per_kind(),
        streams: counts.streams.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        spool_error,
    })
}
