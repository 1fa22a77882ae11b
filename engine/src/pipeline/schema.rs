//! Structural validation against `schemas/pipeline.schema.json`.
//!
//! The schema is the one editors use for completion; here its errors are turned into
//! diagnostics that point at the offending key or value in the TOML source. Its part for
//! transforms comes from each transform kind's home ([`TransformOp::schema`]); a test
//! keeps the shipped file equal to what they say.

use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use serde_json::Value as Json;

use crate::diag::{Diagnostic, did_you_mean};

use super::value::Node;
use crate::diag::Step;
use crate::plan::transform::TransformOp;

/// The pipeline schema as shipped in `schemas/`, for editors.
pub const SCHEMA_TEXT: &str = include_str!("../../../schemas/pipeline.schema.json");

/// Where the README's install puts the schema for editors (taplo reads a pipeline's
/// `#:schema` line).
pub fn installed_path() -> Option<std::path::PathBuf> {
    Some(crate::data_home::data_home()?.join("pipeline.schema.json"))
}

/// The schema pipelines are checked against: the shipped one, with each part that has a
/// home of its own in the code taken from there.
static SCHEMA: LazyLock<Json> = LazyLock::new(|| {
    let mut schema: Json = serde_json::from_str(SCHEMA_TEXT).expect("the shipped schema is JSON");
    schema["$defs"]["transform"] = TransformOp::schema();
    schema
});

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    jsonschema::validator_for(&SCHEMA).expect("the shipped schema is a valid JSON Schema")
});

/// Checks the document's structure (`json` is `doc` as JSON); every violation becomes one
/// diagnostic pointing into `doc`.
pub fn validate(doc: &Node, instance: &Json) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    for error in VALIDATOR.iter_errors(instance) {
        let path: Vec<LocationSegment<'_>> = error.instance_path().iter().collect();
        let steps: Vec<Step<'_>> = path
            .iter()
            .map(|segment| match segment {
                LocationSegment::Property(key) => Step::Key(key),
                LocationSegment::Index(i) => Step::Index(*i),
            })
            .collect();
        let node = doc.at(steps.iter().copied()).unwrap_or(doc);
        let keyword_schema = error
            .absolute_keyword_location()
            .and_then(|uri| uri.fragment())
            .and_then(|fragment| parent_schema(fragment.as_str()));
        let place = describe(&steps);
        let diagnostic = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let allowed: Vec<&str> = keyword_schema
                    .and_then(|s| s.get("properties"))
                    .and_then(Json::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                for key in unexpected {
                    let mut key_path = steps.clone();
                    key_path.push(Step::Key(key));
                    let hint = did_you_mean(key, allowed.iter().copied())
                        .unwrap_or_else(|| format!("allowed here: {}", allowed.join(", ")));
                    push(
                        &mut diagnostics,
                        Diagnostic::error(format!("unknown key `{key}` in {place}"))
                            .at(doc.key_span(&key_path))
                            .hint(hint),
                    );
                }
                continue;
            }
            ValidationErrorKind::Enum { options } => {
                let options: Vec<&str> = options
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
                    .collect();
                let shown = node
                    .as_str()
                    .map_or_else(|| node.span.snippet().to_owned(), |s| format!("`{s}`"));
                Diagnostic::error(format!("{shown} is not a valid {place}"))
                    .at(Some(node.span.clone()))
                    .maybe_hint(
                        node.as_str()
                            .and_then(|s| did_you_mean(s, options.iter().copied())),
                    )
                    .note(format!("expected one of: {}", options.join(", ")))
            }
            ValidationErrorKind::Type { kind } => Diagnostic::error(format!(
                "{place} must be {}, not {}",
                type_names(kind),
                node.type_name()
            ))
            .at(Some(node.span.clone())),
            ValidationErrorKind::AnyOf { .. } => {
                let expected = keyword_schema
                    .and_then(|s| s.get("anyOf"))
                    .and_then(Json::as_array)
                    .map(|alternatives| {
                        alternatives
                            .iter()
                            .filter_map(|a| a.get("type"))
                            .flat_map(|t| match t {
                                Json::Array(types) => {
                                    types.iter().filter_map(Json::as_str).collect()
                                }
                                other => other.as_str().into_iter().collect::<Vec<_>>(),
                            })
                            .map(article)
                            .collect::<Vec<_>>()
                            .join(" or ")
                    })
                    .unwrap_or_default();
                Diagnostic::error(format!(
                    "{place} must be {expected}, not {}",
                    node.type_name()
                ))
                .at(Some(node.span.clone()))
                .maybe_hint(
                    keyword_schema
                        .and_then(|s| s.get("description"))
                        .and_then(Json::as_str)
                        .map(str::to_owned),
                )
            }
            ValidationErrorKind::Required { property } => {
                let property = property.as_str().unwrap_or_default();
                Diagnostic::error(format!("{place} is missing `{property}`"))
                    .at(Some(node.span.clone()))
                    .hint(format!("add `{property} = …`"))
            }
            ValidationErrorKind::Pattern { .. }
                if steps.last().is_some_and(|s| *s == Step::Key("name")) =>
            {
                Diagnostic::error(format!(
                    "`{}` is not a valid name",
                    node.as_str().unwrap_or_default()
                ))
                .at(Some(node.span.clone()))
                .hint(
                    "names start with a letter or digit and use letters, digits, `_`, `-` and `.`",
                )
            }
            // A key only some kinds take (`plugin`), under another kind.
            ValidationErrorKind::FalseSchema => {
                Diagnostic::error(format!("{place} does not belong to this `kind`"))
                    .at(doc.key_span(&steps).or(Some(node.span.clone())))
            }
            // The remaining keywords (minimum, minItems, pattern, …) explain themselves.
            _ => Diagnostic::error(format!("{place}: {}", error.masked()))
                .at(Some(node.span.clone())),
        };
        push(&mut diagnostics, diagnostic);
    }
    diagnostics
}

