//! Batches to and from plugins: a chunk's records as the batch a plugin receives, lent for
//! one call, and what a transform's returned batch says becomes of them.

use std::ffi::CString;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use rocflow_plugin::abi::{self, ROW_COLUMN};

use crate::arrow::{columns, records};
use crate::catalog::StreamMeta;
use crate::chunk::{Chunk, Extra};

/// A chunk's records with every column, their host in the schema's metadata and, for a
/// transform (`numbered`), the row numbers in [`ROW_COLUMN`].
pub fn records(chunk: &Chunk, meta: &StreamMeta, numbered: bool) -> RecordBatch {
    let mut batch = records::batch(chunk, meta, &[]);
    if numbered {
        let rows = UInt32Array::from_iter_values(0..batch.num_rows() as u32);
        let field = Field::new(ROW_COLUMN, DataType::UInt32, false);
        batch = rocflow_plugin::with_column(batch, field, Arc::new(rows))
            .expect("a column as long as the batch");
    }
    match meta.process.as_ref() {
        Some(process) => {
            let mut schema = batch.schema().as_ref().clone();
            schema
                .metadata
                .insert(abi::HOSTNAME_KEY.into(), process.hostname.clone());
            batch
                .with_schema(Arc::new(schema))
                .expect("only metadata added")
        }
        None => batch,
    }
}

/// A batch lent to a plugin for one call; what the plugin leaves of it is released when
/// this is dropped.
pub struct Lent {
    /// The table name `batch` points to.
    _table: CString,
    pub batch: abi::Batch,
}

impl Lent {
    /// Lends `records` of `table` (a record kind, or an aggregate's pipeline name: neither
    /// holds a NUL, and their columns have types the C Data Interface carries).
    pub fn new(table: &str, records: RecordBatch) -> Lent {
        let table = CString::new(table).expect("table names hold no NUL");
        let (schema, array) =
            rocflow_plugin::batch::export(records).expect("record columns export");
        Lent {
            batch: abi::Batch {
                table: table.as_ptr(),
                schema,
                array,
            },
            _table: table,
        }
    }
}

/// Why a transform's output cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("{got} rows for {rows} without the `{ROW_COLUMN}` column that says which")]
    Rows { got: usize, rows: usize },
    /// An input column comes back as another type.
    #[error("the input column `{name}` as {got}, not {input}")]
    Retyped {
        name: String,
        got: DataType,
        input: DataType,
    },
    /// An added column's values.
    #[error("the column `{name}`: {source}")]
    Column {
        name: String,
        source: columns::ValuesError,
    },
    #[error("`{ROW_COLUMN}` that is not uint32 without nulls")]
    RowType,
    #[error("`{ROW_COLUMN}` with {row}, out of order or beyond the input's {rows} rows")]
    RowOrder { row: usize, rows: usize },
}

/// What a transform's output makes of its input's records.
#[derive(Debug)]
pub struct Change {
    /// Which input rows go on; `None` for all of them.
    pub keep: Option<Vec<bool>>,
    /// Columns the kept rows gain.
    pub added: Vec<Extra>,
}

impl Change {
    /// Reads a transform's output for an input of `rows` rows whose columns were `input`.
    pub fn read(output: &RecordBatch, input: &Schema, rows: usize) -> Result<Change, ChangeError> {
        let keep = match output.column_by_name(ROW_COLUMN) {
            Some(numbers) => Some(kept(numbers, rows)?),
            None if output.num_rows() == rows => None,
            None => {
                return Err(ChangeError::Rows {
                    got: output.num_rows(),
                    rows,
                });
            }
        };
        let mut added = Vec::new();
        for (field, column) in output.schema().fields().iter().zip(output.columns()) {
            let name = field.name();
            // The row numbers are an input column too, checked by `kept`.
            match input.field_with_name(name).map(Field::data_type) {
                Ok(ty) if ty == field.data_type() => {}
                Ok(ty) => {
                    return Err(ChangeError::Retyped {
                        name: name.clone(),
                        got: field.data_type().clone(),
                        input: ty.clone(),
                    });
                }
                Err(_) => added.push(Extra {
                    name: name.as_str().into(),
                    values: columns::expression_values(column.as_ref()).map_err(|source| {
                        ChangeError::Column {
                            name: name.clone(),
                            source,
                        }
                    })?,
                }),
            }
        }
        Ok(Change { keep, added })
    }
}

/// The rows an output's [`ROW_COLUMN`] keeps out of `rows`.
fn kept(numbers: &dyn Array, rows: usize) -> Result<Vec<bool>, ChangeError> {
    let numbers = numbers
        .as_primitive_opt::<UInt32Type>()
        .filter(|n| n.null_count() == 0)
        .ok_or(ChangeError::RowType)?;
    let mut keep = vec![false; rows];
    let mut next = 0;
    for &row in numbers.values() {
        let row = row as usize;
        if row < next || row >= rows {
            return Err(ChangeError::RowOrder { row, rows });
        }
        keep[row] = true;
        next = row + 1;
    }
    Ok(keep)
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, StringArray};
    use evalexpr::Value;

    use super::*;

    fn input() -> Schema {
        Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new(ROW_COLUMN, DataType::UInt32, false),
        ])
    }

    fn batch(columns: Vec<(&str, Arc<dyn Array>)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    #[test]
    fn row_numbers_say_which_rows_stay_and_new_columns_are_added() {
        let output = batch(vec![
            ("n", Arc::new(Int64Array::from(vec![5, 7]))),
            (ROW_COLUMN, Arc::new(UInt32Array::from(vec![0, 2]))),
            ("family", Arc::new(StringArray::from(vec!["gemm", "other"]))),
        ]);
        let change = Change::read(&output, &input(), 3).unwrap();
        assert_eq!(change.keep, Some(vec![true, false, true]));
        assert_eq!(change.added.len(), 1);
        assert_eq!(&*change.added[0].name, "family");
        assert_eq!(
            change.added[0].values,
            [Value::from("gemm"), Value::from("other")]
        );
    }

    #[test]
    fn outputs_that_cannot_be_read_are_refused() {
        let columns_only = batch(vec![("x", Arc::new(Int64Array::from(vec![1])))]);
        let error = Change::read(&columns_only, &input(), 2).unwrap_err();
        assert!(
            matches!(error, ChangeError::Rows { got: 1, rows: 2 }),
            "{error}"
        );
        assert!(error.to_string().contains("1 rows for 2"), "{error}");
        let backwards = batch(vec![(ROW_COLUMN, Arc::new(UInt32Array::from(vec![1, 0])))]);
        let error = Change::read(&backwards, &input(), 2).unwrap_err();
        assert!(
            matches!(error, ChangeError::RowOrder { row: 0, rows: 2 }),
            "{error}"
        );
        assert!(error.to_string().contains("out of order"), "{error}");
        let retyped = batch(vec![("n", Arc::new(StringArray::from(vec!["a"])))]);
        let error = Change::read(&retyped, &input(), 1).unwrap_err();
        assert!(matches!(error, ChangeError::Retyped { .. }), "{error}");
        assert!(
            error.to_string().contains("`n` as Utf8, not Int64"),
            "{error}"
        );
        let all = Change::read(&retyped.project(&[]).unwrap(), &input(), 1);
        assert!(matches!(all, Ok(Change { keep: None, .. })));
    }
}
