//! In-process sessions: an application, or a framework inside it, profiles windows of its
//! own work with a pipeline, through the C API of `plugins/include/rocflow_session.h`
//! ([`ffi`]). Opening a session starts a rocflow runner ([`runner`]) and then the SDK, by
//! `rocprofiler_force_configure`, with this tool: the Plan's contexts are set up as under
//! `rocflow run` but stay stopped, code-object tracing (kernel names) runs throughout, and
//! the contexts collect only between `start` and `stop`. Records stream to the runner as a
//! run's do, so the outputs are the run's, limited to the windows. `phase` ends the
//! runner's run (its outputs complete on disk) and streams on to a new one.
//!
//! Under `rocflow run` (the tool already configured by the run), a session drives the
//! run's contexts instead: the run's pipeline and outputs hold.
//!
//! A process has one session: the SDK sets contexts up once per process. The handle is
//! never freed, so a call on a closed session fails instead of touching freed memory, from
//! whichever thread it comes. A forked child holds no session: its calls fail, and it
//! keeps neither the runner's phase open nor a stream to it.

pub mod ffi;
mod runner;

use std::ffi::{CStr, OsString, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rocflow_core::abi::{Configure, Status, status};

use crate::context;
use crate::guard::locked;
use crate::late_start;
use crate::state::{Tool, tool};
use crate::stream;
use crate::warning::warn;

use runner::{Runner, Spec};

/// How long closing waits for the last frames to reach the runner.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the process's exit waits for the last runner to complete its outputs: a
/// runner that hangs or died must not hold the application.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The name of the phase `close` (or the process's exit) ends.
pub const FINAL_PHASE: &str = "final";

/// The process's session, once one was opened.
static SESSION: OnceLock<Session> = OnceLock::new();
/// Set when the SDK finalizes the tool: from then on nothing calls into the SDK.
static FINALIZED: AtomicBool = AtomicBool::new(false);
/// The runner's standard input, which a forked child closes.
static RUNNER_STDIN: AtomicI32 = AtomicI32::new(-1);

/// Why a session call failed; each is one status of the C API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Argument(String),
    #[error("{0}")]
    State(String),
    #[error(transparent)]
    Runner(#[from] runner::Error),
    #[error("{0}")]
    Sdk(String),
}

/// What to open a session on.
pub struct Request {
    pub pipeline: OsString,
    pub sets: Vec<OsString>,
    /// `None`: `rocflow-out`, the pipelines' own default.
    pub output: Option<PathBuf>,
}

pub struct Session {
    /// The process that opened it.
    pid: u32,
    state: Mutex<State>,
}

struct State {
    mode: Mode,
    started: bool,
    closed: bool,
}

enum Mode {
    /// The session's own runner, one per phase.
    Own(Box<Phases>),
    /// Under `rocflow run`: the run's contexts, runner and outputs.
    Hosted,
}

/// The runners of a session's phases.
struct Phases {
    spec: Spec,
    /// The current phase's; `None` once the last phase ended.
    runner: Option<Runner>,
    /// The current phase's number, from 1.
    phase: u32,
}

/// Opens the process's session.
pub fn open(request: Request) -> Result<&'static Session, Error> {
    static OPENING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = locked(OPENING.lock());
    if SESSION.get().is_some() {
        return Err(Error::State(
            "this process already opened a session (one per process: the SDK sets contexts up once)"
                .into(),
        ));
    }
    let mode = match tool() {
        Some(tool) if late_start::link().is_none() => {
            warn(
                "this process runs under `rocflow run`: the session starts and stops the run's contexts, and the run's pipeline and outputs hold",
            );
            set_all(tool, false);
            Mode::Hosted
        }
        _ => own(request)?,
    };
    let session = Session {
        pid: std::process::id(),
        state: Mutex::new(State {
            mode,
            started: false,
            closed: false,
        }),
    };
    let _ = SESSION.set(session);
    Ok(SESSION.get().expect("set above"))
}

