//! Reading cells of an untrusted database leniently: a column holds what its declared
//! type says only by convention in SQLite, so a cell of another type reads as the nearest
//! value (as SQLite converts it) instead of failing the whole database.

use crate::sqlite::{Cells, Kind};

/// The cell as an integer: NULL is 0, a real truncated, text read as far as it is a number.
pub fn int(row: &Cells<'_>, i: usize) -> i64 {
    row.int(i)
}

/// The cell as an integer, or `None` where it is NULL.
pub fn opt_int(row: &Cells<'_>, i: usize) -> Option<i64> {
    (row.kind(i) != Kind::Null).then(|| row.int(i))
}

pub fn u64(row: &Cells<'_>, i: usize) -> u64 {
    row.int(i) as u64
}

/// The cell as a `u32`, saturating: a count or size too large for the record's field is
/// kept as the largest it holds rather than wrapped.
pub fn u32(row: &Cells<'_>, i: usize) -> u32 {
    row.int(i).clamp(0, i64::from(u32::MAX)) as u32
}

pub fn real(row: &Cells<'_>, i: usize) -> f64 {
    row.real(i)
}

/// The cell as text (numbers written out), or `None` where it is NULL or a blob.
pub fn text(row: &Cells<'_>, i: usize) -> Option<String> {
    match row.kind(i) {
        Kind::Text => row.with_text(i, |t| String::from_utf8_lossy(t).into_owned()),
        Kind::Integer => Some(row.int(i).to_string()),
        Kind::Real => Some(row.real(i).to_string()),
        Kind::Blob | Kind::Null => None,
    }
}

/// The cell as a JSON object, where it holds one (`extdata`, `environment`).
pub fn json(row: &Cells<'_>, i: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
    // `{}`, most rows' extdata, needs no parser.
    row.with_text(i, |t| match serde_json::from_slice(t) {
        Ok(serde_json::Value::Object(map)) if t.len() > 2 => Some(map),
        _ => None,
    })
    .flatten()
}

/// An unsigned integer field of a JSON object, whether written as a number or a string.
pub fn json_u64(map: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<u64> {
    match map.get(key)? {
        serde_json::Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}
