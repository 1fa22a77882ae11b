//! ROCTx messages. Buffered marker records carry none (the real SDK leaves them out), so,
//! as rocprofv3 does, the tool takes each message from the marker API's callback as the
//! call enters and sends it as metadata keyed by the call's correlation id, which its
//! buffered record carries too. Messages are interned in the stream's string table (an
//! application repeats a few) and go out in batches, always ahead of the records they name.

use std::ffi::{CStr, c_void};
use std::sync::Mutex;

use rocflow_core::abi::{CallbackTracingRecord, Handle, MarkerApiData, UserData, callback};
use rocflow_core::contexts::TracingPlan;
use rocflow_core::record::Meta;
use rocflow_core::sdk::Domain;

use crate::guard::{entry, locked};
use crate::state::Tool;
use crate::stream;
use crate::strings::{self, Table};
use crate::warning::warn;

/// Messages held before they are sent without waiting for records to need them.
const BATCH: usize = 4096;

/// Correlation ids and the numbers of their messages, not sent yet. Only ever locked
/// while the string table is, so a fork, which holds the table, never leaves it locked in
/// the child, and messages go out in the order their strings were numbered.
static PENDING: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());

/// Traces the messages of the marker calls `tracing` buffers, in `context`.
pub fn trace(tool: &Tool, context: Handle, tracing: &TracingPlan) {
    let (kind, with_message) = match tracing.domain {
        Domain::MarkerCoreApi => (callback::MARKER_CORE_API, callback::MARKER_CORE_MESSAGES),
        Domain::MarkerCoreRangeApi => (
            callback::MARKER_CORE_RANGE_API,
            callback::MARKER_CORE_RANGE_MESSAGES,
        ),
        _ => return,
    };
    let operations: Vec<i32> = with_message
        .into_iter()
        .filter(|op| {
            tracing
                .operations
                .as_ref()
                .is_none_or(|ops| ops.contains(op))
        })
        .collect();
    if operations.is_empty() {
        return;
    }
    // SAFETY: `operations` outlives the call; the callback has the SDK's signature.
    let status = unsafe {
        (tool.api.configure_callback_tracing)(
            context,
            kind,
            operations.as_ptr(),
            operations.len(),
            Some(on_marker),
            std::ptr::null_mut(),
        )
    };
    if let Err(e) = tool.api.check(
        &format!("tracing the messages of {}", tracing.domain.name()),
        status,
    ) {
        warn(&format!("{e}; its markers have no messages"));
    }
}

/// `rocprofiler_callback_tracing_cb_t` for the marker calls that carry a message.
unsafe extern "C" fn on_marker(
    record: CallbackTracingRecord,
    _user: *mut UserData,
    _data: *mut c_void,
) {
    entry("on_marker", (), || {
        // SAFETY: the SDK's record for the call.
        unsafe { take_message(&record) }
    });
}

/// Holds the message of the marker call `record` enters, sending the batch when full.
///
/// # Safety
/// `record` is a marker API callback's.
unsafe fn take_message(record: &CallbackTracingRecord) {
    if record.phase != callback::PHASE_ENTER || record.payload.is_null() {
        return;
    }
    // SAFETY: the payload of a marker API callback.
    let data = unsafe { &*record.payload.cast::<MarkerApiData>() };
    let message = data.args[0];
    if message.is_null() {
        return;
    }
    // SAFETY: ROCTx messages are NUL-terminated strings, alive during the call.
    hold(record.correlation_id.internal, unsafe {
        CStr::from_ptr(message)
    });
}

/// Holds `message` for the marker record of `correlation_id`, sending the batch when full.
pub fn hold(correlation_id: u64, message: &CStr) {
    let full = {
        let mut table = strings::lock();
        let number = Table::of(&mut table).intern(message.to_bytes(), str::to_owned);
        let mut pending = locked(PENDING.lock());
        pending.push((correlation_id, number.0));
        pending.len() >= BATCH
    };
    if full {
        send();
    }
}

/// Sends the messages held, with the strings they use first. Called before each
/// delivery of records is sent, so messages precede the records they name.
pub fn send() {
    let mut table = strings::lock();
    let mut pending = locked(PENDING.lock());
    if pending.is_empty() {
        return;
    }
    Table::of(&mut table).send_new();
    stream::send_meta(vec![Meta::MarkerMessages {
        messages: std::mem::take(&mut *pending),
    }]);
}
