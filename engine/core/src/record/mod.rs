//! Records and the metadata that gives them meaning.

mod args;
mod field;
pub mod hip_stream;
mod kind;
mod meta;
mod model;

pub use args::{ApiArgs, Arg, ArgValue, ArgsError};
pub use field::{Field, Storage, Sym, Value};
pub use kind::{ColumnType, RecordKind};
pub use meta::{
    Agent, CodeObject, CounterInfo, Exit, KernelSymbol, Meta, Process, Queue, Stream, Thread,
    ToolCost,
};
pub use model::{
    ApiCall, Batch, CounterSample, DeviceCounterSample, GraphLaunch, HipEventBarrier, HipStream,
    KernelDispatch, KfdEvent, Marker, MemoryAllocation, MemoryCopy, PcSample, Record,
    RuntimeInitialization, ScratchMemory, SpmSample, wire_size,
};

/// Where records are encoded: a `Vec`, or the tool's buffers for frames, which may be
/// memory shared with the runner (see [`crate::ring`]).
pub trait Out {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
    /// The bytes put so far.
    fn bytes(&mut self) -> &mut [u8];
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}
