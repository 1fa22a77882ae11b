//! The standardized schema, as rocprofiler-sdk ships it since May 2025.
//!
//! ```yaml
//! rocprofiler-sdk:
//!   counters-schema-version: 1
//!   counters:
//!   - name: CPC_CPC_STAT_BUSY
//!     description: CPC Busy.
//!     properties: []
//!     definitions:
//!     - architectures:
//!       - gfx90a
//!       - gfx942
//!       block: CPC
//!       event: 25
//! ```

use std::sync::LazyLock;

use jsonschema::paths::LocationSegment;

use crate::counter::Counter;
use crate::diagnostic::Diagnostic;
use crate::yaml::{Document, Node, Value};

use super::reader::Reader;

pub(crate) const ROOT_KEY: &str = "rocprofiler-sdk";
pub(crate) const VERSION_KEY: &str = "counters-schema-version";
pub(crate) const COUNTERS_KEY: &str = "counters";

/// `schemas/counters.schema.json`, the contract for files in this schema.
pub const JSON_SCHEMA: &str = include_str!("../../../schemas/counters.schema.json");

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema = serde_json::from_str(JSON_SCHEMA).expect("the shipped schema is JSON");
    jsonschema::validator_for(&schema).expect("the shipped schema is a valid JSON Schema")
});

pub(crate) fn read(reader: &mut Reader<'_>) -> Vec<Counter> {
    let doc = reader.doc;
    let root_keys = &[ROOT_KEY];
    let Some(root) = reader.fields(&doc.root, "the file", root_keys, root_keys) else {
        return Vec::new();
    };
    let header = root.get(ROOT_KEY).expect("schema detected by this key");
    let keys = &[VERSION_KEY, COUNTERS_KEY];
    let Some(header) = reader.fields(header, &format!("`{ROOT_KEY}`"), keys, keys) else {
        return Vec::new();
    };
    if let Some(version) = header.get(VERSION_KEY) {
        reader.unsigned(version, &format!("`{VERSION_KEY}`"));
    }
    let Some(counters) = header
        .get(COUNTERS_KEY)
        .and_then(|c| reader.sequence(c, "`counters`"))
    else {
        return Vec::new();
    };
    counters.iter().filter_map(|c| counter(reader, c)).collect()
}

fn counter<'a>(reader: &mut Reader<'a>, node: &'a Node) -> Option<Counter> {
    const KEYS: &[&str] = &["name", "description", "properties", "definitions"];
    const REQUIRED: &[&str] = &["name", "description", "definitions"];
    let name_node = node.get("name");
    let name = name_node
        .and_then(|n| n.as_scalar())
        .map(|s| s.text.as_str());
    let what = name.map_or("a counter".into(), |n| format!("counter `{n}`"));
    let fields = reader.fields(node, &what, KEYS, REQUIRED)?;
    let name = name_node.and_then(|n| reader.string(n, "`name`"));
    let description = fields
        .get("description")
        .and_then(|d| reader.string(d, "`description`"));
    let properties = match fields.get("properties") {
        Some(list) => reader
            .sequence(list, "`properties`")?
            .iter()
            .filter_map(|p| reader.string(p, "a property").map(str::to_owned))
            .collect(),
        None => Vec::new(),
    };
    let mut definitions = Vec::new();
    let mut listed = Vec::new();
    for definition in reader.sequence(fields.get("definitions")?, "`definitions`")? {
        let about = format!("a definition of {what}");
        let keys = &["architectures", "block", "event", "expression"];
        let Some(fields) = reader.fields(definition, &about, keys, &["architectures"]) else {
            continue;
        };
        let mut archs = Vec::new();
        let list = fields
            .get("architectures")
            .and_then(|a| reader.sequence(a, "`architectures`"));
        for arch in list.unwrap_or_default() {
            let location = reader.location(arch);
            let arch = reader
                .string(arch, "an architecture")
                .and_then(|a| reader.architecture(a, location.clone()));
            if let Some(arch) = arch {
                listed.push((arch.clone(), location));
                archs.push(arch);
            }
        }
        definitions.extend(reader.definition(&fields, definition, archs, &about));
    }
    reader.unique_architectures(name?, &listed);
    Some(Counter {
        name: name?.to_owned(),
        description: description?.to_owned(),
        properties,
        definitions,
        location: reader.location(name_node?),
    })
}

/// Validates the file against [`JSON_SCHEMA`]; each violation points at its node.
pub(crate) fn validate(doc: &Document) -> Vec<Diagnostic> {
    let instance = doc.root.to_json();
    VALIDATOR
        .iter_errors(&instance)
        .map(|error| {
            let mut node = &doc.root;
            for segment in error.instance_path().iter() {
                let next = match (&node.value, segment) {
                    (Value::Mapping(_), LocationSegment::Property(key)) => node.get(&key),
                    (Value::Sequence(items), LocationSegment::Index(i)) => items.get(i),
                    _ => None,
                };
                match next {
                    Some(next) => node = next,
                    None => break,
                }
            }
            Diagnostic::error(format!("does not match the counters schema: {error}"))
                .at(doc.location(node.span.clone()))
        })
        .collect()
}
