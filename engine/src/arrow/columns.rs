//! Typed Arrow columns built value by value, and batches of named columns: what records,
//! metadata and aggregate tables become before they are written; and the columns plugins
//! add, read back as values.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, Float64Array, Int32Array,
    Int64Array, PrimitiveArray, RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema};
use rustc_hash::FxHashMap as HashMap;

use crate::column::Cell;
use crate::record::ColumnType;

/// A column of values computed from stored fields and metadata, filled record by record.
pub enum Column<'a> {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(Dictionary<'a>),
}

impl<'a> Column<'a> {
    pub fn new(ty: ColumnType, capacity: usize) -> Column<'a> {
        match ty {
            ColumnType::Int => Column::Int(Vec::with_capacity(capacity)),
            ColumnType::Float => Column::Float(Vec::with_capacity(capacity)),
            ColumnType::String => Column::Text(Dictionary::with_capacity(capacity)),
        }
    }

    /// Appends a cell of the column's type.
    #[inline]
    pub fn push(&mut self, cell: Cell<'a>) {
        match (self, cell) {
            (Column::Int(v), Cell::Int(x)) => v.push(x),
            (Column::Float(v), Cell::Float(x)) => v.push(x),
            (Column::Text(d), Cell::Str(s)) => d.push(s),
            _ => unreachable!("a column takes the cells of its declared type"),
        }
    }

    pub fn finish(self) -> ArrayRef {
        match self {
            Column::Int(v) => Arc::new(Int64Array::from(v)),
            Column::Float(v) => Arc::new(Float64Array::from(v)),
            Column::Text(d) => d.finish(),
        }
    }
}

/// Strings as a dictionary array: each distinct string once, and a key per value. Names
/// (kernels, operations, counters) repeat millions of times over a few hundred values.
///
/// Strings are told apart by address: those of one batch are borrowed from the run's
/// metadata (or are static), where equal names are mostly one string, so comparing
/// addresses instead of text saves hashing and comparing every name. An equal string at
/// another address only costs a repeated value.
#[derive(Default)]
pub struct Dictionary<'a> {
    keys: Vec<i32>,
    values: Vec<&'a str>,
    index: HashMap<(usize, usize), i32>,
    /// The last string's address and key: names come in runs.
    last: Option<(usize, i32)>,
}

impl<'a> Dictionary<'a> {
    pub fn with_capacity(capacity: usize) -> Dictionary<'a> {
        Dictionary {
            keys: Vec::with_capacity(capacity),
            ..Default::default()
        }
    }

    #[inline]
    pub fn push(&mut self, value: &'a str) {
        let address = value.as_ptr() as usize;
        let key = match self.last {
            Some((last, key))
                if last == address && self.values[key as usize].len() == value.len() =>
            {
                key
            }
            _ => {
                let next = self.values.len() as i32;
                let key = *self.index.entry((address, value.len())).or_insert_with(|| {
                    self.values.push(value);
                    next
                });
                self.last = Some((address, key));
                key
            }
        };
        self.keys.push(key);
    }

    pub fn finish(self) -> ArrayRef {
        let values = Arc::new(StringArray::from(self.values));
        Arc::new(DictionaryArray::new(Int32Array::from(self.keys), values))
    }
}

/// The column of values an expression computed (a `derive` transform's, an aggregate's):
/// integers, floats (integers among them widen), booleans or strings; an empty value is a
/// null. Values of mixed kinds are written as text.
pub fn values<'a>(values: impl Iterator<Item = &'a evalexpr::Value> + Clone) -> ArrayRef {
    use evalexpr::Value;
    let (mut ints, mut floats, mut booleans, mut text) = (false, false, false, false);
    for value in values.clone() {
        match value {
            Value::Int(_) => ints = true,
            Value::Float(_) => floats = true,
            Value::Boolean(_) => booleans = true,
            Value::Empty => {}
            _ => text = true,
        }
    }
    if text || (booleans && (ints || floats)) {
        let text: Vec<Option<String>> = values
            .map(|v| match v {
                Value::Empty => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            })
            .collect();
        Arc::new(
            text.iter()
                .map(Option::as_deref)
                .collect::<DictionaryArray<Int32Type>>(),
        )
    } else if booleans {
        Arc::new(
            values
                .map(|v| v.as_boolean().ok())
                .collect::<BooleanArray>(),
        )
    } else if floats {
        Arc::new(values.map(|v| v.as_number().ok()).collect::<Float64Array>())
    } else {
        Arc::new(values.map(|v| v.as_int().ok()).collect::<Int64Array>())
    }
}

