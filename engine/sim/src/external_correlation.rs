//! The external correlation id request service: a context that configures it is asked,
//! on the thread that enqueues each operation of the kinds it names, for the external id
//! that operation's records of the context carry; a tool that declines (a non-zero
//! return) leaves the id the thread pushed, none here.

use std::ffi::c_void;

use rocflow_core::abi::graph_node::RequestCallback;
use rocflow_core::abi::{Handle, Status, status};

use crate::sdk::{Requests, configure, slice};

/// `ROCPROFILER_EXTERNAL_CORRELATION_REQUEST_LAST` of SDK 1.0: the kinds are below it.
const REQUEST_LAST: i32 = 19;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_external_correlation_id_request_service(
    context: Handle,
    kinds: *const i32,
    count: usize,
    callback: Option<RequestCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    // SAFETY: the caller passes `count` kinds.
    let kinds = unsafe { slice(kinds, count) }.to_vec();
    configure(context, |contexts, index, _| {
        if kinds.iter().any(|&k| k <= 0 || k >= REQUEST_LAST) {
            return status::KIND_NOT_FOUND;
        }
        let ctx = &mut contexts[index];
        if ctx.requests.is_some() {
            return status::SERVICE_ALREADY_CONFIGURED;
        }
        ctx.requests = Some(Requests {
            kinds: (!kinds.is_empty()).then_some(kinds),
            callback,
            data,
        });
        status::SUCCESS
    })
}
