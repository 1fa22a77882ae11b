//! The files rocprofv3 writes: their names, their columns, and the trace each API
//! domain goes to.

use crate::sdk::Domain;

use super::agent_info::AGENT_INFO;

/// One of rocprofv3's CSV files: its name after `PREFIX_`, and its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    KernelTrace,
    HipApiTrace,
    HsaApiTrace,
    MarkerApiTrace,
    RcclApiTrace,
    RocdecodeApiTrace,
    RocjpegApiTrace,
    MemoryCopyTrace,
    MemoryAllocationTrace,
    ScratchMemoryTrace,
    CounterCollection,
    PcSamplingHostTrap,
    PcSamplingStochastic,
    AgentInfo,
}

/// The columns of the API and marker traces.
const API: &[&str] = &[
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// The columns of both PC sampling files; the host-trap one has the first six.
const PC_SAMPLES: &[&str] = &[
    "Sample_Timestamp",
    "Exec_Mask",
    "Dispatch_Id",
    "Instruction",
    "Instruction_Comment",
    "Correlation_Id",
    "Wave_Issued_Instruction",
    "Instruction_Type",
    "Stall_Reason",
    "Wave_Count",
];

/// The columns of every statistics file.
pub const STATS: &[&str] = &[
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

impl Table {
    /// The file's name after `PREFIX_`, without `.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Table::KernelTrace => "kernel_trace",
            Table::HipApiTrace => "hip_api_trace",
            Table::HsaApiTrace => "hsa_api_trace",
            Table::MarkerApiTrace => "marker_api_trace",
            Table::RcclApiTrace => "rccl_api_trace",
            Table::RocdecodeApiTrace => "rocdecode_api_trace",
            Table::RocjpegApiTrace => "rocjpeg_api_trace",
            Table::MemoryCopyTrace => "memory_copy_trace",
            Table::MemoryAllocationTrace => "memory_allocation_trace",
            Table::ScratchMemoryTrace => "scratch_memory_trace",
            Table::CounterCollection => "counter_collection",
            Table::PcSamplingHostTrap => "pc_sampling_host_trap",
            Table::PcSamplingStochastic => "pc_sampling_stochastic",
            Table::AgentInfo => "agent_info",
        }
    }

    /// The statistics file of the table's durations and the name of its domain in
    /// `domain_stats.csv`, for the tables that have them.
    pub fn stats(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Table::KernelTrace => ("kernel_stats", "KERNEL_DISPATCH"),
            Table::HipApiTrace => ("hip_api_stats", "HIP_API"),
            Table::HsaApiTrace => ("hsa_api_stats", "HSA_API"),
            Table::MarkerApiTrace => ("marker_api_stats", "MARKER_API"),
            Table::RcclApiTrace => ("rccl_api_stats", "RCCL_API"),
            Table::RocdecodeApiTrace => ("rocdecode_api_stats", "ROCDECODE_API"),
            Table::RocjpegApiTrace => ("rocjpeg_api_stats", "ROCJPEG_API"),
            Table::MemoryCopyTrace => ("memory_copy_stats", "MEMORY_COPY"),
            Table::MemoryAllocationTrace => ("memory_allocation_stats", "MEMORY_ALLOCATION"),
            Table::ScratchMemoryTrace => ("scratch_memory_stats", "SCRATCH_MEMORY"),
            _ => return None,
        })
    }

    pub fn header(self) -> &'static [&'static str] {
        match self {
            Table::KernelTrace => &[
                "Kind",
                "Agent_Id",
                "Queue_Id",
                "Stream_Id",
                "Thread_Id",
                "Dispatch_Id",
                "Kernel_Id",
                "Kernel_Name",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
                "LDS_Block_Size",
                "Scratch_Size",
                "VGPR_Count",
                "Accum_VGPR_Count",
                "SGPR_Count",
                "Workgroup_Size_X",
                "Workgroup_Size_Y",
                "Workgroup_Size_Z",
                "Grid_Size_X",
                "Grid_Size_Y",
                "Grid_Size_Z",
            ],
            Table::HipApiTrace
            | Table::HsaApiTrace
            | Table::MarkerApiTrace
            | Table::RcclApiTrace
            | Table::RocdecodeApiTrace
            | Table::RocjpegApiTrace => API,
            Table::MemoryCopyTrace => &[
                "Kind",
                "Direction",
                "Stream_Id",
                "Source_Agent_Id",
                "Destination_Agent_Id",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::MemoryAllocationTrace => &[
                "Kind",
                "Operation",
                "Agent_Id",
                "Allocation_Size",
                "Address",
                "Correlation_Id",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::ScratchMemoryTrace => &[
                "Kind",
                "Operation",
                "Agent_Id",
                "Queue_Id",
                "Thread_Id",
                "Alloc_Flags",
                "Start_Timestamp",
                "End_Timestamp",
                "Allocation_Size",
            ],
            Table::CounterCollection => &[
                "Correlation_Id",
                "Dispatch_Id",
                "Agent_Id",
                "Queue_Id",
                "Process_Id",
                "Thread_Id",
                "Grid_Size",
                "Kernel_Id",
                "Kernel_Name",
                "Workgroup_Size",
                "LDS_Block_Size",
                "Scratch_Size",
                "VGPR_Count",
                "Accum_VGPR_Count",
                "SGPR_Count",
                "Counter_Name",
                "Counter_Value",
                "Start_Timestamp",
                "End_Timestamp",
            ],
            Table::PcSamplingHostTrap => &PC_SAMPLES[..6],
            Table::PcSamplingStochastic => PC_SAMPLES,
            Table::AgentInfo => AGENT_INFO,
        }
    }

    /// The API trace of a domain's calls; `None` for a domain rocprofv3 writes no CSV of.
    pub(super) fn of_api(domain: Domain) -> Option<Table> {
        Some(match domain.plain() {
            Domain::HipRuntimeApi | Domain::HipCompilerApi => Table::HipApiTrace,
            Domain::HsaCoreApi
            | Domain::HsaAmdExtApi
            | Domain::HsaImageExtApi
            | Domain::HsaFinalizeExtApi => Table::HsaApiTrace,
            Domain::RcclApi => Table::RcclApiTrace,
            Domain::RocdecodeApi => Table::RocdecodeApiTrace,
            Domain::RocjpegApi => Table::RocjpegApiTrace,
            _ => return None,
        })
    }
}
