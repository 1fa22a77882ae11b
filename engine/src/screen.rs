//! What stays drawn on stderr while a command works (the progress bars), so that a line
//! written to stderr meanwhile goes above it instead of through it.
//!
//! [`crate::progress`] puts its bars here and takes them off; [`crate::messages`] writes
//! through [`suspend`]. Both import this module and neither imports the other.

use std::sync::Mutex;

use indicatif::MultiProgress;

/// The bars on screen, for [`suspend`].
static BARS: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// From now on [`suspend`] takes `bars` off the screen while it writes.
pub fn show(bars: MultiProgress) {
    *BARS.lock().expect("no poison") = Some(bars);
}

/// The bars are no longer redrawn: [`suspend`] writes straight away.
pub fn clear() {
    *BARS.lock().expect("no poison") = None;
}

/// Runs `print` (which writes to stderr) with the bars taken off the screen, and draws
/// them again after.
pub fn suspend<R>(print: impl FnOnce() -> R) -> R {
    let bars = BARS.lock().expect("no poison").clone();
    match bars {
        Some(bars) => bars.suspend(print),
        None => print(),
    }
}
