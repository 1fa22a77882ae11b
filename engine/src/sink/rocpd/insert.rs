//! Many-row inserts. Each run of a statement costs SQLite about what adding a row does
//! (opening the table, ending and resetting the statement), so rows gather in memory and
//! go in `ROWS` at a time, through one statement with as many `VALUES` groups, prepared
//! once for the database's life.

use rusqlite::Connection;

use super::schema::Names;
use crate::sqlite::{Statement, Value};

/// Rows per statement run: enough that the statement's cost vanishes, few enough that
/// preparing it is quick and the rows waiting stay small.
const ROWS: usize = 64;

/// A row of values, each converted with `Value::from`.
macro_rules! row {
    ($($value:expr),* $(,)?) => {
        [$($crate::sqlite::Value::from($value)),*]
    };
}
pub(super) use row;

/// The inserts into one table.
pub struct Inserter<'c> {
    columns: usize,
    /// The insert of `ROWS` rows, and of one.
    many: Statement<'c>,
    one: Statement<'c>,
    /// Rows waiting for a full statement, or the end of the run.
    pending: Vec<Value>,
}

impl<'c> Inserter<'c> {
    /// Inserts of `columns` into `table`; `verb` is `INSERT`, `INSERT OR IGNORE`, …
    pub fn new(
        conn: &'c Connection,
        names: &Names,
        verb: &str,
        table: &str,
        columns: &[&str],
    ) -> rusqlite::Result<Inserter<'c>> {
        Ok(Inserter {
            columns: columns.len(),
            many: Statement::prepare(conn, &names.insert(verb, table, columns, ROWS))?,
            one: Statement::prepare(conn, &names.insert(verb, table, columns, 1))?,
            pending: Vec::with_capacity(ROWS * columns.len()),
        })
    }

    /// Adds a row, inserting the rows waiting when they fill a statement.
    #[inline]
    pub fn push<const N: usize>(&mut self, row: [Value; N]) -> rusqlite::Result<()> {
        debug_assert_eq!(N, self.columns);
        self.pending.extend(row);
        if self.pending.len() == ROWS * self.columns {
            self.many.execute_with(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Inserts the rows still waiting.
    pub fn flush(&mut self) -> rusqlite::Result<()> {
        for row in self.pending.chunks(self.columns) {
            self.one.execute_with(row)?;
        }
        self.pending.clear();
        Ok(())
    }
}
