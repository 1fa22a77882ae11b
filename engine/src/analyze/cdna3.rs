//! What a CDNA3 GPU (gfx940, gfx941, gfx942: the MI300 series) moves and issues per clock,
//! which its agent record does not carry: facts of the architecture, as ROCm Compute
//! Profiler's speed-of-light panel counts them. Other GPUs' widths differ (a gfx90a's vL1D
//! lines are 64 bytes, its L2 channels serve 64 bytes a clock), so a metric that needs one
//! is left out on them.

use crate::record::Agent;

/// Whether `agent` is a CDNA3 GPU.
pub fn is_cdna3(agent: &Agent) -> bool {
    matches!(agent.name.as_str(), "gfx940" | "gfx941" | "gfx942")
}

/// Bytes the LDS of a CU serves in a cycle of an indexed access: 32 banks of 4 bytes.
pub const LDS_BYTES_PER_CYCLE: f64 = 128.0;

/// Bytes of a vL1D (TCP) cache-line access; a CU's vL1D serves one a clock.
pub const L1_BYTES_PER_ACCESS: f64 = 128.0;

/// Bytes of an L2 (TCC) request; each L2 channel serves one a clock.
pub const L2_BYTES_PER_REQUEST: f64 = 128.0;

/// Instructions a CU issues in a cycle at most.
pub const PEAK_IPC: f64 = 5.0;
