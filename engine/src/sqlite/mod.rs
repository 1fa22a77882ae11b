//! SQLite for the loops that touch every row of a rocpd database. A prepared statement
//! stepped through SQLite's C API, reading or writing: rusqlite's per-cell `Result`, bounds
//! check and type dispatch were a tenth of a database read; here a cell or a parameter is
//! one call, and a cell converts as SQLite converts it. And tables that only append, written
//! as pages of SQLite's file format ([`btree`]).

pub mod btree;

use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql, ffi};

/// A prepared statement of a connection it borrows, so that it is used on the
/// connection's thread and finalized before the connection closes.
pub struct Statement<'c> {
    raw: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    conn: PhantomData<&'c Connection>,
}

/// A value to bind: a rocpd row's column. Fixed text (`Str`) binds without a copy.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Str(&'static str),
    Text(String),
}

/// For statements run through rusqlite (the rocpd sink's info rows).
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

/// A row of values, each converted with `Value::from`.
macro_rules! row {
    ($($value:expr),* $(,)?) => {
        [$($crate::sqlite::Value::from($value)),*]
    };
}
pub(crate) use row;

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

/// What a cell holds, as SQLite stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Integer,
    Real,
    Text,
    Blob,
    Null,
}

/// The cells of the row a statement stands on; they live until the statement steps on.
pub struct Cells<'s> {
    raw: NonNull<ffi::sqlite3_stmt>,
    row: PhantomData<&'s mut ()>,
}

impl<'c> Statement<'c> {
    /// Prepares the one statement `sql` holds.
    pub fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Statement<'c>> {
        // SAFETY: the handle is valid while `conn` is, which the statement borrows.
        let db = unsafe { conn.handle() };
        let length = c_int::try_from(sql.len())
            .map_err(|_| error_code(ffi::SQLITE_TOOBIG, "statement too long"))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `sql` is valid for `length` bytes; SQLite copies what it keeps.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                db,
                sql.as_ptr().cast(),
                length,
                &mut raw,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db, rc));
        }
        let raw = NonNull::new(raw).ok_or(rusqlite::Error::InvalidQuery)?;
        Ok(Statement {
            raw,
            db,
            conn: PhantomData,
        })
    }

    /// Starts the statement over; its parameters keep their values until bound again.
    pub fn reset(&mut self) {
        // SAFETY: the statement is live; the error a reset repeats was reported by the step.
        unsafe { ffi::sqlite3_reset(self.raw.as_ptr()) };
    }

    fn bind_null(&mut self, at: usize) -> rusqlite::Result<()> {
        // SAFETY: the statement is live; SQLite checks the index.
        self.check(unsafe { ffi::sqlite3_bind_null(self.raw.as_ptr(), column(at)) })
    }

    pub fn bind_int(&mut self, at: usize, value: i64) -> rusqlite::Result<()> {
        // SAFETY: as in `bind_null`.
        self.check(unsafe { ffi::sqlite3_bind_int64(self.raw.as_ptr(), column(at), value) })
    }

    fn bind_real(&mut self, at: usize, value: f64) -> rusqlite::Result<()> {
        // SAFETY: as in `bind_null`.
        self.check(unsafe { ffi::sqlite3_bind_double(self.raw.as_ptr(), column(at), value) })
    }

    /// Binds `values` to the parameters in order, and runs the statement as
    /// [`Statement::execute`] does.
    pub fn execute_with(&mut self, values: &[Value]) -> rusqlite::Result<()> {
        for (i, value) in values.iter().enumerate() {
            self.bind(i + 1, value)?;
        }
        self.execute()
    }

    /// Binds `value` as its kind says.
    #[inline]
    fn bind(&mut self, at: usize, value: &Value) -> rusqlite::Result<()> {
        match value {
            Value::Null => self.bind_null(at),
            Value::Int(v) => self.bind_int(at, *v),
            Value::Real(v) => self.bind_real(at, *v),
            Value::Str(s) => self.bind_static_text(at, s),
            Value::Text(s) => self.bind_text(at, s),
        }
    }

    /// Binds a copy of `value` (SQLite's own, so the text need not outlive the call).
    fn bind_text(&mut self, at: usize, value: &str) -> rusqlite::Result<()> {
        self.text(at, value, ffi::SQLITE_TRANSIENT())
    }

    /// Binds text that lives as long as the program, without copying it.
    fn bind_static_text(&mut self, at: usize, value: &'static str) -> rusqlite::Result<()> {
        self.text(at, value, ffi::SQLITE_STATIC())
    }

    fn text(
        &mut self,
        at: usize,
        value: &str,
        keep: ffi::sqlite3_destructor_type,
    ) -> rusqlite::Result<()> {
        let length = c_int::try_from(value.len())
            .map_err(|_| error_code(ffi::SQLITE_TOOBIG, "text too long to bind"))?;
        // SAFETY: as in `bind_null`; `value` is valid for `length` bytes, and SQLite either
        // copies them before returning (SQLITE_TRANSIENT) or is given `'static` text.
        self.check(unsafe {
            ffi::sqlite3_bind_text(
                self.raw.as_ptr(),
                column(at),
                value.as_ptr().cast(),
                length,
                keep,
            )
        })
    }

    /// Runs a statement that returns no rows to its end, then resets it for its next
    /// values.
    fn execute(&mut self) -> rusqlite::Result<()> {
        let done = match self.step() {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err(rusqlite::Error::ExecuteReturnedResults),
            Err(e) => Err(e),
        };
        self.reset();
        done
    }

    fn check(&self, rc: c_int) -> rusqlite::Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(error(self.db, rc))
        }
    }

    /// Steps to the next row: its cells, or `None` past the last (then stepping again starts
    /// over).
    pub fn step(&mut self) -> rusqlite::Result<Option<Cells<'_>>> {
        // SAFETY: the statement is live and used by this thread alone (it borrows the
        // connection, which is not `Sync`).
        match unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(Cells {
                raw: self.raw,
                row: PhantomData,
            })),
            ffi::SQLITE_DONE => Ok(None),
            rc => Err(error(self.db, rc)),
        }
    }
}

