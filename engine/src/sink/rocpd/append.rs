//! Rows of a rocpd table appended as SQLite pages ([`crate::sqlite::btree`]) rather than
//! inserted: each row's values in the order the schema declares its columns, with the
//! defaults SQLite gives the columns an insert leaves out.

use std::sync::Arc;

use super::fault::Fault;
use crate::rocpd::schema::Table;
use crate::sqlite::Value;
use crate::sqlite::btree::{Affinity, AppendTable, Pages, Record};

/// The rows of one table.
pub struct Appender {
    table: AppendTable,
    /// Each stored column: its affinity, and where its value comes from.
    columns: Vec<(Affinity, Source)>,
    id: Id,
    record: Record,
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
    /// empty root page is `root`.
    pub fn new(pages: Arc<Pages>, root: u32, table: &Table, columns: &[&str]) -> Appender {
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
        Appender {
            table: AppendTable::new(pages, root),
            columns: stored,
            id: at("id").map_or(Id::Next(0), Id::Given),
            record: Record::default(),
        }
    }

    /// Appends a row, its values in the order of the columns the appender was made for.
    #[inline]
    pub fn push<const N: usize>(&mut self, row: [Value; N]) -> Result<(), Fault> {
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
        let values = self.columns.iter().map(|(affinity, source)| {
            let value = match source {
                Source::Row(i) => &row[*i],
                Source::Fixed(value) => value,
            };
            (*affinity, value)
        });
        let record = self.record.encode(values)?;
        self.table.append(rowid, record)?;
        Ok(())
    }

    /// Writes the table's last pages.
    pub fn finish(self) -> Result<(), Fault> {
        Ok(self.table.finish()?)
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
