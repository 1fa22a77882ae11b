//! Reading cells of an untrusted database leniently: a column holds what its declared
//! type says only by convention in SQLite, so a cell of another type reads as the nearest
//! value (as SQLite converts it) instead of failing the whole database.

use serde::Deserialize;

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
    Number::deserialize(map.get(key)?).ok()?.0
}

/// An unsigned integer written as a number or as text holding one, as JSON that
/// rocprofv3 and other writers give; any other value is none (so that one odd field
/// leaves the rest of its object readable).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Number(pub Option<u64>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Number, D::Error> {
        d.deserialize_any(NumberVisitor)
    }
}

struct NumberVisitor;

impl<'de> serde::de::Visitor<'de> for NumberVisitor {
    type Value = Number;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number")
    }

    fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
        Ok(Number(Some(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
        Ok(Number(Some(v.max(0) as u64)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
        Ok(Number(Some(v as u64)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Number, E> {
        Ok(Number(v.parse().ok()))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Number, E> {
        Ok(Number(None))
    }

    fn visit_unit<E>(self) -> Result<Number, E> {
        Ok(Number(None))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Number(None))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Number(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_however_written() {
        let text = r#"{"pc": "12", "wave_id": 3.7, "hw_id": -2, "chiplet": {"x": [1]},
            "agent_id": 5, "unknown": [1, {"a": 2}], "exec_mask": null, "flag": true}"#;
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
        let read = |key| json_u64(&map, key);
        assert_eq!(read("pc"), Some(12));
        assert_eq!(read("wave_id"), Some(3));
        assert_eq!(read("hw_id"), Some(0));
        assert_eq!(read("agent_id"), Some(5));
        for none in ["chiplet", "unknown", "exec_mask", "flag", "absent"] {
            assert_eq!(read(none), None, "{none}");
        }
        // A struct of such fields parses whole whatever odd values its other fields hold.
        #[derive(serde::Deserialize)]
        struct Fields {
            pc: Number,
            chiplet: Number,
            unknown: Number,
            exec_mask: Number,
            flag: Number,
        }
        let f: Fields = serde_json::from_str(text).unwrap();
        assert_eq!(f.pc, Number(Some(12)));
        let odd = [f.chiplet, f.unknown, f.exec_mask, f.flag];
        assert_eq!(odd, [Number(None); 4]);
    }
}
