//! The GPUs the tool configures services on, what the SDK says each supports, and where a
//! counter value of one lies.

use rocflow_core::abi::Handle;
use rocflow_core::query;
use rocflow_core::sdk::COUNTER_DIMENSIONS;
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

/// The counter of a counter record's instance id, and the instance's coordinates in
/// `COUNTER_DIMENSIONS` order.
pub fn coordinates(tool: &Tool, id: u64) -> (Handle, [u16; 7]) {
    let mut counter = Handle { handle: 0 };
    // SAFETY: a writable handle.
    unsafe { (tool.api.query_record_counter_id)(id, &mut counter) };
    let mut at = [0u16; COUNTER_DIMENSIONS.len()];
    for &dimension in tool.counter_dimensions(counter) {
        let mut position = 0usize;
        // SAFETY: a writable position.
        unsafe { (tool.api.query_record_dimension_position)(id, dimension, &mut position) };
        if let Some(slot) = at.get_mut(dimension as usize) {
            *slot = position as u16;
        }
    }
    (counter, at)
}
