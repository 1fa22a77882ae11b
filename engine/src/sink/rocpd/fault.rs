//! What stops one of the sink's databases, and how it is reported.

use std::path::Path;

use crate::sink::SinkError;

/// What stops a database; reported as the sink's failure.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("dispatch id {0} is beyond the 2^40 dispatches a process may have in rocpd")]
    DispatchId(u64),
}

impl Fault {
    pub fn at(self, path: &Path) -> SinkError {
        let context = format!("writing {}", path.display());
        match self {
            Fault::Io(source) => SinkError::Io { context, source },
            Fault::Sqlite(source) => SinkError::Sqlite { context, source },
            reason => SinkError::Unrepresentable {
                context,
                reason: reason.to_string(),
            },
        }
    }
}
