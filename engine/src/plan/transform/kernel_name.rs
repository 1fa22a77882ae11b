//! `kernel_name` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `kernel_name` module.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::diag::Step;
use crate::plan::list_or;

use super::kind::{Check, Compiled, Declared};

#[derive(Debug, Default, Deserialize, Serialize)]
pub struct Options {
    pub truncate: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rename: Vec<Rule>,
}

/// A renaming rule: every match of `pattern` becomes `replacement` (`$1` for groups).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub pattern: String,
    pub replacement: String,
}

/// Rules are (pattern, replacement) pairs in the Plan.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    pub truncate: Option<u32>,
    pub rename: Vec<(String, String)>,
}

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "description": "Kernel names live in the run's metadata: this renames each kernel once, for every record that refers to it, after `[pipeline] kernel_names` gave it its form.",
            "properties": {
                "truncate": { "type": "integer", "minimum": 8 },
                "rename": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["pattern", "replacement"],
                        "properties": {
                            "pattern": { "type": "string" },
                            "replacement": { "type": "string" }
                        }
                    }
                }
            }
        })
    }

    fn compile(&self, check: &mut impl Check) -> Option<Plan> {
        for (r, rule) in self.rename.iter().enumerate() {
            let key = [Step::Key("rename"), Step::Index(r), Step::Key("pattern")];
            check.regex(&key, &rule.pattern, "regex");
        }
        check.require_kernel_names();
        Some(Plan {
            truncate: self.truncate,
            rename: (self.rename.iter())
                .map(|r| (r.pattern.clone(), r.replacement.clone()))
                .collect(),
        })
    }
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        let mut parts: Vec<String> = (self.rename.iter())
            .map(|(p, r)| format!("rename /{p}/ -> {r}"))
            .collect();
        if let Some(n) = self.truncate {
            parts.push(format!("truncate to {n} chars"));
        }
        format!("kernel names: {}", list_or(&parts, "unchanged"))
    }
}
