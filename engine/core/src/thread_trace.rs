//! Thread trace (ATT/SQTT): rocprofiler-sdk's dispatch thread-trace service, as a context
//! plans it and as the SDK takes its parameters. The tool turns a [`ThreadTracePlan`] into
//! the parameter array of `rocprofiler_configure_dispatch_thread_trace_service`; the
//! simulated SDK reads that array back by the same values.

use serde::{Deserialize, Serialize};

use crate::contexts::{AgentSelector, IterationRanges};

/// `rocprofiler_thread_trace_parameter_type_t`.
pub mod parameter {
    pub const TARGET_CU: i32 = 0;
    pub const SHADER_ENGINE_MASK: i32 = 1;
    pub const BUFFER_SIZE: i32 = 2;
    pub const SIMD_SELECT: i32 = 3;
    pub const PERFCOUNTERS_CTRL: i32 = 4;
    pub const PERFCOUNTER: i32 = 5;
    pub const SERIALIZE_ALL: i32 = 6;
    pub const LAST: i32 = 7;
}

/// `rocprofiler_thread_trace_control_flags_t`: what the dispatch callback answers.
pub mod control {
    pub const NONE: i32 = 0;
    pub const START_AND_STOP: i32 = 3;
}

/// The SDK's defaults and limits for the service's parameters (its parameter pack): one
/// target CU of 16, the SIMDs as a 4-bit mask, a buffer of at least 1 MiB.
pub const DEFAULT_TARGET_CU: u8 = 1;
pub const DEFAULT_SIMD_SELECT: u8 = 0xF;
pub const DEFAULT_SHADER_ENGINE_MASK: u64 = 0x1;
/// rocprofv3's default buffer (256 MiB); the SDK's own is 128 MiB.
pub const DEFAULT_BUFFER_BYTES: u64 = 256 << 20;
pub const MIN_BUFFER_BYTES: u64 = 1 << 20;
pub const MAX_TARGET_CU: u8 = 0xF;
pub const MAX_SIMD_SELECT: u8 = 0xF;
/// Perfcounter sampling periods the SDK takes (0 turns them off).
pub const PERFCOUNTER_PERIODS: std::ops::RangeInclusive<u8> = 1..=32;

/// Thread trace of a context: which dispatches, on which agents, with the SDK's
/// parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadTracePlan {
    pub target_cu: u8,
    /// Bitmask of SIMDs (gfx9) or a SIMD id (gfx10 on).
    pub simd_select: u8,
    pub shader_engine_mask: u64,
    pub buffer_bytes: u64,
    /// Counters sampled into the trace (gfx9), each with its SIMD mask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perfcounters: Vec<TracePerfcounter>,
    /// Their sampling period; 0 when there are none.
    pub perfcounter_period: u8,
    /// Serialize the dispatches that are not traced as well.
    pub serialize_all: bool,
    pub kernel_include: Option<String>,
    pub kernel_exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
    pub agents: Vec<AgentSelector>,
    /// Where the runner looks for AMD's trace decoder library first (rocprofv3's
    /// `--att-library-path`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decoder_paths: Vec<String>,
}

/// A counter sampled into the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracePerfcounter {
    pub name: String,
    pub simd_mask: u8,
}

/// `rocprofiler_thread_trace_parameter_t`: a type, then a 64-bit value or, for a
/// perfcounter, the counter's id and a 4-bit SIMD mask in the next word.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter {
    pub kind: i32,
    pub value: u64,
    /// The SIMD mask of a perfcounter (the union's second word, low 4 bits).
    pub simd_mask: u64,
}

impl Parameter {
    pub fn value(kind: i32, value: u64) -> Parameter {
        Parameter {
            kind,
            value,
            simd_mask: 0,
        }
    }
}

impl ThreadTracePlan {
    /// The SDK's parameters for an agent, whose perfcounters' ids are `counter_ids` (in
    /// the plan's order).
    pub fn parameters(&self, counter_ids: &[(u64, u8)]) -> Vec<Parameter> {
        let mut out = vec![
            Parameter::value(parameter::TARGET_CU, self.target_cu.into()),
            Parameter::value(parameter::SIMD_SELECT, self.simd_select.into()),
            Parameter::value(parameter::BUFFER_SIZE, self.buffer_bytes),
            Parameter::value(parameter::SHADER_ENGINE_MASK, self.shader_engine_mask),
            Parameter::value(parameter::SERIALIZE_ALL, self.serialize_all.into()),
        ];
        if self.perfcounter_period != 0 {
            out.push(Parameter::value(
                parameter::PERFCOUNTERS_CTRL,
                self.perfcounter_period.into(),
            ));
            out.extend(counter_ids.iter().map(|&(id, mask)| Parameter {
                kind: parameter::PERFCOUNTER,
                value: id,
                simd_mask: mask.into(),
            }));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The union's layout from `experimental/thread-trace/core.h`: a 4-byte enum padded
    /// to 8, then 16 bytes (a counter id, then the bit-field word).
    #[test]
    fn parameter_layout() {
        assert_eq!(std::mem::size_of::<Parameter>(), 24);
        assert_eq!(std::mem::align_of::<Parameter>(), 8);
        assert_eq!(std::mem::offset_of!(Parameter, value), 8);
        assert_eq!(std::mem::offset_of!(Parameter, simd_mask), 16);
    }
}
