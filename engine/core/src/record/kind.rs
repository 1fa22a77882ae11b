//! The kinds of records rocflow moves, and the columns each derives for pipeline
//! expressions (filters, derived columns, aggregates); its stored columns are its record's
//! fields, which `model` lists. Sinks and transforms name kinds to say which records they
//! take.

use serde::{Deserialize, Serialize};

use crate::sdk::Domain;

/// A kind of record, as named in `records = [...]` of transforms and sinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    KernelDispatch,
    MemoryCopy,
    MemoryAllocation,
    ScratchMemory,
    /// Host API calls of every traced API domain (HIP, HSA, RCCL, OMPT, rocDecode, rocJPEG).
    Api,
    /// ROCTx markers: ranges, marks, thread and stream names, profiler control.
    Marker,
    CounterSample,
    PcSample,
    KfdEvent,
    HipStream,
    RuntimeInitialization,
    /// Counter values of a whole GPU, sampled while applications run (device counting).
    DeviceCounterSample,
    /// A HIP graph's execution on a GPU queue (`hip_graph` tracing, SDK 1.3.0 on).
    GraphLaunch,
    /// The GPU barrier of a `hipEventRecord` or `hipStreamWaitEvent` (`hip_event`
    /// tracing, SDK 1.4.1 on).
    HipEventBarrier,
    /// Counter values of a dispatch streamed at an interval (SPM).
    SpmSample,
}

/// The value type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    Int,
    Float,
    String,
}

impl RecordKind {
    pub const ALL: &[RecordKind] = &[
        RecordKind::KernelDispatch,
        RecordKind::MemoryCopy,
        RecordKind::MemoryAllocation,
        RecordKind::ScratchMemory,
        RecordKind::Api,
        RecordKind::Marker,
        RecordKind::CounterSample,
        RecordKind::PcSample,
        RecordKind::KfdEvent,
        RecordKind::HipStream,
        RecordKind::RuntimeInitialization,
        RecordKind::DeviceCounterSample,
        RecordKind::GraphLaunch,
        RecordKind::HipEventBarrier,
        RecordKind::SpmSample,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RecordKind::KernelDispatch => "kernel_dispatch",
            RecordKind::MemoryCopy => "memory_copy",
            RecordKind::MemoryAllocation => "memory_allocation",
            RecordKind::ScratchMemory => "scratch_memory",
            RecordKind::Api => "api",
            RecordKind::Marker => "marker",
            RecordKind::CounterSample => "counter_sample",
            RecordKind::PcSample => "pc_sample",
            RecordKind::KfdEvent => "kfd_event",
            RecordKind::HipStream => "hip_stream",
            RecordKind::RuntimeInitialization => "runtime_initialization",
            RecordKind::DeviceCounterSample => "device_counter_sample",
            RecordKind::GraphLaunch => "graph_launch",
            RecordKind::HipEventBarrier => "hip_event_barrier",
            RecordKind::SpmSample => "spm_sample",
        }
    }

    pub fn from_name(name: &str) -> Option<RecordKind> {
        RecordKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        RecordKind::ALL.iter().map(|k| k.name())
    }

    /// Columns computed from stored fields and the run's metadata.
    pub fn derived_columns(self) -> &'static [(&'static str, ColumnType)] {
        use ColumnType::{Int, String};
        const DURATION: (&str, ColumnType) = ("duration_ns", Int);
        const OPERATION: (&str, ColumnType) = ("operation", String);
        const DOMAIN: (&str, ColumnType) = ("domain", String);
        match self {
            RecordKind::KernelDispatch => &[DURATION, ("kernel_name", String)],
            RecordKind::MemoryCopy => &[DURATION, ("direction", String)],
            RecordKind::MemoryAllocation
            | RecordKind::ScratchMemory
            | RecordKind::HipStream
            | RecordKind::RuntimeInitialization => &[DURATION, OPERATION],
            RecordKind::Api | RecordKind::Marker => &[DURATION, DOMAIN, OPERATION],
            RecordKind::CounterSample | RecordKind::SpmSample => {
                &[("counter", String), ("kernel_name", String)]
            }
            RecordKind::PcSample => &[],
            RecordKind::DeviceCounterSample => &[("counter", String)],
            RecordKind::KfdEvent => &[DOMAIN, OPERATION],
            RecordKind::GraphLaunch => &[DURATION],
            RecordKind::HipEventBarrier => &[DURATION, OPERATION],
        }
    }
}

impl Domain {
    /// The kind of record this domain produces.
    pub fn record_kind(self) -> RecordKind {
        match self {
            Domain::HsaCoreApi
            | Domain::HsaAmdExtApi
            | Domain::HsaImageExtApi
            | Domain::HsaFinalizeExtApi
            | Domain::HipRuntimeApi
            | Domain::HipCompilerApi
            | Domain::RcclApi
            | Domain::Ompt
            | Domain::RocdecodeApi
            | Domain::RocjpegApi
            | Domain::HipRuntimeApiExt
            | Domain::HipCompilerApiExt
            | Domain::RocdecodeApiExt
            | Domain::RocshmemApi
            | Domain::HipfileApi
            // A graph launch and a HIP event's barrier are timed on the thread that
            // called `hipGraphLaunch`, `hipEventRecord` or `hipStreamWaitEvent`.
            | Domain::HipGraph
            | Domain::HipEvent => RecordKind::Api,
            Domain::MarkerCoreApi
            | Domain::MarkerControlApi
            | Domain::MarkerNameApi
            | Domain::MarkerCoreRangeApi => RecordKind::Marker,
            Domain::MemoryCopy => RecordKind::MemoryCopy,
            Domain::KernelDispatch => RecordKind::KernelDispatch,
            Domain::ScratchMemory => RecordKind::ScratchMemory,
            Domain::MemoryAllocation => RecordKind::MemoryAllocation,
            Domain::RuntimeInitialization => RecordKind::RuntimeInitialization,
            Domain::HipStream => RecordKind::HipStream,
            Domain::KfdEventPageMigrate
            | Domain::KfdEventPageFault
            | Domain::KfdEventQueue
            | Domain::KfdEventUnmapFromGpu
            | Domain::KfdEventDroppedEvents
            | Domain::KfdPageMigrate
            | Domain::KfdPageFault
            | Domain::KfdQueue => RecordKind::KfdEvent,
        }
    }

    /// The kind of record that keeps the GPU side of this domain's records, beside the
    /// call [`record_kind`](Self::record_kind) keeps on its thread: a graph launch's and a
    /// HIP event barrier's agent, queue and ids.
    pub fn queue_record_kind(self) -> Option<RecordKind> {
        match self {
            Domain::HipGraph => Some(RecordKind::GraphLaunch),
            Domain::HipEvent => Some(RecordKind::HipEventBarrier),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &kind in RecordKind::ALL {
            assert_eq!(RecordKind::from_name(kind.name()), Some(kind));
        }
    }

    #[test]
    fn all_is_in_declaration_order() {
        // Frame tags and per-kind tables index by `kind as usize`.
        for (i, &kind) in RecordKind::ALL.iter().enumerate() {
            assert_eq!(kind as usize, i);
        }
    }
}
