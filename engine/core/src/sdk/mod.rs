//! Facts about rocprofiler-sdk that pipelines refer to by name: buffer-tracing domains and
//! their operations, PC-sampling methods and units, buffer policies. The numeric values are
//! the SDK's enum values (checked against the real headers' layout in the tests).

pub mod blocks;
pub mod limits;
mod newer;
mod operations;

pub use newer::{
    KERNEL_REPLAY, Release, SIMULATED, SPM_SINCE, SdkVersion, THREAD_TRACE_BUNDLE,
    THREAD_TRACE_FLAGS,
};

/// Every domain's operation table: the generated ones of SDK 1.0 and the newer ones.
mod tables {
    pub use super::newer::{HIP_EVENT, HIP_GRAPH, HIPFILE_API, ROCSHMEM_API};
    pub use super::operations::*;
}

use serde::{Deserialize, Serialize};

macro_rules! domains {
    ($($variant:ident = $value:literal, $name:literal, $ops:ident;)*) => {
        /// A rocprofiler-sdk buffer-tracing domain (`rocprofiler_buffer_tracing_kind_t`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Domain {
            $($variant,)*
        }

        impl Domain {
            pub const ALL: &[Domain] = &[$(Domain::$variant,)*];

            /// The name pipelines use: the SDK constant's suffix in lower case.
            pub fn name(self) -> &'static str {
                match self {
                    $(Domain::$variant => $name,)*
                }
            }

            /// The `ROCPROFILER_BUFFER_TRACING_*` value.
            pub fn sdk_value(self) -> i32 {
                match self {
                    $(Domain::$variant => $value,)*
                }
            }

            /// Operation ids and names the SDK defines for this domain.
            pub fn operations(self) -> &'static [(i32, &'static str)] {
                match self {
                    $(Domain::$variant => tables::$ops,)*
                }
            }

            /// The domain whose `ROCPROFILER_BUFFER_TRACING_*` value is `value` (the
            /// tool asks for every record it receives).
            pub fn from_sdk_value(value: i32) -> Option<Domain> {
                match value {
                    $($value => Some(Domain::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

domains! {
    HsaCoreApi = 1, "hsa_core_api", HSA_CORE_API;
    HsaAmdExtApi = 2, "hsa_amd_ext_api", HSA_AMD_EXT_API;
    HsaImageExtApi = 3, "hsa_image_ext_api", HSA_IMAGE_EXT_API;
    HsaFinalizeExtApi = 4, "hsa_finalize_ext_api", HSA_FINALIZE_EXT_API;
    HipRuntimeApi = 5, "hip_runtime_api", HIP_RUNTIME_API;
    HipCompilerApi = 6, "hip_compiler_api", HIP_COMPILER_API;
    MarkerCoreApi = 7, "marker_core_api", MARKER_CORE_API;
    MarkerControlApi = 8, "marker_control_api", MARKER_CONTROL_API;
    MarkerNameApi = 9, "marker_name_api", MARKER_NAME_API;
    MemoryCopy = 10, "memory_copy", MEMORY_COPY;
    KernelDispatch = 11, "kernel_dispatch", KERNEL_DISPATCH;
    ScratchMemory = 12, "scratch_memory", SCRATCH_MEMORY;
    RcclApi = 14, "rccl_api", RCCL_API;
    Ompt = 15, "ompt", OMPT;
    MemoryAllocation = 16, "memory_allocation", MEMORY_ALLOCATION;
    RuntimeInitialization = 17, "runtime_initialization", RUNTIME_INITIALIZATION;
    RocdecodeApi = 18, "rocdecode_api", ROCDECODE_API;
    RocjpegApi = 19, "rocjpeg_api", ROCJPEG_API;
    HipStream = 20, "hip_stream", HIP_STREAM;
    HipRuntimeApiExt = 21, "hip_runtime_api_ext", HIP_RUNTIME_API;
    HipCompilerApiExt = 22, "hip_compiler_api_ext", HIP_COMPILER_API;
    RocdecodeApiExt = 23, "rocdecode_api_ext", ROCDECODE_API;
    KfdEventPageMigrate = 24, "kfd_event_page_migrate", KFD_EVENT_PAGE_MIGRATE;
    KfdEventPageFault = 25, "kfd_event_page_fault", KFD_EVENT_PAGE_FAULT;
    KfdEventQueue = 26, "kfd_event_queue", KFD_EVENT_QUEUE;
    KfdEventUnmapFromGpu = 27, "kfd_event_unmap_from_gpu", KFD_EVENT_UNMAP_FROM_GPU;
    KfdEventDroppedEvents = 28, "kfd_event_dropped_events", KFD_EVENT_DROPPED_EVENTS;
    KfdPageMigrate = 29, "kfd_page_migrate", KFD_PAGE_MIGRATE;
    KfdPageFault = 30, "kfd_page_fault", KFD_PAGE_FAULT;
    KfdQueue = 31, "kfd_queue", KFD_QUEUE;
    MarkerCoreRangeApi = 32, "marker_core_range_api", MARKER_CORE_RANGE_API;
    HipGraph = 33, "hip_graph", HIP_GRAPH;
    RocshmemApi = 34, "rocshmem_api", ROCSHMEM_API;
    HipfileApi = 36, "hipfile_api", HIPFILE_API;
    HipEvent = 38, "hip_event", HIP_EVENT;
}

impl Domain {
    pub fn from_name(name: &str) -> Option<Domain> {
        Domain::ALL.iter().copied().find(|d| d.name() == name)
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        Domain::ALL.iter().map(|d| d.name())
    }

    /// The domain to trace for the calls of this one with their arguments: the `_EXT`
    /// domain whose records carry them, for the domains that have one. rocprofv3 records
    /// arguments the same way; the SDK iterates no others (`rocprofiler_iterate_buffer_
    /// tracing_record_args` answers NOT_IMPLEMENTED for HSA, marker and RCCL records).
    pub fn with_args(self) -> Option<Domain> {
        match self {
            Domain::HipRuntimeApi | Domain::HipRuntimeApiExt => Some(Domain::HipRuntimeApiExt),
            Domain::HipCompilerApi | Domain::HipCompilerApiExt => Some(Domain::HipCompilerApiExt),
            Domain::RocdecodeApi | Domain::RocdecodeApiExt => Some(Domain::RocdecodeApiExt),
            _ => None,
        }
    }

    /// Whether this domain's records carry their calls' arguments.
    pub fn has_args(self) -> bool {
        self.with_args() == Some(self)
    }

    /// The domain whose calls this one's records are: an `_EXT` domain's plain one, so
    /// calls traced with their arguments are the same calls to every reader.
    pub fn plain(self) -> Domain {
        match self {
            Domain::HipRuntimeApiExt => Domain::HipRuntimeApi,
            Domain::HipCompilerApiExt => Domain::HipCompilerApi,
            Domain::RocdecodeApiExt => Domain::RocdecodeApi,
            other => other,
        }
    }

    /// The name of operation `id` (the tables are sorted by id).
    pub fn operation_name(self, id: i32) -> Option<&'static str> {
        let ops = self.operations();
        ops.binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(|i| ops[i].1)
    }
}

/// `rocprofiler_buffer_policy_t`: what a full buffer does with new records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BufferPolicy {
    /// Drop records while the buffer is full.
    Discard = 1,
    /// Block the producer until the buffer is flushed.
    #[default]
    Lossless = 2,
}

/// A graphics IP version from an architecture name: `gfx942` is 9.4.2, `gfx90a` 9.0.10,
/// `gfx1100` 11.0.0 (the last two digits are hexadecimal minor and stepping).
pub fn gfx_version(name: &str) -> Option<(u32, u32, u32)> {
    let digits = name.strip_prefix("gfx")?;
    let split = digits.len().checked_sub(2).filter(|&s| s > 0)?;
    let (major, rest) = digits.split_at(split);
    let hex = |i: usize| {
        rest[i..=i]
            .parse::<u32>()
            .ok()
            .or(u32::from_str_radix(&rest[i..=i], 16).ok())
    };
    Some((major.parse().ok()?, hex(0)?, hex(1)?))
}

/// `gfx_target_version` as the SDK reports it: 90402 for gfx942.
pub fn gfx_target_version(name: &str) -> Option<u32> {
    let (major, minor, stepping) = gfx_version(name)?;
    Some(major * 10_000 + minor * 100 + stepping)
}

/// The architecture name of a `gfx_target_version` (the KFD topology's): 90402 is gfx942,
/// 90010 gfx90a, 110000 gfx1100.
pub fn gfx_name(target_version: u32) -> String {
    let (major, minor, stepping) = (
        target_version / 10_000,
        target_version / 100 % 100,
        target_version % 100,
    );
    format!("gfx{major}{minor:x}{stepping:x}")
}

/// `rocprofiler_agent_type_t`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum AgentType {
    Cpu = 1,
    Gpu = 2,
}

/// `rocprofiler_pc_sampling_method_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcSamplingMethod {
    Stochastic = 1,
    HostTrap = 2,
}

