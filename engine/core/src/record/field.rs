//! How one field of a record is laid out on the wire (little-endian, fixed size) and what
//! column type it offers to pipeline expressions.

use super::ColumnType;

/// A fixed-size record field.
pub trait Field: Copy {
    const SIZE: usize;
    const COLUMN: ColumnType;
    /// The field's own type, for sinks that store typed columns.
    const STORAGE: Storage;
    /// Writes the field into exactly `SIZE` bytes.
    fn put(self, to: &mut [u8]);
    /// Reads the field from exactly `SIZE` bytes.
    fn take(bytes: &[u8]) -> Self;
    /// The value for expressions: integers widen to i64, floats to f64.
    fn value(self) -> Value;
}

/// A field's value as expressions see it; strings are interned ids resolved by the caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(Sym),
}

/// The type a field has in its record (expressions see only [`ColumnType`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    U8,
    U16,
    U32,
    U64,
    I32,
    F64,
    /// An interned string ([`Sym`]).
    Sym,
}

impl Storage {
    /// Bytes the field takes on the wire.
    pub const fn size(self) -> usize {
        match self {
            Storage::U8 => 1,
            Storage::U16 => 2,
            Storage::U32 | Storage::I32 | Storage::Sym => 4,
            Storage::U64 | Storage::F64 => 8,
        }
    }
}

/// An interned string: an index into the string table of the stream it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(pub u32);

macro_rules! int_field {
    ($($t:ty => $storage:ident),*) => {$(
        impl Field for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const COLUMN: ColumnType = ColumnType::Int;
            const STORAGE: Storage = Storage::$storage;
            #[inline]
            fn put(self, to: &mut [u8]) {
                to.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn take(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("field width"))
            }
            #[inline]
            fn value(self) -> Value {
                // u64 ids and addresses above i64::MAX wrap, as they would in any i64 column.
                Value::Int(self as i64)
            }
        }
    )*};
}

int_field!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, i32 => I32);

impl Field for f64 {
    const SIZE: usize = 8;
    const COLUMN: ColumnType = ColumnType::Float;
    const STORAGE: Storage = Storage::F64;
    #[inline]
    fn put(self, to: &mut [u8]) {
        to.copy_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn take(bytes: &[u8]) -> Self {
        f64::from_le_bytes(bytes.try_into().expect("field width"))
    }
    #[inline]
    fn value(self) -> Value {
        Value::Float(self)
    }
}

impl Field for Sym {
    const SIZE: usize = 4;
    const COLUMN: ColumnType = ColumnType::String;
    const STORAGE: Storage = Storage::Sym;
    #[inline]
    fn put(self, to: &mut [u8]) {
        self.0.put(to);
    }
    #[inline]
    fn take(bytes: &[u8]) -> Self {
        Sym(u32::take(bytes))
    }
    #[inline]
    fn value(self) -> Value {
        Value::Str(self)
    }
}
