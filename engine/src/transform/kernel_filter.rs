//! `kernel_filter`: keeps the records of the kernels whose names match, and only the
//! listed dispatch iterations of each kernel, as rocprofv3's `--kernel-include-regex`,
//! `--kernel-exclude-regex` and `--kernel-iteration-range` do.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::kernel_filter`]).

use std::collections::HashMap;
use std::sync::Mutex;

use regex::Regex;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::record::Batch;
use crate::units::IterationRanges;

use super::apply::{Apply, At};
use crate::plan::transform::kernel_filter::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    let regex = |pattern: &Option<String>| {
        (pattern.as_deref().map(Regex::new).transpose()).map_err(|e| e.to_string())
    };
    Ok(Box::new(KernelFilter {
        include: regex(&plan.include)?,
        exclude: regex(&plan.exclude)?,
        iterations: plan.iterations.clone(),
        seen: Mutex::default(),
    }))
}

/// Keeps records of matching kernels, and of the listed dispatch iterations of each.
#[derive(Debug)]
struct KernelFilter {
    include: Option<Regex>,
    exclude: Option<Regex>,
    iterations: Option<IterationRanges>,
    /// Per (stream, kernel): dispatches seen so far, and the last dispatch id counted.
    seen: Mutex<HashMap<(u16, u64), (u64, u64)>>,
}

impl Apply for KernelFilter {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let keep = self.keep(chunk, at.meta);
        chunk.retain(&keep);
    }

    /// Iterations are counted in arrival order.
    fn sequential(&self) -> bool {
        true
    }
}

impl KernelFilter {
    /// Which records of the chunk to keep.
    fn keep(&self, chunk: &Chunk, meta: &StreamMeta) -> Vec<bool> {
        let ids: Vec<(u64, u64)> = match &chunk.batch {
            Batch::KernelDispatch(r) => r.iter().map(|d| (d.kernel_id, d.dispatch_id)).collect(),
            Batch::CounterSample(r) => r.iter().map(|s| (s.kernel_id, s.dispatch_id)).collect(),
            _ => return vec![true; chunk.len()],
        };
        let mut names: HashMap<u64, bool> = HashMap::new();
        let mut seen = self.seen.lock().expect("no panics while holding the lock");
        ids.into_iter()
            .map(|(kernel, dispatch)| {
                let name_ok = *names.entry(kernel).or_insert_with(|| {
                    let name = meta.kernel_name(kernel);
                    self.include.as_ref().is_none_or(|r| r.is_match(name))
                        && !self.exclude.as_ref().is_some_and(|r| r.is_match(name))
                });
                let (count, last) = seen.entry((chunk.stream, kernel)).or_insert((0, u64::MAX));
                // Counter samples of one dispatch come together; count each dispatch once.
                if *last != dispatch {
                    *count += 1;
                    *last = dispatch;
                }
                name_ok && self.iterations.as_ref().is_none_or(|r| r.contains(*count))
            })
            .collect()
    }
}
