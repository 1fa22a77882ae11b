//! `rocflow run`: starts the application with the tool library (and the simulated SDK when
//! asked), takes one stream per process over a private socket, keeps every frame in the raw
//! spool as it arrives, and feeds the same frames through the stages into the sinks. The
//! run ends when the application has exited and every stream has closed.

pub mod attach;
pub(crate) mod backlog;
pub(crate) mod compress;
pub(crate) mod libraries;
pub(crate) mod listen;
mod live;
mod priority;
pub mod sdk;
pub(crate) mod signals;
mod tool_libraries;

use std::ffi::{OsStr, OsString};
use std::os::unix::net::UnixListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use listen::Intake;
use std::time::{Duration, Instant};

use rocflow_core::scenario::{self, Scenario};

use crate::plan::Plan;
use crate::progress::{Board, Incoming};
use crate::record::{Exit, Meta, RecordKind};
use crate::sink;
use crate::source::{Ending, SourceError};
use crate::spool::SpoolWriter;
use crate::stage::{self, Report};
use crate::wire;
use live::Live;

pub use compress::SpoolCompression;
pub use signals::Stop;

/// Bytes of decoded frames held in memory between the connections and the stages; past
/// them, frames wait for slow sinks on disk, beside the spool (see [`backlog`]).
const QUEUE_BYTES: usize = 64 << 20;

/// How a process ended, as the records say it.
pub fn exit_of(status: std::process::ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Code(1),
    }
}

/// Which rocprofiler-sdk the application runs with.
#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    /// The ROCm installation's rocprofiler-sdk (a real GPU).
    Rocm,
    /// rocflow's simulated SDK, with a scenario file or the built-in one.
    Sim(Option<PathBuf>),
}

impl Device {
    /// The simulated device's scenario; `None` for a real GPU.
    pub fn scenario(&self) -> Result<Option<Scenario>, StartError> {
        match self {
            Device::Rocm => Ok(None),
            Device::Sim(None) => Ok(Some(
                Scenario::parse(scenario::DEFAULT).expect("the built-in scenario reads"),
            )),
            Device::Sim(Some(path)) => read_scenario(path).map(Some),
        }
    }

    /// Parses `rocm`, `sim` or `sim:SCENARIO`.
    pub fn parse(text: &str) -> Result<Device, UnknownDevice> {
        match text {
            "rocm" => Ok(Device::Rocm),
            "sim" => Ok(Device::Sim(None)),
            _ => match text.strip_prefix("sim:") {
                Some(path) if !path.is_empty() => Ok(Device::Sim(Some(PathBuf::from(path)))),
                _ => Err(UnknownDevice(text.into())),
            },
        }
    }
}

/// Text that names no device.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a device; use `rocm`, `sim` or `sim:SCENARIO.toml`")]
pub struct UnknownDevice(pub String);

/// As `--device` takes it.
impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Rocm => f.write_str("rocm"),
            Device::Sim(None) => f.write_str("sim"),
            Device::Sim(Some(path)) => write!(f, "sim:{}", path.display()),
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
    /// Whether the spool's records are stored compressed.
    pub spool_compression: SpoolCompression,
    /// The application and its arguments.
    pub command: Vec<OsString>,
    /// Libraries put first in the application's `LD_PRELOAD` (rocprofv3's `--preload`).
    pub preload: Vec<OsString>,
    /// More of the application's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Where the run says how far it got (see [`crate::progress`]).
    pub board: Arc<Board>,
}

/// What a run did.
pub struct Outcome {
    /// How the application ended; `None` if rocflow stopped waiting for it.
    pub exit: Option<Exit>,
    /// The passes that ran; `None` if rocflow stopped waiting for the application.
    pub passes: Option<Passes>,
    /// The application's pid (in the first pass).
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
    pub spool_error: Option<std::io::Error>,
    pub unprofiled: Unprofiled,
}

