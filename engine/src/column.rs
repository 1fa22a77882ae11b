//! Column values of records by name: the stored fields, and the columns derived from them
//! and the run's metadata (`duration_ns`, `kernel_name`, operation names, …).

use crate::catalog::StreamMeta;
use crate::record::{
    ApiCall, Batch, CounterSample, DeviceCounterSample, GraphLaunch, HipEventBarrier, HipStream,
    KernelDispatch, KfdEvent, Marker, MemoryAllocation, MemoryCopy, PcSample, Record,
    RuntimeInitialization, ScratchMemory, SpmSample, Value,
};
use crate::sdk::Domain;

/// One column value of one record, borrowing strings from the metadata.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

/// Records whose columns can be read by name.
pub trait Columns: Record {
    /// A column derived from stored fields and metadata (see
    /// [`RecordKind::columns`](crate::record::RecordKind::columns)).
    fn derived<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>>;

    /// Every column in
    /// [`RecordKind::record_columns`](crate::record::RecordKind::record_columns) order.
    #[inline]
    fn for_each_cell<'a>(&self, meta: &'a StreamMeta, mut f: impl FnMut(Cell<'a>)) {
        self.for_each_field(|value| f(stored(value, meta)));
        for (name, _) in Self::KIND.derived_columns() {
            f(self
                .derived(name, meta)
                .expect("declared derived columns exist"));
        }
    }

    /// Any column by name.
    #[inline]
    fn get<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>> {
        if name == "kind" {
            return Some(Cell::Str(Self::KIND.name()));
        }
        match self.field(name) {
            Some(value) => Some(stored(value, meta)),
            None => self.derived(name, meta),
        }
    }
}

const UNKNOWN: &str = "<unknown>";

/// One record of any kind, for code that reads columns by name.
pub trait Row {
    fn cell<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>>;
    fn start_ns(&self) -> u64;
}

impl<R: Columns> Row for R {
    #[inline]
    fn cell<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>> {
        Columns::get(self, name, meta)
    }

    #[inline]
    fn start_ns(&self) -> u64 {
        Record::start_ns(self)
    }
}

#[inline]
fn stored(value: Value, meta: &StreamMeta) -> Cell<'_> {
    match value {
        Value::Int(i) => Cell::Int(i),
        Value::Float(f) => Cell::Float(f),
        Value::Str(sym) => Cell::Str(meta.string(sym)),
    }
}

/// Code generic over the record type, run on a batch's typed records.
pub trait BatchVisitor {
    type Output;
    fn visit<R: Columns>(self, records: &[R]) -> Self::Output;
}

/// Runs `visitor` on the batch's records with their concrete type (so per-record code is
/// compiled for each kind instead of dispatched per record).
pub fn visit<V: BatchVisitor>(batch: &Batch, visitor: V) -> V::Output {
    match batch {
        Batch::KernelDispatch(r) => visitor.visit(r),
        Batch::MemoryCopy(r) => visitor.visit(r),
        Batch::MemoryAllocation(r) => visitor.visit(r),
        Batch::ScratchMemory(r) => visitor.visit(r),
        Batch::Api(r) => visitor.visit(r),
        Batch::Marker(r) => visitor.visit(r),
        Batch::CounterSample(r) => visitor.visit(r),
        Batch::PcSample(r) => visitor.visit(r),
        Batch::KfdEvent(r) => visitor.visit(r),
        Batch::HipStream(r) => visitor.visit(r),
        Batch::RuntimeInitialization(r) => visitor.visit(r),
        Batch::DeviceCounterSample(r) => visitor.visit(r),
        Batch::GraphLaunch(r) => visitor.visit(r),
        Batch::HipEventBarrier(r) => visitor.visit(r),
        Batch::SpmSample(r) => visitor.visit(r),
    }
}

/// Record `i` of a batch.
#[inline]
pub fn row(batch: &Batch, i: usize) -> &dyn Row {
    match batch {
        Batch::KernelDispatch(r) => &r[i],
        Batch::MemoryCopy(r) => &r[i],
        Batch::MemoryAllocation(r) => &r[i],
        Batch::ScratchMemory(r) => &r[i],
        Batch::Api(r) => &r[i],
        Batch::Marker(r) => &r[i],
        Batch::CounterSample(r) => &r[i],
        Batch::PcSample(r) => &r[i],
        Batch::KfdEvent(r) => &r[i],
        Batch::HipStream(r) => &r[i],
        Batch::RuntimeInitialization(r) => &r[i],
        Batch::DeviceCounterSample(r) => &r[i],
        Batch::GraphLaunch(r) => &r[i],
        Batch::HipEventBarrier(r) => &r[i],
        Batch::SpmSample(r) => &r[i],
    }
}

/// The name of operation `id` of `domain`, or `"<unknown>"`.
fn operation_name(domain: Domain, id: i32) -> &'static str {
    domain.operation_name(id).unwrap_or(UNKNOWN)
}

fn domain_cells(domain_id: u8, operation_id: i32, name: &str) -> Option<Cell<'static>> {
    let domain = Domain::from_sdk_value(domain_id.into());
    match name {
        "domain" => Some(Cell::Str(domain.map_or(UNKNOWN, Domain::name))),
        "operation" => Some(Cell::Str(
            domain.map_or(UNKNOWN, |d| operation_name(d, operation_id)),
        )),
        _ => None,
    }
}

/// A span's length; 0 for one that ends before it starts, and at most `i64::MAX` (292
/// years) for one that never ends.
fn duration(start: u64, end: u64) -> Cell<'static> {
    Cell::Int(i64::try_from(end.saturating_sub(start)).unwrap_or(i64::MAX))
}

