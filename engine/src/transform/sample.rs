//! `sample`: keeps every Nth record of each kind of each process stream (the first, then
//! every `every`th after it), to thin a long run's outputs while keeping its shape.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::chunk::Chunk;
use crate::pipeline::TransformCheck;
use crate::record::RecordKind;

use super::{Apply, At, Compiled, Declared};

/// Declared and compiled alike.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
pub struct Options {
    /// Keep one record in this many.
    pub every: u64,
}

/// Compiled, the options are kept as they are.
pub type Plan = Options;

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "description": "Keeps every Nth record of each kind of each process: the first, then one in `every`.",
            "required": ["every"],
            "properties": {
                "every": { "type": "integer", "minimum": 1, "description": "Keep one record in this many." }
            }
        })
    }

    fn compile(&self, _check: &mut TransformCheck<'_, '_>) -> Option<Options> {
        Some(*self)
    }
}

impl Compiled for Options {
    fn explain(&self) -> String {
        format!(
            "keep one record in {} of each kind of each process",
            self.every
        )
    }

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        Ok(Box::new(Sample {
            every: self.every.max(1),
            seen: Mutex::default(),
        }))
    }
}

#[derive(Debug)]
struct Sample {
    every: u64,
    /// Records seen so far per (stream, kind).
    seen: Mutex<HashMap<(u16, RecordKind), u64>>,
}

impl Apply for Sample {
    fn apply(&self, chunk: &mut Chunk, _at: &At<'_>) {
        let mut seen = self.seen.lock().expect("no panics while holding the lock");
        let seen = seen.entry((chunk.stream, chunk.batch.kind())).or_default();
        let first = *seen;
        *seen += chunk.len() as u64;
        let keep: Vec<bool> = (first..*seen).map(|n| n % self.every == 0).collect();
        chunk.retain(&keep);
    }

    /// Records are counted in arrival order, so the same records are kept on every replay.
    fn sequential(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::StreamMeta;
    use crate::record::{Batch, KernelDispatch};
    use crate::transform::Failures;

    fn dispatches(stream: u16, ids: std::ops::Range<u64>) -> Chunk {
        let records = ids.map(|dispatch_id| KernelDispatch {
            dispatch_id,
            ..Default::default()
        });
        Chunk::new(stream, Batch::KernelDispatch(records.collect()))
    }

    fn ids(chunk: &Chunk) -> Vec<u64> {
        match &chunk.batch {
            Batch::KernelDispatch(r) => r.iter().map(|d| d.dispatch_id).collect(),
            _ => unreachable!("dispatches in, dispatches out"),
        }
    }

    #[test]
    fn keeps_every_nth_record_of_each_stream_across_chunks() {
        let sample = Options { every: 3 }.build().unwrap();
        let (meta, failures) = (StreamMeta::default(), Failures::default());
        let at = At {
            meta: &meta,
            origin_ns: 0,
            failures: &failures,
        };
        let mut kept = Vec::new();
        for chunk in [
            dispatches(0, 0..4),
            dispatches(1, 100..102),
            dispatches(0, 4..10),
        ] {
            let mut chunk = chunk;
            sample.apply(&mut chunk, &at);
            kept.push(ids(&chunk));
        }
        assert_eq!(kept, [vec![0, 3], vec![100], vec![6, 9]]);
        assert!(sample.sequential());
    }
}