/// The run's processes that went unprofiled: the run did not see all of its application.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unprofiled {
    /// Those whose tool could not reach the runner (each says so in the run's directory for
    /// them, `ROCFLOW_UNPROFILED`), by pid.
    pub pids: Vec<u32>,
    /// Connections the runner could not read (see [`listen::Counts::unread`]).
    pub connections: u64,
}

impl Unprofiled {
    /// The pids that `dir` holds as directories.
    fn read(dir: &Path, connections: u64) -> Unprofiled {
        let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
        let mut pids: Vec<u32> = (entries)
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .collect();
        pids.sort_unstable();
        Unprofiled { pids, connections }
    }
}

/// How far the application's runs went, one per counter pass: all of them, or up to the
/// one that failed, which stops the run.
#[derive(Debug)]
pub struct Passes {
    /// How the last run ended; `None` if waiting for it failed or it did not start.
    pub exit: Option<Exit>,
    /// The last pass that ran or was to run (from 1), of `of`.
    pub pass: u32,
    pub of: u32,
    /// Why that pass's application could not start.
    pub failed_to_start: Option<StartError>,
}

/// How to start the application for a pass: the same program, arguments and environment
/// each time, with a socket of the pass's own and the pass to count.
struct Launch {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    dir: PathBuf,
}

impl Launch {
    /// Listens on the pass's socket and starts the application; `pass` from 0.
    fn start(&self, pass: usize) -> Result<(UnixListener, Child), StartError> {
        let socket = self.dir.join(format!("rocflow-{pass}.sock"));
        let listener = UnixListener::bind(&socket).map_err(|source| StartError::Listen {
            socket: socket.clone(),
            source,
        })?;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("ROCFLOW_SOCKET", &socket)
            .env("ROCFLOW_PASS", pass.to_string());
        let child = command.spawn().map_err(|source| StartError::Spawn {
            program: self.program.to_string_lossy().into_owned(),
            source,
        })?;
        signals::forward_to(child.id());
        Ok((listener, child))
    }
}

/// One pass's application and the socket it connects to.
struct Pass {
    listener: UnixListener,
    child: Child,
    /// From 1.
    number: u32,
}

