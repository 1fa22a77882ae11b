//! Many-row inserts. Each run of a statement costs SQLite about what adding a row does
//! (opening the table, ending and resetting the statement), so rows gather in memory and
//! go in `ROWS` at a time, through one statement with as many `VALUES` groups, prepared
//! once for the database's life.

use rusqlite::Connection;
use rusqlite::ffi::ErrorCode;

use super::schema::Names;
use crate::sqlite::{Statement, Value};

/// Rows per statement run: enough that the statement's cost vanishes, few enough that
/// preparing it is quick and the rows waiting stay small.
const ROWS: usize = 64;

/// What an insert does with a row whose id another row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// Fails, which fails the load. The statement is `INSERT OR FAIL`, not the default
    /// `ABORT`: undoing what an aborted statement of many rows put in needs a statement
    /// journal, a copy of every page before the statement first changes it; a database
    /// whose load failed is discarded anyway.
    Fail,
    /// Keeps the row that holds the id.
    Ignore,
    /// Replaces the row that holds the id. Rows go in as with [`Conflict::Fail`], and a
    /// statement that meets a taken id runs again row by row, replacing: `OR REPLACE` on
    /// every row costs more (1.4 % of a load's instructions) than a retry where conflicts
    /// are rare.
    Replace,
}

impl Conflict {
    /// The verb of the statements of many rows, and of one.
    fn verbs(self) -> (&'static str, &'static str) {
        match self {
            Conflict::Fail => ("INSERT OR FAIL", "INSERT OR FAIL"),
            Conflict::Ignore => ("INSERT OR IGNORE", "INSERT OR IGNORE"),
            Conflict::Replace => ("INSERT OR FAIL", "INSERT OR REPLACE"),
        }
    }
}

/// A row of values, each converted with `Value::from`.
macro_rules! row {
    ($($value:expr),* $(,)?) => {
        [$($crate::sqlite::Value::from($value)),*]
    };
}
pub(super) use row;

/// The inserts into one table.
pub struct Inserter<'c> {
    conflict: Conflict,
    columns: usize,
    /// The insert of `ROWS` rows, and of one.
    many: Statement<'c>,
    one: Statement<'c>,
    /// Rows waiting for a full statement, or the end of the run.
    pending: Vec<Value>,
}

impl<'c> Inserter<'c> {
    /// Inserts of `columns` into `table`.
    pub fn new(
        conn: &'c Connection,
        names: &Names,
        conflict: Conflict,
        table: &str,
        columns: &[&str],
    ) -> rusqlite::Result<Inserter<'c>> {
        let (many, one) = conflict.verbs();
        Ok(Inserter {
            conflict,
            columns: columns.len(),
            many: Statement::prepare(conn, &names.insert(many, table, columns, ROWS))?,
            one: Statement::prepare(conn, &names.insert(one, table, columns, 1))?,
            pending: Vec::with_capacity(ROWS * columns.len()),
        })
    }

    /// Adds a row, inserting the rows waiting when they fill a statement.
    #[inline]
    pub fn push<const N: usize>(&mut self, row: [Value; N]) -> rusqlite::Result<()> {
        debug_assert_eq!(N, self.columns);
        self.pending.extend(row);
        if self.pending.len() == ROWS * self.columns {
            match self.many.execute_with(&self.pending) {
                // The rows the statement put in before the conflict are replaced by
                // themselves.
                Err(e) if self.conflict == Conflict::Replace && taken(&e) => self.flush()?,
                done => done?,
            }
            self.pending.clear();
        }
        Ok(())
    }

    /// Inserts the rows still waiting, one at a time.
    pub fn flush(&mut self) -> rusqlite::Result<()> {
        for row in self.pending.chunks(self.columns) {
            self.one.execute_with(row)?;
        }
        self.pending.clear();
        Ok(())
    }
}

/// Whether `e` is a constraint's: an id taken, where a retry replaces; any other fails
/// again in the retry.
fn taken(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(e, _) if e.code == ErrorCode::ConstraintViolation)
}

#[cfg(test)]
mod tests {
    use super::super::database::in_memory as database;
    use super::super::schema;
    use super::*;

    fn events(conn: &Connection, names: &Names) -> Vec<(i64, i64)> {
        let sql = format!("SELECT id, category_id FROM {}", names.table(schema::EVENT));
        let mut rows = conn.prepare(&sql).unwrap();
        let rows = rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.map(Result::unwrap).collect()
    }

    #[test]
    fn rows_that_meet_a_taken_id_replace_its_row_when_asked_to() {
        let (conn, names) = database();
        let columns = ["id", "category_id"];
        let inserter = |conflict| Inserter::new(&conn, &names, conflict, schema::EVENT, &columns);
        let mut bare = inserter(Conflict::Ignore).unwrap();
        bare.push(row![5_i64, 1_i64]).unwrap();
        bare.push(row![5_i64, 2_i64]).unwrap();
        bare.flush().unwrap();
        assert_eq!(events(&conn, &names), [(5, 1)]);

        let mut full = inserter(Conflict::Replace).unwrap();
        // A whole statement of rows, the fifth of which meets the bare one, then one more.
        for id in 1..=ROWS as i64 + 1 {
            full.push(row![id, 100 + id]).unwrap();
        }
        full.flush().unwrap();
        let want: Vec<(i64, i64)> = (1..=ROWS as i64 + 1).map(|id| (id, 100 + id)).collect();
        assert_eq!(events(&conn, &names), want);

        let mut new = inserter(Conflict::Fail).unwrap();
        new.push(row![ROWS as i64 + 2, 0_i64]).unwrap();
        new.push(row![3_i64, 0_i64]).unwrap();
        let error = new.flush().unwrap_err();
        assert!(taken(&error), "{error}");
        assert_eq!(
            events(&conn, &names)[2],
            (3, 103),
            "a row is not replaced unasked"
        );
    }
}