impl PcSamplingMethod {
    /// The unit rocprofiler-sdk pairs with the method when none is given, and the only one
    /// it accepts: host-trap sampling is timed, stochastic (hardware) sampling counts cycles.
    pub fn unit(self) -> PcSamplingUnit {
        match self {
            PcSamplingMethod::HostTrap => PcSamplingUnit::Time,
            PcSamplingMethod::Stochastic => PcSamplingUnit::Cycles,
        }
    }
}

/// The variable that turns on rocprofiler-sdk's PC sampling, AMD's beta: without it the SDK
/// refuses PC sampling with NOT_IMPLEMENTED.
pub const PC_SAMPLING_BETA: &str = "ROCPROFILER_PC_SAMPLING_BETA_ENABLED";

/// `rocprofiler_pc_sampling_unit_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcSamplingUnit {
    Instructions = 1,
    Cycles = 2,
    Time = 3,
}

/// The dimensions rocprofiler-sdk gives counter instances.
pub const COUNTER_DIMENSIONS: &[&str] = &[
    "DIMENSION_XCC",
    "DIMENSION_AID",
    "DIMENSION_SHADER_ENGINE",
    "DIMENSION_AGENT",
    "DIMENSION_SHADER_ARRAY",
    "DIMENSION_WGP",
    "DIMENSION_INSTANCE",
];

#[cfg(test)]
mod tests;
