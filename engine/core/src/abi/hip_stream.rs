//! What a tool needs to tell which HIP stream each kernel dispatch and memory copy went
//! on. No SDK 1.x record carries the stream: the SDK calls the tool when a stream is
//! created or destroyed, and around each HIP call that takes a stream (`SET`, its enter
//! before the call enqueues anything, its exit after), so a tool keeps the stream of each
//! thread's current call and hands it to the operations the call enqueues, as rocprofv3
//! does through the operations' external correlation ids.

use super::{Handle, Layout};

/// `ROCPROFILER_CALLBACK_TRACING_HIP_STREAM`.
pub const KIND: i32 = 20;

/// `rocprofiler_hip_stream_operation_t`: a stream created (`hipStreamCreate` and its
/// kin, after the call)…
pub const CREATE: i32 = 1;
/// …destroyed (`hipStreamDestroy`, after the call)…
pub const DESTROY: i32 = 2;
/// …or the stream of the HIP call under way (enter before it, exit after).
pub const SET: i32 = 3;

/// `ROCPROFILER_CALLBACK_PHASE_NONE`: the phase of `CREATE` and `DESTROY`.
pub const PHASE_NONE: i32 = 0;

abi! {
    /// `rocprofiler_callback_tracing_hip_stream_data_t`, the payload of every
    /// `HIP_STREAM` callback.
    pub struct HipStreamData = ["rocprofiler_callback_tracing_hip_stream_data_t"] {
        size: u64,
        /// The stream as the SDK numbers a process's streams: 0 the null stream, the
        /// others from 1 as created.
        stream_id: Handle,
        /// The `hipStream_t` itself.
        stream_value: u64,
    }
}
