//! The records rocprofiler-sdk delivers, one struct per [`RecordKind`], each with a fixed
//! little-endian wire layout and named columns for pipeline expressions. One macro defines
//! all three so they cannot drift apart.

use super::field::{Field, Storage, Sym, Value};
use super::{ColumnType, Out, RecordKind};

/// A record of one kind, encodable to and decodable from its fixed-size wire form.
pub trait Record: Copy + Send + Sync + 'static {
    const KIND: RecordKind;
    /// Encoded size in bytes.
    const SIZE: usize;
    /// The stored columns with their types, in wire order.
    const FIELDS: &'static [(&'static str, ColumnType)];
    /// The stored columns' own types, in the order of `FIELDS`.
    const STORAGE: &'static [Storage];
    fn encode(&self, out: &mut impl Out);
    /// Decodes from exactly `SIZE` bytes.
    fn decode(bytes: &[u8]) -> Self;
    /// A stored column by name.
    fn field(&self, name: &str) -> Option<Value>;
    /// Every stored column in order (cheaper than asking for each by name).
    fn for_each_field(&self, f: impl FnMut(Value))
    where
        Self: Sized;
    /// Start of the record's time span (or its instant), for time windows and ordering.
    fn start_ns(&self) -> u64;
}

macro_rules! records {
    ($(
        $(#[$doc:meta])*
        $name:ident = $kind:ident, time = $time:ident {
            $($(#[$fdoc:meta])* $field:ident: $ty:ty,)*
        }
    )*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        // Readers of the wire form by `STORAGE` find each field where `encode` put it.
        const _: () = assert!(0 $(+ <$ty as Field>::STORAGE.size())* == <$name as Record>::SIZE);

        impl Record for $name {
            const KIND: RecordKind = RecordKind::$kind;
            const SIZE: usize = 0 $(+ <$ty as Field>::SIZE)*;
            const FIELDS: &'static [(&'static str, ColumnType)] =
                &[$((stringify!($field), <$ty as Field>::COLUMN),)*];
            const STORAGE: &'static [Storage] = &[$(<$ty as Field>::STORAGE,)*];

            /// Fills the record's bytes on the stack and appends them in one copy.
            #[inline]
            fn encode(&self, out: &mut impl Out) {
                let mut bytes = [0u8; <$name as Record>::SIZE];
                let mut at = 0;
                $(
                    self.$field.put(&mut bytes[at..at + <$ty as Field>::SIZE]);
                    at += <$ty as Field>::SIZE;
                )*
                debug_assert_eq!(at, Self::SIZE);
                out.put(&bytes);
            }

            #[inline]
            fn decode(bytes: &[u8]) -> Self {
                let mut at = 0;
                $(
                    let $field = <$ty as Field>::take(&bytes[at..at + <$ty as Field>::SIZE]);
                    at += <$ty as Field>::SIZE;
                )*
                debug_assert_eq!(at, Self::SIZE);
                $name { $($field,)* }
            }

            #[inline]
            fn for_each_field(&self, mut f: impl FnMut(Value)) {
                $(f(self.$field.value());)*
            }

            fn field(&self, name: &str) -> Option<Value> {
                match name {
                    $(stringify!($field) => Some(self.$field.value()),)*
                    _ => None,
                }
            }

            #[inline]
            fn start_ns(&self) -> u64 {
                self.$time
            }
        }
    )*

        /// The stored columns of a kind.
        fn fields(kind: RecordKind) -> &'static [(&'static str, ColumnType)] {
            match kind {
                $(RecordKind::$kind => $name::FIELDS,)*
            }
        }

        /// The encoded size of one record of a kind.
        pub fn wire_size(kind: RecordKind) -> usize {
            match kind {
                $(RecordKind::$kind => $name::SIZE,)*
            }
        }

        /// A batch of records of one kind: what moves between stages.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Batch {
            $($kind(Vec<$name>),)*
        }

        impl Batch {
            pub fn kind(&self) -> RecordKind {
                match self {
                    $(Batch::$kind(_) => RecordKind::$kind,)*
                }
            }

            pub fn len(&self) -> usize {
                match self {
                    $(Batch::$kind(records) => records.len(),)*
                }
            }

            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The bytes its records take in memory.
            pub fn bytes(&self) -> usize {
                match self {
                    $(Batch::$kind(records) => records.len() * std::mem::size_of::<$name>(),)*
                }
            }

            /// Keeps the records before `at`, with no room for more, and returns the
            /// others.
            pub fn split_off(&mut self, at: usize) -> Batch {
                match self {
                    $(Batch::$kind(records) => {
                        let rest = records.split_off(at);
                        records.shrink_to_fit();
                        Batch::$kind(rest)
                    })*
                }
            }

            /// An empty batch of a kind with room for `capacity` records.
            pub fn with_capacity(kind: RecordKind, capacity: usize) -> Batch {
                match kind {
                    $(RecordKind::$kind => Batch::$kind(Vec::with_capacity(capacity)),)*
                }
            }

            /// Appends the wire form of every record.
            pub fn encode(&self, out: &mut Vec<u8>) {
                match self {
                    $(Batch::$kind(records) => {
                        out.reserve(records.len() * $name::SIZE);
                        records.iter().for_each(|r| r.encode(out));
                    })*
                }
            }

            /// Decodes a payload of whole records of `kind`; `None` if the length is not a
            /// multiple of the record size.
            pub fn decode(kind: RecordKind, payload: &[u8]) -> Option<Batch> {
                Self::decode_stored(kind, payload, wire_size(kind))
            }

            /// Decodes a payload of whole records of `kind` stored `size` bytes each: the
            /// first bytes of the layout, as an earlier format that had not yet added the
            /// fields at its end wrote them (those read as 0). `None` if the length is not a
            /// multiple of `size`, or `size` is more than the layout's.
            pub fn decode_stored(kind: RecordKind, payload: &[u8], size: usize) -> Option<Batch> {
                match kind {
                    $(RecordKind::$kind => decode_all::<$name>(payload, size).map(Batch::$kind),)*
                }
            }

            /// Puts the records in start-time order, keeping the order of equal starts. The
            /// SDK fills buffers as operations complete: a call that encloses others
            /// arrives after them.
            pub fn sort_by_start(&mut self) {
                match self {
                    $(Batch::$kind(records) => sort_by_start(records),)*
                }
            }

            /// Keeps the records for which `keep(index)` is true.
            pub fn retain_indexed(&mut self, mut keep: impl FnMut(usize) -> bool) {
                match self {
                    $(Batch::$kind(records) => {
                        let mut i = 0;
                        records.retain(|_| { let k = keep(i); i += 1; k });
                    })*
                }
            }
        }

    };
}

