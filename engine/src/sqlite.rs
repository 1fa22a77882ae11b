//! A prepared statement stepped through SQLite's C API, for the loops that touch every row
//! of a rocpd database. rusqlite's per-cell `Result`, bounds check and type dispatch were a
//! tenth of a database read; here a cell is one call, converted as SQLite converts it.

use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::{Connection, ffi};

/// A prepared statement of a connection it borrows, so that it is used on the
/// connection's thread and finalized before the connection closes.
pub struct Statement<'c> {
    raw: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    conn: PhantomData<&'c Connection>,
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
        let length = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::SqlInputError {
            error: ffi::Error::new(ffi::SQLITE_TOOBIG),
            msg: "statement too long".into(),
            sql: String::new(),
            offset: 0,
        })?;
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

    /// Starts the statement over with `values` bound to its parameters, in order.
    pub fn rebind(&mut self, values: &[i64]) -> rusqlite::Result<()> {
        // SAFETY: the statement is live; resetting and binding integers keep no pointers.
        unsafe {
            ffi::sqlite3_reset(self.raw.as_ptr());
            for (at, &value) in (1..).zip(values) {
                let rc = ffi::sqlite3_bind_int64(self.raw.as_ptr(), at, value);
                if rc != ffi::SQLITE_OK {
                    return Err(error(self.db, rc));
                }
            }
        }
        Ok(())
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

    /// `f` of the bytes of a text cell; `None` for a cell of another kind.
    pub fn with_text<T>(&self, i: usize, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        if self.kind(i) != Kind::Text {
            return None;
        }
        // SAFETY: the text stays valid until the statement steps or the cell converts,
        // neither of which can happen while `f` holds it; its length is asked after it,
        // as SQLite requires.
        let bytes = unsafe {
            let text = ffi::sqlite3_column_text(self.raw.as_ptr(), column(i));
            let length = ffi::sqlite3_column_bytes(self.raw.as_ptr(), column(i));
            if text.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(text, usize::try_from(length).unwrap_or(0))
            }
        };
        Some(f(bytes))
    }
}

/// A column index as SQLite takes it; one too large reads as NULL.
fn column(i: usize) -> c_int {
    c_int::try_from(i).unwrap_or(c_int::MAX)
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
        statement.rebind(&[-5]).unwrap();
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
    fn a_bad_statement_is_sqlites_error() {
        let conn = Connection::open_in_memory().unwrap();
        let Err(e) = Statement::prepare(&conn, "SELECT FROM nowhere") else {
            panic!("prepared");
        };
        assert!(e.to_string().contains("syntax error"), "{e}");
    }
}
