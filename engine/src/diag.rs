//! Diagnostics: what a user is told when their input is wrong.
//!
//! Every user error carries one message, the place it points at (`file:line:col` and the
//! offending snippet) where there is one, an optional hint, and notes such as the chain of
//! templates that included the file. Rendering to text and to JSON happens in one place.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use annotate_snippets::renderer::DecorStyle;
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use serde::Serialize;

/// A text file a diagnostic can point into. Shared, because every value parsed from a file
/// keeps a handle to it for later diagnostics.
#[derive(Debug)]
pub struct SourceFile {
    /// The name shown to the user: the path as given, or `<template NAME>` for built-ins.
    name: String,
    text: String,
    line_starts: Vec<usize>,
    /// How the file came to be read, e.g. the chain of templates that included it; shown
    /// under every diagnostic that points into it.
    notes: Vec<String>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        Self::with_notes(name, text, Vec::new())
    }

    /// A file with notes on how it was reached (see [`SourceFile::notes`]).
    pub fn with_notes(
        name: impl Into<String>,
        text: impl Into<String>,
        notes: Vec<String>,
    ) -> Arc<Self> {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Arc::new(SourceFile {
            name: name.into(),
            text,
            line_starts,
            notes,
        })
    }

    /// Reads a file from disk; the displayed name is the path as the user gave it.
    pub fn read(path: &Path) -> std::io::Result<Arc<Self>> {
        Ok(Self::new(
            path.display().to_string(),
            std::fs::read_to_string(path)?,
        ))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The byte offset of a one-based line and column as parsers count them (bytes from
    /// the line's start), kept inside the line and on a character boundary.
    pub fn offset(&self, line: usize, column: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |e| start + e);
        let mut offset = (start + column.saturating_sub(1)).min(end);
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// The whole lines `range` touches, as a byte range, and the one-based number of the
    /// first: what a snippet needs of the file.
    fn lines(&self, range: &Range<usize>) -> (usize, Range<usize>) {
        let line_of = |offset: usize| {
            self.line_starts
                .partition_point(|&s| s <= offset.min(self.text.len()))
                - 1
        };
        let (first, last) = (line_of(range.start), line_of(range.end));
        let end = (self.line_starts.get(last + 1)).map_or(self.text.len(), |&next| next);
        (first + 1, self.line_starts[first]..end)
    }

    /// One-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let column = self.text[start..offset].chars().count() + 1;
        (line + 1, column)
    }
}

/// The most source text one snippet shows; a span on longer lines is named by its line
/// and column instead.
const MAX_SNIPPET: usize = 4096;

/// The longest name "did you mean" looks for a close match of.
const MAX_MISSPELT: usize = 256;

/// A place in a source file.
#[derive(Debug, Clone)]
pub struct Span {
    pub file: Arc<SourceFile>,
    pub range: Range<usize>,
    /// How the text here reached the value a diagnostic is about, when that happened
    /// elsewhere (a parameter's value, filled in where a template uses it): shown as a
    /// note under every diagnostic that points here.
    note: Option<Arc<str>>,
}

impl Span {
    pub fn new(file: &Arc<SourceFile>, range: Range<usize>) -> Self {
        Span {
            file: Arc::clone(file),
            range,
            note: None,
        }
    }

    /// The span with `note` on how its text was used (see [`Span::note`]).
    pub fn noted(self, note: impl Into<Arc<str>>) -> Self {
        Span {
            note: Some(note.into()),
            ..self
        }
    }

    /// `range` of the same file, with the same note: a part of this span's text.
    pub fn within(&self, range: Range<usize>) -> Self {
        Span {
            range,
            ..self.clone()
        }
    }

    /// How the text here was used, if elsewhere.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// `file:line:col` of the start of the span.
    pub fn position(&self) -> String {
        let (line, col) = self.file.line_col(self.range.start);
        format!("{}:{line}:{col}", self.file.name())
    }

    /// The source text the span covers.
    pub fn snippet(&self) -> &str {
        &self.file.text()[self.range.clone()]
    }
}

