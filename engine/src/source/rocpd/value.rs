//! Reading cells of an untrusted database leniently: a column holds what its declared
//! type says only by convention in SQLite, so a cell of another type reads as the nearest
//! value instead of failing the whole database.

use rusqlite::Row;
use rusqlite::types::ValueRef;

/// The cell as an integer: reals truncated, numeric text parsed, anything else 0.
pub fn int(row: &Row<'_>, i: usize) -> i64 {
    match row.get_ref(i) {
        Ok(ValueRef::Integer(v)) => v,
        Ok(ValueRef::Real(v)) => v as i64,
        Ok(ValueRef::Text(t)) => parse(t).unwrap_or(0),
        _ => 0,
    }
}

/// The cell as an integer, or `None` where it is NULL.
pub fn opt_int(row: &Row<'_>, i: usize) -> Option<i64> {
    match row.get_ref(i) {
        Ok(ValueRef::Null) | Err(_) => None,
        Ok(_) => Some(int(row, i)),
    }
}

pub fn u64(row: &Row<'_>, i: usize) -> u64 {
    int(row, i) as u64
}

/// The cell as a `u32`, saturating: a count or size too large for the record's field is
/// kept as the largest it holds rather than wrapped.
pub fn u32(row: &Row<'_>, i: usize) -> u32 {
    int(row, i).clamp(0, i64::from(u32::MAX)) as u32
}

pub fn real(row: &Row<'_>, i: usize) -> f64 {
    match row.get_ref(i) {
        Ok(ValueRef::Integer(v)) => v as f64,
        Ok(ValueRef::Real(v)) => v,
        Ok(ValueRef::Text(t)) => parse(t).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Text holding a number (spaces around it allowed), as that number.
fn parse<T: std::str::FromStr>(text: &[u8]) -> Option<T> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

/// The cell as text (numbers written out), or `None` where it is NULL or a blob.
pub fn text(row: &Row<'_>, i: usize) -> Option<String> {
    match row.get_ref(i) {
        Ok(ValueRef::Text(t)) => Some(String::from_utf8_lossy(t).into_owned()),
        Ok(ValueRef::Integer(v)) => Some(v.to_string()),
        Ok(ValueRef::Real(v)) => Some(v.to_string()),
        _ => None,
    }
}

/// The cell as a JSON object, where it holds one (`extdata`, `environment`).
pub fn json(row: &Row<'_>, i: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
    match row.get_ref(i) {
        Ok(ValueRef::Text(t)) if t.len() > 2 => match serde_json::from_slice(t) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        },
        _ => None,
    }
}

/// An unsigned integer field of a JSON object, whether written as a number or a string.
pub fn json_u64(map: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<u64> {
    match map.get(key)? {
        serde_json::Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}
