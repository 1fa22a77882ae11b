//! What both schema readers read a document with: typed access to its nodes that records
//! every mistake and carries on, so that a mistake gets the same message in either schema
//! and one run reports all of them.

use std::collections::HashMap;

use crate::counter::{Counter, Definition, DefinitionKind, ExpressionSource};
use crate::diagnostic::{Diagnostic, Location, did_you_mean};
use crate::yaml::{Document, Node, Value};

/// Typed access to a document's nodes that records every mistake and carries on, so that
/// one run reports all of them.
pub(crate) struct Reader<'a> {
    pub doc: &'a Document,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

/// A mapping whose keys have been checked against the allowed ones.
pub(crate) struct Fields<'a> {
    entries: &'a [(Node, Node)],
}

impl<'a> Fields<'a> {
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.key() == key)
            .map(|(_, v)| v)
    }

    pub fn key(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.key() == key)
            .map(|(k, _)| k)
    }
}

impl<'a> Reader<'a> {
    pub fn new(doc: &'a Document) -> Self {
        Reader {
            doc,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub fn location(&self, node: &Node) -> Location {
        self.doc.location(node.span.clone())
    }

    /// Records an error at `node`.
    pub fn error(&mut self, node: &Node, message: impl Into<String>) -> &mut Diagnostic {
        let diagnostic = Diagnostic::error(message).at(self.location(node));
        self.errors.push(diagnostic);
        self.errors.last_mut().expect("just pushed")
    }

    fn expected(&mut self, node: &Node, expected: &str, what: &str) {
        let found = node.kind();
        self.error(node, format!("{what} must be {expected}, not {found}"));
    }

    /// A mapping with only `allowed` keys, each at most once, and all of `required`.
    pub fn fields(
        &mut self,
        node: &'a Node,
        what: &str,
        allowed: &[&str],
        required: &[&str],
    ) -> Option<Fields<'a>> {
        let Value::Mapping(entries) = &node.value else {
            self.expected(node, "a mapping", what);
            return None;
        };
        let mut seen: HashMap<&str, &Node> = HashMap::new();
        for (key, _) in entries {
            let name = key.key();
            if !allowed.contains(&name) {
                let hint = did_you_mean(name, allowed.iter().copied())
                    .unwrap_or_else(|| format!("allowed keys: {}", allowed.join(", ")));
                self.error(key, format!("unknown key `{name}` in {what}"))
                    .hint = Some(hint);
            } else if let Some(first) = seen.insert(name, key) {
                let note = format!("first given at {}", self.location(first));
                self.error(key, format!("`{name}` is given twice in {what}"))
                    .notes
                    .push(note);
            }
        }
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|key| !seen.contains_key(key))
            .collect();
        for key in missing {
            let at = entries.first().map_or(node, |(k, _)| k);
            self.error(at, format!("{what} has no `{key}`"));
        }
        Some(Fields { entries })
    }

    pub fn string(&mut self, node: &'a Node, what: &str) -> Option<&'a str> {
        match &node.value {
            Value::Scalar(s) if !s.is_integer() => Some(&s.text),
            _ => {
                self.expected(node, "a string", what);
                None
            }
        }
    }

    pub fn sequence(&mut self, node: &'a Node, what: &str) -> Option<&'a [Node]> {
        match &node.value {
            Value::Sequence(items) => Some(items),
            _ => {
                self.expected(node, "a list", what);
                None
            }
        }
    }

    pub fn unsigned(&mut self, node: &'a Node, what: &str) -> Option<u64> {
        let number = node.as_scalar().filter(|s| s.plain).map(|s| s.text.parse());
        match number {
            Some(Ok(event)) => Some(event),
            _ => {
                self.expected(node, "a non-negative integer", what);
                None
            }
        }
    }

    /// Checks an architecture name such as `gfx942` or the family name `gfx9`.
    pub fn architecture(&mut self, name: &str, location: Location) -> Option<String> {
        let digits = name.strip_prefix("gfx").unwrap_or("");
        if !digits.is_empty()
            && digits
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Some(name.to_owned());
        }
        self.errors.push(
            Diagnostic::error(format!("`{name}` is not an architecture name"))
                .at(location)
                .hint("architectures are gfx targets or families, such as gfx942 or gfx9"),
        );
        None
    }

    /// The block/event or expression part of a definition: exactly one of the two.
    pub fn definition(
        &mut self,
        fields: &Fields<'a>,
        node: &'a Node,
        architectures: Vec<String>,
        what: &str,
    ) -> Option<Definition> {
        let (block, event, expression) = (
            fields.get("block"),
            fields.get("event"),
            fields.get("expression"),
        );
        let kind = match (block, event, expression) {
            (Some(block), Some(event), None) => DefinitionKind::Hardware {
                block: self.string(block, "`block`")?.to_owned(),
                event: self.unsigned(event, "`event`")?,
            },
            (None, None, Some(expression)) => {
                let text = self.string(expression, "`expression`")?.to_owned();
                let start = expression.text_start(&self.doc.source);
                let span = start.map_or(expression.span.clone(), |s| s..s + text.len());
                let location = self.doc.location(span);
                DefinitionKind::Derived {
                    expression: ExpressionSource::new(text, location, start.is_some()),
                }
            }
            (_, _, Some(_)) => {
                let key = fields.key("expression").expect("present");
                self.error(key, format!("{what} has both `expression` and `block`/`event`"))
                    .hint = Some("a counter is either counted by the hardware (`block` and `event`) or derived (`expression`)".into());
                return None;
            }
            (None, None, None) => {
                self.error(
                    node,
                    format!("{what} has neither `expression` nor `block` and `event`"),
                );
                return None;
            }
            (Some(_), None, None) => {
                self.error(node, format!("{what} has `block` but no `event`"));
                return None;
            }
            (None, Some(_), None) => {
                self.error(node, format!("{what} has `event` but no `block`"));
                return None;
            }
        };
        Some(Definition {
            architectures,
            kind,
            location: self.location(node),
        })
    }

    /// An architecture may appear in only one definition of a counter.
    pub fn unique_architectures(&mut self, counter: &str, architectures: &[(String, Location)]) {
        let mut seen: HashMap<&str, &Location> = HashMap::new();
        for (arch, location) in architectures {
            if let Some(first) = seen.insert(arch, location) {
                self.errors.push(
                    Diagnostic::error(format!("{arch} is listed twice for counter `{counter}`"))
                        .at(location.clone())
                        .note(format!("first listed at {first}")),
                );
            }
        }
    }

    /// Counter names are unique within a file; YAML readers would keep only the last.
    pub fn unique_names(&mut self, counters: &[Counter]) {
        let mut seen: HashMap<&str, &Location> = HashMap::with_capacity(counters.len());
        for counter in counters {
            if let Some(first) = seen.insert(&counter.name, &counter.location) {
                self.errors.push(
                    Diagnostic::error(format!("counter `{}` is defined twice", counter.name))
                        .at(counter.location.clone())
                        .note(format!("first defined at {first}")),
                );
            }
        }
    }
}
