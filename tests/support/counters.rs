//! Counter definition files: the real ones rocprofiler-sdk ships, and the tests' own reading
//! of YAML, independent of the `rocflow-counters` crate's.

use std::path::PathBuf;
use std::sync::Arc;

use rocflow_counters::{Definitions, Diagnostic, Error, Source};
use saphyr_parser::{Event, Parser, ScalarStyle};

/// A file of real rocprofiler-sdk data (see shared/data/README.md).
pub fn shared(name: &str) -> PathBuf {
    super::shared().join("data/counters").join(name)
}

pub const LEGACY: &str = "legacy-schema.counter_defs.yaml";
pub const STANDARD: &str = "standard-schema.counter_defs.yaml";

pub fn source(text: &str) -> Arc<Source> {
    Source::new("defs.yaml", text)
}

/// The diagnostics of loading `text`, each as `line:col: message`.
pub fn load_errors(text: &str) -> Vec<String> {
    match Definitions::parse(&source(text)) {
        Ok(_) => panic!("loaded without errors:\n{text}"),
        Err(Error::Invalid(diagnostics)) => diagnostics.iter().map(short).collect(),
        Err(other) => panic!("unexpected error: {other}"),
    }
}

/// `line:col: message` of a diagnostic.
pub fn short(d: &Diagnostic) -> String {
    let (line, col) = d.location.as_ref().expect("has a place").line_col();
    format!("{line}:{col}: {}", d.message)
}

/// A YAML value as a generic tree, read straight from the parser's events: the tests'
/// own reading of a file, independent of the crate's.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// Text, and whether it is a string (quoted, or plain text that does not read as a
    /// number, boolean or null): how it is written does not matter, its value does.
    Scalar(String, bool),
    Seq(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    pub fn parse(text: &str) -> Yaml {
        let mut events = Parser::new_from_str(text).map(|e| e.expect("valid YAML").0);
        while !matches!(events.next(), Some(Event::DocumentStart(_))) {}
        Self::node(&mut events).expect("a document")
    }

    /// The next node, or `None` at the end of the enclosing collection.
    fn node<'a>(events: &mut impl Iterator<Item = Event<'a>>) -> Option<Yaml> {
        Some(match events.next()? {
            Event::Scalar(text, style, ..) => {
                let typed = style == ScalarStyle::Plain
                    && (text.parse::<f64>().is_ok()
                        || ["", "~", "null", "true", "false"].contains(&text.as_ref()));
                Yaml::Scalar(text.into(), !typed)
            }
            Event::SequenceStart(..) => {
                Yaml::Seq(std::iter::from_fn(|| Self::node(events)).collect())
            }
            Event::MappingStart(..) => {
                let mut entries = Vec::new();
                while let Some(key) = Self::node(events) {
                    entries.push((key.str().to_owned(), Self::node(events).expect("a value")));
                }
                Yaml::Map(entries)
            }
            Event::SequenceEnd | Event::MappingEnd => return None,
            other => panic!("unexpected event {other:?}"),
        })
    }

    pub fn map(&self) -> &[(String, Yaml)] {
        match self {
            Yaml::Map(entries) => entries,
            other => panic!("not a mapping: {other:?}"),
        }
    }

    pub fn seq(&self) -> &[Yaml] {
        match self {
            Yaml::Seq(items) => items,
            other => panic!("not a list: {other:?}"),
        }
    }

    pub fn str(&self) -> &str {
        match self {
            Yaml::Scalar(text, _) => text,
            other => panic!("not a scalar: {other:?}"),
        }
    }

    pub fn get(&self, key: &str) -> &Yaml {
        let found = self.map().iter().find(|(k, _)| k == key);
        &found.unwrap_or_else(|| panic!("no `{key}`")).1
    }
}