impl Drop for Statement<'_> {
    fn drop(&mut self) {
        // SAFETY: finalized once, before the connection it borrows closes.
        unsafe { ffi::sqlite3_finalize(self.raw.as_ptr()) };
    }
}

// Every accessor is safe for any index: SQLite answers a column out of range as NULL.
impl Cells<'_> {
    pub fn kind(&self, i: usize) -> Kind {
        // SAFETY: the statement stands on a row while the cells live.
        match unsafe { ffi::sqlite3_column_type(self.raw.as_ptr(), column(i)) } {
            ffi::SQLITE_INTEGER => Kind::Integer,
            ffi::SQLITE_FLOAT => Kind::Real,
            ffi::SQLITE_TEXT => Kind::Text,
            ffi::SQLITE_BLOB => Kind::Blob,
            _ => Kind::Null,
        }
    }

    /// The cell as an integer, as SQLite converts it: NULL is 0, a real truncated, text
    /// read as far as it is a number.
    pub fn int(&self, i: usize) -> i64 {
        // SAFETY: as in `kind`.
        unsafe { ffi::sqlite3_column_int64(self.raw.as_ptr(), column(i)) }
    }

    /// The cell as a real, converted as [`Cells::int`] converts.
    pub fn real(&self, i: usize) -> f64 {
        // SAFETY: as in `kind`.
        unsafe { ffi::sqlite3_column_double(self.raw.as_ptr(), column(i)) }
    }

    /// The length in bytes of a text or blob cell (of a number, as text).
    pub fn bytes(&self, i: usize) -> usize {
        // SAFETY: as in `kind`.
        let length = unsafe { ffi::sqlite3_column_bytes(self.raw.as_ptr(), column(i)) };
        usize::try_from(length).unwrap_or(0)
    }

    /// `f` of the bytes of a text cell; `None` for a cell of another kind.
    pub fn with_text<T>(&self, i: usize, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        (self.kind(i) == Kind::Text).then(|| self.with_bytes(i, Kind::Text, f))
    }

    /// `f` of the bytes of a blob cell; `None` for a cell of another kind.
    pub fn with_blob<T>(&self, i: usize, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        (self.kind(i) == Kind::Blob).then(|| self.with_bytes(i, Kind::Blob, f))
    }

    /// `f` of the bytes of a cell of `kind` (text or blob), which it is.
    fn with_bytes<T>(&self, i: usize, kind: Kind, f: impl FnOnce(&[u8]) -> T) -> T {
        // SAFETY: the bytes stay valid until the statement steps or the cell converts,
        // neither of which can happen while `f` holds them; their length is asked after
        // them, as SQLite requires.
        let bytes = unsafe {
            let data: *const u8 = match kind {
                Kind::Blob => ffi::sqlite3_column_blob(self.raw.as_ptr(), column(i)).cast(),
                _ => ffi::sqlite3_column_text(self.raw.as_ptr(), column(i)),
            };
            let length = ffi::sqlite3_column_bytes(self.raw.as_ptr(), column(i));
            if data.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(data, usize::try_from(length).unwrap_or(0))
            }
        };
        f(bytes)
    }
}

