//! A YAML document as a tree that remembers where every node came from.
//!
//! Definition files need three things a serde YAML crate does not give: the place of every
//! node (for `file:line:col`), every key of a mapping even when repeated (duplicate counter
//! names must be reported, not silently dropped), and the comments (migration carries
//! them over). The tree is built from `saphyr-parser`'s events; `emit` writes one back.
//!
//! It is public so that other readers of YAML in the workspace (rocflow's rocprofv3 input
//! importer) read it the same way and point at the same places.

pub(crate) mod emit;

use std::ops::Range;
use std::sync::Arc;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use crate::diagnostic::{Diagnostic, Location, Source};

/// A parsed file: its root node and its full-line comments.
#[derive(Debug)]
pub struct Document {
    pub source: Arc<Source>,
    pub root: Node,
    pub comments: Vec<Comment>,
}

/// A comment on a line of its own, e.g. `# TCC Block (Texture Cache per Channel)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comment {
    /// Byte offset of the `#`.
    pub offset: usize,
    /// Column of the `#`: zero for a top-level comment.
    pub indent: usize,
    /// The text after `#`, as written.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    /// Byte range in the source; quotes included for quoted scalars.
    pub span: Range<usize>,
    /// Comment lines written just before this node when it is emitted.
    pub comments: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    /// Entries in file order, duplicates kept: readers decide what a repeated key means.
    Mapping(Vec<(Node, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    pub text: String,
    /// A plain scalar's type comes from its text (`25` is a number); a quoted one is a
    /// string whatever its text.
    pub plain: bool,
}

impl Scalar {
    /// Whether a reader types the scalar as an integer (as the SDK's would for `event`).
    pub fn is_integer(&self) -> bool {
        self.plain && self.text.parse::<i64>().is_ok()
    }
}

impl Node {
    /// A node made by a program rather than read from a file.
    pub fn new(value: Value) -> Self {
        Node {
            value,
            span: 0..0,
            comments: Vec::new(),
        }
    }

    pub fn string(text: impl Into<String>) -> Self {
        Node::new(Value::Scalar(Scalar {
            text: text.into(),
            plain: false,
        }))
    }

    /// A plain scalar: a reader types it by its text.
    pub fn plain(text: impl Into<String>) -> Self {
        Node::new(Value::Scalar(Scalar {
            text: text.into(),
            plain: true,
        }))
    }

    /// A mapping of plain keys, in the order given.
    pub fn mapping(entries: Vec<(&str, Node)>) -> Self {
        Node::new(Value::Mapping(
            entries
                .into_iter()
                .map(|(k, v)| (Node::plain(k), v))
                .collect(),
        ))
    }

    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_mapping(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Mapping(entries) => Some(entries),
            _ => None,
        }
    }

    /// The text of a scalar key (keys are always scalars in a [`Document`]).
    pub fn key(&self) -> &str {
        self.as_scalar().map_or("", |s| s.text.as_str())
    }

    /// The value under `key` in a mapping (the first, if repeated).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_mapping()?
            .iter()
            .find(|(k, _)| k.key() == key)
            .map(|(_, v)| v)
    }

    /// What the node is, for messages such as "expected a string, found a list".
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Scalar(s) if s.is_integer() => "a number",
            Value::Scalar(_) => "a string",
            Value::Sequence(_) => "a list",
            Value::Mapping(_) => "a mapping",
        }
    }

    /// Where a scalar's text starts in the file, when the file holds the text byte for byte
    /// (plain, or quoted without escapes, on one line); `None` otherwise. Lets an error
    /// inside an expression point at its column.
    pub fn text_start(&self, source: &Source) -> Option<usize> {
        let scalar = self.as_scalar()?;
        let quote = usize::from(!scalar.plain);
        let start = self.span.start + quote;
        let written = source.text().get(start..start + scalar.text.len())?;
        (written == scalar.text).then_some(start)
    }

    /// Converts to JSON for schema validation: plain scalars become numbers, booleans or
    /// null the way a YAML 1.2 core-schema reader types them.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Scalar(Scalar { text, plain: true }) => match text.as_str() {
                "" | "~" | "null" | "Null" | "NULL" => J::Null,
                "true" | "True" | "TRUE" => J::Bool(true),
                "false" | "False" | "FALSE" => J::Bool(false),
                _ => text
                    .parse::<i64>()
                    .map(J::from)
                    .ok()
                    .or_else(|| text.parse::<f64>().ok().map(J::from))
                    .unwrap_or_else(|| J::String(text.clone())),
            },
            Value::Scalar(Scalar { text, .. }) => J::String(text.clone()),
            Value::Sequence(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Mapping(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.key().to_owned(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl Document {
    /// Parses one YAML document of at most 64 MiB. Anchors and aliases are expanded, to
    /// 1,048,576 nodes and 64 MiB of strings at most;
    /// tags other than the core ones are refused, as rocprofiler-sdk's reader would not
    /// understand them.
    pub fn parse(source: &Arc<Source>) -> Result<Document, Diagnostic> {
        if source.text().len() > MAX_SIZE.bytes {
            return Err(Diagnostic::error(format!(
                "the YAML file is larger than {} MiB",
                MAX_SIZE.bytes >> 20
            ))
            .at(Location::new(source, 0..0)));
        }
        let mut builder = Builder {
            source,
            events: Parser::new_from_str(source.text()),
            anchors: Vec::new(),
            built: Size::default(),
            scalar_spans: Vec::new(),
        };
        let root = builder.document()?;
        let comments = comments(source, &builder.scalar_spans);
        Ok(Document {
            source: Arc::clone(source),
            root,
            comments,
        })
    }

    pub fn location(&self, span: Range<usize>) -> Location {
        Location::new(&self.source, span)
    }
}

/// The deepest nesting of lists and mappings read; definition files and rocprofv3 input
/// nest about 6 deep.
const MAX_DEPTH: usize = 64;

/// The most a document may hold, aliases counted as the nodes they copy: a file of a few
/// hundred bytes whose aliases refer to aliases (the "billion laughs") expands to billions
/// of nodes. Definition files hold about 30,000 nodes and 300 KB.
const MAX_SIZE: Size = Size {
    nodes: 1 << 20,
    bytes: 64 << 20,
};

/// How much a tree holds: its nodes, and the bytes of its scalars (of its file, for a
/// file's size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Size {
    nodes: usize,
    bytes: usize,
}

impl Size {
    fn plus(self, other: Size) -> Size {
        Size {
            nodes: self.nodes.saturating_add(other.nodes),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }

    fn minus(self, other: Size) -> Size {
        Size {
            nodes: self.nodes - other.nodes,
            bytes: self.bytes - other.bytes,
        }
    }
}

struct Builder<'a> {
    source: &'a Arc<Source>,
    events: Parser<'a, saphyr_parser::StrInput<'a>>,
    /// Complete anchored nodes, by anchor id, with their size.
    anchors: Vec<(usize, Node, Size)>,
    /// The size of the tree built so far.
    built: Size,
    /// Where scalars are, so a `#` inside a multi-line string is not taken for a comment.
    scalar_spans: Vec<Range<usize>>,
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Range<usize>), Diagnostic> {
        match self.events.next() {
            Some(Ok((event, span))) => Ok((event, self.range(span))),
            Some(Err(e)) => Err(self.invalid(&e)),
            None => Err(Diagnostic::error("unexpected end of the YAML stream")),
        }
    }

    fn invalid(&self, e: &ScanError) -> Diagnostic {
        let at = self.source.byte_offset(e.marker().index());
        Diagnostic::error(format!("invalid YAML: {}", e.info()))
            .at(Location::new(self.source, at..at))
    }

    fn range(&self, span: Span) -> Range<usize> {
        self.source.byte_offset(span.start.index())..self.source.byte_offset(span.end.index())
    }

    fn document(&mut self) -> Result<Node, Diagnostic> {
        let mut root = None;
        loop {
            let (event, span) = self.next()?;
            match event {
                Event::StreamStart | Event::DocumentEnd => {}
                Event::StreamEnd => break,
                Event::DocumentStart(_) if root.is_some() => {
                    return Err(
                        Diagnostic::error("the file holds more than one YAML document")
                            .at(Location::new(self.source, span)),
                    );
                }
                Event::DocumentStart(_) => root = Some(self.node(0)?),
                _ => unreachable!("the parser yields nodes only inside a document"),
            }
        }
        Ok(root.unwrap_or_else(|| Node::new(Value::Mapping(Vec::new()))))
    }

    /// Counts `size` more in the tree, which must stay within [`MAX_SIZE`]; `span` is
    /// where the node that brings it is.
    fn grow(&mut self, size: Size, span: &Range<usize>) -> Result<(), Diagnostic> {
        self.built = self.built.plus(size);
        let past = if self.built.nodes > MAX_SIZE.nodes {
            format!("{} nodes", MAX_SIZE.nodes)
        } else if self.built.bytes > MAX_SIZE.bytes {
            format!("{} MiB of strings", MAX_SIZE.bytes >> 20)
        } else {
            return Ok(());
        };
        Err(
            Diagnostic::error(format!("the YAML expands to more than {past}"))
                .at(Location::new(self.source, span.clone()))
                .hint("an alias (`*name`) stands for a copy of the whole node it names"),
        )
    }

    /// The node that starts next, `depth` collections deep.
    fn node(&mut self, depth: usize) -> Result<Node, Diagnostic> {
        let before = self.built;
        let (event, span) = self.next()?;
        let (nests, size) = match &event {
            Event::SequenceStart(..) | Event::MappingStart(..) => (1, Size { nodes: 1, bytes: 0 }),
            Event::Alias(id) => (self.anchored(*id))
                .map_or((0, Size::default()), |(node, size)| (node.height(), size)),
            Event::Scalar(text, ..) => (
                0,
                Size {
                    nodes: 1,
                    bytes: text.len(),
                },
            ),
            _ => (0, Size::default()),
        };
        // Counted before it is built: an alias is copied only if the copy fits.
        self.grow(size, &span)?;
        // Building is recursive, and so are the readers of the tree: the depth is bounded
        // before recursing, so that no file (`[[[[…`) overflows the stack.
        if depth + nests > MAX_DEPTH {
            return Err(Diagnostic::error(format!(
                "the YAML nests deeper than {MAX_DEPTH} lists or mappings"
            ))
            .at(Location::new(self.source, span)));
        }
        let (node, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                let plain = style == ScalarStyle::Plain && tag.is_none();
                if let Some(tag) = tag.filter(|t| !t.is_yaml_core_schema()) {
                    return Err(Diagnostic::error(format!(
                        "unsupported YAML tag `{}{}`",
                        tag.handle, tag.suffix
                    ))
                    .at(Location::new(self.source, span)));
                }
                self.scalar_spans.push(span.clone());
                let scalar = Scalar {
                    text: text.into_owned(),
                    plain,
                };
                (Node::new(Value::Scalar(scalar)).spanning(span), anchor)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                let end = loop {
                    if let Some(end) = self.end_of(|e| matches!(e, Event::SequenceEnd))? {
                        break end;
                    }
                    items.push(self.node(depth + 1)?);
                };
                let end = items.last().map_or(end, |n| n.span.end.max(end));
                (
                    Node::new(Value::Sequence(items)).spanning(span.start..end),
                    anchor,
                )
            }
            Event::MappingStart(anchor, _) => {
                let mut entries = Vec::new();
                let end = loop {
                    if let Some(end) = self.end_of(|e| matches!(e, Event::MappingEnd))? {
                        break end;
                    }
                    let key = self.node(depth + 1)?;
                    if key.as_scalar().is_none() {
                        return Err(Diagnostic::error("mapping keys must be plain strings")
                            .at(Location::new(self.source, key.span)));
                    }
                    entries.push((key, self.node(depth + 1)?));
                };
                let end = entries.last().map_or(end, |(_, v)| v.span.end.max(end));
                (
                    Node::new(Value::Mapping(entries)).spanning(span.start..end),
                    anchor,
                )
            }
            Event::Alias(id) => {
                // The parser knows an anchor from its start, but it is kept here once its
                // node is complete: an alias inside its own anchor's node is not found.
                let Some((node, _)) = self.anchored(id) else {
                    return Err(
                        Diagnostic::error("an alias cannot refer to a node it is inside")
                            .at(Location::new(self.source, span)),
                    );
                };
                return Ok(node.clone().spanning(span));
            }
            other => unreachable!("the parser yields a node here, not {other:?}"),
        };
        if anchor != 0 {
            let size = self.built.minus(before);
            self.anchors.push((anchor, node.clone(), size));
        }
        Ok(node)
    }

    /// The complete node anchored as `id`, and its size; the last one, as an anchor may be
    /// reused.
    fn anchored(&self, id: usize) -> Option<(&Node, Size)> {
        let anchor = self.anchors.iter().rev().find(|(a, ..)| *a == id);
        anchor.map(|(_, node, size)| (node, *size))
    }

    /// Consumes the closing event of a collection if it comes next: its end offset.
    fn end_of(&mut self, is_end: fn(&Event) -> bool) -> Result<Option<usize>, Diagnostic> {
        match self.events.peek() {
            Some(Ok((event, _))) if is_end(event) => Ok(Some(self.next()?.1.end)),
            // Reported now: the parser does not keep a peeked error, and parsing on after
            // it yields events out of place (`- ,` gave an end where a node belongs).
            Some(Err(e)) => Err(self.invalid(&e)),
            _ => Ok(None),
        }
    }
}

