//! Mutations of SQLite databases, two ways. As SQL on a copy: tables, indexes and
//! columns dropped or renamed, primary keys taken away, declared types changed, ids at
//! the ends of their range, rows duplicated, deleted or given values of other types,
//! a second set of tables: a database someone else wrote, as SQLite reads it. And as
//! bytes of its pages (SQLite keeps no checksum): a damaged or hostile file, big-endian
//! integers where SQLite keeps its sizes, counts and pointers.

use std::path::PathBuf;

use rusqlite::{Connection, OpenFlags};

use crate::mutate::INTERESTING;
use crate::rng::Rng;

/// Rows one mutation may add, at most: enough to make pieces and strings many, not so
/// many that an input takes seconds to write.
const MAX_ADDED_ROWS: usize = 4096;

/// How a target's databases are mutated, with a file of its own for the SQL.
pub struct Databases {
    file: PathBuf,
    /// Databases grown past this are mutated again from the input instead.
    max_len: usize,
}

impl Databases {
    pub fn new(file: PathBuf, max_len: usize) -> Databases {
        Databases { file, max_len }
    }

    /// One to four mutations, each of the schema and rows three times in four (where the
    /// database still opens), else of its pages; `others` are spliced from. Damaged
    /// pages mostly end in SQLite's own error, so most mutations keep a database SQLite
    /// reads and rocflow has to make sense of.
    pub fn havoc(&self, input: &[u8], others: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
        let mut data = input.to_vec();
        for _ in 0..rng.count(4) {
            let changed = (!rng.one_in(4)).then(|| self.sql(&data, rng)).flatten();
            match changed {
                Some(changed) if changed.len() <= self.max_len => data = changed,
                _ => pages(&mut data, others, rng),
            }
        }
        data
    }

    /// Runs one mutation as SQL on a copy of `data`; `None` where SQLite refuses it (a
    /// damaged file, a statement the schema does not allow).
    fn sql(&self, data: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
        crate::files::replace(&self.file, data);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.file, flags).ok()?;
        // No journal: a statement that fails part-way leaves what it did, as a crash would.
        conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
            .ok()?;
        let schema = Schema::read(&conn).ok()?;
        let statement = schema.mutation(rng)?;
        let done = conn.execute_batch(&statement).is_ok();
        drop(conn);
        done.then(|| std::fs::read(&self.file).expect("the worker folder is readable"))
    }
}

/// A table, its columns, and whether it has a rowid alias to pick rows by.
struct Table {
    name: String,
    columns: Vec<String>,
}

/// What the mutations of a database choose from.
struct Schema {
    tables: Vec<Table>,
    indexes: Vec<String>,
    /// The text of each table's `CREATE` statement, by name.
    sql: Vec<(String, String)>,
}

