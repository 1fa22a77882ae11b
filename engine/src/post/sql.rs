//! The `sql` post-step: one query on a SQLite database, its rows written as CSV, Markdown
//! or JSON. Whatever the query says, it only reads (a database opened read-only still lets
//! `VACUUM INTO` and `ATTACH` write other files) and it stops at its time limit.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use evalexpr::Value;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::plan::Bounds;
use crate::summary::{self, Format};
use crate::table::Table;
use crate::units::format_duration;

use super::done::Done;

/// SQLite virtual machine instructions between two looks at the clock.
const INSTRUCTIONS_PER_CHECK: i32 = 10_000;

/// Pragmas that only report on the schema, which reading a database may need.
const SCHEMA_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];

/// Why a `sql` step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    #[error("no database: the pipeline has no rocpd sink")]
    NoDatabase,
    /// The step's `timeout` is no duration.
    #[error("timeout: {0}")]
    Timeout(crate::units::UnitError),
    #[error("opening {}: {source}", path.display())]
    Open {
        path: std::path::PathBuf,
        source: rusqlite::Error,
    },
    /// The query would change something: what it does, to end "this query …".
    #[error("sql steps only read, and this query {0}")]
    Writes(String),
    #[error("the query ran past its {} limit", format_duration(.0.as_nanos() as u64))]
    TimeLimit(Duration),
    /// A bounded query's result passed its bound: what it passed ("1000000 rows").
    #[error(
        "the query's result passes {0}, the most read for a pipeline from a spool \
         (replay it with --trust-plan if you trust whoever made it)"
    )]
    Bounded(String),
    /// rocflow was asked to stop while the query ran.
    #[error("{}", crate::cancel::STOPPED)]
    Stopped,
    #[error("SQLite: {0}")]
    Sqlite(rusqlite::Error),
    #[error("writing {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A step's query.
pub(super) struct Query<'a> {
    /// The step's name, which the table of rows takes.
    pub name: &'a str,
    pub text: &'a str,
    pub limit: Duration,
    /// How much of the result is read, if not all of it.
    pub bounds: Option<Bounds>,
}

impl Query<'_> {
    /// Runs the query on `database` and writes its rows to `path`; the format is `format`,
    /// else the path's extension's (`.md`, `.json`), else CSV.
    pub fn run(
        &self,
        database: &Path,
        path: &Path,
        format: Option<&str>,
    ) -> Result<Done, SqlError> {
        let table = self.table(database)?;
        let extension = path.extension().and_then(|e| e.to_str());
        let format = format
            .or(extension)
            .and_then(Format::from_name)
            .unwrap_or(Format::Csv);
        let text = match format {
            Format::Csv => summary::csv(&table),
            other => summary::render(std::slice::from_ref(&table), other),
        };
        crate::atomic::write(path, text).map_err(|source| SqlError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Done {
            paths: vec![path.to_path_buf()],
            ..Done::default()
        })
    }

    /// The query's rows, as a table named after the step.
    fn table(&self, database: &Path) -> Result<Table, SqlError> {
        let refused = Arc::new(OnceLock::new());
        let connection = open(database, Instant::now() + self.limit, Arc::clone(&refused))
            .map_err(|source| SqlError::Open {
                path: database.to_path_buf(),
                source,
            })?;
        let too_big = |bounds: Bounds| SqlError::Bounded(format!("{} MiB", bounds.bytes >> 20));
        let why = |e: rusqlite::Error| match (refused.get(), self.bounds) {
            (Some(what), _) => SqlError::Writes(what.clone()),
            (None, Some(bounds)) if e.sqlite_error_code() == Some(ErrorCode::TooBig) => {
                SqlError::Bounded(format!("a value's share of {} MiB", bounds.bytes >> 20))
            }
            (None, _) if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) => {
                if crate::cancel::requested() {
                    return SqlError::Stopped;
                }
                SqlError::TimeLimit(self.limit)
            }
            (None, _) => SqlError::Sqlite(e),
        };
        let mut statement = connection.prepare(self.text).map_err(&why)?;
        // What no authorizer sees, such as VACUUM.
        if !statement.readonly() {
            return Err(SqlError::Writes("writes".into()));
        }
        let columns: Vec<String> = statement
            .column_names()
            .iter()
            .map(|c| (*c).to_owned())
            .collect();
        let width = columns.len();
        if let Some(bounds) = self.bounds {
            // SQLite holds a row's values all at once: each may take its column's share of
            // the bound, inside SQLite as in the result. (With the whole bound each, a row
            // of 2,000 columns would hold 128 GiB.)
            let share = i32::try_from(bounds.bytes / width.max(1)).unwrap_or(i32::MAX);
            connection
                .set_limit(Limit::SQLITE_LIMIT_LENGTH, share)
                .map_err(SqlError::Sqlite)?;
        }
        let mut read = statement.query([]).map_err(&why)?;
        let (mut rows, mut bytes) = (Vec::new(), 0);
        while let Some(row) = read.next().map_err(&why)? {
            let values = (0..width)
                .map(|i| row.get_ref(i).map(value))
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(&why)?;
            if let Some(bounds) = self.bounds {
                if rows.len() == bounds.rows {
                    return Err(SqlError::Bounded(format!("{} rows", bounds.rows)));
                }
                bytes += values.iter().map(|(_, size)| size).sum::<usize>();
                if bytes > bounds.bytes {
                    return Err(too_big(bounds));
                }
            }
            rows.push(values.into_iter().map(|(value, _)| value).collect());
        }
        Ok(Table {
            name: self.name.to_owned(),
            columns,
            rows,
        })
    }
}

