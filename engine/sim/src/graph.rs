//! HIP graph launches, as the SDK traces them since 1.3.0: a `hipGraphLaunch` enqueues
//! the graph's kernels under its own correlation id, and its `HIP_GRAPH` record
//! (`EXEC_LAUNCH`) spans the call and counts the dispatches it enqueued.

use rocflow_core::abi::graph_node::EXEC_LAUNCH;
use rocflow_core::abi::{ApiRecord, Handle, HipGraphRecord};
use rocflow_core::scenario::Scenario;
use rocflow_core::sdk::Domain;

use crate::kfd::Trace;

/// The simulated SDK's value of `ROCPROFILER_CALLBACK_TRACING_HIP_GRAPH` (SDK 1.3.0 on),
/// apart from the kinds of SDK 1.0 as kernel replay's is: a tool looks it up by name.
pub const KIND: i32 = 41;

/// The executable graph thread `index` launches as `graph`: the SDK numbers them from 1 as
/// they are instantiated, and each thread instantiates its graphs, in order, as it starts.
pub fn exec_id(scenario: &Scenario, index: u32, graph: u32) -> u64 {
    let graphs = scenario.graphs();
    let place = graphs.iter().position(|&g| g == graph).unwrap_or(0);
    1 + u64::from(index) * graphs.len() as u64 + place as u64
}

/// The executable graph of thread `index`'s `[[call]]` graph launches, which launch no
/// kernels: numbered after every thread's graphs of kernels.
pub fn call_exec_id(scenario: &Scenario, index: u32) -> u64 {
    let graphs = scenario.graphs().len() as u64;
    1 + u64::from(scenario.scenario.threads.max(1)) * graphs + u64::from(index)
}

/// One launch of an executable graph.
pub struct Launch {
    /// The GPU of the launch's stream.
    pub gpu: Handle,
    pub exec: u64,
    /// Kernel dispatches the launch enqueued.
    pub dispatches: u64,
}

/// Hands the `HIP_GRAPH` record of the launch `call` made to the contexts that trace it.
/// The SDK names no queue: a graph's branches may run on several.
pub fn trace(emitter: &impl Trace, call: &ApiRecord, launch: &Launch) {
    let record = HipGraphRecord {
        size: size_of::<HipGraphRecord>() as u64,
        kind: Domain::HipGraph.sdk_value(),
        operation: EXEC_LAUNCH,
        correlation_id: call.correlation_id,
        thread_id: call.thread_id,
        start_timestamp: call.start_timestamp,
        end_timestamp: call.end_timestamp,
        agent_id: launch.gpu,
        queue_id: Handle { handle: 0 },
        graph_exec_id: Handle {
            handle: launch.exec,
        },
        kernel_dispatch_count: launch.dispatches,
    };
    emitter.trace(Domain::HipGraph, EXEC_LAUNCH, &record);
}