impl Pass {
    /// Marks the pass in the spool when there are several, takes its processes' streams
    /// until it has exited, and says how it ended.
    fn run(
        self,
        intake: &Arc<Intake>,
        frames: &backlog::Sender,
        counts: &Arc<listen::Counts>,
        passes: usize,
        board: &Board,
    ) -> Option<Exit> {
        let Pass {
            listener,
            mut child,
            number,
        } = self;
        if passes > 1 {
            let mut frame = Vec::new();
            wire::encode_meta(0, &[Meta::Pass { number }], &mut frame);
            let _ = intake.take(&frame, frames);
        }
        let accepted = Arc::new(AtomicBool::new(false));
        let listener_thread = {
            let (intake, frames, accepted, counts) = (
                Arc::clone(intake),
                frames.clone(),
                Arc::clone(&accepted),
                Arc::clone(counts),
            );
            std::thread::spawn(move || listen::serve(listener, intake, frames, accepted, counts))
        };
        let exit = child.wait().ok().map(exit_of);
        board.application_exited();
        if let Some(exit) = exit {
            let mut frame = Vec::new();
            wire::encode_meta(0, &[Meta::Exit(exit)], &mut frame);
            let _ = intake.take(&frame, frames);
        }
        accepted.store(true, Ordering::Release);
        // Connections made before the application exited are still accepted.
        let _ = listener_thread.join();
        exit
    }
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
    #[error(transparent)]
    Library(#[from] libraries::LibraryError),
    #[error("cannot create the socket directory: {0}")]
    SocketDir(#[source] std::io::Error),
    #[error("cannot write the plan: {0}")]
    Plan(#[source] std::io::Error),
    #[error("no application to run")]
    NoCommand,
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {}: {source}", .socket.display())]
    Listen {
        socket: PathBuf,
        source: std::io::Error,
    },
    /// The run's spool cannot be created in `place`.
    #[error(
        "cannot create the spool in {}: {source} (name a writable place with --spool FILE or [pipeline] spool_dir)",
        .place.display()
    )]
    Spool {
        place: PathBuf,
        source: std::io::Error,
    },
    /// The simulated device's scenario file cannot be read or is wrong.
    #[error("scenario {}: {source}", .path.display())]
    Scenario {
        path: PathBuf,
        source: ScenarioFileError,
    },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// The stages stopped before the run's outputs were written.
    #[error(transparent)]
    Stages(#[from] crate::stage::StageError),
}

/// The scenario file's absolute path, once it reads as a scenario: the simulated SDK
/// inside the application could only say so on its stderr and profile nothing.
pub(crate) fn checked_scenario(path: &std::path::Path) -> Result<PathBuf, StartError> {
    read_scenario(path)?;
    path.canonicalize()
        .map_err(|e| scenario_error(path, scenario::ReadError::from(e).into()))
}

/// The scenario file at `path`, read and checked, with the counter definitions it names.
fn read_scenario(path: &Path) -> Result<Scenario, StartError> {
    let scenario = Scenario::read(path).map_err(|e| scenario_error(path, e.into()))?;
    rocflow_core::agent_counters::definitions(&scenario)
        .map_err(|e| scenario_error(path, e.into()))?;
    Ok(scenario)
}

/// What is wrong with a scenario file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioFileError {
    #[error(transparent)]
    Read(#[from] scenario::ReadError),
    #[error(transparent)]
    Definitions(#[from] rocflow_core::agent_counters::DefinitionsError),
}

fn scenario_error(path: &Path, source: ScenarioFileError) -> StartError {
    StartError::Scenario {
        path: path.to_owned(),
        source,
    }
}

/// Creates the run's spool, once the application started (a run that cannot start
/// leaves no file behind).
fn create_spool(
    plan: &Plan,
    spool: Option<&Path>,
    pid: u32,
) -> Result<(PathBuf, SpoolWriter), StartError> {
    let fail = |place: &Path, source| StartError::Spool {
        place: place.to_owned(),
        source,
    };
    if let Some(path) = spool {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
        }
        let writer = SpoolWriter::create(path).map_err(|e| fail(path, e))?;
        return Ok((path.to_owned(), writer));
    }
    let mut placeholders = sink::Placeholders::for_run(&crate::catalog::Catalog::default());
    placeholders.pid = pid;
    let dir = placeholders.expand(&plan.spool_dir);
    crate::runs::create(&dir, &placeholders.fill("run-{timestamp}-{pid}"))
        .map_err(|e| fail(&dir, e))
}

/// Runs the application under the plan, feeding `beside` as its sinks are (what the
/// post-steps collect: their reports are the outcome's `report.beside`).
pub fn run(
    plan: &Plan,
    options: &Options,
    beside: Vec<stage::Outlet<'static>>,
) -> Result<Outcome, StartError> {
    let started = Instant::now();
    // Checked before anything is created.
    let scenario = match &options.device {
        Device::Sim(Some(path)) => Some(checked_scenario(path)?),
        _ => None,
    };
    let tool = libraries::find(libraries::TOOL)?;
    let sim = match &options.device {
        Device::Sim(_) => Some(libraries::find(libraries::SIM)?),
        Device::Rocm => None,
    };
    let dir = tempfile::Builder::new()
        .prefix("rocflow-")
        .tempdir()
        .map_err(StartError::SocketDir)?;
    let plan_file = dir.path().join("plan.json");
    let plan_json = plan.to_json();
    std::fs::write(&plan_file, &plan_json).map_err(StartError::Plan)?;
    let (program, args) = (options.command.split_first()).ok_or(StartError::NoCommand)?;
    let unprofiled = dir.path().join("unprofiled");
    std::fs::create_dir(&unprofiled).map_err(|source| StartError::Create {
        path: unprofiled.clone(),
        source,
    })?;
    let mut env = vec![
        (OsString::from("ROCFLOW_PLAN"), plan_file.into_os_string()),
        (
            "ROCP_TOOL_LIBRARIES".into(),
            tool_libraries::with_tool(
                std::env::var_os("ROCP_TOOL_LIBRARIES").as_deref(),
                tool.as_os_str(),
            ),
        ),
        (
            "ROCFLOW_UNPROFILED".into(),
            unprofiled.clone().into_os_string(),
        ),
    ];
    let preload: Vec<OsString> = (options.preload.iter().cloned())
        .chain(sim.clone().map(OsString::from))
        .chain(std::env::var_os("LD_PRELOAD"))
        .collect();
    if preload.len() > usize::from(std::env::var_os("LD_PRELOAD").is_some()) {
        env.push(("LD_PRELOAD".into(), preload.join(OsStr::new(":"))));
    }
    env.extend(options.env.iter().cloned());
    for (name, value) in plan.application_env() {
        // The user's own value wins: `…=OFF` keeps AMD's beta off (it can hang the
        // machine, AMD warns), for a site that forbids it.
        if std::env::var_os(name).is_none() {
            env.push((name.into(), value.into()));
        }
    }
    if let Some(scenario) = scenario {
        env.push(("ROCFLOW_SIM_SCENARIO".into(), scenario.into_os_string()));
    }
    if let Some(sim) = &sim {
        // The simulated GPUs' AMD-SMI is the simulated SDK's library.
        env.push((
            rocflow_core::smi::LIBRARY_VAR.into(),
            sim.clone().into_os_string(),
        ));
    }
    if let Some(sdk) = &options.sdk {
        // rocprofiler-register loads this one, not another its loader might find first.
        env.push((
            "ROCPROFILER_REGISTER_LIBRARY".into(),
            sdk.path.clone().into(),
        ));
    }
    let launch = Launch {
        program: program.clone(),
        args: args.to_vec(),
        env,
        dir: dir.path().to_owned(),
    };
    let passes = plan.passes();
    let (listener, mut child) = launch.start(0)?;
    let pid = child.id();
    // The application waits on the socket's backlog meanwhile; nothing is read yet.
    let (spool_path, spool) = match create_spool(plan, options.spool.as_deref(), pid) {
        Ok(created) => created,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };

    let driver = move |intake: Arc<Intake>,
                       frames_in: backlog::Sender,
                       counts: Arc<listen::Counts>,
                       stop: Arc<AtomicBool>,
                       board: Arc<Board>| {
        let mut started = (listener, child);
        let mut number = 1;
        loop {
            let (listener, child) = started;
            let exit = Pass {
                listener,
                child,
                number,
            }
            .run(&intake, &frames_in, &counts, passes, &board);
            let ended = |exit, pass, failed_to_start| Passes {
                exit,
                pass,
                of: passes as u32,
                failed_to_start,
            };
            let failed = exit.is_none_or(|e| e.status() != 0);
            // SIGTERM between passes: no further pass starts.
            let stopping = stop.load(Ordering::Acquire) || crate::cancel::requested();
            if failed || number as usize == passes || stopping {
                return ended(exit, number, None);
            }
            // A pass's frames all come before the next pass's marker.
            while !counts.all_ended() && !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(20));
            }
            board.application_started();
            started = match launch.start(number as usize) {
                Ok(next) => next,
                Err(e) => return ended(None, number + 1, Some(e)),
            };
            number += 1;
        }
    };
    let (collected, passes) = collect(
        plan,
        options.spool_compression,
        &options.board,
        spool_path,
        spool,
        driver,
        beside,
    )?;
    let Collected {
        report,
        stopped,
        spool_error,
        counts,
        spool: spool_path,
    } = collected;
    let exit = passes.as_ref().and_then(|p| p.exit);
    let unfinalized = unfinalized(&report, &counts);
    let unprofiled = Unprofiled::read(&unprofiled, counts.unread.load(Ordering::Relaxed));
    Ok(Outcome {
        exit,
        passes,
        pid,
        stopped,
        report,
        records: counts.per_kind(),
        streams: counts.streams.load(Ordering::Relaxed),
        unfinalized,
        elapsed: started.elapsed(),
        spool: spool_path,
        spool_error,
        unprofiled,
    })
}

