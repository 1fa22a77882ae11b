//! Values with units as pipelines write them: sizes ("64MiB"), durations ("1.5s"),
//! percentages ("75%") and kernel iteration ranges ("[1-10],[20]").
//!
//! Each parser's error says what is wrong in words fit to show under the offending value.

use serde::{Deserialize, Serialize};

/// A size or duration: an integer (bytes, nanoseconds) or text with a unit.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Quantity {
    Number(u64),
    Text(String),
}

impl Quantity {
    /// The number, or the text read by `parse` (one of this module's parsers).
    pub fn value(&self, parse: fn(&str) -> Result<u64, UnitError>) -> Result<u64, UnitError> {
        match self {
            Quantity::Number(n) => Ok(*n),
            Quantity::Text(text) => parse(text),
        }
    }
}

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
];

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
];

/// Splits "1.5 GiB" into the number and the unit.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].replace('_', "").parse().ok()?;
    Some((number, text[end..].trim()))
}

/// What a value with a unit may be wrong in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("`{text}` is not a {what}; expected e.g. `64{example}`")]
    NotA {
        text: String,
        what: &'static str,
        /// A unit of the kind, for the example.
        example: &'static str,
    },
    #[error("unknown unit `{unit}` in `{text}`; use one of {}", .units.join(", "))]
    UnknownUnit {
        text: String,
        unit: String,
        units: Vec<&'static str>,
    },
    #[error("`{0}` is an empty size")]
    EmptySize(String),
    #[error("`{0}` is out of range; a watermark is above 0% and at most 100%")]
    PercentOutOfRange(String),
    #[error("`{0}` is not a percentage")]
    NotAPercent(String),
}

fn with_unit(
    text: &str,
    units: &[(&'static str, u64)],
    what: &'static str,
) -> Result<u64, UnitError> {
    let (number, unit) = split_number(text).ok_or_else(|| UnitError::NotA {
        text: text.to_owned(),
        what,
        example: units[2].0,
    })?;
    let factor = units
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(unit))
        .map(|(_, f)| *f)
        .ok_or_else(|| UnitError::UnknownUnit {
            text: text.to_owned(),
            unit: unit.to_owned(),
            units: units.iter().map(|(n, _)| *n).collect(),
        })?;
    Ok((number * factor as f64).round() as u64)
}

/// Parses a byte size: "64MiB", "1.5 GB", "4096B".
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let bytes = with_unit(text, SIZE_UNITS, "size")?;
    if bytes == 0 {
        return Err(UnitError::EmptySize(text.to_owned()));
    }
    Ok(bytes)
}

/// Parses a duration into nanoseconds: "500us", "1.5s", "2min".
pub fn parse_duration(text: &str) -> Result<u64, UnitError> {
    with_unit(text, DURATION_UNITS, "duration")
}

/// Writes nanoseconds as a duration the parser reads back: "1.5s", "200ms", "750ns".
pub fn format_duration(ns: u64) -> String {
    DURATION_UNITS[..4]
        .iter()
        .rev()
        .find(|(_, size)| ns >= *size)
        .map_or(format!("{ns}ns"), |(unit, size)| {
            format!("{}{unit}", ns as f64 / *size as f64)
        })
}

/// Parses a percentage "75%" into a fraction; `None` if the text has no `%`.
pub fn parse_percent(text: &str) -> Option<Result<f64, UnitError>> {
    let number = text.trim().strip_suffix('%')?;
    Some(match number.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
        Ok(_) => Err(UnitError::PercentOutOfRange(text.to_owned())),
        Err(_) => Err(UnitError::NotAPercent(text.to_owned())),
    })
}

pub use rocflow_core::contexts::{IterationRange, IterationRanges};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("8mib"), Ok(8 << 20));
        let unknown = parse_size("64XB").unwrap_err();
        assert!(matches!(&unknown, UnitError::UnknownUnit { unit, .. } if unit == "XB"));
        assert!(
            unknown
                .to_string()
                .starts_with("unknown unit `XB` in `64XB`; use one of B, KiB")
        );
        let words = parse_size("lots").unwrap_err();
        assert!(matches!(words, UnitError::NotA { what: "size", .. }));
        assert_eq!(
            words.to_string(),
            "`lots` is not a size; expected e.g. `64MiB`"
        );
        assert_eq!(parse_size("0MiB"), Err(UnitError::EmptySize("0MiB".into())));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("2min"), Ok(120_000_000_000));
        assert_eq!(parse_duration("10 ms"), Ok(10_000_000));
        assert!(parse_duration("3h").is_err());
    }

    #[test]
    fn durations_are_written_as_they_are_read() {
        for (ns, text) in [
            (0, "0ns"),
            (750, "750ns"),
            (1_500, "1.5us"),
            (200_000_000, "200ms"),
            (60_000_000_000, "60s"),
        ] {
            assert_eq!(format_duration(ns), text);
            assert_eq!(parse_duration(text), Ok(ns));
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("75%"), Some(Ok(0.75)));
        assert!(parse_percent("150%").unwrap().is_err());
        assert_eq!(parse_percent("64MiB"), None);
    }

    #[test]
    fn iteration_ranges() {
        let r = IterationRanges::parse("[1-10],[20]").unwrap();
        assert!(r.contains(1) && r.contains(10) && r.contains(20));
        assert!(!r.contains(11) && !r.contains(21));
        let open = IterationRanges::parse("[5-]").unwrap();
        assert!(!open.contains(4) && open.contains(5) && open.contains(1_000_000));
        let error = |text| IterationRanges::parse(text).unwrap_err().to_string();
        assert!(error("[10-1]").contains("ends before"));
        assert!(error("1-10").contains("not a range"));
        assert!(error("[0]").contains("count from 1"));
        assert!(error("[a-3]").contains("`a`"));
    }
}