/// A value of a result, and the bytes it counts: 8, and its text's or blob's length on top
/// (a blob is written as its size).
fn value(value: ValueRef<'_>) -> (Value, usize) {
    match value {
        ValueRef::Null => (Value::Empty, 8),
        ValueRef::Integer(v) => (Value::Int(v), 8),
        ValueRef::Real(v) => (Value::Float(v), 8),
        ValueRef::Text(t) => (
            Value::String(String::from_utf8_lossy(t).into_owned()),
            8 + t.len(),
        ),
        ValueRef::Blob(b) => (Value::String(format!("<{} bytes>", b.len())), 8 + b.len()),
    }
}

/// Opens `database` read-only, with an authorizer that refuses all but reading (and puts
/// what it refused first in `refused`) and a progress handler that interrupts the query
/// at `deadline`, or when rocflow is asked to stop.
fn open(
    database: &Path,
    deadline: Instant,
    refused: Arc<OnceLock<String>>,
) -> rusqlite::Result<Connection> {
    let connection = Connection::open_with_flags(
        database,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.authorizer(Some(move |context: AuthContext<'_>| {
        match context.action {
            AuthAction::Select
            | AuthAction::Read { .. }
            | AuthAction::Function { .. }
            | AuthAction::Recursive => Authorization::Allow,
            AuthAction::Pragma { pragma_name, .. } if SCHEMA_PRAGMAS.contains(&pragma_name) => {
                Authorization::Allow
            }
            action => {
                // The first refusal is the one the error is about.
                let _ = refused.set(describe(action));
                Authorization::Deny
            }
        }
    }))?;
    connection.progress_handler(
        INSTRUCTIONS_PER_CHECK,
        Some(move || Instant::now() >= deadline || crate::cancel::requested()),
    )?;
    Ok(connection)
}

/// What a refused action does, to end "this query …".
fn describe(action: AuthAction<'_>) -> String {
    match action {
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name } => format!("writes to `{table_name}`"),
        AuthAction::Attach { filename } => format!("attaches `{filename}`"),
        AuthAction::Detach { database_name } => format!("detaches `{database_name}`"),
        AuthAction::Pragma { pragma_name, .. } => format!("runs PRAGMA {pragma_name}"),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            "controls transactions".into()
        }
        _ => "changes the database".into(),
    }
}
