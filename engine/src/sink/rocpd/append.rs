//! Rows of a rocpd table appended as SQLite pages ([`crate::sqlite::btree`]) rather than
//! inserted: each row's values in the order the schema declares its columns, with the
//! defaults SQLite gives the columns an insert leaves out. Rows are gathered on the sink's
//! thread, in order ([`Appender`]); each table's gathered rows are then encoded in runs on
//! the rayon pool, and the tables filled into pages in parallel ([`Writers`]).

use std::sync::Arc;

use rayon::prelude::*;

use super::fault::Fault;
use crate::rocpd::schema::Table;
use crate::sqlite::Value;
use crate::sqlite::btree::{Affinity, AppendTable, Pages, Record, Records};

/// Rows encoded by one task: enough that a task outweighs its scheduling, few enough that
/// a table's rows of a segment spread over every core.
const RUN: usize = 1024;

/// The rows of one table, gathered in order.
pub struct Appender {
    id: Id,
    /// Values a row: the columns the appender was made for.
    width: usize,
    rows: Rows,
}

/// Rows gathered and not yet written: each one's rowid and values.
#[derive(Default)]
pub struct Rows {
    rowids: Vec<i64>,
    values: Vec<Value>,
}

impl Rows {
    fn len(&self) -> usize {
        self.rowids.len()
    }

    fn clear(&mut self) {
        self.rowids.clear();
        self.values.clear();
    }
}

/// One table's rows made into pages.
pub struct TableWriter {
    table: AppendTable,
    /// Each stored column: its affinity, and where its value comes from.
    columns: Vec<(Affinity, Source)>,
    width: usize,
}

/// Where a stored column's value comes from.
enum Source {
    /// The row's value at this position.
    Row(usize),
    /// A value of every row: the column's default, or NULL for the rowid's column, whose
    /// value is the row's key instead.
    Fixed(Value),
}

/// Where a row's id comes from.
enum Id {
    /// The row's value at this position.
    Given(usize),
    /// The next after the last, as SQLite numbers rows without one.
    Next(i64),
}

impl Appender {
    /// Rows of `columns` (the `id` among them where rows have theirs) for `table`, whose
    /// empty root page is `root`; and the writer of their pages.
    pub fn new(
        pages: Arc<Pages>,
        root: u32,
        table: &Table,
        columns: &[&str],
    ) -> (Appender, TableWriter) {
        let at = |name: &str| columns.iter().position(|c| *c == name);
        let declared: Vec<Declared> = table.columns.iter().map(|d| Declared::parse(d)).collect();
        for column in columns {
            assert!(
                *column == "id" || declared.iter().any(|d| d.name == *column),
                "{} declares no column {column}",
                table.name
            );
        }
        let mut stored = vec![(Affinity::Integer, Source::Fixed(Value::Null))];
        stored.extend(declared.into_iter().map(|column| {
            let source = match at(column.name) {
                Some(i) => Source::Row(i),
                None => Source::Fixed(column.default),
            };
            (Affinity::of(column.kind), source)
        }));
        let appender = Appender {
            id: at("id").map_or(Id::Next(0), Id::Given),
            width: columns.len(),
            rows: Rows::default(),
        };
        let writer = TableWriter {
            table: AppendTable::new(pages, root),
            columns: stored,
            width: columns.len(),
        };
        (appender, writer)
    }

    /// Adds a row, its values in the order of the columns the appender was made for.
    #[inline]
    pub fn push<const N: usize>(&mut self, row: [Value; N]) {
        debug_assert_eq!(N, self.width, "a row has a value for each column");
        let rowid = match &mut self.id {
            Id::Next(last) => {
                *last += 1;
                *last
            }
            Id::Given(i) => match row[*i] {
                Value::Int(id) => id,
                ref other => unreachable!("ids are integers, not {other:?}"),
            },
        };
        self.rows.rowids.push(rowid);
        self.rows.values.extend(row);
    }

    /// The rows gathered since they were last swapped out.
    pub fn gathered(&self) -> usize {
        self.rows.len()
    }

    /// Takes the rows gathered, leaving those of `spare` (written, so empty) in their place.
    pub fn swap(&mut self, spare: &mut Rows) {
        debug_assert_eq!(spare.len(), 0, "spare rows are written");
        std::mem::swap(&mut self.rows, spare);
    }
}

