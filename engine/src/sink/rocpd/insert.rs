//! Many-row inserts. Each run of a statement costs SQLite about what adding a row does
//! (opening the table, ending and resetting the statement), so rows gather in memory and
//! go in `ROWS` at a time, through one statement with as many `VALUES` groups, prepared
//! once for the database's life.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};

use super::schema::Names;
use crate::sqlite::Statement;

/// Rows per statement run: enough that the statement's cost vanishes, few enough that
/// preparing it is quick and the rows waiting stay small.
const ROWS: usize = 64;

/// A column value of a row waiting to be inserted.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Str(&'static str),
    Text(String),
}

/// For the info rows, written through rusqlite.
impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Str(s) => ValueRef::Text(s.as_bytes()),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

impl Value {
    /// Binds the value to parameter `at` of `statement`: the events' rows, through SQLite's
    /// C API.
    #[inline]
    fn bind(&self, statement: &mut Statement<'_>, at: usize) -> rusqlite::Result<()> {
        match self {
            Value::Null => statement.bind_null(at),
            Value::Int(v) => statement.bind_int(at, *v),
            Value::Real(v) => statement.bind_real(at, *v),
            Value::Str(s) => statement.bind_static_text(at, s),
            Value::Text(s) => statement.bind_text(at, s),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

/// Times, sizes and ids: those above `i64::MAX` wrap, as in any SQLite integer column.
impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v as i64)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&'static str> for Value {
    fn from(v: &'static str) -> Value {
        Value::Str(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A row of values, each converted with `Value::from`.
macro_rules! row {
    ($($value:expr),* $(,)?) => {
        [$($crate::sink::rocpd::insert::Value::from($value)),*]
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
            run(&mut self.many, self.pending.drain(..))?;
        }
        Ok(())
    }

    /// Inserts the rows still waiting.
    pub fn flush(&mut self) -> rusqlite::Result<()> {
        let columns = self.columns;
        let mut rest = self.pending.drain(..);
        while rest.len() > 0 {
            run(&mut self.one, rest.by_ref().take(columns))?;
        }
        Ok(())
    }
}

fn run(statement: &mut Statement<'_>, values: impl Iterator<Item = Value>) -> rusqlite::Result<()> {
    for (i, value) in values.enumerate() {
        value.bind(statement, i + 1)?;
    }
    statement.execute()
}