impl Node {
    fn spanning(mut self, span: Range<usize>) -> Self {
        self.span = span;
        self
    }

    /// How many collections deep the node goes: 0 for a scalar.
    fn height(&self) -> usize {
        match &self.value {
            Value::Scalar(_) => 0,
            Value::Sequence(items) => 1 + items.iter().map(Node::height).max().unwrap_or(0),
            Value::Mapping(entries) => {
                1 + entries.iter().map(|(_, v)| v.height()).max().unwrap_or(0)
            }
        }
    }
}

/// The full-line comments of a file, skipping lines inside multi-line scalars.
fn comments(source: &Source, scalar_spans: &[Range<usize>]) -> Vec<Comment> {
    let text = source.text();
    let mut offset = 0;
    let mut found = Vec::new();
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        let hash = offset + indent;
        let in_scalar = || scalar_spans.iter().any(|s| s.contains(&hash));
        if line[indent..].starts_with('#') && !in_scalar() {
            found.push(Comment {
                offset: hash,
                indent,
                text: line[indent + 1..].trim_end().to_owned(),
            });
        }
        offset += line.len();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-line message for a file that must be refused.
    fn refused(text: &str) -> String {
        let source = Source::new("c.yaml", text);
        Document::parse(&source).unwrap_err().to_string()
    }

    #[test]
    fn a_flow_indicator_where_an_item_belongs_is_a_located_error() {
        let expected =
            "error: invalid YAML: while parsing a node, did not find expected node content";
        assert_eq!(refused("- ,"), format!("c.yaml:1:3: {expected}"));
        assert_eq!(refused("a:\n  - ,\n"), format!("c.yaml:2:5: {expected}"));
    }

    #[test]
    fn an_alias_inside_its_own_anchor_is_a_located_error() {
        let expected = "error: an alias cannot refer to a node it is inside";
        assert_eq!(refused("&a [*a]"), format!("c.yaml:1:5: {expected}"));
        assert_eq!(
            refused("k: &a\n  k: *a\n"),
            format!("c.yaml:2:6: {expected}")
        );
    }

    #[test]
    fn nesting_is_bounded_with_a_located_error() {
        let expected = "error: the YAML nests deeper than 64 lists or mappings";
        let at_limit = "[".repeat(64) + &"]".repeat(64);
        assert!(Document::parse(&Source::new("c.yaml", at_limit)).is_ok());
        // The parser refuses flow collections past 256 deep itself.
        let flow = "[".repeat(200);
        assert_eq!(refused(&flow), format!("c.yaml:1:65: {expected}"));
        // Deep enough to overflow the stack when unbounded.
        let block = "- ".repeat(30_000);
        assert_eq!(refused(&block), format!("c.yaml:1:129: {expected}"));
        let mappings: String = (0..100).map(|i| " ".repeat(i) + "k:\n").collect();
        assert_eq!(refused(&mappings), format!("c.yaml:65:65: {expected}"));
        // An alias counts as deep as the node it stands for.
        let aliased = format!(
            "- &a {}\n- {}*a{}",
            "[".repeat(40) + &"]".repeat(40),
            "[".repeat(30),
            "]".repeat(30)
        );
        assert_eq!(refused(&aliased), format!("c.yaml:2:33: {expected}"));
    }

    /// The "billion laughs": nine levels of nine aliases of the level before, 10^9 nodes
    /// from 400 bytes, are refused at the alias that crosses the bound, as are aliases of
    /// a long string and a file past 64 MiB; a few aliases expand as before.
    #[test]
    fn aliases_expand_only_so_far() {
        let mut laughs = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (level, previous) in ('b'..='i').zip('a'..) {
            let aliases = vec![format!("*{previous}"); 9].join(", ");
            laughs += &format!("{level}: &{level} [{aliases}]\n");
        }
        assert!(laughs.len() < 500);
        let hint = "(hint: an alias (`*name`) stands for a copy of the whole node it names)";
        let expected = "error: the YAML expands to more than 1048576 nodes";
        // At the first alias of the seventh level: 9^6 nodes each.
        assert_eq!(refused(&laughs), format!("c.yaml:7:8: {expected} {hint}"));

        let long = "x".repeat(1 << 20);
        let strings = format!("a: &a {long}\nb: [{}]\n", vec!["*a"; 64].join(", "));
        let expected = "error: the YAML expands to more than 64 MiB of strings";
        // At the 63rd alias: with the string it copies, the keys pass 64 MiB.
        let column = "b: [".len() + 1 + "*a, ".len() * 62;
        assert_eq!(
            refused(&strings),
            format!("c.yaml:2:{column}: {expected} {hint}")
        );

        let big = "#".repeat((64 << 20) + 1);
        assert_eq!(
            refused(&big),
            "c.yaml:1:1: error: the YAML file is larger than 64 MiB"
        );

        let few = "a: &a {k: [1, 2]}\nb: [*a, *a]\n";
        let doc = Document::parse(&Source::new("c.yaml", few)).unwrap();
        let b = doc.root.get("b").unwrap().to_json();
        assert_eq!(b, serde_json::json!([{"k": [1, 2]}, {"k": [1, 2]}]));
    }
}
