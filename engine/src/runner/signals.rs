//! Ctrl-C while an application runs under rocflow: the first interrupt goes to the
//! application (a terminal already sends it to the whole foreground group; one sent to
//! rocflow alone, with `kill`, is passed on), and rocflow keeps collecting while it shuts
//! down. A second one makes rocflow stop waiting and finish the outputs with what arrived.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static CHILD: AtomicI32 = AtomicI32::new(0);
static INTERRUPTS: AtomicU32 = AtomicU32::new(0);

/// `si_code` of a signal sent by a process (kill), rather than by the terminal.
const SI_USER: i32 = 0;

extern "C" fn on_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    if signal == libc::SIGINT {
        INTERRUPTS.fetch_add(1, Ordering::AcqRel);
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

/// Whether a second Ctrl-C asked rocflow to stop waiting.
pub fn gave_up() -> bool {
    INTERRUPTS.load(Ordering::Acquire) >= 2
}
