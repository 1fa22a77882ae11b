//! The GPUs the tool configures services on, and what the SDK says each supports.

use rocflow_core::abi::Handle;
use rocflow_core::query;
use rocflow_core::smi::PciLocation;

use crate::api::CallError;
use crate::state::Tool;

/// A GPU as the tool selects it.
pub struct Gpu {
    pub handle: Handle,
    /// Index among the GPUs (what pipelines' agent indexes mean).
    pub index: u32,
    /// rocflow's agent index (what records carry, and what messages, `inspect` and the
    /// report call an agent).
    pub agent: u32,
    pub gfx: String,
    /// Where it sits on the PCI bus: how AMD-SMI's GPUs are matched to the SDK's agents.
    pub location: PciLocation,
}

/// The counters an agent supports.
pub fn supported_counters(tool: &Tool, agent: Handle) -> Result<Vec<query::Counter>, CallError> {
    let counters = tool.api.queries().counters(agent);
    counters.map_err(|status| tool.api.failed("listing counters", status))
}