impl TableWriter {
    /// Encodes `rows` in runs, in parallel, and fills them into the table's leaves.
    fn fill(&mut self, rows: &Rows) -> Result<(), Fault> {
        if rows.rowids.is_empty() {
            return Ok(());
        }
        let columns = &self.columns;
        let runs: Vec<Records> = (rows.values.par_chunks(RUN * self.width))
            .zip(rows.rowids.par_chunks(RUN))
            .map(|(values, rowids)| {
                let mut record = Record::default();
                let mut records = Records::default();
                for (row, &rowid) in values.chunks(self.width).zip(rowids) {
                    let values = columns.iter().map(|(affinity, source)| {
                        let value = match source {
                            Source::Row(i) => &row[*i],
                            Source::Fixed(value) => value,
                        };
                        (*affinity, value)
                    });
                    records.push(rowid, record.encode(values)?);
                }
                Ok(records)
            })
            .collect::<std::io::Result<_>>()?;
        Ok(self.table.fill(&runs)?)
    }
}

/// The pages of a database's tables, written from the rows gathered for them.
pub struct Writers(Vec<TableWriter>);

impl Writers {
    /// The writers of the tables, in the order their rows are given to [`Writers::write`].
    pub fn new(writers: Vec<TableWriter>) -> Writers {
        Writers(writers)
    }

    /// Spare rows, one for each table, to swap with those gathered.
    pub fn spare(&self) -> Vec<Rows> {
        self.0.iter().map(|_| Rows::default()).collect()
    }

    /// Writes `rows` (each table's, in order) as pages and empties them: the tables are
    /// filled in parallel, then their pages numbered one table after another, so that the
    /// file is the same on any number of threads, then written in parallel.
    pub fn write(&mut self, rows: &mut [Rows]) -> Result<(), Fault> {
        debug_assert_eq!(rows.len(), self.0.len());
        (self.0.par_iter_mut())
            .zip(rows.par_iter())
            .try_for_each(|(writer, rows)| writer.fill(rows))?;
        for writer in &mut self.0 {
            writer.table.number();
        }
        (self.0.par_iter_mut()).try_for_each(|writer| writer.table.write())?;
        rows.iter_mut().for_each(Rows::clear);
        Ok(())
    }

    /// Writes each table's last pages, once every row is written.
    pub fn finish(self) -> Result<(), Fault> {
        for writer in self.0 {
            writer.table.finish()?;
        }
        Ok(())
    }
}

/// A column as the schema declares it: `name TYPE constraints… [DEFAULT value]`.
struct Declared {
    name: &'static str,
    kind: &'static str,
    default: Value,
}

impl Declared {
    fn parse(declared: &'static str) -> Declared {
        let mut words = declared.split_whitespace();
        let name = words.next().unwrap_or_default().trim_matches('"');
        let kind = words.next().unwrap_or_default();
        let default = match declared.split_once(" DEFAULT ") {
            None => Value::Null,
            Some((_, value)) => match value.strip_prefix('\'') {
                Some(text) => Value::Str(text.split('\'').next().unwrap_or_default()),
                None => match value.split_whitespace().next().unwrap_or_default() {
                    number if number.contains('.') => Value::Real(number.parse().unwrap_or(0.0)),
                    number => Value::Int(number.parse().unwrap_or(0)),
                },
            },
        };
        Declared {
            name,
            kind,
            default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_give_name_type_and_default() {
        let parsed = [
            "\"end\" BIGINT NOT NULL",
            "extdata JSONB NOT NULL DEFAULT '{}'",
            "value REAL DEFAULT 0.0",
            "long_description TEXT DEFAULT ''",
            "type TEXT CHECK (type IN ('CPU', 'GPU'))",
        ]
        .map(|d| {
            let d = Declared::parse(d);
            (d.name, d.kind, d.default)
        });
        assert_eq!(
            parsed,
            [
                ("end", "BIGINT", Value::Null),
                ("extdata", "JSONB", Value::Str("{}")),
                ("value", "REAL", Value::Real(0.0)),
                ("long_description", "TEXT", Value::Str("")),
                ("type", "TEXT", Value::Null),
            ]
        );
    }
}
