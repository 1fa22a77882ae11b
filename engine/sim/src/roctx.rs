//! ROCTx's thread ranges called by the application itself, as AMD's ROCTx library hands
//! them to the SDK: `roctxRangePushA` and `roctxRangePop` reach the started contexts as
//! the scenario's own ranges do ([`Emitter`]). They are exported under names of their own
//! (`rocflow_sim_roctxRangePushA`, `rocflow_sim_roctxRangePop`), not ROCTx's: preloaded,
//! the simulated SDK would otherwise displace the ROCTx library of every program it runs.
//! A program that finds them (the overhead benchmark's `tests/apps/roctx_loop.c`) calls
//! them in place of ROCTx's.

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int};

use crate::sdk::{Phase, phase, sdk};
use crate::workload::{Emitter, gettid};

/// A thread's emitter, made on its first range with the SDK running, and the ranges it
/// has open: their correlation ids and start times. The emitter hands its staged records
/// over when the thread ends; the main thread's thread-locals end in `exit` before the
/// SDK's own exit handler flushes the buffers.
#[derive(Default)]
struct Thread {
    emitter: Option<Emitter<'static>>,
    open: Vec<(u64, u64)>,
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::default();
}

/// Runs `f` on this thread's emitter and open ranges, where the SDK runs; gives the
/// nesting depth `f` leaves, or `None` where the SDK does not run or `f` finds nothing to
/// do.
fn with_thread(f: impl FnOnce(&Emitter<'static>, &mut Vec<(u64, u64)>) -> bool) -> Option<usize> {
    if phase() != Phase::Running {
        return None;
    }
    let sdk = sdk()?;
    let running = sdk.running()?;
    THREAD
        .try_with(|thread| {
            let Thread { emitter, open } = &mut *thread.borrow_mut();
            let emitter = emitter.get_or_insert_with(|| Emitter::new(sdk, running, gettid()));
            f(emitter, open).then_some(open.len())
        })
        .ok()
        .flatten()
}

/// ROCTx's nesting level, or -1.
fn level(depth: Option<usize>) -> c_int {
    depth.map_or(-1, |d| d as c_int)
}

/// `roctxRangePushA(message)`: opens a thread range; gives its nesting level (0 for the
/// outermost), or -1 where the SDK does not run.
#[unsafe(export_name = "rocflow_sim_roctxRangePushA")]
pub extern "C" fn range_push(message: *const c_char) -> c_int {
    // SAFETY: ROCTx takes a NUL-terminated string or null.
    let message = (!message.is_null()).then(|| unsafe { CStr::from_ptr(message) });
    let depth = with_thread(|emitter, open| {
        let start = crate::sdk::now();
        open.push((emitter.push_range(message), start));
        true
    });
    level(depth.map(|d| d - 1))
}

/// `roctxRangePop()`: closes this thread's innermost range; gives the nesting level left,
/// or -1 with none open.
#[unsafe(export_name = "rocflow_sim_roctxRangePop")]
pub extern "C" fn range_pop() -> c_int {
    level(with_thread(|emitter, open| {
        let Some((correlation, start)) = open.pop() else {
            return false;
        };
        emitter.pop_range(None, correlation, start, crate::sdk::now());
        true
    }))
}
