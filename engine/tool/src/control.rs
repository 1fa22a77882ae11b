//! When the Plan's contexts collect: from the start, after a delay, in repeated collection
//! periods (rocprofv3's `--collection-period`), or from `roctxProfilerResume` on, and never
//! between `roctxProfilerPause` and `roctxProfilerResume`.

use std::ffi::c_void;
use std::time::Duration;

use rocflow_core::abi::{CallbackTracingRecord, UserData, callback, status};

use crate::context::{self, Context};
use crate::guard::entry;
use crate::state::{Tool, tool};
use crate::warning::warn;

/// Starts or stops a context. `false` when the SDK refused because it has begun
/// finalizing: the process is exiting and there is nothing left to collect, so that is no
/// failure to report, and whoever starts contexts on a timer can stop timing. AMD's SDK
/// locks out a start then, and answers a stop of a context it has already let go of with
/// CONTEXT_NOT_FOUND: the tool stops only contexts it created, so that answer means the
/// same.
pub(crate) fn set(tool: &Tool, ctx: &Context, on: bool) -> bool {
    let api = &tool.api;
    // SAFETY: a context the tool created.
    let status = unsafe {
        if on {
            (api.start_context)(ctx.handle)
        } else {
            (api.stop_context)(ctx.handle)
        }
    };
    let finalizing = match on {
        true => status == status::CONFIGURATION_LOCKED,
        false => status == status::CONTEXT_NOT_FOUND,
    };
    if finalizing || status == status::FINALIZED {
        return false;
    }
    // A context that samples devices, started before the application loaded the HSA
    // runtime (as the tool's initialize always is): the SDK started it, and starts its
    // device counting once the runtime is loaded.
    if on && status == status::HSA_NOT_LOADED {
        return true;
    }
    if on && status == status::CONTEXT_CONFLICT {
        warn(&crate::coexist::conflict(&ctx.name));
        return true;
    }
    if status == status::SUCCESS && crate::legacy_roctx::traced_by(tool, &ctx.name) {
        crate::legacy_roctx::collect(on);
    }
    if let Err(e) = api.check(&format!("context `{}`", ctx.name), status) {
        warn(&e.to_string());
    }
    true
}

/// Starts each context as its plan says: now, or on a timer thread of its own. A context
/// that collects from the start is started here, inside initialize, rather than by its
/// timer thread: a thread could come too late for an application that ends at once.
pub fn start(tool: &'static Tool) {
    for ctx in context::all() {
        let s = ctx.start;
        if s.paused {
            continue;
        }
        let started = s.delay_ns == 0 && set(tool, ctx, true);
        if started && s.duration_ns.is_none() {
            continue;
        }
        let spawned = std::thread::Builder::new()
            .name("rocflow-period".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_nanos(s.delay_ns));
                for period in 0..=s.repeat {
                    if period > 0 {
                        std::thread::sleep(Duration::from_nanos(s.interval_ns));
                    }
                    // Ends the periods once the tool is off.
                    let on = entry("the collection-period thread", false, || {
                        (period == 0 && started) || set(tool, ctx, true)
                    });
                    if !on {
                        return;
                    }
                    let Some(duration) = s.duration_ns else {
                        return;
                    };
                    std::thread::sleep(Duration::from_nanos(duration));
                    entry("the collection-period thread", false, || {
                        set(tool, ctx, false)
                    });
                }
            });
        if let Err(e) = spawned {
            warn(&format!(
                "context `{}`: cannot time its collection period: {e}",
                ctx.name
            ));
        }
    }
}

/// `roctxProfilerPause` stops every Plan context, `roctxProfilerResume` starts them.
pub unsafe extern "C" fn on_marker_control(
    record: CallbackTracingRecord,
    _user: *mut UserData,
    _data: *mut c_void,
) {
    entry("on_marker_control", (), || {
        let Some(tool) = tool() else { return };
        if record.phase != callback::PHASE_ENTER {
            return;
        }
        let on = match record.operation {
            callback::ROCTX_PROFILER_PAUSE => false,
            callback::ROCTX_PROFILER_RESUME => true,
            _ => return,
        };
        for ctx in context::all() {
            set(tool, ctx, on);
        }
    });
}
