//! The one error type that reaches `main`, and the exit code each kind maps to.

use std::process::ExitCode;

use crate::diag::Diagnostic;

/// Everything a command can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input is wrong: exit code 2, nothing written.
    #[error("{} error(s) in the input", .0.len())]
    User(Vec<Diagnostic>),
    /// Something failed while running; not the user's input.
    #[error("{0}")]
    Runtime(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The stages stopped before the sinks could finish.
    #[error(transparent)]
    Stage(#[from] crate::stage::StageError),
}

impl Error {
    /// A single user error.
    pub fn user(diagnostic: Diagnostic) -> Self {
        Error::User(vec![diagnostic])
    }

    /// An I/O failure with what was being done, e.g. "writing out/trace.pftrace".
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Error::Io { context, source }
    }

    /// User errors exit with 2 (as the conventions promise), everything else with 1.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::User(_) => ExitCode::from(2),
            Error::Runtime(_) | Error::Io { .. } | Error::Stage(_) => ExitCode::from(1),
        }
    }
}

impl From<Diagnostic> for Error {
    fn from(diagnostic: Diagnostic) -> Self {
        Error::user(diagnostic)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
