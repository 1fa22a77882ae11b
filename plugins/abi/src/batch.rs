//! Record batches through the Arrow C Data Interface: a batch crosses as a struct array
//! (a child per column) and its schema. rocflow and the Rust plugin helper both use these.

use std::sync::Arc;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi_and_data_type};
use arrow_array::{Array, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{ArrowError, DataType, Schema};

/// How far an imported batch is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The producer is rocflow (or arrow-rs): its arrays are well formed.
    Trusted,
    /// The contents of every buffer are checked (offsets, UTF-8, dictionary keys) before
    /// they are used, so a plugin that fills them wrongly gives an error.
    Full,
}

/// Exports a batch as a C Data Interface schema (with the batch's metadata) and array.
pub fn export(batch: RecordBatch) -> Result<(FFI_ArrowSchema, FFI_ArrowArray), ArrowError> {
    let schema = FFI_ArrowSchema::try_from(batch.schema().as_ref())?;
    let array = FFI_ArrowArray::new(&StructArray::from(batch).into_data());
    Ok((schema, array))
}

/// Imports a batch exported as `schema` and `array`, taking ownership of the array.
///
/// # Safety
///
/// `array` must be a C Data Interface array of the type `schema` describes: its buffer and
/// child pointers valid, its buffers as long as its length and offset say, and the last
/// offset of each string or binary column within its data buffer (arrow-rs sizes that
/// buffer by it). With [`Check::Full`] the buffers' contents may be anything.
pub unsafe fn import(
    schema: &FFI_ArrowSchema,
    array: FFI_ArrowArray,
    check: Check,
) -> Result<RecordBatch, ArrowError> {
    if array.num_children() != schema.n_children as usize {
        return Err(ArrowError::InvalidArgumentError(format!(
            "a batch of {} columns for a schema of {}",
            array.num_children(),
            schema.n_children
        )));
    }
    let schema = Schema::try_from(schema)?;
    // SAFETY: the caller promises an array of the schema's type.
    let data = unsafe { from_ffi_and_data_type(array, DataType::Struct(schema.fields().clone())) }?;
    if check == Check::Full {
        data.validate_full()?;
    }
    let rows = data.len();
    let (_, columns, nulls) = StructArray::from(data).into_parts();
    if nulls.is_some_and(|n| n.null_count() > 0) {
        return Err(ArrowError::InvalidArgumentError(
            "a batch's struct array has null rows".into(),
        ));
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(schema), columns, &options)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::Field;

    use super::*;

    #[test]
    fn batches_round_trip_with_their_metadata() {
        let schema = Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ])
        .with_metadata(HashMap::from([("k".into(), "v".into())]));
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("a"), None])),
            ],
        )
        .unwrap();
        let (schema, array) = export(batch.clone()).unwrap();
        // SAFETY: exported just above.
        let back = unsafe { import(&schema, array, Check::Full) }.unwrap();
        assert_eq!(back, batch);
        assert_eq!(back.schema().metadata()["k"], "v");
    }

    #[test]
    fn batches_without_columns_keep_their_rows() {
        let options = RecordBatchOptions::new().with_row_count(Some(3));
        let batch =
            RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options).unwrap();
        let (schema, array) = export(batch).unwrap();
        // SAFETY: exported just above.
        let back = unsafe { import(&schema, array, Check::Full) }.unwrap();
        assert_eq!(back.num_rows(), 3);
    }

    #[test]
    fn a_schema_with_other_columns_than_the_array_is_refused() {
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int64Array::from(vec![1])) as Arc<dyn Array>),
            ("b", Arc::new(Int64Array::from(vec![2]))),
        ])
        .unwrap();
        let (_, array) = export(batch.clone()).unwrap();
        let (schema, _) = export(batch.project(&[0]).unwrap()).unwrap();
        // SAFETY: an array of two columns and a schema of one, which is what is checked.
        let error = unsafe { import(&schema, array, Check::Full) }.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("a batch of 2 columns for a schema of 1")
        );
    }
}
