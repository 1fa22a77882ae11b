//! `rocflow attach`: profiles a process already running, from an attach to a detach. The
//! target's tool streams to a socket of the attach's own, as under `rocflow run`, and the
//! same spool, stages and sinks take the records; the target goes on after.

mod link;
mod register;
mod target;

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rocflow_core::attach::Request;

use super::listen::{self, Counts, Intake};
use super::{
    Collected, SpoolCompression, StartError, Stop, Unfinalized, Unprofiled, backlog, collect,
    create_spool, libraries, signals, unfinalized,
};
use crate::plan::Plan;
use crate::progress::Board;
use crate::record::RecordKind;
use crate::stage::Report;

pub use link::LinkError;
pub use target::{Denied, NotAttachable, Refusal, Target, TargetSdk, probe};

/// How often the attach looks whether it is to end.
const TICK: Duration = Duration::from_millis(20);

pub struct AttachOptions {
    /// How long to collect; `None`: until Ctrl-C or the target's exit.
    pub duration: Option<Duration>,
    pub spool: Option<PathBuf>,
    pub spool_compression: SpoolCompression,
    pub board: Arc<Board>,
}

/// Why the collecting ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The duration passed; rocflow detached.
    Duration,
    /// Ctrl-C or SIGTERM; rocflow detached.
    Interrupted,
    /// The target exited while attached.
    TargetExited,
    /// rocflow asked to detach, and the target did not confirm it (it exited meanwhile).
    DetachUnconfirmed,
}

/// What an attach did.
pub struct AttachOutcome {
    pub ended: Ended,
    /// Why rocflow stopped waiting for the target's stream, if a second Ctrl-C made it.
    pub stopped: Option<Stop>,
    pub report: Report,
    pub records: Vec<(RecordKind, u64)>,
    pub streams: u64,
    pub unfinalized: Vec<Unfinalized>,
    pub unprofiled: Unprofiled,
    /// From the attach to the end of the outputs' stages.
    pub elapsed: Duration,
    pub spool: PathBuf,
    pub spool_error: Option<std::io::Error>,
}

/// Why an attach could not start.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(
        "process {0} runs AMD's rocprofiler-sdk: rocflow attaches only to processes on its simulated SDK so far"
    )]
    RealSdk(u32),
}

/// Attaches to `target` with the plan's tool, collects until the duration ends, Ctrl-C or
/// the target's exit, detaches, and finishes the outputs, feeding `beside` as its sinks
/// are (what the post-steps collect: their reports are the outcome's `report.beside`).
pub fn attach(
    plan: &Plan,
    target: &Target,
    options: &AttachOptions,
    beside: Vec<crate::stage::Outlet<'static>>,
) -> Result<AttachOutcome, AttachError> {
    if target.sdk == TargetSdk::Rocm {
        return Err(AttachError::RealSdk(target.pid));
    }
    let started = Instant::now();
    let tool = libraries::find(libraries::TOOL).map_err(StartError::from)?;
    let dir = tempfile::Builder::new()
        .prefix("rocflow-")
        .tempdir()
        .map_err(StartError::SocketDir)?;
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_json()).map_err(StartError::Plan)?;
    let unprofiled = dir.path().join("unprofiled");
    std::fs::create_dir(&unprofiled).map_err(|source| StartError::Create {
        path: unprofiled.clone(),
        source,
    })?;
    let socket = dir.path().join("rocflow-0.sock");
    let listener = UnixListener::bind(&socket).map_err(|source| StartError::Listen {
        socket: socket.clone(),
        source,
    })?;
    let text = |path: PathBuf| OsString::from(path).to_string_lossy().into_owned();
    let mut env = vec![
        ("ROCFLOW_PLAN".to_owned(), text(plan_file)),
        ("ROCFLOW_SOCKET".to_owned(), text(socket)),
        ("ROCFLOW_UNPROFILED".to_owned(), text(unprofiled.clone())),
    ];
    env.extend((plan.application_env().into_iter()).map(|(n, v)| (n.to_owned(), v.to_owned())));
    let request = Request {
        tool: text(tool),
        env,
    };
    // Ctrl-C and SIGTERM detach from now on; they are not the target's.
    signals::catch();
    let link = link::Link::attach(target.pid, &request)?;
    // The tool's stream waits in the socket's backlog meanwhile.
    let (spool_path, spool) = match create_spool(plan, options.spool.as_deref(), target.pid) {
        Ok(created) => created,
        Err(e) => {
            link.detach();
            return Err(e.into());
        }
    };
    options.board.application_started();
    let (pid, duration) = (target.pid, options.duration);
    let driver = move |intake: Arc<Intake>,
                       frames: backlog::Sender,
                       counts: Arc<Counts>,
                       _stop: Arc<AtomicBool>,
                       board: Arc<Board>| {
        let accepted = Arc::new(AtomicBool::new(false));
        let listener_thread = {
            let (accepted, counts) = (Arc::clone(&accepted), Arc::clone(&counts));
            std::thread::spawn(move || listen::serve(listener, intake, frames, accepted, counts))
        };
        let ended = wait(pid, duration, link);
        board.application_exited();
        accepted.store(true, Ordering::Release);
        let _ = listener_thread.join();
        ended
    };
    let (collected, ended) = collect(
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
        spool,
    } = collected;
    Ok(AttachOutcome {
        ended: ended.unwrap_or(Ended::Interrupted),
        stopped,
        unfinalized: unfinalized(&report, &counts),
        unprofiled: Unprofiled::read(&unprofiled, counts.unread.load(Ordering::Relaxed)),
        report,
        records: counts.per_kind(),
        streams: counts.streams.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        spool,
        spool_error,
    })
}

/// Collects until the duration passes, a signal comes or the target exits; detaches
/// unless the target has gone.
fn wait(pid: u32, duration: Option<Duration>, link: link::Link) -> Ended {
    let since = Instant::now();
    let ended = loop {
        if !alive(pid) {
            return Ended::TargetExited;
        }
        if signals::interrupted() || crate::cancel::requested() {
            break Ended::Interrupted;
        }
        if duration.is_some_and(|d| since.elapsed() >= d) {
            break Ended::Duration;
        }
        std::thread::sleep(TICK);
    };
    match link.detach() {
        true => ended,
        false if !alive(pid) => Ended::TargetExited,
        false => Ended::DetachUnconfirmed,
    }
}

/// Whether process `pid` runs (a zombie does not).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command's name, which may hold anything but ends with `)`.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}
