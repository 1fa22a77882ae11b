//! The arrays of a process's document that hold one entry per record, and the domains of
//! rocprofv3's `summary` they add their durations to.

use crate::sdk::Domain;

/// An array of records: one of `buffer_records`, or the ROCTx messages of
/// `strings.marker_api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    KernelDispatch,
    HipApi,
    HsaApi,
    MarkerApi,
    RcclApi,
    MemoryCopy,
    MemoryAllocation,
    ScratchMemory,
    RocdecodeApi,
    RocjpegApi,
    PcSampleHostTrap,
    PcSampleStochastic,
    MarkerMessages,
}

impl Section {
    /// `buffer_records`' arrays, in the document's order.
    pub const BUFFER_RECORDS: [Section; 12] = [
        Section::KernelDispatch,
        Section::HipApi,
        Section::HsaApi,
        Section::MarkerApi,
        Section::RcclApi,
        Section::MemoryCopy,
        Section::MemoryAllocation,
        Section::ScratchMemory,
        Section::RocdecodeApi,
        Section::RocjpegApi,
        Section::PcSampleHostTrap,
        Section::PcSampleStochastic,
    ];

    /// The domains of `summary`, in the order rocprofv3 writes them.
    pub const SUMMARY: [Section; 10] = [
        Section::KernelDispatch,
        Section::HsaApi,
        Section::HipApi,
        Section::MemoryCopy,
        Section::MemoryAllocation,
        Section::MarkerApi,
        Section::RcclApi,
        Section::ScratchMemory,
        Section::RocdecodeApi,
        Section::RocjpegApi,
    ];

    /// The array's key in `buffer_records` (or `strings`).
    pub fn key(self) -> &'static str {
        match self {
            Section::KernelDispatch => "kernel_dispatch",
            Section::HipApi => "hip_api",
            Section::HsaApi => "hsa_api",
            Section::MarkerApi | Section::MarkerMessages => "marker_api",
            Section::RcclApi => "rccl_api",
            Section::MemoryCopy => "memory_copy",
            Section::MemoryAllocation => "memory_allocation",
            Section::ScratchMemory => "scratch_memory",
            Section::RocdecodeApi => "rocdecode_api",
            Section::RocjpegApi => "rocjpeg_api",
            Section::PcSampleHostTrap => "pc_sample_host_trap",
            Section::PcSampleStochastic => "pc_sample_stochastic",
        }
    }

    /// The domain's name in `summary`, for the arrays whose records have durations.
    /// Whether its records' names are the operations of an enumerated domain of the SDK
    /// (`HOST_TO_DEVICE`), rather than functions or kernels.
    pub fn enumerated(self) -> bool {
        matches!(
            self,
            Section::MemoryCopy | Section::MemoryAllocation | Section::ScratchMemory
        )
    }

    pub fn domain(self) -> Option<&'static str> {
        Some(match self {
            Section::KernelDispatch => "KERNEL_DISPATCH",
            Section::HipApi => "HIP_API",
            Section::HsaApi => "HSA_API",
            Section::MarkerApi => "MARKER_API",
            Section::RcclApi => "RCCL_API",
            Section::MemoryCopy => "MEMORY_COPY",
            Section::MemoryAllocation => "MEMORY_ALLOCATION",
            Section::ScratchMemory => "SCRATCH_MEMORY",
            Section::RocdecodeApi => "ROCDECODE_API",
            Section::RocjpegApi => "ROCJPEG_API",
            _ => return None,
        })
    }

    /// The array of a host API domain's calls; `None` for the domains rocprofv3's JSON
    /// has none of (OpenMP, KFD events, …).
    pub fn of_api(domain: Domain) -> Option<Section> {
        Some(match domain.plain() {
            Domain::HipRuntimeApi | Domain::HipCompilerApi => Section::HipApi,
            Domain::HsaCoreApi
            | Domain::HsaAmdExtApi
            | Domain::HsaImageExtApi
            | Domain::HsaFinalizeExtApi => Section::HsaApi,
            Domain::RcclApi => Section::RcclApi,
            Domain::RocdecodeApi => Section::RocdecodeApi,
            Domain::RocjpegApi => Section::RocjpegApi,
            _ => return None,
        })
    }
}
