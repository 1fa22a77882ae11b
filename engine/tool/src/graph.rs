//! The GPU side of the `hip_graph` and `hip_event` domains' records: a graph launch's
//! executable graph, queue and dispatch count, a HIP event barrier's queues and event. The
//! call itself is an [`ApiCall`](rocflow_core::record::ApiCall) as every API's.

use std::ffi::c_void;

use rocflow_core::abi::{Handle, HipEventRecord, HipGraphRecord};
use rocflow_core::record::{GraphLaunch, HipEventBarrier};
use rocflow_core::sdk::Domain;

/// What a `hip_graph` or `hip_event` record says about the GPU.
pub enum QueueSide {
    Launch(GraphLaunch),
    Barrier(HipEventBarrier),
}

/// The GPU side of a record of `domain`, its agent's index given by `agent`; none for a
/// domain without one, or a record shorter than the layout rocflow knows (a newer field
/// the SDK in use does not fill is never read).
///
/// # Safety
/// `payload` points to a record of `domain` as the SDK delivers it.
pub unsafe fn queue_side(
    domain: Domain,
    payload: *const c_void,
    pid: u32,
    agent: impl Fn(Handle) -> u32,
) -> Option<QueueSide> {
    /// The payload as `R`, if its `size` (every record's first field) covers `R`.
    ///
    /// # Safety
    /// As [`queue_side`]'s.
    unsafe fn read<'a, R>(payload: *const c_void) -> Option<&'a R> {
        // SAFETY: every record starts with its size.
        let size = unsafe { *payload.cast::<u64>() };
        // SAFETY: the caller's contract, and the record is as long as `R`.
        (size >= size_of::<R>() as u64).then(|| unsafe { &*payload.cast::<R>() })
    }
    match domain {
        Domain::HipGraph => {
            // SAFETY: the caller's contract.
            let r = unsafe { read::<HipGraphRecord>(payload) }?;
            Some(QueueSide::Launch(GraphLaunch {
                pid,
                tid: r.thread_id as u32,
                agent: agent(r.agent_id),
                queue: r.queue_id.handle,
                start_ns: r.start_timestamp,
                end_ns: r.end_timestamp,
                correlation_id: r.correlation_id.internal,
                external_id: r.correlation_id.external.value,
                graph_exec_id: r.graph_exec_id.handle,
                dispatch_count: r.kernel_dispatch_count,
            }))
        }
        Domain::HipEvent => {
            // SAFETY: the caller's contract.
            let r = unsafe { read::<HipEventRecord>(payload) }?;
            Some(QueueSide::Barrier(HipEventBarrier {
                pid,
                tid: r.thread_id as u32,
                agent: agent(r.agent_id),
                queue: r.queue_id.handle,
                source_queue: r.source_queue_id.handle,
                start_ns: r.start_timestamp,
                end_ns: r.end_timestamp,
                correlation_id: r.correlation_id.internal,
                external_id: r.correlation_id.external.value,
                event: r.hip_event_handle,
                operation_id: r.operation,
            }))
        }
        _ => None,
    }
}
