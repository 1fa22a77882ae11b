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

#[cfg(test)]
mod tests {
    use rocflow_core::abi::{CorrelationId, UserData};

    use super::*;

    fn launch(size: u64) -> HipGraphRecord {
        HipGraphRecord {
            size,
            kind: Domain::HipGraph.sdk_value(),
            operation: 3,
            correlation_id: CorrelationId {
                internal: 41,
                external: UserData { value: 7 },
                ancestor: 0,
            },
            thread_id: 1234,
            start_timestamp: 100,
            end_timestamp: 900,
            agent_id: Handle { handle: 0xa2 },
            queue_id: Handle { handle: 0 },
            graph_exec_id: Handle { handle: 5 },
            kernel_dispatch_count: 3,
        }
    }

    /// Every field of the SDK's record lands in the launch; the agent by its index.
    #[test]
    fn a_graph_launch_is_read_field_by_field() {
        let record = launch(size_of::<HipGraphRecord>() as u64);
        let agent = |h: Handle| if h.handle == 0xa2 { 2 } else { u32::MAX };
        let payload = std::ptr::from_ref(&record).cast();
        // SAFETY: a whole record of the domain.
        let side = unsafe { queue_side(Domain::HipGraph, payload, 77, agent) };
        let Some(QueueSide::Launch(launch)) = side else {
            panic!("no launch")
        };
        let want = GraphLaunch {
            pid: 77,
            tid: 1234,
            agent: 2,
            queue: 0,
            start_ns: 100,
            end_ns: 900,
            correlation_id: 41,
            external_id: 7,
            graph_exec_id: 5,
            dispatch_count: 3,
        };
        assert_eq!(launch, want);
    }

    /// A record shorter than the layout (an SDK whose record ends before a field) gives
    /// no launch rather than bytes past its end.
    #[test]
    fn a_record_shorter_than_the_layout_is_not_read() {
        let record = launch(size_of::<HipGraphRecord>() as u64 - 8);
        let payload = std::ptr::from_ref(&record).cast();
        // SAFETY: the record is whole; its size says less.
        let side = unsafe { queue_side(Domain::HipGraph, payload, 77, |_| 0) };
        assert!(side.is_none());
    }
}
