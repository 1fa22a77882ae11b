//! A GPU as the tool selects it for a service.

use rocflow_core::abi::Handle;
use rocflow_core::smi::PciLocation;

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
