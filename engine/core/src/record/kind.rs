//! The kinds of records rocflow moves, and the columns each offers to pipeline expressions
//! (filters, derived columns, aggregates). Sinks and transforms name kinds to say which
//! records they take.

use serde::{Deserialize, Serialize};

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
}

/// The value type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    Int,
    Float,
    String,
}

/// Columns every kind has.
const COMMON: &[(&str, ColumnType)] = &[("pid", ColumnType::Int), ("kind", ColumnType::String)];

/// Columns of records that span an interval of time.
const TIMED: &[(&str, ColumnType)] = &[
    ("start_ns", ColumnType::Int),
    ("end_ns", ColumnType::Int),
    ("duration_ns", ColumnType::Int),
    ("correlation_id", ColumnType::Int),
];

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
        }
    }

    pub fn from_name(name: &str) -> Option<RecordKind> {
        RecordKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        RecordKind::ALL.iter().map(|k| k.name())
    }

    /// Columns specific to this kind (see [`RecordKind::column`] for all of them).
    fn own_columns(self) -> (&'static [(&'static str, ColumnType)], bool) {
        use ColumnType::{Float, Int, String};
        match self {
            RecordKind::KernelDispatch => (
                &[
                    ("agent", Int),
                    ("queue", Int),
                    ("tid", Int),
                    ("dispatch_id", Int),
                    ("kernel_id", Int),
                    ("kernel_name", String),
                    ("grid_x", Int),
                    ("grid_y", Int),
                    ("grid_z", Int),
                    ("workgroup_x", Int),
                    ("workgroup_y", Int),
                    ("workgroup_z", Int),
                    ("lds_bytes", Int),
                    ("scratch_bytes", Int),
                    ("vgpr_count", Int),
                    ("sgpr_count", Int),
                ],
                true,
            ),
            RecordKind::MemoryCopy => (
                &[
                    ("src_agent", Int),
                    ("dst_agent", Int),
                    ("tid", Int),
                    ("bytes", Int),
                    ("direction", String),
                ],
                true,
            ),
            RecordKind::MemoryAllocation => (
                &[
                    ("agent", Int),
                    ("tid", Int),
                    ("address", Int),
                    ("bytes", Int),
                    ("operation", String),
                ],
                true,
            ),
            RecordKind::ScratchMemory => (
                &[
                    ("agent", Int),
                    ("queue", Int),
                    ("tid", Int),
                    ("bytes", Int),
                    ("operation", String),
                ],
                true,
            ),
            RecordKind::Api => (
                &[("tid", Int), ("domain", String), ("operation", String)],
                true,
            ),
            RecordKind::Marker => (
                &[
                    ("tid", Int),
                    ("domain", String),
                    ("operation", String),
                    ("message", String),
                ],
                true,
            ),
            RecordKind::CounterSample => (
                &[
                    ("agent", Int),
                    ("dispatch_id", Int),
                    ("kernel_name", String),
                    ("counter", String),
                    ("value", Float),
                ],
                false,
            ),
            RecordKind::PcSample => (
                &[
                    ("agent", Int),
                    ("timestamp_ns", Int),
                    ("dispatch_id", Int),
                    ("correlation_id", Int),
                    ("pc", Int),
                    ("code_object_id", Int),
                    ("code_object_offset", Int),
                    ("wave_id", Int),
                    ("exec_mask", Int),
                    ("instruction_type", String),
                    ("stall_reason", String),
                ],
                false,
            ),
            RecordKind::KfdEvent => (
                &[("agent", Int), ("timestamp_ns", Int), ("operation", String)],
                false,
            ),
            RecordKind::HipStream => (
                &[("tid", Int), ("stream", Int), ("operation", String)],
                true,
            ),
            RecordKind::RuntimeInitialization => (
                &[("tid", Int), ("operation", String), ("version", Int)],
                true,
            ),
        }
    }

    /// The type of `name` in records of this kind, if it has that column.
    pub fn column(self, name: &str) -> Option<ColumnType> {
        self.columns().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Every column of this kind: the common ones, the timing ones where the record spans
    /// an interval, then its own.
    pub fn columns(self) -> impl Iterator<Item = (&'static str, ColumnType)> {
        let (own, timed) = self.own_columns();
        let timed: &[_] = if timed { TIMED } else { &[] };
        COMMON.iter().chain(timed).chain(own).map(|&(n, t)| (n, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_columns_are_unique() {
        for &kind in RecordKind::ALL {
            assert_eq!(RecordKind::from_name(kind.name()), Some(kind));
            let mut names: Vec<_> = kind.columns().map(|(n, _)| n).collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "{} repeats a column", kind.name());
        }
    }
}