/// Starts the session's runner, then the SDK with this tool.
fn own(request: Request) -> Result<Mode, Error> {
    let force = sdk_symbol::<unsafe extern "C" fn(Option<Configure>) -> Status>(
        c"rocprofiler_force_configure",
    )
    .ok_or_else(|| {
        Error::Sdk("no rocprofiler-sdk in this process (it has no `rocprofiler_force_configure`): load the HIP runtime, or the simulated SDK, before opening a session".into())
    })?;
    if let Some(is_initialized) =
        sdk_symbol::<unsafe extern "C" fn(*mut i32) -> Status>(c"rocprofiler_is_initialized")
    {
        let mut initialized = 0;
        // SAFETY: the SDK's function, with a writable int.
        if unsafe { is_initialized(&mut initialized) } == status::SUCCESS && initialized != 0 {
            return Err(already_configured());
        }
    }
    let spec = Spec {
        rocflow: runner::find_rocflow(library_of(open as *const c_void).as_deref())?,
        pipeline: request.pipeline,
        sets: request.sets,
        output: (request.output).unwrap_or_else(|| PathBuf::from("rocflow-out")),
        device: device(force as *const c_void),
    };
    let runner = Runner::start(&spec, 1)?;
    late_start::set(runner.link.clone(), on_finalize);
    // SAFETY: the SDK's function, given the tool's entry point.
    let status = unsafe { force(Some(crate::rocprofiler_configure)) };
    let streaming = tool().is_some() && stream::is_open();
    if status != status::SUCCESS || !streaming {
        runner.abandon();
        return Err(match status {
            status::CONFIGURATION_LOCKED => already_configured(),
            status::SUCCESS => Error::Sdk(
                "rocprofiler-sdk started, but the tool could not set the pipeline up (its message is above)".into(),
            ),
            other => Error::Sdk(format!(
                "rocprofiler_force_configure failed with status {other}"
            )),
        });
    }
    RUNNER_STDIN.store(runner.stdin_fd().unwrap_or(-1), Ordering::Release);
    // SAFETY: a plain C function; the handler only closes a descriptor.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
    Ok(Mode::Own(Box::new(Phases {
        spec,
        runner: Some(runner),
        phase: 1,
    })))
}

fn already_configured() -> Error {
    // Under `rocflow run`, but through another file of the tool library than this one.
    let run_tool = std::env::var_os("ROCP_TOOL_LIBRARIES")
        .filter(|tools| tools.to_string_lossy().contains("librocflow_tool"));
    if let Some(tools) = run_tool {
        let this = library_of(open as *const c_void).unwrap_or_default();
        return Error::Sdk(format!(
            "rocprofiler-sdk in this process was configured by `rocflow run` with {}, and this session is in {}: load the run's library, so that the session drives the run's tool",
            tools.to_string_lossy(),
            this.display()
        ));
    }
    Error::Sdk("rocprofiler-sdk was already started by another client in this process (it answers CONFIGURATION_LOCKED): rocflow cannot join late; run the application under `rocflow run`, with the other client's tool listed in `ROCP_TOOL_LIBRARIES` where it is one, so that the SDK configures both at its start".into())
}

/// An SDK entry point, if the process has one.
fn sdk_symbol<T: Copy>(name: &CStr) -> Option<T> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: the caller names the symbol's type as the SDK declares it.
    unsafe { this.get::<T>(name.to_bytes_with_nul()).ok().map(|s| *s) }
}

/// The file of the library that holds `address`.
fn library_of(address: *const c_void) -> Option<PathBuf> {
    // SAFETY: an all-zero Dl_info is a valid value to be filled.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be asked about; `info` is writable.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr gives a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes())))
}

/// `--device` for the runner: the simulated SDK (with the scenario the process replays)
/// when that is the SDK that holds `force_configure`, else `rocm`.
fn device(force_configure: *const c_void) -> OsString {
    let simulated = library_of(force_configure)
        .and_then(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("librocflow_sim"))
        })
        .unwrap_or(false);
    match (simulated, std::env::var_os("ROCFLOW_SIM_SCENARIO")) {
        (false, _) => "rocm".into(),
        (true, None) => "sim".into(),
        (true, Some(scenario)) => {
            let mut device = OsString::from("sim:");
            device.push(scenario);
            device
        }
    }
}

/// Starts or stops every Plan context.
fn set_all(tool: &Tool, on: bool) {
    for ctx in context::all() {
        crate::control::set(tool, ctx, on);
    }
}

/// Flushes every Plan context's buffer, and the ROCTx records the legacy library's calls
/// made: they are on their way to the runner.
fn flush_all(tool: &Tool) {
    for ctx in context::all() {
        // SAFETY: a buffer the tool created.
        unsafe { (tool.api.flush_buffer)(ctx.buffer) };
    }
    crate::legacy_roctx::flush();
}

