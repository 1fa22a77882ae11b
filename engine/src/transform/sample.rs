//! `sample`: keeps every Nth record of each kind of each process stream (the first, then
//! every `every`th after it), to thin a long run's outputs while keeping its shape.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::sample`]).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::chunk::Chunk;
use crate::record::RecordKind;

use super::apply::{Apply, At};
use crate::plan::transform::sample::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(Sample {
        every: plan.every.max(1),
        seen: Mutex::default(),
    }))
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
        let sample = build(&Plan { every: 3 }).unwrap();
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
