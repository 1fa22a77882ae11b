//! The HIP stream a kernel dispatch or memory copy was enqueued on, as its record keeps
//! it in `hip_stream`: the SDK's stream id (0 the null stream, the others from 1 as the
//! process created them) plus one, so that 0, what a spool of a format before the field
//! reads as, is a stream unknown.

use super::{KernelDispatch, MemoryCopy};

/// The `hip_stream` field of a record on the null stream, where a program's work goes
/// when it names no stream.
pub const NULL_STREAM: u64 = 1;

/// The `hip_stream` field of a record whose stream is `id` (`None`: unknown).
pub fn stored(id: Option<u64>) -> u64 {
    id.map_or(0, |id| id.saturating_add(1))
}

impl KernelDispatch {
    /// The SDK's id of the stream it was enqueued on, if known.
    pub fn stream_id(&self) -> Option<u64> {
        self.hip_stream.checked_sub(1)
    }
}

impl MemoryCopy {
    /// The SDK's id of the stream it was enqueued on, if known.
    pub fn stream_id(&self) -> Option<u64> {
        self.hip_stream.checked_sub(1)
    }
}
