//! Reading cells of an untrusted database leniently: a column holds what its declared
//! type says only by convention in SQLite, so a cell of another type reads as the nearest
//! value (as SQLite converts it) instead of failing the whole database.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::sqlite::{Cells, Kind};

/// The most bytes of text a cell gives: a longer one is cut to it (at a character's start)
/// and its JSON is not read, and the source warns of it. The longest names real runs have
/// (kernels of heavy templates, command lines) are tens of KB; a cell of hundreds of MB is
/// no name, and would be copied into every output's metadata.
pub const MAX_TEXT: usize = 1 << 20;

/// The cell holds text or a blob longer than [`MAX_TEXT`].
pub fn is_long(row: &Cells<'_>, i: usize) -> bool {
    matches!(row.kind(i), Kind::Text | Kind::Blob) && row.bytes(i) > MAX_TEXT
}

/// Cells longer than [`MAX_TEXT`], by table and column: how many, and the first's row id.
#[derive(Debug, Default, Clone)]
pub struct Long(BTreeMap<String, (u64, i64)>);

impl Long {
    /// Notes the cell of `table`'s `column` in row `id` if it is long.
    pub fn check(&mut self, row: &Cells<'_>, i: usize, table: &str, column: &str, id: i64) {
        if is_long(row, i) {
            let (count, _) = (self.0.entry(format!("{table}.{column}"))).or_insert((0, id));
            *count += 1;
        }
    }

    pub fn merge(&mut self, other: Long) {
        for (cell, (count, id)) in other.0 {
            self.0.entry(cell).or_insert((0, id)).0 += count;
        }
    }

    /// The warning of the cells, if any.
    pub fn warning(&self) -> Option<String> {
        let cells: Vec<String> = (self.0.iter())
            .map(|(cell, (count, id))| match count {
                1 => format!("`{cell}` of row {id}"),
                n => format!("{n} of `{cell}`, the first of row {id}"),
            })
            .collect();
        (!cells.is_empty()).then(|| {
            format!(
                "text longer than {} MiB cut to it (and its JSON not read): {}",
                MAX_TEXT >> 20,
                cells.join(", ")
            )
        })
    }
}

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

/// The cell as text (numbers written out, an LZ4 blob inflated), or `None` where it is
/// NULL or another blob; at most [`MAX_TEXT`] bytes of it.
pub fn text(row: &Cells<'_>, i: usize) -> Option<String> {
    match row.kind(i) {
        Kind::Text | Kind::Blob => with_content(row, i, |t| {
            let mut end = t.len().min(MAX_TEXT);
            // Cut at a character's start: a continuation byte (0b10xx_xxxx) starts none.
            while end < t.len() && end > 0 && t[end] & 0xc0 == 0x80 {
                end -= 1;
            }
            String::from_utf8_lossy(&t[..end]).into_owned()
        }),
        Kind::Integer => Some(row.int(i).to_string()),
        Kind::Real => Some(row.real(i).to_string()),
        Kind::Null => None,
    }
}

/// `f` of a text cell's bytes, or of an LZ4-compressed blob's inflated to at most
/// [`MAX_TEXT`] bytes (see [`lz4`](super::lz4)); `None` for any other cell.
pub fn with_content<T>(row: &Cells<'_>, i: usize, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
    match row.kind(i) {
        Kind::Blob => {
            let inflated = row.with_blob(i, |b| super::lz4::inflate(b, MAX_TEXT))??;
            Some(f(&inflated))
        }
        _ => row.with_text(i, f),
    }
}

/// The cell as a JSON object, where it holds one (`extdata`, `environment`) of at most
/// [`MAX_TEXT`] bytes.
pub fn json(row: &Cells<'_>, i: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
    // Told by its length before it is parsed: `{}`, most rows' extdata, needs no parser,
    // and a longer cell than a text may be is not parsed at all.
    with_content(row, i, |t| match t.len() {
        3..=MAX_TEXT => match serde_json::from_slice(t) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        },
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
    use crate::sqlite::Statement;

    #[test]
    fn long_text_is_cut_at_a_character_and_noted() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        // `é` is two bytes: the limit falls within one.
        let sql = format!(
            "SELECT 'x' || replace(hex(zeroblob({})), '00', 'é'), 'short'",
            MAX_TEXT
        );
        let mut statement = Statement::prepare(&conn, &sql).unwrap();
        let row = statement.step().unwrap().unwrap();
        let cut = text(&row, 0).unwrap();
        assert_eq!(cut.len(), MAX_TEXT - 1);
        assert!(cut.ends_with('é'));
        assert_eq!(text(&row, 1).as_deref(), Some("short"));
        // Neither a long object nor `{}` is an object to read.
        let sql = r#"SELECT json_object('message', replace(hex(zeroblob(1 << 20)), '00', 'm')),
            '{}', '{"message": "m"}'"#;
        let mut objects = Statement::prepare(&conn, sql).unwrap();
        let objects = objects.step().unwrap().unwrap();
        assert!(is_long(&objects, 0));
        assert_eq!(json(&objects, 0), None);
        assert_eq!(json(&objects, 1), None);
        assert_eq!(json(&objects, 2).unwrap()["message"], "m");
        let mut long = Long::default();
        long.check(&row, 0, "rocpd_string", "string", 7);
        long.check(&row, 1, "rocpd_string", "string", 8);
        assert_eq!(
            long.warning().unwrap(),
            "text longer than 1 MiB cut to it (and its JSON not read): \
             `rocpd_string.string` of row 7"
        );
    }

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
