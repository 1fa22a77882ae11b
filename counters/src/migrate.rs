//! Migration from the legacy schema to the standardized one.
//!
//! The result equals that of AMD's converter (rocprofiler-sdk's
//! `convert-counter-collection-yaml-schema.py`): counters in input order, each as `name,
//! description, properties: [], definitions`, one definition per slash-joined architecture
//! key with its architectures split and sorted by byte order, followed by that key's own
//! entries in input order; a file already standardized is left as it is. Beyond it:
//! comments are carried over, next to the counter they preceded; a file without
//! `schema-version` is migrated with a warning; input and output are both validated.

use std::sync::Arc;

use crate::diagnostic::{Diagnostic, Error, Source};
use crate::schema::{self, Schema, legacy, standard};
use crate::yaml::{Comment, Document, Node, Value, emit::emit};

/// What migrating a file gives.
#[derive(Debug)]
pub enum Migration {
    /// The file is in the standardized schema already (and valid): nothing to do.
    AlreadyStandard,
    /// The file in the standardized schema.
    Migrated {
        text: String,
        counters: usize,
        /// E.g. a missing `schema-version`.
        warnings: Vec<Diagnostic>,
    },
}

/// Migrates the text of a definition file.
pub fn migrate(source: &Arc<Source>) -> Result<Migration, Error> {
    let doc = Document::parse(source)?;
    let parsed = schema::read(&doc)?;
    if parsed.schema == Schema::Standard {
        return Ok(Migration::AlreadyStandard);
    }
    let (root, trailing) = standardize(&doc);
    let written = Source::new(
        format!("{} (migrated)", source.path().display()),
        emit(&root, &trailing),
    );
    let output = Document::parse(&written)
        .map_err(|d| vec![d])
        .and_then(|doc| schema::read(&doc));
    match output {
        Ok(output) => Ok(Migration::Migrated {
            text: written.text().to_owned(),
            counters: output.counters.len(),
            warnings: parsed.warnings,
        }),
        Err(errors) => Err(Error::Invalid(
            errors
                .into_iter()
                .map(|d| d.note("in the migrated output: a bug in the migration, please report it"))
                .collect(),
        )),
    }
}

/// The standardized tree of a (valid) legacy document, and the comments after its last
/// counter.
fn standardize(doc: &Document) -> (Node, Vec<String>) {
    let entries = doc.root.as_mapping().expect("validated as a mapping");
    let mut attached = attach_comments(&doc.comments, entries);
    let trailing = attached.pop().expect("one slot more than entries");
    let mut header = Vec::new();
    let mut counters = Vec::with_capacity(entries.len());
    for (i, ((key, value), mut comments)) in entries.iter().zip(attached).enumerate() {
        let is_version = key.key() == legacy::VERSION_KEY;
        // Comments above the first entry are the file's (a licence, say).
        if i == 0 || is_version {
            header.append(&mut comments);
        }
        if !is_version {
            let mut counter = counter(key, value);
            counter.comments = comments;
            counters.push(counter);
        }
    }
    let version = doc
        .root
        .get(legacy::VERSION_KEY)
        .cloned()
        .unwrap_or_else(|| Node::plain("1"));
    let mut root = Node::mapping(vec![(
        standard::ROOT_KEY,
        Node::mapping(vec![
            (standard::VERSION_KEY, version),
            (standard::COUNTERS_KEY, Node::new(Value::Sequence(counters))),
        ]),
    )]);
    root.comments = header;
    (root, trailing)
}

fn counter(key: &Node, value: &Node) -> Node {
    let description = value.get("description").expect("validated").clone();
    let groups = value
        .get("architectures")
        .and_then(Node::as_mapping)
        .expect("validated");
    let definitions = groups
        .iter()
        .map(|(group, definition)| {
            let mut archs: Vec<&str> = group.key().split('/').collect();
            archs.sort_unstable();
            let archs = archs.into_iter().map(Node::string).collect();
            let mut entries = vec![(
                Node::plain("architectures"),
                Node::new(Value::Sequence(archs)),
            )];
            entries.extend(definition.as_mapping().expect("validated").iter().cloned());
            Node::new(Value::Mapping(entries))
        })
        .collect();
    Node::mapping(vec![
        ("name", Node::new(key.value.clone())),
        ("description", description),
        ("properties", Node::new(Value::Sequence(Vec::new()))),
        ("definitions", Node::new(Value::Sequence(definitions))),
    ])
}

/// Assigns each comment to a top-level entry: an indented comment to the entry whose
/// body it is in, one at the left margin to the entry it precedes. The extra last slot
/// holds those after every entry.
fn attach_comments(comments: &[Comment], entries: &[(Node, Node)]) -> Vec<Vec<String>> {
    let mut attached = vec![Vec::new(); entries.len() + 1];
    for comment in comments {
        let next = entries.partition_point(|(key, _)| key.span.start < comment.offset);
        let owner = match comment.indent {
            0 => next,
            _ => next.saturating_sub(1),
        };
        attached[owner].push(comment.text.clone());
    }
    attached
}
