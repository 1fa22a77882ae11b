//! `kernel_filter` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `kernel_filter` module.


use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::units::IterationRanges;
use crate::diag::Step;
use crate::plan::{list_or, ranges};

use super::kind::{Check, Compiled, Declared};

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

    fn compile(&self, check: &mut impl Check) -> Option<Plan> {
        for (key, pattern) in [("include", &self.include), ("exclude", &self.exclude)] {
            if let Some(pattern) = pattern {
                check.regex(&[Step::Key(key)], pattern, "kernel regex");
            }
        }
        let iterations = self.iterations.as_ref().and_then(|text| {
            IterationRanges::parse(text)
                .map_err(|message| {
                    check.error(&[Step::Key("iterations")], message.to_string()).hint =
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
}
