//! `kernel_filter`: keeps the records of the kernels whose names match, and only the
//! listed dispatch iterations of each kernel, as rocprofv3's `--kernel-include-regex`,
//! `--kernel-exclude-regex` and `--kernel-iteration-range` do.

use std::collections::HashMap;
use std::sync::Mutex;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::units::IterationRanges;
use crate::pipeline::{Step, TransformCheck};
use crate::plan::{list_or, ranges};
use crate::record::Batch;

use super::{Apply, At, Compiled, Declared};

#[derive(Debug, Deserialize, Serialize)]
pub struct Options {
    pub include: Option<String>,
    pub exclude: Option<String>,
    /// Ranges as written, e.g. "[1-10],[20]".
    pub iterations: Option<String>,
}

/// The iteration ranges parsed.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    pub include: Option<String>,
    pub exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
}

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "description": "Keeps records of the kernels whose names match, and only the listed dispatch iterations of each kernel.",
            "properties": {
                "include": { "type": "string", "description": "Regex a kernel name must match." },
                "exclude": { "type": "string", "description": "Regex a kernel name must not match." },
                "iterations": {
                    "type": "string",
                    "description": "Dispatches of each kernel to keep, e.g. \"[1-10],[20]\"."
                }
            }
        })
    }

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Plan> {
        for (key, pattern) in [("include", &self.include), ("exclude", &self.exclude)] {
            if let Some(pattern) = pattern {
                check.regex(&[Step::Key(key)], pattern, "kernel regex");
            }
        }
        let iterations = self.iterations.as_ref().and_then(|text| {
            IterationRanges::parse(text)
                .map_err(|message| {
                    check.error(&[Step::Key("iterations")], message).hint =
                        Some("write ranges like \"[1-10],[20]\" or \"[5-]\"".into());
                })
                .ok()
        });
        check.require_kernel_names();
        Some(Plan {
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            iterations,
        })
    }
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        let mut parts = Vec::new();
        parts.extend(
            self.include
                .as_ref()
                .map(|r| format!("kernels matching /{r}/")),
        );
        parts.extend(self.exclude.as_ref().map(|r| format!("not matching /{r}/")));
        parts.extend(
            self.iterations
                .as_ref()
                .map(|i| format!("iterations {}", ranges(i))),
        );
        format!("keep {}", list_or(&parts, "every kernel"))
    }

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        let regex = |pattern: &Option<String>| {
            (pattern.as_deref().map(Regex::new).transpose()).map_err(|e| e.to_string())
        };
        Ok(Box::new(KernelFilter {
            include: regex(&self.include)?,
            exclude: regex(&self.exclude)?,
            iterations: self.iterations.clone(),
            seen: Mutex::default(),
        }))
    }
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
