//! Periodic flushes: each buffer is flushed at its plan's `flush_interval` whatever its
//! fill, so records reach the runner while the application runs. An application that ends
//! without the SDK's finalize (`_exit`, as dash does; SIGKILL) then loses at most one
//! interval of records instead of everything still buffered.
//! The last flush, when the process finalizes or dies of a signal, waits for a periodic one
//! in progress and stops the rest.
//!
//! Each process has its own flusher: threads do not survive `fork`, so a forked child
//! starts one of its own, with fresh state the parent's thread cannot be holding.

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use crate::context;
use crate::guard::{entry, locked};
use crate::state::{Tool, tool};
use crate::stream;
use crate::warning::warn;

struct Flusher {
    /// Set when the process finalizes: no round starts after it.
    stopped: AtomicBool,
    /// Held for the whole of a round, so finalize's own flush, which comes after the
    /// last round, delivers whatever that round left.
    round: Mutex<()>,
}

/// This process's flusher; a forked child swaps in its own.
static FLUSHER: AtomicPtr<Flusher> = AtomicPtr::new(ptr::null_mut());

/// Starts this process's flusher thread, if any context wants periodic flushes.
pub fn start(tool: &'static Tool) {
    let contexts = context::all();
    if contexts.is_empty() {
        return;
    }
    // Leaked: the thread and finalize hold it for the life of the process.
    let flusher: &'static Flusher = Box::leak(Box::new(Flusher {
        stopped: AtomicBool::new(false),
        round: Mutex::new(()),
    }));
    FLUSHER.store(ptr::from_ref(flusher).cast_mut(), Ordering::Release);
    let spawned = std::thread::Builder::new()
        .name("rocflow-flush".into())
        .spawn(move || {
            let started = Instant::now();
            let mut due: Vec<Duration> = contexts.iter().map(|c| c.flush_interval).collect();
            // Each round goes through the guard, and none starts once the tool is off.
            let round = |due: &mut Vec<Duration>| {
                let _round = locked(flusher.round.lock());
                if flusher.stopped.load(Ordering::Acquire) {
                    return false;
                }
                let now = started.elapsed();
                for (ctx, due) in contexts.iter().zip(due) {
                    if *due <= now {
                        // SAFETY: a buffer the tool created.
                        unsafe { (tool.api.flush_buffer)(ctx.buffer) };
                        *due = now + ctx.flush_interval;
                    }
                }
                true
            };
            loop {
                let next = due.iter().min().copied().unwrap_or(Duration::MAX);
                std::thread::sleep(next.saturating_sub(started.elapsed()));
                if !entry("the flush thread", false, || round(&mut due)) {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        warn(&format!(
            "cannot start the flush thread ({e}); records wait for full buffers"
        ));
    }
}

/// Stops the periodic flushes, waiting (up to `timeout`) for a round in progress, so the
/// caller's final flush comes after every periodic one. The guard holds off later rounds
/// for as long as it lives; `None` when the wait timed out (a signal handler interrupted
/// the flusher mid-round on this very thread) or there is no flusher.
pub fn stop(timeout: Duration) -> Option<MutexGuard<'static, ()>> {
    // SAFETY: flushers are leaked, never freed, so a pointer once stored stays valid.
    let flusher = unsafe { FLUSHER.load(Ordering::Acquire).as_ref() }?;
    flusher.stopped.store(true, Ordering::Release);
    let deadline = Instant::now() + timeout;
    loop {
        match flusher.round.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// In a forked child: the parent's flusher is not this process's (its thread is gone and
/// its lock may be held forever); the child starts its own.
pub fn restart_in_child(tool: &'static Tool) {
    FLUSHER.store(ptr::null_mut(), Ordering::Release);
    start(tool);
}

/// Flushes every buffer and closes the stream; once per process. Closing is what tells
/// the runner the process finalized (the writer's last frame is the tool's cost).
pub fn flush_and_close(timeout: Duration) {
    static DONE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let pid = std::process::id();
    if DONE.swap(pid, std::sync::atomic::Ordering::AcqRel) == pid {
        return;
    }
    let _no_more_rounds = stop(timeout);
    if let Some(tool) = tool() {
        for ctx in context::all() {
            // SAFETY: a buffer the tool created.
            unsafe { (tool.api.flush_buffer)(ctx.buffer) };
            ctx.state.release_open();
        }
    }
    stream::close(timeout);
}
