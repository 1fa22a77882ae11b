//! Records and the metadata that gives them meaning.

mod args;
mod field;
mod kind;
mod meta;
mod model;

pub use args::{ApiArgs, Arg, ArgValue};
pub use field::{Field, Storage, Sym, Value};
pub use kind::{ColumnType, RecordKind};
pub use meta::{
    Agent, CodeObject, CounterInfo, Exit, KernelSymbol, Meta, Process, Queue, Stream, Thread,
    ToolCost,
};
pub use model::{
    ApiCall, Batch, CounterSample, HipStream, KernelDispatch, KfdEvent, Marker, MemoryAllocation,
    MemoryCopy, PcSample, Record, RuntimeInitialization, ScratchMemory, wire_size,
};
