//! Messages that do not end the command: warnings, notes, and errors rocflow goes on after
//! (a sink failed; the others still wrote their outputs). Errors that end a command travel
//! as [`crate::error::Error`] to `main` instead.
//!
//! [`emit`] is the one place that writes them, so that whatever shows on stderr while a
//! run goes on (a progress line) can take them over there. An error sets a flag that
//! [`errored`] reads: the command then exits with 1 instead of succeeding.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::diag::{Diagnostic, Severity};

/// Set by the first error message.
static ERRORED: AtomicBool = AtomicBool::new(false);

/// Set by `--quiet`: notes are not written (see [`quiet`]).
static QUIET: AtomicBool = AtomicBool::new(false);

/// How much a message matters, and how it is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Something failed and the command goes on; it will not succeed.
    Error,
    Warning,
    Note,
    /// What the runner's threads see while the application runs (a frame it cannot
    /// decode, a stream that breaks off), labelled as rocflow's since it comes between the
    /// application's own lines.
    Runner,
    /// How far the work got, where stderr is not a terminal (see [`crate::progress`]).
    Progress,
}

/// One message, as it is written: `error: …`, `warning: …`, a diagnostic with its snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub level: Level,
    /// As written, label included.
    text: String,
}

impl Message {
    /// `text` after the level's label.
    pub fn new(level: Level, text: impl fmt::Display) -> Message {
        let label = match level {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
            Level::Runner => "rocflow",
            Level::Progress => "progress",
        };
        Message {
            level,
            text: format!("{label}: {text}"),
        }
    }

    /// A diagnostic with its source snippet (in color on a terminal), and a blank line
    /// after it as between the errors of a pipeline.
    pub fn diagnostic(diagnostic: &Diagnostic) -> Message {
        let level = match diagnostic.severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
            Severity::Note => Level::Note,
        };
        let color = std::io::stderr().is_terminal();
        Message {
            level,
            text: format!("{}\n", diagnostic.render(color)),
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Writes a message on its own line of stderr; an error marks the command as failed.
pub fn emit(message: &Message) {
    if message.level == Level::Error {
        ERRORED.store(true, Ordering::Relaxed);
    }
    if message.level == Level::Note && QUIET.load(Ordering::Relaxed) {
        return;
    }
    // Nowhere is left to report a stderr that cannot be written.
    crate::screen::suspend(|| {
        let _ = writeln!(std::io::stderr().lock(), "{message}");
    });
}

/// `error: …`: the command goes on, and will exit with 1.
pub fn error(text: impl fmt::Display) {
    emit(&Message::new(Level::Error, text));
}

pub fn warning(text: impl fmt::Display) {
    emit(&Message::new(Level::Warning, text));
}

pub fn note(text: impl fmt::Display) {
    emit(&Message::new(Level::Note, text));
}

/// `rocflow: …`, from the runner's threads (see [`Level::Runner`]).
pub fn runner(text: impl fmt::Display) {
    emit(&Message::new(Level::Runner, text));
}

pub fn diagnostic(diagnostic: &Diagnostic) {
    emit(&Message::diagnostic(diagnostic));
}

/// From now on only what is wrong is written: warnings, errors, and the runner's word on
/// the streams; notes are not (`--quiet`).
pub fn quiet() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Whether an error message was emitted: the command must not report success.
pub fn errored() -> bool {
    ERRORED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_written_with_their_label() {
        let cases = [
            (Level::Error, "error: sink `s`: disk full"),
            (Level::Warning, "warning: sink `s`: disk full"),
            (Level::Note, "note: sink `s`: disk full"),
            (Level::Runner, "rocflow: sink `s`: disk full"),
            (Level::Progress, "progress: sink `s`: disk full"),
        ];
        for (level, written) in cases {
            let message = Message::new(level, "sink `s`: disk full");
            assert_eq!(message.to_string(), written);
        }
    }

    /// A diagnostic brings its own label and snippet, and the blank line that separates it
    /// from the next.
    #[test]
    fn a_diagnostic_is_written_rendered() {
        let warning = Diagnostic::warning("the spool ends early").hint("rerun");
        let message = Message::diagnostic(&warning);
        assert_eq!(message.level, Level::Warning);
        let color = std::io::stderr().is_terminal();
        assert_eq!(message.to_string(), format!("{}\n", warning.render(color)));
        assert!(
            warning
                .render(false)
                .starts_with("warning: the spool ends early")
        );
    }

    /// Only errors fail the command (the flag is the process's: set once, never cleared).
    #[test]
    fn an_error_marks_the_command_failed() {
        warning("not yet");
        note("nor this");
        runner("nor this");
        // Other tests in this process may have set it; a warning never does.
        let before = errored();
        error("this does");
        assert!(errored(), "before: {before}");
    }
}