/// Why a column's values are not ones rocflow keeps.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("{0} is not a column type rocflow keeps (integers, floats, booleans, strings)")]
    Type(DataType),
    #[error("an integer beyond the 64-bit signed range")]
    BeyondI64,
}

/// The values of a column a plugin added, as expression values (the inverse of
/// [`values`]): integers, floats, booleans or strings, dictionary-encoded or not; a null is
/// an empty value.
pub fn expression_values(array: &dyn Array) -> Result<Vec<evalexpr::Value>, ValuesError> {
    use evalexpr::Value;
    let valid = |i: usize| array.is_valid(i);
    let values: Vec<Value> = match array.data_type() {
        DataType::Boolean => (array.as_boolean().iter())
            .map(|v| v.map_or(Value::Empty, Value::Boolean))
            .collect(),
        DataType::Int8 => integers::<Int8Type>(array)?,
        DataType::Int16 => integers::<Int16Type>(array)?,
        DataType::Int32 => integers::<Int32Type>(array)?,
        DataType::Int64 => integers::<Int64Type>(array)?,
        DataType::UInt8 => integers::<UInt8Type>(array)?,
        DataType::UInt16 => integers::<UInt16Type>(array)?,
        DataType::UInt32 => integers::<UInt32Type>(array)?,
        DataType::UInt64 => integers::<UInt64Type>(array)?,
        DataType::Float32 => floats::<Float32Type>(array),
        DataType::Float64 => floats::<Float64Type>(array),
        DataType::Utf8 => strings(array.as_string::<i32>().iter()),
        DataType::LargeUtf8 => strings(array.as_string::<i64>().iter()),
        DataType::Utf8View => strings(array.as_string_view().iter()),
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let values = expression_values(dictionary.values().as_ref())?;
            (dictionary.normalized_keys().into_iter().enumerate())
                .map(|(i, key)| match valid(i) {
                    true => values[key].clone(),
                    false => Value::Empty,
                })
                .collect()
        }
        other => return Err(ValuesError::Type(other.clone())),
    };
    Ok(values)
}

fn integers<T: ArrowPrimitiveType>(array: &dyn Array) -> Result<Vec<evalexpr::Value>, ValuesError>
where
    T::Native: TryInto<i64>,
{
    (array.as_primitive::<T>().iter())
        .map(|v| match v.map(TryInto::try_into) {
            None => Ok(evalexpr::Value::Empty),
            Some(Ok(v)) => Ok(evalexpr::Value::Int(v)),
            Some(Err(_)) => Err(ValuesError::BeyondI64),
        })
        .collect()
}

fn floats<T: ArrowPrimitiveType>(array: &dyn Array) -> Vec<evalexpr::Value>
where
    T::Native: Into<f64>,
{
    (array.as_primitive::<T>().iter())
        .map(|v| v.map_or(evalexpr::Value::Empty, |v| evalexpr::Value::Float(v.into())))
        .collect()
}

fn strings<'a>(values: impl Iterator<Item = Option<&'a str>>) -> Vec<evalexpr::Value> {
    values
        .map(|v| {
            v.map_or(evalexpr::Value::Empty, |s| {
                evalexpr::Value::String(s.to_owned())
            })
        })
        .collect()
}

/// A batch built column by column, for tables of a few typed fields (metadata, aggregates).
#[derive(Default)]
pub struct BatchBuilder {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl BatchBuilder {
    /// Adds a column; it may hold nulls if `nullable`.
    pub fn array(&mut self, name: &str, array: ArrayRef, nullable: bool) -> &mut Self {
        self.fields
            .push(Field::new(name, array.data_type().clone(), nullable));
        self.arrays.push(array);
        self
    }

    pub fn u32(&mut self, name: &str, values: impl IntoIterator<Item = u32>) -> &mut Self {
        let array = PrimitiveArray::<UInt32Type>::from_iter_values(values);
        self.array(name, Arc::new(array), false)
    }

    pub fn u64(&mut self, name: &str, values: impl IntoIterator<Item = u64>) -> &mut Self {
        let array = PrimitiveArray::<UInt64Type>::from_iter_values(values);
        self.array(name, Arc::new(array), false)
    }

    pub fn optional_u32(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = Option<u32>>,
    ) -> &mut Self {
        let array: UInt32Array = values.into_iter().collect();
        self.array(name, Arc::new(array), true)
    }

    /// Nanoseconds on the SDK's clock.
    pub fn time(&mut self, name: &str, values: impl IntoIterator<Item = u64>) -> &mut Self {
        let array =
            TimestampNanosecondArray::from_iter_values(values.into_iter().map(|t| t as i64));
        self.array(name, Arc::new(array), false)
    }

