//! A TOML document as a tree of values that remember where they were written.
//!
//! Templates are merged and parameters substituted on this tree, so every value of the
//! resolved pipeline still points into the file (template or user file) it came from, and
//! any later error can name `file:line:col`.

use std::sync::Arc;

use indexmap::IndexMap;

use crate::diag::Step;
use crate::diag::{Diagnostic, SourceFile, Span};

/// A value and the span of its source text.
#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    /// Kept as written; pipelines have no datetime fields, the schema rejects them.
    Datetime(String),
    Array(Vec<Node>),
    Table(Table),
}

/// Keys in document order, each with the span of the key itself (for "unknown key" errors).
pub type Table = IndexMap<String, Entry>;

#[derive(Debug, Clone)]
pub struct Entry {
    pub key: Span,
    pub node: Node,
}

impl Node {
    /// Parses TOML text; a syntax error points at its place in the file.
    pub fn parse(file: &Arc<SourceFile>) -> Result<Node, Diagnostic> {
        // The recovering parser lists every error, not in file order; the earliest is the
        // cause, later ones are often its echoes.
        let (table, errors) = toml::de::DeTable::parse_recoverable(file.text());
        if let Some(err) = errors
            .iter()
            .min_by_key(|e| e.span().map_or(usize::MAX, |s| s.start))
        {
            let span = err.span().map(|range| Span::new(file, range));
            let message = err.message().trim_end();
            return Err(Diagnostic::error(format!("invalid TOML: {message}")).at(span));
        }
        let span = Span::new(file, 0..file.text().len());
        Ok(Node {
            value: Value::Table(convert_table(file, table.into_inner())),
            span,
        })
    }

    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::String(_) => "a string",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime(_) => "a datetime",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_table(&self) -> Option<&Table> {
        match &self.value {
            Value::Table(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_table_mut(&mut self) -> Option<&mut Table> {
        match &mut self.value {
            Value::Table(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The entry `key` of a table node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_table()?.get(key).map(|e| &e.node)
    }

    /// The node at a path, if it exists.
    pub fn at<'a>(&self, path: impl IntoIterator<Item = Step<'a>>) -> Option<&Node> {
        path.into_iter()
            .try_fold(self, |node, step| match (step, &node.value) {
                (Step::Key(k), Value::Table(t)) => t.get(k).map(|e| &e.node),
                (Step::Index(i), Value::Array(a)) => a.get(i),
                _ => None,
            })
    }

    /// The span of the key that names the last step of `path` (for "unknown key" errors),
    /// falling back to the value's span.
    pub fn key_span<'a>(&self, path: &[Step<'a>]) -> Option<Span> {
        let (last, parent) = path.split_last()?;
        let parent = self.at(parent.iter().copied())?;
        match (last, &parent.value) {
            (Step::Key(k), Value::Table(t)) => t.get(*k).map(|e| e.key.clone()),
            _ => self.at(path.iter().copied()).map(|n| n.span.clone()),
        }
    }

    /// The plain JSON form that the JSON Schema and the typed model read.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::String(s) | Value::Datetime(s) => J::String(s.clone()),
            Value::Integer(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Boolean(b) => J::Bool(*b),
            Value::Array(a) => J::Array(a.iter().map(Node::to_json).collect()),
            Value::Table(t) => J::Object(
                t.iter()
                    .map(|(k, e)| (k.clone(), e.node.to_json()))
                    .collect(),
            ),
        }
    }

    /// A node of JSON `value` whose every part points at `span`: what a command-line flag
    /// adds to a pipeline (see [`crate::import::overlay`]).
    pub fn from_json(value: &serde_json::Value, span: &Span) -> Node {
        use serde_json::Value as J;
        let value = match value {
            J::String(s) => Value::String(s.clone()),
            J::Bool(b) => Value::Boolean(*b),
            J::Number(n) => n.as_i64().map_or_else(
                || Value::Float(n.as_f64().unwrap_or(f64::NAN)),
                Value::Integer,
            ),
            J::Array(items) => {
                Value::Array(items.iter().map(|v| Node::from_json(v, span)).collect())
            }
            // An unset field (`null`) is no key, as in TOML.
            J::Object(map) => Value::Table(
                map.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let entry = Entry {
                            key: span.clone(),
                            node: Node::from_json(v, span),
                        };
                        (k.clone(), entry)
                    })
                    .collect(),
            ),
            // Only inside objects, where it is left out.
            J::Null => Value::Table(Table::new()),
        };
        Node {
            value,
            span: span.clone(),
        }
    }

    /// The TOML form, for `rocflow explain --resolved`.
    pub fn to_toml(&self) -> toml::Value {
        match &self.value {
            Value::String(s) | Value::Datetime(s) => toml::Value::String(s.clone()),
            Value::Integer(i) => toml::Value::Integer(*i),
            Value::Float(f) => toml::Value::Float(*f),
            Value::Boolean(b) => toml::Value::Boolean(*b),
            Value::Array(a) => toml::Value::Array(a.iter().map(Node::to_toml).collect()),
            Value::Table(t) => toml::Value::Table(
                t.iter()
                    .map(|(k, e)| (k.clone(), e.node.to_toml()))
                    .collect(),
            ),
        }
    }
}

