//! Records and the metadata that gives them meaning.

mod kind;

pub use kind::{ColumnType, RecordKind};
