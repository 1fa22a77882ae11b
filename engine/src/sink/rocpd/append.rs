//! Rows of rocpd tables appended as SQLite pages ([`crate::sqlite::btree`]) rather than
//! inserted: each row's values in the order the schema declares its columns, with the
//! defaults SQLite gives the columns an insert leaves out. Rows are built and encoded a
//! run of records at a time, on any thread ([`Out`]); each table's runs are then filled
//! into its pages in order, the tables in parallel, and the pages written while the next
//! runs fill ([`Writers`]).

use std::io;
use std::sync::Arc;

use rayon::prelude::*;

use super::fault::Fault;
use crate::rocpd::schema::Table;
use crate::sqlite::Value;
use crate::sqlite::btree::{Affinity, AppendTable, Numbered, Pages, Record, Records};

/// How one table's rows are encoded.
pub struct Layout {
    /// Each stored column: its affinity, and where its value comes from.
    columns: Vec<(Affinity, Source)>,
    /// Values a row: the columns the table was made for.
    width: usize,
    /// The position of the row's own id among its values, where rows have one; rows
    /// without are numbered when filled, in order, as SQLite numbers them.
    id: Option<usize>,
}

/// Where a stored column's value comes from.
enum Source {
    /// The row's value at this position.
    Row(usize),
    /// A value of every row: the column's default, or NULL for the rowid's column, whose
    /// value is the row's key instead.
    Fixed(Value),
}

impl Layout {
    /// Rows of `columns` (the `id` among them where rows have theirs) for `table`.
    fn new(table: &Table, columns: &[&str]) -> Layout {
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
        Layout {
            columns: stored,
            width: columns.len(),
            id: at("id"),
        }
    }
}

/// The layouts of a database's tables, in the order their writers have them.
pub struct Layouts(Vec<Layout>);

/// Rows of every table encoded from a run of records, in the order of [`Layouts`]. A row
/// without its own id has none yet (0) until its table is filled.
pub struct Rows(Vec<Records>);

/// Rows being built from a run of records, encoded as they come.
pub struct Out<'l> {
    layouts: &'l Layouts,
    rows: Rows,
    record: Record,
}

impl<'l> Out<'l> {
    pub fn new(layouts: &'l Layouts) -> Out<'l> {
        let rows = Rows(layouts.0.iter().map(|_| Records::default()).collect());
        Out {
            layouts,
            rows,
            record: Record::default(),
        }
    }

    /// Adds a row to table `table` (its index in [`Layouts`]), its values in the order of
    /// the columns the table was made for.
    #[inline]
    pub fn push(&mut self, table: usize, row: &[Value]) -> io::Result<()> {
        let layout = &self.layouts.0[table];
        debug_assert_eq!(row.len(), layout.width, "a row has a value for each column");
        let rowid = match layout.id.map(|i| &row[i]) {
            None => 0,
            Some(Value::Int(id)) => *id,
            Some(other) => unreachable!("ids are integers, not {other:?}"),
        };
        let values = layout.columns.iter().map(|(affinity, source)| {
            let value = match source {
                Source::Row(i) => &row[*i],
                Source::Fixed(value) => value,
            };
            (*affinity, value)
        });
        let record = self.record.encode(values)?;
        self.rows.0[table].push(rowid, record);
        Ok(())
    }

    pub fn finish(self) -> Rows {
        self.rows
    }
}

/// One table's rows made into pages.
struct TableWriter {
    table: AppendTable,
    /// The last rowid given to a row without its own id, for a table whose rows have none.
    numbered: Option<i64>,
}

impl TableWriter {
    /// Fills the rows of `runs`, in order, into the table's leaves.
    fn fill(&mut self, runs: &[&Records]) -> Result<(), Fault> {
        let mut rows = Vec::with_capacity(runs.iter().map(|run| run.count()).sum());
        rows.extend(runs.iter().flat_map(|run| run.iter()));
        if let Some(last) = &mut self.numbered {
            for (rowid, _) in &mut rows {
                *last += 1;
                *rowid = *last;
            }
        }
        self.table.fill(&rows)?;
        Ok(())
    }
}

/// The pages of a database's tables, written from the rows built for them in a pipeline:
/// the rows of one step are built while those of the step before fill their tables' pages
/// and the pages of the step before that are written, all on the rayon pool (one after
/// another, the three waited on each other at every step).
pub struct Writers {
    tables: Vec<TableWriter>,
    /// Rows built and not yet filled.
    built: Vec<Rows>,
    /// Pages filled and not yet written.
    filled: Filled,
}

impl Writers {
    /// The layouts and writers of `tables` (each one's schema, the columns its rows give,
    /// and the empty root page SQLite made for it), written as `pages` of their database.
    pub fn new(
        pages: &Arc<Pages>,
        tables: impl IntoIterator<Item = (&'static Table, &'static [&'static str], u32)>,
    ) -> (Layouts, Writers) {
        let (layouts, tables): (Vec<_>, Vec<_>) = (tables.into_iter())
            .map(|(table, columns, root)| {
                let layout = Layout::new(table, columns);
                let writer = TableWriter {
                    table: AppendTable::new(Arc::clone(pages), root),
                    numbered: layout.id.is_none().then_some(0),
                };
                (layout, writer)
            })
            .unzip();
        let writers = Writers {
            tables,
            built: Vec::new(),
            filled: Filled::default(),
        };
        (Layouts(layouts), writers)
    }

    /// Builds the next rows (each run's rows of every table, in order) with `build`, while
    /// the pipeline moves on.
    pub fn step(
        &mut self,
        build: impl FnOnce() -> Result<Vec<Rows>, Fault> + Send,
    ) -> Result<(), Fault> {
        let filled = std::mem::take(&mut self.filled);
        let (tables, built) = (&mut self.tables, &mut self.built);
        let ((wrote, filled), next) = rayon::join(
            || rayon::join(|| filled.write(), || fill(tables, built)),
            build,
        );
        for (writer, bytes) in self.tables.iter_mut().zip(wrote?) {
            writer.table.reuse(bytes);
        }
        self.filled = filled?;
        self.built = next?;
        Ok(())
    }

    /// Writes every row built, then each table's last pages.
    pub fn finish(mut self) -> Result<(), Fault> {
        std::mem::take(&mut self.filled).write()?;
        fill(&mut self.tables, &mut self.built)?.write()?;
        for writer in self.tables {
            writer.table.finish()?;
        }
        Ok(())
    }
}

/// Fills `runs` into the pages of `tables` and empties them: the tables are filled in
/// parallel, then their pages numbered one table after another, so that the file is the
/// same on any number of threads.
fn fill(tables: &mut [TableWriter], runs: &mut Vec<Rows>) -> Result<Filled, Fault> {
    let built: &[Rows] = runs;
    (tables.par_iter_mut().enumerate()).try_for_each(|(t, writer)| {
        let runs: Vec<&Records> = built.iter().map(|rows| &rows.0[t]).collect();
        writer.fill(&runs)
    })?;
    runs.clear();
    Ok(Filled(
        tables.iter_mut().map(|w| w.table.number()).collect(),
    ))
}

/// Pages of every table, numbered and not yet written.
#[derive(Default)]
struct Filled(Vec<Numbered>);

impl Filled {
    /// Writes the pages, the tables' in parallel; returns each table's buffer of them.
    fn write(self) -> Result<Vec<Vec<u8>>, Fault> {
        let written = (self.0.into_par_iter()).map(Numbered::write);
        written.collect::<std::io::Result<_>>().map_err(Fault::Io)
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
