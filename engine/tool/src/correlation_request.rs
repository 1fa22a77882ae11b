//! The external correlation id request: the SDK asks each context that traces kernel
//! dispatches or memory copies for the external correlation id of each one, on the thread
//! that enqueues it, which is how a buffered record learns what that thread was doing.
//! The answer carries the HIP graph node (see [`crate::graph_node`]); the request also
//! notes the operation's HIP stream for the context's records (see [`crate::hip_stream`]).

use std::ffi::c_void;

use rocflow_core::abi::graph_node::{REQUEST_KERNEL_DISPATCH, REQUEST_MEMORY_COPY};
use rocflow_core::abi::{Handle, UserData};
use rocflow_core::contexts::ContextPlan;
use rocflow_core::sdk::Domain;

use crate::api::CallError;
use crate::graph_node::{GraphNode, requested};
use crate::guard::entry;
use crate::hip_stream::Pending;
use crate::state::Tool;

/// The request: a dispatch or copy in a graph launch gets its node, any other keeps the
/// id the thread pushed (a non-zero return says so); where streams are traced, `data` is
/// the context's [`Pending`] streams, which note the operation's.
unsafe extern "C" fn on_request(
    _thread: u64,
    context: Handle,
    kind: i32,
    _operation: i32,
    internal: u64,
    external: *mut UserData,
    data: *mut c_void,
) -> i32 {
    entry("correlation_request::on_request", 1, || {
        // SAFETY: `data` is null or the context's leaked `Pending`, given at configuration.
        if let Some(streams) = unsafe { data.cast::<Pending>().as_ref() } {
            streams.note(internal);
        }
        let carried = requested(context.handle, kind).and_then(GraphNode::carried);
        match carried {
            Some(value) if !external.is_null() => {
                // SAFETY: the SDK's out-parameter, valid for the call.
                unsafe { *external = UserData { value } };
                0
            }
            _ => 1,
        }
    })
}

/// The request kinds whose ids a context asks for: those of the dispatches and copies it
/// traces.
pub fn kinds(plan: &ContextPlan) -> Vec<i32> {
    let traced = |domain| plan.tracing.iter().any(|t| t.domain == domain);
    [
        (Domain::KernelDispatch, REQUEST_KERNEL_DISPATCH),
        (Domain::MemoryCopy, REQUEST_MEMORY_COPY),
    ]
    .into_iter()
    .filter(|(domain, _)| traced(*domain))
    .map(|(_, kind)| kind)
    .collect()
}

/// Has context `handle` of `plan` ask for the id of each dispatch and copy it traces;
/// `streams`, where streams are traced, notes their streams.
pub fn request(
    tool: &Tool,
    handle: Handle,
    plan: &ContextPlan,
    streams: Option<&'static Pending>,
) -> Result<(), CallError> {
    let kinds = kinds(plan);
    if kinds.is_empty() {
        return Ok(());
    }
    let data = streams.map_or(std::ptr::null_mut(), |s| (s as *const Pending).cast_mut());
    // SAFETY: `kinds` outlives the call; the callback has the SDK's signature and `data`
    // lives for the process.
    let status = unsafe {
        (tool.api.configure_external_correlation_request)(
            handle,
            kinds.as_ptr(),
            kinds.len(),
            Some(on_request),
            data.cast(),
        )
    };
    tool.api
        .check("asking for the ids of dispatches and copies", status)
}