/// Adds a diagnostic unless the same message at the same place is already there (the
/// schema can report one fault through several keywords).
fn push(diagnostics: &mut Vec<Diagnostic>, diagnostic: Diagnostic) {
    let duplicate = diagnostics
        .iter()
        .any(|d| d.message == diagnostic.message && d.position() == diagnostic.position());
    if !duplicate {
        diagnostics.push(diagnostic);
    }
}

/// The schema object that holds the keyword at a JSON pointer such as
/// `/$defs/context/additionalProperties`.
fn parent_schema(pointer: &str) -> Option<&'static Json> {
    let parent = &pointer[..pointer.rfind('/')?];
    SCHEMA.pointer(parent)
}

/// Names a place in the document the way the TOML reads: `context[1].buffer.size`.
fn describe(steps: &[Step<'_>]) -> String {
    if steps.is_empty() {
        return "the pipeline".to_owned();
    }
    format!("`{}`", Step::dotted(steps.iter().copied()))
}

fn type_names(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => article(&t.to_string()),
        TypeKind::Multiple(types) => types
            .iter()
            .map(|t| article(&t.to_string()))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// A JSON Schema type name as the TOML user knows it.
fn article(json_type: &str) -> String {
    match json_type {
        "object" => "a table",
        "array" => "an array",
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "boolean" => "a boolean",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Editors read the shipped file, rocflow its own parts' schemas: they must agree.
    /// `ROCFLOW_BLESS=1 cargo test -p rocflow shipped_schema` rewrites the file's part for
    /// transforms, leaving the rest as written.
    #[test]
    fn shipped_schema_is_what_the_code_says() {
        let shipped: Json = serde_json::from_str(SCHEMA_TEXT).unwrap();
        if shipped == *SCHEMA {
            return;
        }
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schemas/pipeline.schema.json"
        );
        assert!(
            std::env::var_os("ROCFLOW_BLESS").is_some(),
            "{path} is out of date; run `ROCFLOW_BLESS=1 cargo test -p rocflow shipped_schema`"
        );
        let (start, end) = (
            SCHEMA_TEXT.find("\n    \"transform\": {\n").unwrap() + 1,
            |from| from + SCHEMA_TEXT[from..].find("\n    },\n").unwrap() + "\n    },".len(),
        );
        let end = end(start);
        let part = format!(
            "    \"transform\": {}",
            layout(&SCHEMA["$defs"]["transform"], 4)
        );
        let text = format!("{}{part},{}", &SCHEMA_TEXT[..start], &SCHEMA_TEXT[end..]);
        assert_eq!(serde_json::from_str::<Json>(&text).unwrap(), *SCHEMA);
        std::fs::write(path, text).unwrap();
    }

    /// The analyze step's `rules` offer editors every rule and refuse none: the schema is
    /// checked before the compiler, so a rule missing there could not be chosen at all.
    #[test]
    fn the_analyze_steps_rules_are_the_analyzers() {
        fn find<'a>(value: &'a Json, found: &mut Vec<&'a Json>) {
            if value["if"]["properties"]["kind"]["const"] == "analyze" {
                found.push(&value["then"]["properties"]["rules"]["items"]["enum"]);
            }
            match value {
                Json::Object(map) => map.values().for_each(|v| find(v, found)),
                Json::Array(items) => items.iter().for_each(|v| find(v, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        find(&SCHEMA, &mut found);
        let rules: Vec<&str> = crate::analyze::RULES.iter().map(|r| r.id()).collect();
        assert_eq!(found, [&Json::from(rules)]);
    }

    /// JSON as the shipped file lays it out: a value on one line where it fits in 100
    /// columns, else one member per line.
    fn layout(value: &Json, indent: usize) -> String {
        let inline = serde_json::to_string(value)
            .unwrap()
            .replace("\":", "\": ")
            .replace(",\"", ", \"")
            .replace("{\"", "{ \"")
            .replace("}", " }")
            .replace("{  }", "{}");
        let (open, close, members): (_, _, Vec<String>) = match value {
            Json::Object(map) => (
                '{',
                '}',
                (map.iter())
                    .map(|(k, v)| format!("{}: {}", Json::from(k.as_str()), layout(v, indent + 2)))
                    .collect(),
            ),
            Json::Array(items) => (
                '[',
                ']',
                items.iter().map(|v| layout(v, indent + 2)).collect(),
            ),
            _ => return inline,
        };
        if indent + inline.len() <= 100 || members.is_empty() {
            return inline;
        }
        let pad = " ".repeat(indent + 2);
        format!(
            "{open}\n{pad}{}\n{}{close}",
            members.join(&format!(",\n{pad}")),
            " ".repeat(indent)
        )
    }
}