    /// Nanoseconds, some of them missing.
    pub fn optional_time(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = Option<u64>>,
    ) -> &mut Self {
        let array: TimestampNanosecondArray =
            values.into_iter().map(|t| t.map(|t| t as i64)).collect();
        self.array(name, Arc::new(array), true)
    }

    /// Strings, dictionary-encoded.
    pub fn text<'a>(&mut self, name: &str, values: impl IntoIterator<Item = &'a str>) -> &mut Self {
        let mut dictionary = Dictionary::default();
        values.into_iter().for_each(|v| dictionary.push(v));
        self.array(name, dictionary.finish(), false)
    }

    /// Strings, dictionary-encoded, some of them missing.
    pub fn optional_text<'a>(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = Option<&'a str>>,
    ) -> &mut Self {
        let array: DictionaryArray<Int32Type> = values.into_iter().collect();
        self.array(name, Arc::new(array), true)
    }

    /// A list of strings per row (a command line).
    pub fn text_lists<'a, L: IntoIterator<Item = &'a str>>(
        &mut self,
        name: &str,
        lists: impl IntoIterator<Item = L>,
    ) -> &mut Self {
        let mut builder = ListBuilder::new(StringBuilder::new());
        for list in lists {
            list.into_iter()
                .for_each(|s| builder.values().append_value(s));
            builder.append(true);
        }
        self.array(name, Arc::new(builder.finish()), false)
    }

    pub fn finish(self) -> RecordBatch {
        let schema = Arc::new(Schema::new(self.fields));
        RecordBatch::try_new(schema, self.arrays).expect("columns of one length")
    }
}

#[cfg(test)]
mod tests {
    use evalexpr::Value;

    use super::*;

    #[test]
    fn expression_values_take_the_type_that_holds_them_all() {
        let column = |v: &[Value]| values(v.iter());
        let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        assert_eq!(
            column(&[Value::Int(1), Value::Empty]).data_type(),
            &DataType::Int64
        );
        assert_eq!(column(&[]).data_type(), &DataType::Int64);
        assert_eq!(
            column(&[Value::Boolean(true)]).data_type(),
            &DataType::Boolean
        );
        assert_eq!(
            column(&[Value::String("a".into()), Value::Int(1)]).data_type(),
            &text
        );
        assert_eq!(
            column(&[Value::Boolean(true), Value::Int(1)]).data_type(),
            &text
        );
        let mixed = column(&[Value::Int(2), Value::Float(0.5), Value::Empty]);
        let mixed = mixed.as_primitive::<Float64Type>();
        assert_eq!((mixed.value(0), mixed.value(1)), (2.0, 0.5));
        assert!(mixed.is_null(2));
    }

    #[test]
    fn plugin_columns_read_back_as_expression_values() {
        let read = |array: ArrayRef| expression_values(array.as_ref()).unwrap();
        let mixed = [Value::Int(3), Value::Empty, Value::Float(0.5)];
        assert_eq!(
            read(values(mixed.iter())),
            [Value::Float(3.0), Value::Empty, Value::Float(0.5)]
        );
        let names = [Value::from("gemm"), Value::Empty, Value::from("gemm")];
        assert_eq!(read(values(names.iter())), names);
        let small: ArrayRef = Arc::new(arrow_array::UInt8Array::from(vec![Some(7), None]));
        assert_eq!(read(small), [Value::Int(7), Value::Empty]);
        let huge: ArrayRef = Arc::new(arrow_array::UInt64Array::from(vec![u64::MAX]));
        assert!(matches!(
            expression_values(huge.as_ref()),
            Err(ValuesError::BeyondI64)
        ));
        let list: ArrayRef = Arc::new(arrow_array::NullArray::new(1));
        let e = expression_values(list.as_ref()).unwrap_err();
        assert!(matches!(e, ValuesError::Type(DataType::Null)), "{e:?}");
        assert!(e.to_string().contains("Null"), "{e}");
    }

    #[test]
    fn dictionaries_hold_each_string_once() {
        let names = ["b".to_owned(), "a".to_owned()];
        let mut d = Dictionary::default();
        for i in [0, 1, 0, 0, 1] {
            d.push(&names[i]);
        }
        d.push(&names[1][..0]);
        let array = d.finish();
        let array = array.as_dictionary::<Int32Type>();
        assert_eq!(array.keys().values(), &[0, 1, 0, 0, 1, 2]);
        assert_eq!(array.values().len(), 3);
    }
}