impl Schema {
    fn read(conn: &Connection) -> rusqlite::Result<Schema> {
        let mut objects = conn.prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        let objects: Vec<(String, String, Option<String>)> = objects
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut schema = Schema {
            tables: Vec::new(),
            indexes: Vec::new(),
            sql: Vec::new(),
        };
        for (kind, name, sql) in objects {
            match kind.as_str() {
                "table" => {
                    let mut info = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
                    let columns = info
                        .query_map([&name], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    schema.sql.push((name.clone(), sql.unwrap_or_default()));
                    schema.tables.push(Table { name, columns });
                }
                "index" => schema.indexes.push(name),
                _ => {}
            }
        }
        Ok(schema)
    }

    /// SQL that changes the database one way; `None` where it has nothing to change.
    fn mutation(&self, rng: &mut Rng) -> Option<String> {
        let table = rng.choose(&self.tables)?;
        let t = quote(&table.name);
        let column = rng.choose(&table.columns).map(|c| quote(c));
        let c = column.as_deref().unwrap_or("rowid");
        // Rows picked by their rowid, the same way on every run.
        let some = format!("rowid % {} = {}", 1 + rng.below(4), rng.below(2));
        Some(match rng.below(14) {
            0 => format!("DROP TABLE {t}"),
            1 => format!("DROP INDEX {}", quote(rng.choose(&self.indexes)?)),
            2 => format!("ALTER TABLE {t} DROP COLUMN {c}"),
            3 => format!("ALTER TABLE {t} RENAME COLUMN {c} TO {}", quote("renamed")),
            4 => format!("DELETE FROM {t} WHERE {some}"),
            // Without its primary key, unique constraints and indexes.
            5 => format!(
                "CREATE TABLE fuzz_copy AS SELECT * FROM {t}; DROP TABLE {t}; \
                 ALTER TABLE fuzz_copy RENAME TO {t}"
            ),
            // Each row again, a new id where the table numbers them, up to doubling.
            6 => {
                let others: Vec<String> = (table.columns.iter())
                    .filter(|c| *c != "id")
                    .map(|c| quote(c))
                    .collect();
                let list = others.join(", ");
                format!(
                    "INSERT INTO {t} ({list}) SELECT {list} FROM {t} LIMIT {}",
                    rng.count(MAX_ADDED_ROWS)
                )
            }
            7 => format!(
                "INSERT OR IGNORE INTO {t} SELECT * FROM {t} LIMIT {}",
                rng.count(MAX_ADDED_ROWS)
            ),
            // An id, or a reference to one, at the ends of its range or dangling.
            8 | 9 => format!(
                "UPDATE OR IGNORE {t} SET {c} = {} WHERE {some}",
                integer(rng)
            ),
            10 | 11 => format!("UPDATE OR IGNORE {t} SET {c} = {} WHERE {some}", value(rng)),
            12 => self.retyped(table, rng)?,
            // The whole set again under another suffix, as a merged file holds several.
            _ => self
                .tables
                .iter()
                .map(|table| {
                    let copy = quote(&format!("{}_fuzz", table.name));
                    format!(
                        "CREATE TABLE {copy} AS SELECT * FROM {};",
                        quote(&table.name)
                    )
                })
                .collect(),
        })
    }

    /// The table's `CREATE` statement with a declared type changed, written into the
    /// schema in place: the rows stay as they were stored, so an integer primary key
    /// that stops being one leaves its column reading NULL.
    fn retyped(&self, table: &Table, rng: &mut Rng) -> Option<String> {
        let (_, sql) = self.sql.iter().find(|(name, _)| *name == table.name)?;
        let types = ["INTEGER", "TEXT", "REAL", "BLOB", "NUMERIC", "JSONB", ""];
        let from = *rng.pick(&types[..4]);
        let at = sql.match_indices(from).map(|(i, _)| i).collect::<Vec<_>>();
        let at = *rng.choose(&at)?;
        let changed = format!(
            "{}{}{}",
            &sql[..at],
            rng.pick(&types),
            &sql[at + from.len()..]
        );
        Some(format!(
            "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = {} WHERE name = {}; \
             PRAGMA writable_schema = OFF",
            literal(&changed),
            literal(&table.name)
        ))
    }
}

/// An integer SQL literal at an edge of some range.
fn integer(rng: &mut Rng) -> String {
    let value = *rng.pick(INTERESTING);
    // SQLite's integers are 64-bit: the larger interesting values become reals.
    i64::try_from(value).map_or_else(|_| format!("{value}.0"), |v| v.to_string())
}

/// A value of another type than a column is likely to hold.
fn value(rng: &mut Rng) -> String {
    let long = rng.count(1 << 18);
    match rng.below(12) {
        0 => "NULL".into(),
        1 => "''".into(),
        2 => "'x'".into(),
        3 => "X'00FF'".into(),
        4 => "1e308".into(),
        5 => "-0.5".into(),
        6 => "'{\"a\":'".into(),
        7 => "'{}'".into(),
        8 => "'a\nb'".into(),
        9 => format!("zeroblob({long})"),
        10 => format!("hex(zeroblob({long}))"),
        _ => integer(rng),
    }
}

/// `name` as an SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Mutates the bytes of one page (the header's page size says where pages are), or which
/// pages the file has.
fn pages(data: &mut Vec<u8>, others: &[Vec<u8>], rng: &mut Rng) {
    let size = page_size(data);
    let count = data.len().div_ceil(size).max(1);
    // The first page, with the file's header and the schema's root, one time in eight.
    let page = if rng.one_in(8) { 0 } else { rng.below(count) };
    let start = (page * size).min(data.len());
    let end = (start + size).min(data.len());
    match rng.below(8) {
        _ if start == end => data.extend(std::iter::repeat_n(0, size)),
        0 => data[start + rng.below(end - start)] ^= 1 << rng.below(8),
        1 => data[start + rng.below(end - start)] = *rng.pick(&[0, 0xff, 0x7f, 0x80, 1]),
        2 | 3 => {
            let width = *rng.pick(&[1usize, 2, 4, 8]);
            if end - start >= width {
                let at = start + rng.below(end - start - width + 1);
                let value = rng.pick(INTERESTING).to_be_bytes();
                data[at..at + width].copy_from_slice(&value[value.len() - width..]);
            }
        }
        // A range of another page, of this file or another, copied over this one's.
        4 => {
            let other = rng.choose(others).filter(|_| rng.one_in(2));
            let from: &[u8] = other.map_or(data, Vec::as_slice);
            let len = rng.count(end - start);
            if from.len() > len {
                let at = rng.below(from.len() - len);
                let piece = from[at..at + len].to_vec();
                let to = start + rng.below(end - start - len + 1);
                data[to..to + len].copy_from_slice(&piece);
            }
        }
        5 => data[start..end].fill(0),
        // The file cut at a page, or a page repeated at its end.
        6 => data.truncate(start.max(size)),
        _ => {
            let copy = data[start..end].to_vec();
            data.extend_from_slice(&copy);
        }
    }
}

/// The page size the header gives (bytes 16 and 17, big-endian, 1 meaning 65536), 512
/// where it gives none SQLite allows.
fn page_size(data: &[u8]) -> usize {
    let size = match data.get(16..18) {
        Some(&[0, 1]) => 65536,
        Some(&[high, low]) => usize::from(u16::from_be_bytes([high, low])),
        _ => 0,
    };
    if size.is_power_of_two() && size >= 512 {
        size
    } else {
        512
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(dir: &std::path::Path) -> Vec<u8> {
        let path = dir.join("seed.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 512; \
             CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER); \
             CREATE INDEX t_name ON t (name); \
             INSERT INTO t (name, n) VALUES ('a', 1), ('b', 2), ('c', 3);",
        )
        .unwrap();
        drop(conn);
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn mutations_are_deterministic_and_most_change_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let seed = seed(dir.path());
        let databases = Databases::new(dir.path().join("mutating.db"), 1 << 20);
        let run = |s| {
            let mut rng = Rng::new(s);
            (0..200)
                .map(|_| databases.havoc(&seed, &[], &mut rng))
                .collect::<Vec<_>>()
        };
        let outputs = run(3);
        assert_eq!(outputs, run(3));
        assert!(outputs.iter().filter(|o| **o != seed).count() > 150);
        assert!(outputs.iter().all(|o| o.len() <= 1 << 20));
    }

    #[test]
    fn sql_mutations_keep_a_database_sqlite_opens() {
        let dir = tempfile::tempdir().unwrap();
        let seed = seed(dir.path());
        let databases = Databases::new(dir.path().join("mutating.db"), 1 << 20);
        let mut rng = Rng::new(5);
        let changed: Vec<Vec<u8>> = (0..200)
            .filter_map(|_| databases.sql(&seed, &mut rng))
            .filter(|db| *db != seed)
            .collect();
        assert!(changed.len() > 50, "{}", changed.len());
        let path = dir.path().join("check.db");
        for db in changed {
            std::fs::write(&path, db).unwrap();
            let conn = Connection::open(&path).unwrap();
            // Its schema still parses (a dropped table leaves none, which is a schema too).
            let schema = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            });
            assert!(schema.is_ok(), "{schema:?}");
        }
    }

    #[test]
    fn page_sizes_come_from_the_header() {
        let mut header = vec![0u8; 100];
        assert_eq!(page_size(&header), 512);
        header[16..18].copy_from_slice(&4096u16.to_be_bytes());
        assert_eq!(page_size(&header), 4096);
        header[16..18].copy_from_slice(&[0, 1]);
        assert_eq!(page_size(&header), 65536);
        header[16..18].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(page_size(&header), 512);
    }
}
