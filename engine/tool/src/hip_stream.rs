//! The HIP stream of each kernel dispatch and memory copy, as rocprofv3 attaches it: no
//! SDK 1.x record carries it, so the tool traces the `HIP_STREAM` callbacks, keeps the
//! stream of each thread's HIP call under way (`SET`'s enter and exit), and when the SDK
//! asks a context for the external correlation id of a dispatch or copy the thread
//! enqueues, notes that stream under the operation's correlation id, for the context's
//! buffered record to take. Work enqueued outside any `SET` (a `hipMemcpy`, which names
//! no stream) is on the null stream, as rocprofv3 has it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use rocflow_core::abi::hip_stream::{HipStreamData, KIND, SET};
use rocflow_core::abi::{CallbackTracingRecord, Handle, UserData, callback};
use rocflow_core::record::hip_stream::stored;

use crate::api::CallError;
use crate::guard::entry;
use crate::state::Tool;

thread_local! {
    /// The streams of the thread's HIP calls under way, innermost last.
    static CURRENT: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The stream of the work this thread enqueues now.
fn current() -> u64 {
    CURRENT.with_borrow(|streams| streams.last().copied().unwrap_or(0))
}

/// The `HIP_STREAM` callback: a HIP call on a stream begins or ends on this thread.
unsafe extern "C" fn on_stream(record: CallbackTracingRecord, _: *mut UserData, _: *mut c_void) {
    entry("hip_stream::on_stream", (), || {
        if record.operation != SET {
            return;
        }
        match record.phase {
            callback::PHASE_ENTER => {
                let data = record.payload.cast::<HipStreamData>();
                if data.is_null() {
                    return;
                }
                // SAFETY: the SDK's payload for the kind, valid for the call.
                let id = unsafe { (*data).stream_id.handle };
                CURRENT.with_borrow_mut(|streams| streams.push(id));
            }
            callback::PHASE_EXIT => {
                CURRENT.with_borrow_mut(|streams| streams.pop());
            }
            _ => {}
        }
    })
}

/// Subscribes the never-stopped `control` context to the streams, so that the contexts
/// that trace dispatches or copies then ask for their operations' streams.
pub fn subscribe(tool: &Tool, control: Handle) -> Result<(), CallError> {
    // SAFETY: the callback has the SDK's signature; no operation list.
    let status = unsafe {
        (tool.api.configure_callback_tracing)(
            control,
            KIND,
            std::ptr::null(),
            0,
            Some(on_stream),
            std::ptr::null_mut(),
        )
    };
    tool.api.check("tracing HIP streams", status)
}

/// A context's operations enqueued and not yet delivered: the stream each went on, by
/// correlation id, as [`stored`] keeps it.
#[derive(Debug, Default)]
pub struct Pending(Mutex<HashMap<u64, u64>>);

/// Every context's pending streams, so that a fork can hold them all.
static ALL: Mutex<Vec<&'static Pending>> = Mutex::new(Vec::new());

/// The locks a fork holds, in the forking thread.
type Held = (
    MutexGuard<'static, Vec<&'static Pending>>,
    Vec<MutexGuard<'static, HashMap<u64, u64>>>,
);

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// `pthread_atfork` prepare handler: a child never inherits a context's table locked by an
/// SDK thread it does not have (its own threads would wait on it for ever).
pub extern "C" fn before_fork() {
    entry("hip_stream::before_fork", (), || {
        let all = crate::guard::locked(ALL.lock());
        let tables = (all.iter())
            .map(|p| crate::guard::locked(p.0.lock()))
            .collect();
        HELD.with(|held| *held.borrow_mut() = Some((all, tables)));
    });
}

/// `pthread_atfork` parent and child handler. Not guarded: it cannot panic, and must let
/// go of the tables even if the tool was switched off since the prepare handler.
pub extern "C" fn after_fork() {
    HELD.with(|held| held.borrow_mut().take());
}

impl Pending {
    /// Makes a fork hold this table while it forks; a context's tables live as long as the
    /// process.
    pub fn register(&'static self) {
        crate::guard::locked(ALL.lock()).push(self);
    }

    /// The operation `correlation` this thread enqueues now goes on its current stream.
    pub fn note(&self, correlation: u64) {
        let stream = stored(Some(current()));
        crate::guard::locked(self.0.lock()).insert(correlation, stream);
    }

    /// The stream of the operation `correlation`, taken as its record is delivered (it is
    /// delivered once to the context); unknown where it was not noted.
    pub fn take(&self, correlation: u64) -> u64 {
        (crate::guard::locked(self.0.lock()).remove(&correlation)).unwrap_or(stored(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While a fork forks, every registered table is held, so no other thread holds one
    /// the child would inherit locked; after it, they are free again.
    #[test]
    fn a_fork_holds_every_registered_table() {
        let pending: &'static Pending = Box::leak(Box::default());
        pending.register();
        before_fork();
        let held = std::thread::scope(|s| s.spawn(|| pending.0.try_lock().is_err()).join());
        after_fork();
        assert!(held.unwrap(), "the table is held during the fork");
        assert!(pending.0.try_lock().is_ok());
    }

    /// An operation goes on the innermost call's stream, the null stream outside any, and
    /// its record takes it once.
    #[test]
    fn operations_take_the_stream_of_the_call_that_enqueued_them() {
        let pending = Pending::default();
        pending.note(1);
        CURRENT.with_borrow_mut(|s| s.push(4));
        pending.note(2);
        CURRENT.with_borrow_mut(|s| s.push(7));
        pending.note(3);
        CURRENT.with_borrow_mut(|s| s.pop());
        pending.note(4);
        CURRENT.with_borrow_mut(|s| s.pop());
        let taken = [1, 2, 3, 4, 5].map(|c| pending.take(c));
        let on = |id| stored(Some(id));
        assert_eq!(taken, [on(0), on(4), on(7), on(4), stored(None)]);
        assert_eq!(pending.take(2), stored(None), "taken once");
    }
}
