//! What a tool needs to tell which HIP graph node each kernel dispatch and memory copy
//! ran as (rocprofiler-sdk 1.3.0 on). No SDK record carries the node: the SDK calls the
//! tool around each `hipGraphLaunch` (the `HIP_GRAPH` callback kind, `EXEC_LAUNCH`), and
//! asks it for each dispatch's and copy's external correlation id as the launching thread
//! enqueues them, so the tool numbers the launch's nodes itself, as rocprofv3 does.

use std::ffi::c_void;

use super::{Handle, Layout, UserData};

/// The kind's name as `rocprofiler_query_callback_tracing_kind_name` gives it; a tool
/// looks its value up by name, as for kernel replay.
pub const KIND_NAME: &str = "HIP_GRAPH";

/// `rocprofiler_hip_graph_operation_t`: a `hipGraphLaunch` call, its enter before the
/// graph's work is enqueued, its exit after.
pub const EXEC_LAUNCH: i32 = 3;

/// `rocprofiler_external_correlation_id_request_kind_t`: a memory copy.
pub const REQUEST_MEMORY_COPY: i32 = 10;
/// `rocprofiler_external_correlation_id_request_kind_t`: a kernel dispatch.
pub const REQUEST_KERNEL_DISPATCH: i32 = 11;

/// `rocprofiler_external_correlation_id_request_cb_t`: the thread, context, request kind,
/// operation and internal correlation id of the request; the tool writes the external id
/// and returns 0, or returns non-zero to leave the thread's pushed one.
pub type RequestCallback = unsafe extern "C" fn(
    thread_id: u64,
    context_id: Handle,
    kind: i32,
    operation: i32,
    internal_corr_id_value: u64,
    external_corr_id_value: *mut UserData,
    data: *mut c_void,
) -> i32;

abi! {
    /// `rocprofiler_callback_tracing_hip_graph_data_t`, the payload of every `HIP_GRAPH`
    /// callback.
    pub struct HipGraphData = ["rocprofiler_callback_tracing_hip_graph_data_t"] {
        size: u64,
        /// The executable graph, numbered by the SDK from 1 as instantiated.
        graph_exec_id: Handle,
        /// The `hipGraphExec_t` itself.
        graph_exec_value: *const c_void,
    }
}