impl Session {
    /// The session's state, for a call from its own process while it is open.
    fn open_state(&self) -> Result<std::sync::MutexGuard<'_, State>, Error> {
        if std::process::id() != self.pid {
            return Err(Error::State(format!(
                "the session belongs to process {}; a forked child holds none",
                self.pid
            )));
        }
        let state = locked(self.state.lock());
        if state.closed {
            return Err(Error::State("the session is closed".into()));
        }
        if FINALIZED.load(Ordering::Acquire) {
            return Err(Error::State("rocprofiler-sdk has finalized".into()));
        }
        Ok(state)
    }

    /// Starts the pipeline's contexts.
    pub fn start(&self) -> Result<(), Error> {
        let mut state = self.open_state()?;
        if state.started {
            return Err(Error::State("the session is already started".into()));
        }
        set_all(sdk_tool()?, true);
        state.started = true;
        Ok(())
    }

    /// Stops them.
    pub fn stop(&self) -> Result<(), Error> {
        let mut state = self.open_state()?;
        if !state.started {
            return Err(Error::State("the session is not started".into()));
        }
        set_all(sdk_tool()?, false);
        state.started = false;
        Ok(())
    }

    /// Hands every buffered record to the runner.
    pub fn flush(&self) -> Result<(), Error> {
        let _state = self.open_state()?;
        flush_all(sdk_tool()?);
        Ok(())
    }

    /// Ends the phase as `name`: its outputs are complete in `name` in the output
    /// directory when this returns; the session goes on with a new runner.
    pub fn phase(&self, name: &str) -> Result<PathBuf, Error> {
        check_phase_name(name)?;
        let mut state = self.open_state()?;
        let tool = sdk_tool()?;
        let Mode::Own(phases) = &mut state.mode else {
            return Err(Error::State(
                "phases need the session's own runner; under `rocflow run` the run's outputs are one".into(),
            ));
        };
        let Phases {
            spec,
            runner,
            phase,
        } = &mut **phases;
        let next = Runner::start(spec, *phase + 1)?;
        flush_all(tool);
        if let Err(e) = stream::switch(&next.link.socket, CLOSE_TIMEOUT) {
            next.abandon();
            return Err(Error::Sdk(e.to_string()));
        }
        RUNNER_STDIN.store(next.stdin_fd().unwrap_or(-1), Ordering::Release);
        *phase += 1;
        let done = runner.replace(next).expect("an open session has a runner");
        Ok(done.finish(&spec.output, name, None)?)
    }

    /// Stops the contexts, ends the last phase as [`FINAL_PHASE`] (its outputs complete
    /// when this returns) and closes the session.
    pub fn close(&self) -> Result<(), Error> {
        let mut state = self.open_state()?;
        state.closed = true;
        let tool = sdk_tool()?;
        if state.started {
            set_all(tool, false);
        }
        flush_all(tool);
        finish(&mut state, None)
    }
}

/// Closes the stream and ends the last phase, waiting for its runner up to `within` if
/// given; nothing here calls into the SDK.
fn finish(state: &mut State, within: Option<Duration>) -> Result<(), Error> {
    state.closed = true;
    let Mode::Own(phases) = &mut state.mode else {
        return Ok(());
    };
    let Some(runner) = phases.runner.take() else {
        return Ok(());
    };
    stream::close(CLOSE_TIMEOUT);
    RUNNER_STDIN.store(-1, Ordering::Release);
    runner.finish(&phases.spec.output, FINAL_PHASE, within)?;
    Ok(())
}

/// The SDK finalizes the tool (its stream already closed): an open session's last phase
/// ends as `close` would end it, without a call into the SDK.
fn on_finalize() {
    FINALIZED.store(true, Ordering::Release);
    let Some(session) = SESSION.get() else { return };
    if session.pid != std::process::id() {
        return;
    }
    // A call in progress on another thread holds the state: it completes the phase.
    let Ok(mut state) = session.state.try_lock() else {
        return;
    };
    if !state.closed
        && let Err(e) = finish(&mut state, Some(EXIT_TIMEOUT))
    {
        warn(&format!(
            "at the process's exit, the session's last phase: {e}"
        ));
    }
}

fn sdk_tool() -> Result<&'static Tool, Error> {
    tool().ok_or_else(|| Error::State("the tool is not configured".into()))
}

fn check_phase_name(name: &str) -> Result<(), Error> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.starts_with('.')
        || name.contains('/')
        || name == FINAL_PHASE;
    if bad {
        return Err(Error::Argument(format!(
            "`{name}` cannot name a phase: it becomes a directory of the output, so it must be a plain file name, not starting with `.`, and not `{FINAL_PHASE}` (the phase close ends)"
        )));
    }
    Ok(())
}

/// A forked child: the runner's phase is not the child's to keep open, nor its stream.
extern "C" fn after_fork_child() {
    let fd = RUNNER_STDIN.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: the child's copy of the descriptor; async-signal-safe.
        unsafe { libc::close(fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_are_plain_file_names() {
        for good in ["warmup", "step-2", "epoch 3"] {
            assert!(check_phase_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", FINAL_PHASE] {
            assert!(
                matches!(check_phase_name(bad), Err(Error::Argument(_))),
                "{bad}"
            );
        }
    }
}
