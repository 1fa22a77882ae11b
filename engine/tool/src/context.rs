//! The contexts the tool created from the Plan's, with their buffers: made once by setup
//! in initialize, then started and stopped by control, flushed by the flusher, and
//! flushed a last time when the process finalizes.

use std::sync::OnceLock;

use rocflow_core::abi::Handle;
use rocflow_core::contexts::StartPlan;

use crate::records::BufferState;

/// A context the tool created.
pub struct Context {
    pub name: String,
    pub handle: Handle,
    pub buffer: Handle,
    /// What the tool keeps of the buffer's records between deliveries.
    pub state: &'static BufferState,
    pub start: StartPlan,
    /// How often [`crate::flusher`] flushes the buffer.
    pub flush_interval: std::time::Duration,
}

static CONTEXTS: OnceLock<Vec<Context>> = OnceLock::new();

/// Keeps the contexts setup created, for the life of the process (set once).
pub fn set(contexts: Vec<Context>) {
    let _ = CONTEXTS.set(contexts);
}

/// The contexts the tool created; none before setup.
pub fn all() -> &'static [Context] {
    CONTEXTS.get().map_or(&[], Vec::as_slice)
}
