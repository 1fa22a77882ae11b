//! A table of named columns and rows of values: what an aggregate transform or a summary
//! makes, and what table sinks, reports and queries write and read. Plain data, below
//! every layer that passes it on.

use evalexpr::Value;

/// A finished aggregate: named columns and rows of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}
