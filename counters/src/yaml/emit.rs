//! Writes a [`Node`] tree as block YAML in the style of rocprofiler-sdk's own files.
//!
//! AMD's files are written by PyYAML (`default_flow_style=False, width=120`): two-space
//! indentation, sequences inside a mapping not indented further, empty lists as `[]`,
//! strings plain where YAML allows it and single-quoted otherwise, and long strings folded
//! at the first space past column 120. Writing the same style keeps a migrated file
//! readable in a diff against AMD's.

use super::{Node, Scalar, Value};

/// Lines are folded at the first space past this column.
const WIDTH: usize = 120;
/// Indentation of a nested mapping.
const INDENT: usize = 2;

/// The YAML text of `root`, each node preceded by its comments, then `trailing` comments.
pub(crate) fn emit(root: &Node, trailing: &[String]) -> String {
    let mut emitter = Emitter {
        out: String::new(),
        column: 0,
    };
    emitter.comments(&root.comments, 0);
    emitter.block(root, 0);
    emitter.write("\n");
    emitter.comments(trailing, 0);
    emitter.out
}

struct Emitter {
    out: String,
    /// Characters written on the current line.
    column: usize,
}

impl Emitter {
    /// A node at the start of a line (or after `- `), its nested lines at `indent`.
    fn block(&mut self, node: &Node, indent: usize) {
        match &node.value {
            Value::Mapping(entries) if !entries.is_empty() => {
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.comments(&key.comments, indent);
                        self.newline(indent);
                    }
                    self.scalar(key.as_scalar().expect("keys are scalars"), indent, false);
                    self.write(":");
                    self.value(value, indent);
                }
            }
            Value::Sequence(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.comments(&item.comments, indent);
                        self.newline(indent);
                    }
                    self.write("- ");
                    self.block(item, indent + INDENT);
                }
            }
            _ => self.inline(node, indent),
        }
    }

    /// The value after `key:`.
    fn value(&mut self, node: &Node, indent: usize) {
        match &node.value {
            Value::Mapping(entries) if !entries.is_empty() => {
                self.comments(&node.comments, indent + INDENT);
                self.newline(indent + INDENT);
                self.block(node, indent + INDENT);
            }
            // PyYAML's "indentless" sequences: the `-` lines up with the key.
            Value::Sequence(items) if !items.is_empty() => {
                self.comments(&items[0].comments, indent);
                self.newline(indent);
                self.block(node, indent);
            }
            _ => {
                self.write(" ");
                self.inline(node, indent + INDENT);
            }
        }
    }

    /// A scalar or an empty collection, continuing on the current line.
    fn inline(&mut self, node: &Node, indent: usize) {
        match &node.value {
            Value::Scalar(scalar) => self.scalar(scalar, indent, true),
            Value::Sequence(_) => self.write("[]"),
            Value::Mapping(_) => self.write("{}"),
        }
    }

    fn scalar(&mut self, scalar: &Scalar, indent: usize, fold: bool) {
        let text = scalar.text.as_str();
        match style(scalar) {
            Style::Plain => self.folded(text, indent, fold),
            Style::SingleQuoted => {
                self.write("'");
                self.folded(&text.replace('\'', "''"), indent, fold);
                self.write("'");
            }
            Style::DoubleQuoted => {
                self.write(&format!("{text:?}"));
            }
        }
    }

    /// Writes words separated by single spaces, breaking the line at the first such space
    /// past [`WIDTH`] (runs of spaces are kept, as a line break would change them).
    fn folded(&mut self, text: &str, indent: usize, fold: bool) {
        let mut words = text.split(' ').peekable();
        while let Some(word) = words.next() {
            self.write(word);
            let Some(next) = words.peek() else { break };
            let single_space = !word.is_empty() && !next.is_empty();
            if fold && single_space && self.column > WIDTH {
                self.newline(indent);
            } else {
                self.write(" ");
            }
        }
    }

    fn comments(&mut self, comments: &[String], indent: usize) {
        for comment in comments {
            if !self.out.is_empty() && !self.out.ends_with('\n') {
                self.write("\n");
            }
            self.write(&format!("{:indent$}#{comment}\n", ""));
        }
    }

    fn newline(&mut self, indent: usize) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        self.out.extend(std::iter::repeat_n(' ', indent));
        self.column = indent;
    }

    fn write(&mut self, text: &str) {
        self.out.push_str(text);
        match text.rfind('\n') {
            Some(i) => self.column = text[i + 1..].chars().count(),
            None => self.column += text.chars().count(),
        }
    }
}

enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
}

/// How to write a scalar so that it reads back as the same value: plain when YAML allows
/// it and a reader would type it the same, single-quoted when it has no line breaks or
/// control characters, double-quoted (with escapes) otherwise.
fn style(scalar: &Scalar) -> Style {
    let text = scalar.text.as_str();
    let printable = text.chars().all(|c| c == ' ' || !c.is_control());
    if !printable || text.contains('\n') {
        return Style::DoubleQuoted;
    }
    let same_type = scalar.plain || !looks_typed(text);
    if same_type && plain_allowed(text) {
        Style::Plain
    } else {
        Style::SingleQuoted
    }
}

/// Whether `text` can be written as a plain block scalar (YAML's indicator rules).
fn plain_allowed(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    let second = text.chars().nth(1);
    let leading_indicator = match first {
        '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => true,
        '-' | '?' | ':' => second.is_none_or(|c| c == ' '),
        _ => false,
    };
    !leading_indicator
        && !text.starts_with("---")
        && !text.starts_with("...")
        && !text.starts_with(' ')
        && !text.ends_with([' ', ':'])
        && !text.contains(": ")
        && !text.contains(" #")
}

/// Whether a plain `text` would be read as something other than a string (a number, a
/// boolean, null, a date) by a YAML 1.1 or 1.2 reader. Errs towards quoting: quoting a
/// string never changes it.
fn looks_typed(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "yes",
        "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N",
        "=", "<<",
    ];
    let unsigned = text.trim_start_matches(['+', '-']);
    let numeric_start = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    let numeric_chars = unsigned.chars().all(|c| {
        c.is_ascii_hexdigit() || matches!(c, '_' | '.' | ':' | '-' | '+' | 'x' | 'o' | 'X' | 'O')
    });
    let special_float = matches!(
        unsigned,
        ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN"
    );
    WORDS.contains(&text) || special_float || (numeric_start && numeric_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_block_style_with_indentless_sequences() {
        let doc = Node::mapping(vec![(
            "top",
            Node::mapping(vec![
                (
                    "list",
                    Node::new(Value::Sequence(vec![Node::plain("a"), Node::plain("b")])),
                ),
                ("empty", Node::new(Value::Sequence(vec![]))),
                ("n", Node::plain("25")),
            ]),
        )]);
        assert_eq!(
            emit(&doc, &[]),
            "top:\n  list:\n  - a\n  - b\n  empty: []\n  n: 25\n"
        );
    }

    #[test]
    fn strings_are_quoted_only_when_needed() {
        let cases = [
            ("CPC Busy.", "CPC Busy."),
            ("Unit: cycles", "'Unit: cycles'"),
            ("it's: here", "'it''s: here'"),
            ("25", "'25'"),
            ("yes", "'yes'"),
            ("0x1F", "'0x1F'"),
            ("gfx90a", "gfx90a"),
            ("- item", "'- item'"),
            ("line\nbreak", "\"line\\nbreak\""),
        ];
        for (text, written) in cases {
            let doc = Node::mapping(vec![("k", Node::string(text))]);
            assert_eq!(emit(&doc, &[]), format!("k: {written}\n"), "{text:?}");
        }
    }

    #[test]
    fn long_strings_fold_at_the_first_space_past_the_width() {
        let words = vec!["word"; 40].join(" ");
        let doc = Node::mapping(vec![("description", Node::string(words.as_str()))]);
        let out = emit(&doc, &[]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        // "description: " is 13 columns, each word 5 more: the first line passes 120 after
        // the 22nd word, and the rest continue two columns in.
        assert_eq!(
            lines[0],
            format!("description: {}", vec!["word"; 22].join(" "))
        );
        assert_eq!(lines[1], format!("  {}", vec!["word"; 18].join(" ")));
    }

    #[test]
    fn comments_precede_their_node() {
        let mut item = Node::mapping(vec![("name", Node::plain("A"))]);
        item.comments = vec![" Block A".into()];
        let doc = Node::mapping(vec![("counters", Node::new(Value::Sequence(vec![item])))]);
        assert_eq!(
            emit(&doc, &[" end".into()]),
            "counters:\n# Block A\n- name: A\n# end\n"
        );
    }
}
