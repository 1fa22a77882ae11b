//! `kernel_name`: rewrites kernel names with regex rules and cuts them to a length, after
//! the pipeline's `kernel_names` form (see [`crate::kernel_names`]) named them. Names live
//! in the run's metadata, so each kernel is renamed once (as its symbol arrives), for every
//! record that refers to it.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::chunk::Chunk;
use crate::pipeline::{Step, TransformCheck};
use crate::plan::list_or;

use super::{Apply, At, Compiled, Declared};

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

    fn compile(&self, check: &mut TransformCheck<'_, '_>) -> Option<Plan> {
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

    fn build(&self) -> Result<Box<dyn Apply>, String> {
        let rules = (self.rename.iter())
            .map(|(p, r)| Ok((Regex::new(p).map_err(|e| e.to_string())?, r.clone())))
            .collect::<Result<_, String>>()?;
        Ok(Box::new(Rename {
            truncate: self.truncate,
            rules,
        }))
    }
}

/// How a kernel's name is rewritten.
#[derive(Debug)]
pub struct Rename {
    pub rules: Vec<(Regex, String)>,
    pub truncate: Option<u32>,
}

impl Apply for Rename {
    /// Records pass unchanged: the renaming applies to kernel symbols as they arrive.
    fn apply(&self, _chunk: &mut Chunk, _at: &At<'_>) {}

    fn rename(&self) -> Option<&Rename> {
        Some(self)
    }
}

impl Rename {
    pub fn apply(&self, name: &str) -> String {
        let mut name = name.to_owned();
        for (pattern, replacement) in &self.rules {
            if let std::borrow::Cow::Owned(renamed) =
                pattern.replace_all(&name, replacement.as_str())
            {
                name = renamed;
            }
        }
        if let Some(limit) = self.truncate.map(|n| n as usize)
            && name.chars().count() > limit
        {
            name = name
                .chars()
                .take(limit.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_then_truncates() {
        let rename = Rename {
            rules: vec![(Regex::new(r"\(.*\)").unwrap(), String::new())],
            truncate: Some(10),
        };
        assert_eq!(rename.apply("gemm(float*, float*, float*, int)"), "gemm");
        assert_eq!(rename.apply("a_very_long_kernel_name()"), "a_very_lo…");
    }
}
