//! `time_window`: keeps the records that start inside a window of the run, its times
//! relative to the run's first record.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::chunk::Chunk;
use crate::column::row;
use crate::units::Quantity;
use crate::units::{format_duration, parse_duration};
use crate::pipeline::{Step, TransformCheck};

use super::{Apply, At, Compiled, Declared, retain};

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

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Plan> {
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

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        Ok(Box::new(*self))
    }
}

impl Apply for Plan {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let inside: Vec<bool> = (0..chunk.len())
            .map(|i| {
                let start = row(&chunk.batch, i).start_ns().saturating_sub(at.origin_ns);
                start >= self.start_ns && self.end_ns.is_none_or(|end| start < end)
            })
            .collect();
        retain(chunk, |i| inside[i]);
    }
}
