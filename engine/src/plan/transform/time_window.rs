//! `time_window` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `time_window` module.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::units::Quantity;
use crate::units::{format_duration, parse_duration};
use crate::diag::Step;

use super::kind::{Check, Compiled, Declared};

#[derive(Debug, Deserialize, Serialize)]
pub struct Options {
    pub start: Option<Quantity>,
    pub end: Option<Quantity>,
}

/// Times are relative to the run's first record.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    pub start_ns: u64,
    pub end_ns: Option<u64>,
}

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "properties": {
                "start": { "$ref": "#/$defs/duration" },
                "end": { "$ref": "#/$defs/duration" }
            }
        })
    }

    fn compile(&self, check: &mut impl Check) -> Option<Plan> {
        let mut read = |key: &'static str, value: &Option<Quantity>| {
            (value.as_ref()).and_then(|q| check.quantity(&[Step::Key(key)], q, parse_duration))
        };
        let start_ns = read("start", &self.start).unwrap_or(0);
        let end_ns = read("end", &self.end);
        if end_ns.is_some_and(|end| end <= start_ns) {
            check.error(&[Step::Key("end")], "the time window ends before it starts");
        }
        Some(Plan { start_ns, end_ns })
    }
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        format!(
            "keep records from {} to {}",
            format_duration(self.start_ns),
            self.end_ns.map_or("the end".to_owned(), format_duration)
        )
    }
}