/// What the stages made of a live run's frames.
struct Collected {
    report: Report,
    /// Why rocflow stopped waiting for the streams, if a signal made it.
    stopped: Option<Stop>,
    /// Why the spool is incomplete, if writing it failed.
    spool_error: Option<std::io::Error>,
    counts: Arc<listen::Counts>,
    spool: PathBuf,
}

/// Takes the streams a `driver` thread lets in (it listens, and returns once no process
/// will connect any more) through the spool and the stages into the sinks; gives what the
/// stages made of them and what the driver returned, unless a signal stopped the waiting
/// first.
fn collect<T: Send + 'static>(
    plan: &Plan,
    compression: SpoolCompression,
    board: &Arc<Board>,
    spool_path: PathBuf,
    spool: SpoolWriter,
    driver: impl FnOnce(
        Arc<Intake>,
        backlog::Sender,
        Arc<listen::Counts>,
        Arc<AtomicBool>,
        Arc<Board>,
    ) -> T
    + Send
    + 'static,
    beside: Vec<stage::Outlet<'static>>,
) -> Result<(Collected, Option<T>), StartError> {
    let beside_spool = spool_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (frames_in, frames) = backlog::channel(QUEUE_BYTES, beside_spool);
    let compressor = compression.compressor(crate::threads::count());
    // The stages take what the sinks and transforms take, and what the collectors beside
    // them do (a pipeline of post-steps alone takes its records that way).
    let collected: Vec<RecordKind> = beside.iter().flat_map(|o| o.kinds.clone()).collect();
    let consumes = |kind| plan.consumes(kind) || collected.contains(&kind);
    let intake = Arc::new(Intake::new(spool, compressor, consumes));
    let mut plan_frame = Vec::new();
    wire::encode_meta(
        0,
        &[Meta::Plan {
            json: plan.to_json(),
        }],
        &mut plan_frame,
    );
    let _ = intake.take(&plan_frame, &frames_in);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(listen::Counts::default());
    let driver = {
        let (intake, stop, counts) = (Arc::clone(&intake), Arc::clone(&stop), Arc::clone(&counts));
        let board = Arc::clone(board);
        std::thread::spawn(move || driver(intake, frames_in, counts, stop, board))
    };
    {
        // The records, as they arrive (the stages decode them after).
        let counts = Arc::clone(&counts);
        board.count_incoming(move || Incoming {
            records: counts.total(),
            processes: Some(counts.streams.load(Ordering::Relaxed)),
        });
    }
    // After the threads that take the frames in started: they keep their priority.
    priority::lower_stages();
    let mut live = Live::new(frames, &intake);
    let mut report = stage::run_watched(plan, &mut live, &sink::open, beside, board)?;
    let stopped = live.stopped;
    // The one fault a live source has: its spool could not be completed.
    let spool_error = match std::mem::replace(&mut report.source, Ok(Ending::default())) {
        Err(SourceError::Spool(e)) => Some(e),
        _ => None,
    };
    stop.store(true, Ordering::Release);
    let driven = match stopped {
        Some(_) => None,
        None => driver.join().ok(),
    };
    let collected = Collected {
        report,
        stopped,
        spool_error,
        counts,
        spool: spool_path,
    };
    Ok((collected, driven))
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
