//! The legacy schema: one top-level key per counter.
//!
//! ```yaml
//! schema-version: 1
//! CPC_CPC_STAT_BUSY:
//!   architectures:
//!     gfx950/gfx942/gfx90a:
//!       block: CPC
//!       event: 25
//!   description: CPC Busy.
//! ```

use crate::counter::Counter;
use crate::diagnostic::Diagnostic;
use crate::yaml::{Node, Value};

use super::reader::Reader;

/// The top-level key that is not a counter.
pub(crate) const VERSION_KEY: &str = "schema-version";

pub(crate) fn read(reader: &mut Reader<'_>) -> Vec<Counter> {
    let doc = reader.doc;
    let root = &doc.root;
    let Value::Mapping(entries) = &root.value else {
        reader.error(
            root,
            "a counter definition file must be a mapping of counter names",
        );
        return Vec::new();
    };
    match root.get(VERSION_KEY) {
        Some(version) => {
            reader.unsigned(version, "`schema-version`");
        }
        None => reader.warnings.push(
            Diagnostic::warning(format!(
                "no `{VERSION_KEY}`: read as the legacy schema, version 1"
            ))
            .at(reader.doc.location(0..0)),
        ),
    }
    entries
        .iter()
        .filter(|(key, _)| key.key() != VERSION_KEY)
        .filter_map(|(key, value)| counter(reader, key, value))
        .collect()
}

fn counter<'a>(reader: &mut Reader<'a>, key: &'a Node, value: &'a Node) -> Option<Counter> {
    let name = key.key();
    let what = format!("counter `{name}`");
    const KEYS: &[&str] = &["architectures", "description"];
    let fields = reader.fields(value, &what, KEYS, KEYS)?;
    let description = fields
        .get("description")
        .and_then(|d| reader.string(d, "`description`"));
    let architectures = fields.get("architectures")?;
    let Value::Mapping(groups) = &architectures.value else {
        reader.error(
            architectures,
            format!(
                "`architectures` of {what} must be a mapping of slash-joined architecture names"
            ),
        );
        return None;
    };
    let mut definitions = Vec::with_capacity(groups.len());
    let mut listed = Vec::new();
    for (group, definition) in groups {
        let archs = split_group(reader, group);
        listed.extend(archs.iter().cloned());
        let about = format!("the definition of `{name}` for {}", group.key());
        let keys = &["block", "event", "expression"];
        let Some(fields) = reader.fields(definition, &about, keys, &[]) else {
            continue;
        };
        let archs = archs.into_iter().map(|(a, _)| a).collect();
        definitions.extend(reader.definition(&fields, definition, archs, &about));
    }
    reader.unique_architectures(name, &listed);
    Some(Counter {
        name: name.to_owned(),
        description: description?.to_owned(),
        properties: Vec::new(),
        definitions,
        location: reader.location(key),
    })
}

/// Splits a key such as `gfx950/gfx942/gfx90a` into its architectures, each with its place.
fn split_group(
    reader: &mut Reader<'_>,
    group: &Node,
) -> Vec<(String, crate::diagnostic::Location)> {
    let start = group.text_start(&reader.doc.source);
    let mut offset = 0;
    let mut archs = Vec::new();
    for part in group.key().split('/') {
        let span = match start {
            Some(start) => start + offset..start + offset + part.len(),
            None => group.span.clone(),
        };
        offset += part.len() + 1;
        let location = reader.doc.location(span);
        if let Some(arch) = reader.architecture(part, location.clone()) {
            archs.push((arch, location));
        }
    }
    archs
}
