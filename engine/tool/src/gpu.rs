//! A GPU as the tool selects it for a service.

use rocflow_core::abi::Handle;

pub struct Gpu {
    pub handle: Handle,
    /// Index among the GPUs (what pipelines' agent indexes mean).
    pub index: u32,
    /// rocflow's agent index (what records carry, and what messages, `inspect` and the
    /// report call an agent).
    pub agent: u32,
    pub gfx: String,
}
