//! Where a command's text goes: its output to stdout, and rocflow's own report of a run
//! to stderr.

use std::io::Write;

use crate::error::{Error, Result};

/// Writes command output to stdout; a closed pipe (`rocflow … | head`) ends quietly.
pub(super) fn print(text: &str) -> Result<()> {
    match std::io::stdout()
        .lock()
        .write_all(crate::printable::lines(text).as_bytes())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other.map_err(Error::io("writing to stdout")),
    }
}

/// Writes rocflow's own report of a command that ran an application to stderr: stdout is
/// the application's. A stderr that cannot be written leaves nowhere to say so.
pub(super) fn eprint(text: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(crate::printable::lines(text).as_bytes());
}