/// [`Batch::sort_by_start`] for one kind. A chunk in order is left as it is; otherwise the
/// starts are sorted with their positions (runs of calls of interleaved threads, which the
/// stable sort merges) and each record is then copied once to its place: sorting the
/// records themselves moved each of them at every merge (54 ns a record of the `mi300x`
/// scenario's chunks against 37; moving them in place along the permutation's cycles, 49).
fn sort_by_start<T: Record>(records: &mut Vec<T>) {
    if records.is_sorted_by_key(T::start_ns) {
        return;
    }
    let mut order: Vec<(u64, usize)> = (records.iter().enumerate())
        .map(|(i, record)| (record.start_ns(), i))
        .collect();
    order.sort_by_key(|&(start, _)| start);
    *records = order.iter().map(|&(_, i)| records[i]).collect();
}

/// A kind's columns start with its record's fields, which this module defines.
impl RecordKind {
    /// The type of `name` in records of this kind, if it has that column.
    pub fn column(self, name: &str) -> Option<ColumnType> {
        self.columns().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Every column of this kind: `kind`, then the [record's own](Self::record_columns).
    pub fn columns(self) -> impl Iterator<Item = (&'static str, ColumnType)> {
        std::iter::once(("kind", ColumnType::String)).chain(self.record_columns())
    }

    /// The columns that vary from record to record: the stored fields, then the derived
    /// ones.
    pub fn record_columns(self) -> impl Iterator<Item = (&'static str, ColumnType)> {
        fields(self)
            .iter()
            .copied()
            .chain(self.derived_columns().iter().copied())
    }
}

/// A counter value's place: its coordinates per dimension, which dispatch and device
/// samples keep alike.
macro_rules! coordinates {
    ($($sample:ident),*) => {$(
        impl $sample {
            /// The coordinates, in `rocflow_core::sdk::COUNTER_DIMENSIONS` order.
            pub fn coordinates(&self) -> [u16; 7] {
                [
                    self.xcc,
                    self.aid,
                    self.shader_engine,
                    self.agent_index,
                    self.shader_array,
                    self.wgp,
                    self.instance,
                ]
            }

            /// The sample at other coordinates, in `COUNTER_DIMENSIONS` order.
            pub fn at(mut self, coordinates: [u16; 7]) -> $sample {
                [
                    self.xcc,
                    self.aid,
                    self.shader_engine,
                    self.agent_index,
                    self.shader_array,
                    self.wgp,
                    self.instance,
                ] = coordinates;
                self
            }
        }
    )*};
}

coordinates!(CounterSample, DeviceCounterSample);

fn decode_all<R: Record>(payload: &[u8], size: usize) -> Option<Vec<R>> {
    if size == 0 || size > R::SIZE || payload.len() % size != 0 {
        return None;
    }
    if size == R::SIZE {
        return Some(payload.chunks_exact(R::SIZE).map(R::decode).collect());
    }
    let mut whole = vec![0; R::SIZE];
    let records = payload.chunks_exact(size).map(|stored| {
        whole[..size].copy_from_slice(stored);
        R::decode(&whole)
    });
    Some(records.collect())
}

records! {
    /// A kernel dispatch, from enqueue to completion on a device queue.
    KernelDispatch = KernelDispatch, time = start_ns {
        pid: u32,
        tid: u32,
        agent: u32,
        queue: u64,
        dispatch_id: u64,
        kernel_id: u64,
        start_ns: u64,
        end_ns: u64,
        /// The internal correlation id, shared with the API call that launched it.
        correlation_id: u64,
        /// The external correlation id (set by the application or a marker range).
        external_id: u64,
        grid_x: u32,
        grid_y: u32,
        grid_z: u32,
        workgroup_x: u32,
        workgroup_y: u32,
        workgroup_z: u32,
        lds_bytes: u32,
        scratch_bytes: u32,
        vgpr_count: u32,
        sgpr_count: u32,
        /// The executable HIP graph whose launch enqueued it, numbered by the SDK from 1;
        /// 0 outside any graph (rocpd 3.0.2 stores it so).
        graph_exec_id: u64,
        /// Its node in that launch: the launch's dispatches and copies numbered from 0 in
        /// the order the launching thread enqueued them (0 also outside any graph).
        graph_node_id: u64,
        /// The HIP stream it was enqueued on, as [`crate::record::hip_stream`] keeps it:
        /// the SDK's stream id plus one, 0 where unknown (spools before format 8, a tool
        /// that did not trace the streams).
        hip_stream: u64,
    }

    /// An asynchronous memory copy between agents.
    MemoryCopy = MemoryCopy, time = start_ns {
        pid: u32,
        tid: u32,
        src_agent: u32,
        dst_agent: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        bytes: u64,
        /// `rocprofiler_memory_copy_operation_t`: the copy's direction.
        operation_id: u8,
        /// The executable HIP graph whose launch enqueued it, numbered by the SDK from 1;
        /// 0 outside any graph (rocpd 3.0.2 stores it so).
        graph_exec_id: u64,
        /// Its node in that launch: the launch's dispatches and copies numbered from 0 in
        /// the order the launching thread enqueued them (0 also outside any graph).
        graph_node_id: u64,
        /// Where it wrote and read, as the SDK's record gives them: a host address tells
        /// whether the copy came from pinned memory. 0 where unknown (spools before
        /// format 7, rocpd databases without them).
        dst_address: u64,
        src_address: u64,
        /// The HIP stream it was enqueued on, as [`crate::record::hip_stream`] keeps it:
        /// the SDK's stream id plus one, 0 where unknown (spools before format 8, a tool
        /// that did not trace the streams).
        hip_stream: u64,
    }

    /// A memory allocation or free.
    MemoryAllocation = MemoryAllocation, time = start_ns {
        pid: u32,
        tid: u32,
        agent: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        address: u64,
        bytes: u64,
        /// `rocprofiler_memory_allocation_operation_t`.
        operation_id: u8,
    }

    /// Scratch memory allocated, freed or reclaimed for a queue.
    ScratchMemory = ScratchMemory, time = start_ns {
        pid: u32,
        tid: u32,
        agent: u32,
        queue: u64,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        bytes: u64,
        flags: u32,
        /// `rocprofiler_scratch_memory_operation_t`.
        operation_id: u8,
    }

    /// A host API call of a traced API domain (HIP, HSA, RCCL, OMPT, rocDecode, rocJPEG).
    ApiCall = Api, time = start_ns {
        pid: u32,
        tid: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        /// The domain's `rocprofiler_buffer_tracing_kind_t` value.
        domain_id: u8,
        /// The operation id within the domain.
        operation_id: i32,
    }

    /// A ROCTx marker call: a range, a mark, a name or a profiler control.
    Marker = Marker, time = start_ns {
        pid: u32,
        tid: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        domain_id: u8,
        operation_id: i32,
        message: Sym,
    }

    /// One counter value of one dispatch at one dimension coordinate.
    CounterSample = CounterSample, time = timestamp_ns {
        pid: u32,
        agent: u32,
        dispatch_id: u64,
        kernel_id: u64,
        timestamp_ns: u64,
        counter_id: u32,
        /// Coordinates per dimension, in `rocflow_core::sdk::COUNTER_DIMENSIONS` order.
        xcc: u16,
        aid: u16,
        shader_engine: u16,
        agent_index: u16,
        shader_array: u16,
        wgp: u16,
        instance: u16,
        value: f64,
    }

    /// One counter value of a whole GPU at one dimension coordinate, read at `timestamp_ns`
    /// by the device counting service: what the agent counted since the sampling context
    /// was started.
    DeviceCounterSample = DeviceCounterSample, time = timestamp_ns {
        pid: u32,
        agent: u32,
        timestamp_ns: u64,
        counter_id: u32,
        /// Coordinates per dimension, in `rocflow_core::sdk::COUNTER_DIMENSIONS` order.
        xcc: u16,
        aid: u16,
        shader_engine: u16,
        agent_index: u16,
        shader_array: u16,
        wgp: u16,
        instance: u16,
        value: f64,
    }

    /// What one counter instance counted in one interval of a dispatch, streamed by SPM;
    /// `timestamp_ns` is the interval's end. A dispatch's samples of an instance add up to
    /// what it counted.
    SpmSample = SpmSample, time = timestamp_ns {
        pid: u32,
        agent: u32,
        dispatch_id: u64,
        kernel_id: u64,
        correlation_id: u64,
        timestamp_ns: u64,
        counter_id: u32,
        /// SPM's coordinates: the XCC, the shader engine (0 for a counter of the whole
        /// chip), the block instance.
        xcc: u16,
        shader_engine: u16,
        instance: u16,
        value: f64,
    }

    /// A sampled program counter (host-trap or stochastic).
    PcSample = PcSample, time = timestamp_ns {
        pid: u32,
        agent: u32,
        timestamp_ns: u64,
        dispatch_id: u64,
        correlation_id: u64,
        pc: u64,
        code_object_id: u64,
        code_object_offset: u64,
        exec_mask: u64,
        wave_id: u32,
        hw_id: u32,
        chiplet: u8,
        /// `rocprofiler_pc_sampling_method_t`.
        method: u8,
        /// `rocprofiler_pc_sampling_instruction_type_t` (stochastic only).
        instruction_type: u8,
        /// `rocprofiler_pc_sampling_instruction_not_issued_reason_t` (stochastic only).
        stall_reason: u8,
    }

    /// A KFD event: page migration or fault, queue eviction, unmap, dropped events.
    KfdEvent = KfdEvent, time = timestamp_ns {
        pid: u32,
        agent: u32,
        timestamp_ns: u64,
        address: u64,
        domain_id: u8,
        operation_id: i32,
    }

    /// A HIP stream created, destroyed or made current.
    HipStream = HipStream, time = start_ns {
        pid: u32,
        tid: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        stream: u64,
        operation_id: u8,
    }

    /// A HIP graph executed on a GPU queue, from `hipGraphLaunch`'s start to its end: the
    /// span the SDK gives it. Its kernels' dispatches share its `correlation_id`.
    GraphLaunch = GraphLaunch, time = start_ns {
        pid: u32,
        tid: u32,
        agent: u32,
        /// The queue the graph was launched on; 0 where the SDK names none (a graph's
        /// branches may run on several).
        queue: u64,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        /// The executable graph, numbered by the SDK from 1 in the order instantiated.
        graph_exec_id: u64,
        /// Kernel dispatches the launch enqueued.
        dispatch_count: u64,
    }

    /// The barrier packet a `hipEventRecord` or `hipStreamWaitEvent` puts on a GPU queue.
    HipEventBarrier = HipEventBarrier, time = start_ns {
        pid: u32,
        tid: u32,
        agent: u32,
        queue: u64,
        /// The queue whose work the barrier waits for: the event's (`WAIT`), or `queue`.
        source_queue: u64,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        /// The `hipEvent_t` recorded or waited on.
        event: u64,
        /// `rocprofiler_hip_event_operation_t`.
        operation_id: i32,
    }

    /// A runtime library (HSA, HIP, RCCL, …) finished initializing.
    RuntimeInitialization = RuntimeInitialization, time = start_ns {
        pid: u32,
        tid: u32,
        start_ns: u64,
        end_ns: u64,
        correlation_id: u64,
        external_id: u64,
        version: u64,
        operation_id: u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_unique() {
        for &kind in RecordKind::ALL {
            let mut names: Vec<_> = kind.columns().map(|(n, _)| n).collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "{} repeats a column", kind.name());
        }
    }

    /// Calls of two threads, each thread's in order, interleaved in runs as buffers fill;
    /// equal starts keep the order they came in (told apart by correlation id).
    #[test]
    fn records_sort_by_start_keeping_equal_starts_in_order() {
        let call = |start_ns, correlation_id| ApiCall {
            start_ns,
            correlation_id,
            ..ApiCall::default()
        };
        let calls: Vec<ApiCall> = (0..40)
            .map(|i| {
                let (run, at) = (i / 5, i % 5);
                let thread = run % 2;
                call(
                    (run / 2) * 50 + at * 10 + thread * 3 + (i == 7) as u64 * 2,
                    i,
                )
            })
            .chain([call(20, 100), call(20, 101), call(0, 102)])
            .collect();
        let mut want = calls.clone();
        want.sort_by_key(|c| c.start_ns);
        let mut batch = Batch::Api(calls);
        batch.sort_by_start();
        let Batch::Api(sorted) = &batch else {
            unreachable!()
        };
        assert_eq!(*sorted, want);
        let order = |calls: &[ApiCall]| calls.iter().map(|c| c.correlation_id).collect::<Vec<_>>();
        assert_eq!(order(&sorted[..4]), [0, 102, 5, 1]);
        assert_eq!(order(&sorted[4..9]), [6, 2, 100, 101, 7]);
        // A chunk in order is left where it is, not copied.
        let (before, at) = (batch.clone(), sorted.as_ptr());
        batch.sort_by_start();
        let Batch::Api(again) = &batch else {
            unreachable!()
        };
        assert_eq!(batch, before);
        assert_eq!(again.as_ptr(), at, "a chunk in order was copied");
    }
}
