//! Signals while an application runs under rocflow.
//!
//! - Ctrl-C: the first interrupt goes to the application (a terminal already sends it to
//!   the whole foreground group; one sent to rocflow alone, with `kill`, is passed on), and
//!   rocflow keeps collecting while it shuts down. A second one makes rocflow stop waiting
//!   and finish the outputs with what arrived.
//! - SIGTERM (what `timeout`, Slurm and other schedulers send at a time limit, SIGKILL
//!   following after a grace period): passed on to the application, whose tool sends its
//!   last buffers as it dies; rocflow waits [`TERM_GRACE`] at most for that, completes the
//!   spool, finishes the sinks and gives up on the post-steps (see [`crate::cancel`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

static CHILD: AtomicI32 = AtomicI32::new(0);
static INTERRUPTS: AtomicU32 = AtomicU32::new(0);
static TERMINATED: AtomicBool = AtomicBool::new(false);

/// How long after SIGTERM rocflow still waits for the application's last frames: its
/// tool flushes on SIGTERM, which takes milliseconds; one that ignores SIGTERM must not
/// eat the scheduler's grace period.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// `si_code` of a signal sent by a process (kill), rather than by the terminal.
const SI_USER: i32 = 0;

extern "C" fn on_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    match signal {
        libc::SIGINT => {
            INTERRUPTS.fetch_add(1, Ordering::AcqRel);
        }
        libc::SIGTERM => {
            TERMINATED.store(true, Ordering::Release);
            crate::cancel::request();
        }
        _ => {}
    }
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let from_process = unsafe { (*info).si_code } <= SI_USER;
    let child = CHILD.load(Ordering::Acquire);
    if from_process && child > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(child, signal) };
    }
}

/// Passes SIGINT and SIGTERM on to `child` from now on.
pub fn forward_to(child: u32) {
    CHILD.store(child as i32, Ordering::Release);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a handler with the SA_SIGINFO signature.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Why rocflow stopped waiting for the application's streams, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A second Ctrl-C.
    Interrupted,
    /// SIGTERM, and [`TERM_GRACE`] has passed.
    Terminated,
}

impl Stop {
    /// The exit status a run stopped this way ends with, as a shell reports the signal.
    pub fn status(self) -> i32 {
        128 + match self {
            Stop::Interrupted => libc::SIGINT,
            Stop::Terminated => libc::SIGTERM,
        }
    }
}

/// Whether Ctrl-C has come (once or more).
pub fn interrupted() -> bool {
    INTERRUPTS.load(Ordering::Acquire) >= 1
}

/// Whether rocflow should stop waiting for the streams now. Called from the loop that
/// waits for frames, which times the grace after SIGTERM (a handler cannot read a clock
/// into a `OnceLock`).
pub fn stop_waiting() -> Option<Stop> {
    static TERMINATED_AT: OnceLock<Instant> = OnceLock::new();
    if INTERRUPTS.load(Ordering::Acquire) >= 2 {
        return Some(Stop::Interrupted);
    }
    if !TERMINATED.load(Ordering::Acquire) {
        return None;
    }
    let at = TERMINATED_AT.get_or_init(Instant::now);
    (at.elapsed() >= TERM_GRACE).then_some(Stop::Terminated)
}
