//! What a user is told when a definition file is wrong, and where.
//!
//! The crate stands alone, so it has its own small diagnostic type: a message, the place in
//! a file it points at (byte range, with line and column on demand), a hint and notes. An
//! application renders it however it likes; [`fmt::Display`] gives `path:line:col: message`.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The text of a file that diagnostics point into, with the name it is shown under.
pub struct Source {
    path: PathBuf,
    text: String,
    line_starts: Vec<usize>,
    /// Byte offset of each character, for text that is not all ASCII (where the two differ).
    char_offsets: Option<Vec<usize>>,
}

impl Source {
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Arc<Self> {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let char_offsets =
            (!text.is_ascii()).then(|| text.char_indices().map(|(i, _)| i).collect());
        Arc::new(Source {
            path: path.into(),
            text,
            line_starts,
            char_offsets,
        })
    }

    /// Reads a file; a missing or unreadable file is an [`Error::Io`].
    pub fn read(path: &Path) -> Result<Arc<Self>, Error> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Self::new(path, text)),
            Err(source) => Err(Error::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// One-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        (line + 1, self.text[start..offset].chars().count() + 1)
    }

    /// The byte offset of a character index (YAML parsers count characters).
    pub(crate) fn byte_offset(&self, char_index: usize) -> usize {
        match &self.char_offsets {
            None => char_index.min(self.text.len()),
            Some(offsets) => offsets.get(char_index).copied().unwrap_or(self.text.len()),
        }
    }
}

impl fmt::Debug for Source {
    /// The path only: every location holds its source, and the text would drown the rest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Source").field(&self.path).finish()
    }
}

/// A byte range in a source file.
#[derive(Debug, Clone)]
pub struct Location {
    pub source: Arc<Source>,
    pub span: Range<usize>,
}

impl Location {
    pub fn new(source: &Arc<Source>, span: Range<usize>) -> Self {
        Location {
            source: Arc::clone(source),
            span,
        }
    }

    /// One-based line and column of the start.
    pub fn line_col(&self) -> (usize, usize) {
        self.source.line_col(self.span.start)
    }
}

impl fmt::Display for Location {
    /// `path:line:col`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, col) = self.line_col();
        write!(f, "{}:{line}:{col}", self.source.path().display())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in a definition file.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub location: Option<Location>,
    pub hint: Option<String>,
    /// Further context, such as where a duplicate was first defined.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            location: None,
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

    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
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

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    /// One line: `path:line:col: error: message (hint: …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{severity}: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

/// Why definitions could not be loaded or written.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read or written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// No definition file was named and none exists at the default locations.
    NotFound { searched: Vec<PathBuf> },
    /// The file is wrong; every problem found, each with its place.
    Invalid(Vec<Diagnostic>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::NotFound { searched } => {
                write!(f, "no counter definitions found; looked at")?;
                searched
                    .iter()
                    .try_for_each(|p| write!(f, "\n  {}", p.display()))
            }
            Error::Invalid(diagnostics) => {
                let mut lines = diagnostics.iter();
                if let Some(first) = lines.next() {
                    write!(f, "{first}")?;
                }
                lines.try_for_each(|d| write!(f, "\n{d}"))
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<Vec<Diagnostic>> for Error {
    fn from(diagnostics: Vec<Diagnostic>) -> Self {
        Error::Invalid(diagnostics)
    }
}

impl From<Diagnostic> for Error {
    fn from(diagnostic: Diagnostic) -> Self {
        Error::Invalid(vec![diagnostic])
    }
}

/// Suggests the closest of `candidates` to a misspelt `name` ("did you mean …?").
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let max_edits = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(edits, _)| *edits <= max_edits)
        .min_by_key(|(edits, _)| *edits)
        .map(|(_, c)| format!("did you mean `{c}`?"))
}