fn convert_table(file: &Arc<SourceFile>, table: toml::de::DeTable<'_>) -> Table {
    table
        .into_iter()
        .map(|(key, value)| {
            let key_span = Span::new(file, key.span());
            let entry = Entry {
                key: key_span,
                node: convert(file, value),
            };
            (key.into_inner().into_owned(), entry)
        })
        .collect()
}

fn convert(file: &Arc<SourceFile>, value: toml::Spanned<toml::de::DeValue<'_>>) -> Node {
    use toml::de::DeValue;
    let span = Span::new(file, value.span());
    let value = match value.into_inner() {
        DeValue::String(s) => Value::String(s.into_owned()),
        // The parser has already checked the digits; only an out-of-range number fails here,
        // and the schema reports it as a non-integer.
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map_or_else(|_| Value::String(i.to_string()), Value::Integer),
        DeValue::Float(f) => Value::Float(parse_float(f.as_str())),
        DeValue::Boolean(b) => Value::Boolean(b),
        DeValue::Datetime(d) => Value::Datetime(d.to_string()),
        DeValue::Array(a) => Value::Array(a.into_iter().map(|v| convert(file, v)).collect()),
        DeValue::Table(t) => Value::Table(convert_table(file, t)),
    };
    Node { value, span }
}

/// TOML floats as the parser hands them over: Rust syntax plus `inf`/`nan` with a sign.
fn parse_float(text: &str) -> f64 {
    match text.trim_start_matches(['+', '-']) {
        "inf" if text.starts_with('-') => f64::NEG_INFINITY,
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => text.parse().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node {
        Node::parse(&SourceFile::new("t.toml", text)).unwrap()
    }

    #[test]
    fn spans_point_at_values_and_keys() {
        let doc = parse("[[context]]\nname = \"trace\"\ntracing = [\"kernel_dispatch\"]\n");
        let path = [
            Step::Key("context"),
            Step::Index(0),
            Step::Key("tracing"),
            Step::Index(0),
        ];
        let node = doc.at(path).unwrap();
        assert_eq!(node.span.position(), "t.toml:3:12");
        assert_eq!(node.span.snippet(), "\"kernel_dispatch\"");
        let key = doc.key_span(&path[..3]).unwrap();
        assert_eq!(key.position(), "t.toml:3:1");
    }

    #[test]
    fn numbers_keep_their_type() {
        let doc = parse("a = 0x10\nb = 1.5\nc = -inf\n");
        assert!(matches!(doc.get("a").unwrap().value, Value::Integer(16)));
        assert!(matches!(doc.get("b").unwrap().value, Value::Float(f) if f == 1.5));
        assert!(matches!(doc.get("c").unwrap().value, Value::Float(f) if f == f64::NEG_INFINITY));
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let err = Node::parse(&SourceFile::new("bad.toml", "a = [1,\nb = 2\n")).unwrap_err();
        assert!(err.message.starts_with("invalid TOML"), "{err}");
        assert!(err.position().unwrap().starts_with("bad.toml:2:"), "{err}");
    }
}
