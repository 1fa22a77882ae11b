//! One counter and how it is obtained on each architecture: counted by the hardware, or
//! derived by an expression over other counters. The schema readers build them; the
//! definitions hold them.

use crate::diagnostic::Location;
use crate::expr::{self, Expr, ParseError};

/// One counter: its name, what it means, and how it is computed per architecture.
#[derive(Debug, Clone)]
pub struct Counter {
    pub name: String,
    pub description: String,
    /// Reserved by rocprofiler-sdk (always empty in its files); kept as read.
    pub properties: Vec<String>,
    /// Each architecture appears in at most one definition.
    pub definitions: Vec<Definition>,
    /// Where the name is written.
    pub location: Location,
}

impl Counter {
    /// The definition that applies on `arch`, if the counter exists there.
    pub fn definition_for(&self, arch: &str) -> Option<&Definition> {
        self.definitions
            .iter()
            .find(|d| d.architectures.iter().any(|a| a == arch))
    }

    /// Every architecture the counter is defined on.
    pub fn architectures(&self) -> impl Iterator<Item = &str> {
        self.definitions
            .iter()
            .flat_map(|d| d.architectures.iter().map(String::as_str))
    }
}

/// How a counter is obtained on a group of architectures.
#[derive(Debug, Clone)]
pub struct Definition {
    pub architectures: Vec<String>,
    pub kind: DefinitionKind,
    pub location: Location,
}

/// A counter is either counted by the hardware or computed from other counters; never both.
#[derive(Debug, Clone)]
pub enum DefinitionKind {
    Hardware { block: String, event: u64 },
    Derived { expression: ExpressionSource },
}

/// A derived counter's expression as written, where, and parsed.
#[derive(Debug, Clone)]
pub struct ExpressionSource {
    pub text: String,
    location: Location,
    /// Whether the file holds `text` byte for byte at `location` (a plain or simply quoted
    /// scalar), so that a column inside the expression maps to a column in the file.
    verbatim: bool,
    /// Parsed when loaded; a parse error is kept for `check` to report rather than failing
    /// the load, so that one bad counter does not make the others unusable.
    parsed: Result<Expr, ParseError>,
}

impl ExpressionSource {
    pub(crate) fn new(text: String, location: Location, verbatim: bool) -> Self {
        let parsed = expr::parse(&text);
        ExpressionSource {
            text,
            location,
            verbatim,
            parsed,
        }
    }

    pub fn parsed(&self) -> Result<&Expr, &ParseError> {
        self.parsed.as_ref()
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The place in the file of a byte range of the expression (the whole scalar when the
    /// file writes it differently, e.g. folded over lines).
    pub fn location_of(&self, range: std::ops::Range<usize>) -> Location {
        match self.verbatim {
            true => {
                let start = self.location.span.start;
                Location::new(
                    &self.location.source,
                    start + range.start..start + range.end,
                )
            }
            false => self.location.clone(),
        }
    }
}
