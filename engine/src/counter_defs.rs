//! The bridge to the counters crate: its diagnostics and errors as rocflow's.

use std::collections::HashMap;
use std::sync::Arc;

use rocflow_counters::{self as counters, Source};

use crate::diag::{Diagnostic, SourceFile, Span};

/// The files diagnostics point into, each read into rocflow's [`SourceFile`] once.
#[derive(Default)]
pub struct Files(HashMap<*const Source, Arc<SourceFile>>);

impl Files {
    pub fn file(&mut self, source: &Arc<Source>) -> Arc<SourceFile> {
        let file = self
            .0
            .entry(Arc::as_ptr(source))
            .or_insert_with(|| SourceFile::new(source.path().display().to_string(), source.text()));
        Arc::clone(file)
    }

    pub fn diagnostic(&mut self, d: &counters::Diagnostic) -> Diagnostic {
        let base = match d.severity {
            counters::Severity::Error => Diagnostic::error(&d.message),
            counters::Severity::Warning => Diagnostic::warning(&d.message),
        };
        let span = d
            .location
            .as_ref()
            .map(|l| Span::new(&self.file(&l.source), l.span.clone()));
        let mut diagnostic = base.at(span).maybe_hint(d.hint.clone());
        for note in &d.notes {
            diagnostic = diagnostic.note(note);
        }
        diagnostic
    }
}
