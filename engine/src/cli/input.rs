//! Opening what a command reads: a raw spool or rocpd databases, in a time window; what
//! fails worded for the user.

use std::path::Path;

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::messages;
use crate::source::{Input, OpenFault, Source, WindowArgs};
use crate::wire::WireError;

pub(super) fn spool_error(path: &Path, e: WireError) -> Error {
    match e {
        WireError::Io(io) => Error::user(Diagnostic::error(format!(
            "cannot read spool `{}`: {io}",
            path.display()
        ))),
        other => Error::user(
            Diagnostic::error(format!("`{}`: {other}", path.display()))
                .hint("a spool is the run-….rfraw file `rocflow run` keeps next to its outputs; `last.rfraw` there is the newest"),
        ),
    }
}

/// Starts reading a spool or rocpd databases, in the time window if one is given.
pub(super) fn open_input(input: &Input, window: &WindowArgs) -> Result<Box<dyn Source>> {
    let mut noted = false;
    window.apply(
        || open_source(input, std::mem::replace(&mut noted, true)),
        |e| Error::user(Diagnostic::error(format!("time window: {e}"))),
    )
}

/// Reads the input again, as [`open_input`] did, for the post-steps (no note again).
pub(super) fn reopen(
    input: &Input,
    window: &WindowArgs,
) -> std::result::Result<Box<dyn Source>, String> {
    window
        .apply(
            || open_source(input, true),
            |e| Error::Runtime(e.to_string()),
        )
        .map_err(|e| e.to_string())
}

/// Starts reading a spool or rocpd databases; a note on what the databases hold that was
/// ignored goes to stderr, unless `noted` already.
fn open_source(input: &Input, noted: bool) -> Result<Box<dyn Source>> {
    let (source, note) = input.open().map_err(|e| match e {
        OpenFault::Spool(path, e) => spool_error(&path, e),
        OpenFault::Rocpd(e) if e.is_users() => Error::user(Diagnostic::error(e.to_string())),
        OpenFault::Rocpd(e) => Error::Runtime(e.to_string()),
    })?;
    if let Some(note) = note.filter(|_| !noted) {
        messages::diagnostic(&Diagnostic::notice(note));
    }
    Ok(source)
}
