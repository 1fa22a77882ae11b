//! Abnormal exits: on a fatal signal (or SIGINT/SIGTERM the application leaves to their
//! default), the tool flushes the SDK's buffers and sends what they held before the
//! process dies by the same signal, so the runner keeps everything collected until then.
//! This is best effort: the handler does more than is async-signal-safe, which is the
//! price of not losing the last buffers.

use std::time::Duration;

const SIGNALS: &[libc::c_int] = &[
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGINT,
];

/// How long a dying process waits for its last frames to leave.
const LAST_WORDS: Duration = Duration::from_secs(5);

/// Installs the handler for each signal whose disposition is still the default.
pub fn install() {
    for &signal in SIGNALS {
        // SAFETY: sigaction with valid pointers; the handler has the expected signature.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Goes through the guard although a signal handler: it already does more than is
/// async-signal-safe, the guard adds no allocation unless the flush panics, and a panic
/// escaping here would abort, turning the application's own death by `signal` into SIGABRT.
/// The signal is raised again whatever the flush did, and even when the tool is off.
extern "C" fn on_signal(signal: libc::c_int) {
    crate::guard::entry("the signal handler", (), || {
        crate::flusher::flush_and_close(LAST_WORDS)
    });
    // SAFETY: restoring the default and re-raising; the signal is blocked inside the
    // handler, so it is delivered, with its default effect, when the handler returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