/// One error (or warning) about the user's input.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Option<Span>,
    pub hint: Option<String>,
    /// Context such as "in template `base`, included from a.toml:3:12".
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    /// Worth knowing, not a problem: which team template stands in for a shipped one.
    Note,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: None,
            hint: None,
            notes: Vec::new(),
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Self::error(message)
        }
    }

    pub fn notice(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Note,
            ..Self::error(message)
        }
    }

    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint.or(self.hint);
        self
    }

    /// Sets the hint unless one is set already.
    pub fn or_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint.get_or_insert_with(|| hint.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col` of the place the diagnostic points at, if any.
    pub fn position(&self) -> Option<String> {
        self.span.as_ref().map(Span::position)
    }

    /// Renders the diagnostic as text with the offending snippet, for a terminal.
    pub fn render(&self, color: bool) -> String {
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Note => Level::NOTE,
        };
        let title = level.primary_title(&self.message);
        let mut group = match &self.span {
            // Only the lines the span touches go to the renderer, whose cost grows with
            // the source it is given: thousands of errors in a large file stay quick.
            Some(span) => match span.file.lines(&span.range) {
                (line, lines) if lines.len() <= MAX_SNIPPET => {
                    let at = |offset: usize| offset.clamp(lines.start, lines.end) - lines.start;
                    title.element(
                        Snippet::source(&span.file.text()[lines.clone()])
                            .line_start(line)
                            .path(span.file.name())
                            .fold(true)
                            .annotation(
                                AnnotationKind::Primary
                                    .span(at(span.range.start)..at(span.range.end)),
                            ),
                    )
                }
                // Lines too long to show are named instead.
                _ => {
                    let (line, column) = span.file.line_col(span.range.start);
                    title.element(
                        Level::NOTE.message(format!("at {}:{line}:{column}", span.file.name())),
                    )
                }
            },
            None => Group::with_title(title),
        };
        for note in self.all_notes() {
            group = group.element(Level::NOTE.message(note));
        }
        if let Some(hint) = &self.hint {
            group = group.element(Level::HELP.message(hint));
        }
        let renderer = if color {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        renderer.decor_style(DecorStyle::Ascii).render(&[group])
    }

    /// The machine-readable form used by `--format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let (file, line, column) = match &self.span {
            Some(span) => {
                let (line, column) = span.file.line_col(span.range.start);
                (Some(span.file.name().to_owned()), Some(line), Some(column))
            }
            None => (None, None, None),
        };
        serde_json::json!({
            "severity": self.severity,
            "message": self.message,
            "file": file,
            "line": line,
            "column": column,
            "snippet": self.span.as_ref().map(Span::snippet),
            "hint": self.hint,
            "notes": self.all_notes().collect::<Vec<_>>(),
        })
    }

    /// The diagnostic's own notes, then those of the place it points at: how its text was
    /// used, and how its file was reached.
    fn all_notes(&self) -> impl Iterator<Item = &str> {
        let span_notes = self.span.iter().flat_map(|s| {
            let file_notes = s.file.notes().iter().map(String::as_str);
            s.note().into_iter().chain(file_notes)
        });
        self.notes.iter().map(String::as_str).chain(span_notes)
    }
}

impl fmt::Display for Diagnostic {
    /// One line: `file:line:col: message (hint)`; handy in logs and test assertions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(position) = self.position() {
            write!(f, "{position}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

/// Suggests the closest of `candidates` to a misspelt `name`, for "did you mean" hints: a
/// small edit distance (typos, swapped letters) or a strong common prefix counts as close.
/// A name longer than [`MAX_MISSPELT`] is no typo of a name: the edit distance, quadratic
/// in the lengths, is not worked out for it.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    if name.len() > MAX_MISSPELT {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let max_edits = (lower.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .filter_map(|c| {
            let other = c.to_ascii_lowercase();
            let edits = strsim::damerau_levenshtein(&lower, &other);
            let similarity = strsim::jaro_winkler(&lower, &other);
            (edits <= max_edits || similarity > 0.8).then_some((edits, similarity, c))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|(_, _, c)| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_snippet_shows_its_lines_with_their_numbers_in_a_large_file() {
        let text: String = (1..=20_000).map(|i| format!("key{i} = {i}\n")).collect();
        let file = SourceFile::new("big.toml", &text);
        let start = text.find("key12345 ").unwrap();
        let d = Diagnostic::error("bad key").at(Some(Span::new(&file, start..start + 8)));
        let rendered = d.render(false);
        assert!(rendered.contains("big.toml:12345:1"), "{rendered}");
        assert!(rendered.contains("12345 | key12345 = 12345"), "{rendered}");
        assert!(!rendered.contains("key12346"), "{rendered}");
        // Many errors in one large file: each renders its own lines only.
        let started = Instant::now();
        for _ in 0..2000 {
            d.render(false);
        }
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_span_on_a_line_too_long_to_show_is_named_by_line_and_column() {
        let text = format!("a = 1\nname = \"{}\"\n", "x".repeat(10 * MAX_SNIPPET));
        let file = SourceFile::new("long.toml", &text);
        let d = Diagnostic::error("too long").at(Some(Span::new(&file, 7..11)));
        let rendered = d.render(false);
        assert!(rendered.contains("at long.toml:2:2"), "{rendered}");
        assert!(rendered.len() < 1000, "{rendered}");
    }

    #[test]
    fn a_name_too_long_to_be_a_typo_gets_no_suggestion() {
        assert_eq!(
            did_you_mean("hipMemcyp", ["hipMemcpy", "hipMalloc"]),
            Some("did you mean `hipMemcpy`?".into())
        );
        let long = "hipMemcpy".repeat(5000);
        let started = Instant::now();
        assert_eq!(did_you_mean(&long, ["hipMemcpy"; 500]), None);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

/// One step of a path into the pipeline document: a table key or an array index. A
/// diagnostic's place is found from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl Step<'_> {
    /// A path into the tree the way the TOML reads: `context[1].buffer.size`.
    pub fn dotted<'a>(steps: impl IntoIterator<Item = Step<'a>>) -> String {
        let mut out = String::new();
        for step in steps {
            match step {
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

impl<'a> From<&'a str> for Step<'a> {
    fn from(key: &'a str) -> Self {
        Step::Key(key)
    }
}

impl From<usize> for Step<'_> {
    fn from(index: usize) -> Self {
        Step::Index(index)
    }
}
