//! A request to stop early, made by a signal (a scheduler's SIGTERM at its time limit):
//! work that can take long (post-steps reading a large spool, queries, commands) checks
//! it and gives up with [`STOPPED`], so rocflow ends within the scheduler's grace period
//! with whatever was already complete.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Why work given up on was not done.
pub const STOPPED: &str = "not finished: rocflow was asked to stop (SIGTERM)";

/// Asks long work to stop. Async-signal-safe: one atomic store.
pub fn request() {
    REQUESTED.store(true, Ordering::Release);
}

/// Whether stopping was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Acquire)
}
