//! A chunk of records as an Arrow batch: the record's columns with their own types (the
//! CSV sink's columns, in its order), then the columns `derive` transforms added.

use arrow_array::RecordBatch;

use super::columns::{self, BatchBuilder, Column};
use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::column::{BatchVisitor, Columns, visit};

/// The chunk's records as a batch; strings resolve through `meta`, the chunk's stream's.
pub fn batch(chunk: &Chunk, meta: &StreamMeta) -> RecordBatch {
    visit(&chunk.batch, Encode { chunk, meta })
}

struct Encode<'a> {
    chunk: &'a Chunk,
    meta: &'a StreamMeta,
}

impl BatchVisitor for Encode<'_> {
    type Output = RecordBatch;

    fn visit<R: Columns>(self, records: &[R]) -> RecordBatch {
        let Encode { chunk, meta } = self;
        let count = records.len();
        let (names, mut columns): (Vec<&str>, Vec<Column<'_>>) = R::KIND
            .record_columns()
            .enumerate()
            .map(|(i, (name, ty))| {
                let column = match R::STORAGE.get(i) {
                    Some(&storage) => Column::stored(name, storage, count),
                    None => Column::derived(ty, count),
                };
                (name, column)
            })
            .unzip();
        for record in records {
            let mut next = columns.iter_mut();
            record.for_each_cell(meta, |cell| {
                next.next().expect("a column per cell").push(cell);
            });
        }
        let mut batch = BatchBuilder::default();
        for (name, column) in names.into_iter().zip(columns) {
            batch.array(name, column.finish(), false);
        }
        for extra in &chunk.extra {
            batch.array(&extra.name, columns::values(extra.values.iter()), true);
        }
        batch.finish()
    }
}
