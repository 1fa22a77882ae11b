//! A chunk of records as an Arrow batch: the record's columns with their own types (the
//! CSV sink's columns, in its order, but for those a caller leaves out; API calls' `args`
//! as a list of structs), then the columns transforms added; and an aggregate transform's
//! table as a batch.
//!
//! Stored fields are gathered a column at a time from the records' wire form, where each
//! field has a fixed offset and width: a tight loop per column, instead of a branch per
//! value on the column's type.

use std::sync::Arc;

use arrow_array::types::{
    Float64Type, Int32Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray};

use arrow_array::RecordBatch;
use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder, UInt8Builder};
use arrow_schema::{DataType, Fields};

use super::columns::{self, BatchBuilder, Column, Dictionary};
use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{BatchVisitor, Columns, visit};
use crate::record::{RecordKind, Storage, Sym};
use crate::table::Table;

/// The chunk's records as a batch, without the derived columns in `left_out`; strings
/// resolve through `meta`, the chunk's stream's.
pub fn batch(chunk: &Chunk, meta: &StreamMeta, left_out: &[(RecordKind, &str)]) -> RecordBatch {
    visit(
        &chunk.batch,
        Encode {
            chunk,
            meta,
            left_out,
        },
    )
}

/// An aggregate transform's table: a column per group key and metric, typed by its values.
pub fn table(table: &Table) -> RecordBatch {
    let mut batch = BatchBuilder::default();
    for (c, name) in table.columns.iter().enumerate() {
        let values = columns::values(table.rows.iter().map(|row| &row[c]));
        batch.array(name, values, true);
    }
    batch.finish()
}

struct Encode<'a> {
    chunk: &'a Chunk,
    meta: &'a StreamMeta,
    left_out: &'a [(RecordKind, &'a str)],
}

impl BatchVisitor for Encode<'_> {
    type Output = RecordBatch;

    fn visit<R: Columns>(self, records: &[R]) -> RecordBatch {
        let Encode {
            chunk,
            meta,
            left_out,
        } = self;
        let mut wire = Vec::with_capacity(records.len() * R::SIZE);
        records.iter().for_each(|r| r.encode(&mut wire));
        let mut batch = BatchBuilder::default();
        let mut offset = 0;
        for (&(name, _), &storage) in R::FIELDS.iter().zip(R::STORAGE) {
            let field = Field {
                wire: &wire,
                stride: R::SIZE,
                offset,
            };
            batch.array(name, field.column(name, storage, meta), false);
            offset += storage.size();
        }
        let derived = R::KIND.derived_columns().iter();
        for &(name, ty) in derived.filter(|(name, _)| !left_out.contains(&(R::KIND, name))) {
            let mut column = Column::new(ty, records.len());
            for record in records {
                column.push(
                    record
                        .derived(name, meta)
                        .expect("declared derived columns exist"),
                );
            }
            batch.array(name, column.finish(), false);
        }
        if R::KIND == RecordKind::Api {
            batch.array("args", args(chunk, meta), true);
        }
        for extra in &chunk.extra {
            batch.array(&extra.name, columns::values(extra.values.iter()), true);
        }
        batch.finish()
    }
}

/// API calls' arguments: per call a list of (position, name, type, value as the SDK printed
/// it), null where none were collected.
fn args(chunk: &Chunk, meta: &StreamMeta) -> ArrayRef {
    let text = |name| arrow_schema::Field::new(name, DataType::Utf8, false);
    let fields = Fields::from(vec![
        arrow_schema::Field::new("position", DataType::UInt8, false),
        text("name"),
        text("type"),
        text("value"),
    ]);
    let mut list = ListBuilder::new(StructBuilder::from_fields(fields, 0));
    for i in 0..chunk.len() {
        let Some(args) = chunk.args(i, meta) else {
            list.append(false);
            continue;
        };
        let item = list.values();
        for arg in args {
            let put = |item: &mut StructBuilder, at: usize, value: &str| {
                item.field_builder::<StringBuilder>(at)
                    .expect("a text field")
                    .append_value(value)
            };
            (item.field_builder::<UInt8Builder>(0))
                .expect("the position field")
                .append_value(arg.position);
            put(item, 1, arg.name);
            put(item, 2, arg.type_name);
            put(item, 3, &arg.value);
            item.append(true);
        }
        list.append(true);
    }
    Arc::new(list.finish())
}

/// One stored field of every record in a batch's wire form.
struct Field<'a> {
    wire: &'a [u8],
    stride: usize,
    offset: usize,
}

impl Field<'_> {
    /// The field's little-endian values.
    fn values<const N: usize>(&self) -> impl Iterator<Item = [u8; N]> + '_ {
        self.wire.chunks_exact(self.stride).map(|record| {
            record[self.offset..self.offset + N]
                .try_into()
                .expect("N bytes")
        })
    }

    /// The field's values as an array of `T`, each read from its bytes by `read`.
    fn primitive<T: ArrowPrimitiveType, const N: usize>(
        &self,
        read: fn([u8; N]) -> T::Native,
    ) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::from_iter_values(
            self.values().map(read),
        ))
    }

    /// The column of a field named `name` (fields named `*_ns` are times on the SDK's clock).
    fn column(&self, name: &str, storage: Storage, meta: &StreamMeta) -> ArrayRef {
        match storage {
            Storage::U64 if name.ends_with("_ns") => {
                self.primitive::<TimestampNanosecondType, 8>(i64::from_le_bytes)
            }
            Storage::U8 => self.primitive::<UInt8Type, 1>(u8::from_le_bytes),
            Storage::U16 => self.primitive::<UInt16Type, 2>(u16::from_le_bytes),
            Storage::U32 => self.primitive::<UInt32Type, 4>(u32::from_le_bytes),
            Storage::U64 => self.primitive::<UInt64Type, 8>(u64::from_le_bytes),
            Storage::I32 => self.primitive::<Int32Type, 4>(i32::from_le_bytes),
            Storage::F64 => self.primitive::<Float64Type, 8>(f64::from_le_bytes),
            Storage::Sym => {
                let mut strings = Dictionary::with_capacity(self.wire.len() / self.stride);
                for sym in self.values().map(u32::from_le_bytes) {
                    strings.push(meta.string(Sym(sym)));
                }
                strings.finish()
            }
        }
    }
}