impl Columns for KernelDispatch {
    fn derived<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>> {
        match name {
            "duration_ns" => Some(duration(self.start_ns, self.end_ns)),
            "kernel_name" => Some(Cell::Str(meta.kernel_name(self.kernel_id))),
            _ => None,
        }
    }
}

impl Columns for MemoryCopy {
    fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        match name {
            "duration_ns" => Some(duration(self.start_ns, self.end_ns)),
            "direction" => Some(Cell::Str(operation_name(
                Domain::MemoryCopy,
                self.operation_id.into(),
            ))),
            _ => None,
        }
    }
}

/// Records with a time span and an operation of a fixed domain.
macro_rules! timed_operation {
    ($($record:ty => $domain:expr),*) => {$(
        impl Columns for $record {
            fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
                match name {
                    "duration_ns" => Some(duration(self.start_ns, self.end_ns)),
                    "operation" => Some(Cell::Str(operation_name($domain, self.operation_id.into()))),
                    _ => None,
                }
            }
        }
    )*};
}

timed_operation!(
    MemoryAllocation => Domain::MemoryAllocation,
    ScratchMemory => Domain::ScratchMemory,
    HipStream => Domain::HipStream,
    RuntimeInitialization => Domain::RuntimeInitialization,
    HipEventBarrier => Domain::HipEvent
);

impl Columns for GraphLaunch {
    fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        (name == "duration_ns").then(|| duration(self.start_ns, self.end_ns))
    }
}

impl Columns for ApiCall {
    fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        match name {
            "duration_ns" => Some(duration(self.start_ns, self.end_ns)),
            _ => domain_cells(self.domain_id, self.operation_id, name),
        }
    }
}

impl Columns for Marker {
    fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        match name {
            "duration_ns" => Some(duration(self.start_ns, self.end_ns)),
            _ => domain_cells(self.domain_id, self.operation_id, name),
        }
    }
}

/// What a marker is called in every output: its ROCTx message, or its ROCTx function
/// (`roctxThreadRangeA`, `roctxMarkA`, …) when it has none (`roctxRangePushA(NULL)`, or a
/// message that was lost).
pub fn marker_label<'a>(marker: &Marker, meta: &'a StreamMeta) -> &'a str {
    match meta.string(marker.message) {
        "" => Domain::from_sdk_value(marker.domain_id.into())
            .and_then(|d| d.operation_name(marker.operation_id))
            .unwrap_or(UNKNOWN),
        message => message,
    }
}

impl Columns for KfdEvent {
    fn derived<'a>(&self, name: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        domain_cells(self.domain_id, self.operation_id, name)
    }
}

/// A dispatch's counter values, counted or streamed by SPM, name their counter and
/// kernel.
macro_rules! dispatch_counter_columns {
    ($($sample:ty),*) => {$(
        impl Columns for $sample {
            fn derived<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>> {
                match name {
                    "counter" => Some(Cell::Str(meta.counter_name(self.counter_id))),
                    "kernel_name" => Some(Cell::Str(meta.kernel_name(self.kernel_id))),
                    _ => None,
                }
            }
        }
    )*};
}

dispatch_counter_columns!(CounterSample, SpmSample);

impl Columns for DeviceCounterSample {
    fn derived<'a>(&self, name: &str, meta: &'a StreamMeta) -> Option<Cell<'a>> {
        match name {
            "counter" => Some(Cell::Str(meta.counter_name(self.counter_id))),
            _ => None,
        }
    }
}

impl Columns for PcSample {
    fn derived<'a>(&self, _: &str, _: &'a StreamMeta) -> Option<Cell<'a>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordKind;

    /// Every column a kind declares can be read from a record of that kind.
    #[test]
    fn declared_columns_are_readable() {
        fn check<R: Columns + Default>() {
            let meta = StreamMeta::default();
            for (name, _) in R::KIND.columns() {
                assert!(
                    R::default().get(name, &meta).is_some(),
                    "{}.{name}",
                    R::KIND.name()
                );
            }
        }
        check::<KernelDispatch>();
        check::<MemoryCopy>();
        check::<MemoryAllocation>();
        check::<ScratchMemory>();
        check::<ApiCall>();
        check::<Marker>();
        check::<CounterSample>();
        check::<PcSample>();
        check::<KfdEvent>();
        check::<HipStream>();
        check::<RuntimeInitialization>();
        check::<DeviceCounterSample>();
        check::<GraphLaunch>();
        check::<HipEventBarrier>();
        check::<SpmSample>();
        assert_eq!(RecordKind::ALL.len(), 15, "a new kind needs a line above");
    }

    #[test]
    fn derived_columns_resolve_names() {
        let call = ApiCall {
            domain_id: 5,
            operation_id: 0,
            start_ns: 10,
            end_ns: 25,
            ..Default::default()
        };
        let meta = StreamMeta::default();
        assert_eq!(
            call.get("domain", &meta),
            Some(Cell::Str("hip_runtime_api"))
        );
        assert_eq!(call.get("operation", &meta), Some(Cell::Str("hipApiName")));
        assert_eq!(call.get("duration_ns", &meta), Some(Cell::Int(15)));
        let copy = MemoryCopy {
            operation_id: 2,
            ..Default::default()
        };
        assert_eq!(
            copy.get("direction", &meta),
            Some(Cell::Str("HOST_TO_DEVICE"))
        );
    }
}