/// A column index as SQLite takes it; one too large reads as NULL.
fn column(i: usize) -> c_int {
    c_int::try_from(i).unwrap_or(c_int::MAX)
}

/// An error SQLite did not report, of result code `rc`.
fn error_code(rc: c_int, message: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message.to_owned()))
}

/// The connection's error for result code `rc`.
fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: `db` is a live connection; its message is copied before any other call.
    let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(db)) };
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(rc),
        Some(message.to_string_lossy().into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_every_kind_leniently() {
        let conn = Connection::open_in_memory().unwrap();
        let sql = "SELECT 7, 2.9, ' 42 ', 'x', NULL, x'00', ?1";
        let mut statement = Statement::prepare(&conn, sql).unwrap();
        statement.bind_int(1, -5).unwrap();
        let row = statement.step().unwrap().expect("a row");
        let kinds = [0, 1, 2, 3, 4, 5].map(|i| row.kind(i));
        use Kind::*;
        assert_eq!(kinds, [Integer, Real, Text, Text, Null, Blob]);
        assert_eq!([0, 1, 2, 3, 4, 6].map(|i| row.int(i)), [7, 2, 42, 0, 0, -5]);
        assert_eq!(row.real(1), 2.9);
        assert_eq!(row.with_text(3, <[u8]>::to_vec), Some(b"x".to_vec()));
        assert_eq!(row.with_text(0, <[u8]>::to_vec), None);
        assert_eq!(row.int(99), 0, "a column out of range reads as NULL");
        assert!(statement.step().unwrap().is_none());
    }

    #[test]
    fn bound_values_are_inserted_and_the_statement_runs_again() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (a, b, c, d, e)")
            .unwrap();
        let mut insert =
            Statement::prepare(&conn, "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)").unwrap();
        for i in 0..2 {
            let row = [
                Value::Int(i),
                Value::Real(0.5),
                Value::Text(format!("row {i}")),
                Value::Str("{}"),
                Value::Null,
            ];
            insert.execute_with(&row).unwrap();
        }
        assert!(insert.bind_int(6, 0).is_err(), "no sixth parameter");
        type Row = (i64, f64, String, String, Option<i64>);
        let rows: Vec<Row> = conn
            .prepare("SELECT * FROM t ORDER BY a")
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: [Row; 2] = [
            (0, 0.5, "row 0".into(), "{}".into(), None),
            (1, 0.5, "row 1".into(), "{}".into(), None),
        ];
        assert_eq!(rows, expected);
        let mut select = Statement::prepare(&conn, "SELECT 1").unwrap();
        assert!(matches!(
            select.execute(),
            Err(rusqlite::Error::ExecuteReturnedResults)
        ));
    }

    #[test]
    fn a_bad_statement_is_sqlites_error() {
        let conn = Connection::open_in_memory().unwrap();
        let Err(e) = Statement::prepare(&conn, "SELECT FROM nowhere") else {
            panic!("prepared");
        };
        assert!(e.to_string().contains("syntax error"), "{e}");
    }
}
