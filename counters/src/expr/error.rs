//! Why an expression does not parse, and where: what the lexer and the parser fail with.

use std::fmt;
use std::ops::Range;

/// Why an expression does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    span: Range<usize>,
    message: String,
    hint: Option<String>,
}

impl ParseError {
    pub(crate) fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        ParseError {
            span,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// Byte offset in the expression where the problem is.
    pub fn offset(&self) -> usize {
        self.span.start
    }

    /// Byte range in the expression of the offending text.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl fmt::Display for ParseError {
    /// `column N: message`, the column counted from 1.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.span.start + 1, self.message)
    }
}

impl std::error::Error for ParseError {}
