//! Opening a database as untrusted input and finding its rocpd tables. rocprofv3 names
//! every table with the database's UUID (`rocpd_region_<uuid>`) and adds plain-named
//! views over them; the views are the database's own SQL, so nothing here reads through
//! them: queries name the suffixed tables directly, and a database may hold several sets
//! (one per suffix, as a merged file does).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

// The tables and columns of rocpd schema 3 are the ones rocflow's rocpd sink writes.
use crate::rocpd::schema as written;
pub use crate::rocpd::schema::{
    AGENT, ARG, CODE_OBJECT, DEVICE_COUNTING, EVENT, GRAPH_LAUNCH, HIP_EVENT, KERNEL_DISPATCH,
    KERNEL_SYMBOL, MEMORY_ALLOCATE, MEMORY_COPY, METADATA, NODE, PMC, PMC_EVENT, PROCESS, QUEUE,
    REGION, SAMPLE, SPM, STREAM, STRING, THREAD, TRACK,
};

/// An event table, read as the records it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Dispatches,
    Copies,
    Allocations,
    Regions,
    Samples,
    Counters,
    /// `rocpd_graph_launch` (schema 3.0.2 on).
    GraphLaunches,
    /// `rocpd_hip_event` (schema 3.0.4 on).
    HipEvents,
}

impl Table {
    /// Every event table, in the order a set's records are sent.
    pub const ALL: [Table; 8] = [
        Table::Dispatches,
        Table::Copies,
        Table::Allocations,
        Table::Regions,
        Table::Samples,
        Table::Counters,
        Table::GraphLaunches,
        Table::HipEvents,
    ];

    /// The rocpd table whose rows the records follow, one record per row.
    pub fn rows(self) -> &'static str {
        match self {
            Table::Dispatches => KERNEL_DISPATCH,
            Table::Copies => MEMORY_COPY,
            Table::Allocations => MEMORY_ALLOCATE,
            Table::Regions => REGION,
            Table::Samples => SAMPLE,
            Table::Counters => PMC_EVENT,
            Table::GraphLaunches => GRAPH_LAUNCH,
            Table::HipEvents => HIP_EVENT,
        }
    }

    /// What its rows are read with: the rows of other tables, each found by a column.
    pub fn lookups(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Table::Dispatches
            | Table::Copies
            | Table::Allocations
            | Table::Regions
            | Table::GraphLaunches
            | Table::HipEvents => &[(EVENT, "id")],
            Table::Samples => &[(TRACK, "id"), (EVENT, "id")],
            Table::Counters => &[(KERNEL_DISPATCH, "event_id")],
        }
    }
}

/// What a revision of rocpd schema 3 after 3.0.0 (the revision rocflow writes) adds.
pub struct Addition {
    /// The revision that added it.
    pub version: &'static str,
    pub table: &'static str,
    /// The columns it adds to `table`; `None` where it adds the table itself, whatever
    /// its columns.
    pub columns: Option<&'static [&'static str]>,
    /// What its rows hold, for the note of what is not read.
    pub holds: &'static str,
    /// The rows of it that hold data no rocflow record holds, as an SQL condition on the
    /// table's rows (`None`: none of them).
    pub unread: Option<&'static str>,
}

/// What rocpd schema 3.0.1 to 3.0.4 add (rocprofiler-sdk 1.3.5 to 1.4.1; 3.0.1 only
/// allows `NIC` agents). A database of a later revision is read without a note of them;
/// the rows they hold that rocflow cannot read are counted in the note instead.
pub const ADDITIONS: &[Addition] = &[
    Addition {
        version: "3.0.2",
        table: KERNEL_DISPATCH,
        columns: Some(&["graph_exec_id", "graph_node_id"]),
        holds: "HIP graph nodes of dispatches",
        // Read into the records' own graph columns.
        unread: None,
    },
    Addition {
        version: "3.0.2",
        table: MEMORY_COPY,
        columns: Some(&["graph_exec_id", "graph_node_id"]),
        holds: "HIP graph nodes of copies",
        // Read into the records' own graph columns.
        unread: None,
    },
    Addition {
        version: "3.0.2",
        table: GRAPH_LAUNCH,
        columns: None,
        holds: "HIP graph launches",
        unread: None,
    },
    Addition {
        version: "3.0.3",
        table: PMC_EVENT,
        columns: Some(&["sample_id", "xcc", "shader_engine", "instance"]),
        holds: "SPM counter values",
        // Read as SPM samples.
        unread: None,
    },
    Addition {
        version: "3.0.4",
        table: HIP_EVENT,
        columns: None,
        holds: "HIP events",
        unread: None,
    },
];

/// The columns this reader knows, per table (what rocpd schema 3 defines, every table
/// rocprofv3 writes, without its suffix, and what its later revisions add to them);
/// others are from a newer schema and named in the database's note.
fn known_columns() -> Vec<(&'static str, Vec<&'static str>)> {
    let metadata = (METADATA, vec!["id", "tag", "value"]);
    // A table a later revision added is optional, rocflow's writing it or not.
    let added = |name: &str| (ADDITIONS.iter()).any(|a| a.columns.is_none() && a.table == name);
    let tables = (written::TABLES.iter())
        .filter(|t| !added(t.name))
        .map(|table| {
            // A definition starts with the column's name, quoted where it is a keyword.
            let defined = (table.columns.iter()).filter_map(|c| c.split_whitespace().next());
            let names = ["id", "guid"]
                .into_iter()
                .chain(defined.map(|c| c.trim_matches('"')))
                .chain(
                    (ADDITIONS.iter())
                        .filter(|a| a.table == table.name)
                        .flat_map(|a| a.columns.unwrap_or_default())
                        .copied(),
                );
            (table.name, names.collect())
        });
    std::iter::once(metadata).chain(tables).collect()
}

/// Opens `path` to read only, with nothing of the file's own SQL trusted: its views and
/// triggers are never run by the queries here, and `trusted_schema = OFF` keeps functions
/// its schema might name from running when SQLite parses it.
///
/// The file is read, not memory-mapped: a file shortened while it is read (copied or
/// downloaded again over it) is then a read error, where a page of a map past the file's
/// new end kills the process with SIGBUS.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.execute_batch(
        "PRAGMA trusted_schema = OFF; PRAGMA query_only = ON; PRAGMA mmap_size = 0;",
    )?;
    Ok(conn)
}

/// One set of rocpd tables in a database: the suffix its tables share, the columns each
/// has, and the lookups its keys and indexes serve.
#[derive(Debug, Clone)]
pub struct Tables {
    suffix: String,
    columns: BTreeMap<&'static str, BTreeSet<String>>,
    /// The tables of later revisions ([`ADDITIONS`]) the set has.
    added: BTreeSet<&'static str>,
    /// Lookups the event tables' reads make ([`Table::lookups`]) that SQLite can make only
    /// by scanning the table: the database lacks the key or index the schema's writers
    /// give them.
    scanned: BTreeSet<(&'static str, &'static str)>,
}

impl Tables {
    /// `table` with this set's suffix, quoted for SQL.
    pub fn name(&self, table: &str) -> String {
        format!("\"{}{}\"", table, self.suffix.replace('"', "\"\""))
    }

    /// Whether finding the rows of `table` with a given `column` scans the table (one of
    /// the lookups the event tables' reads make; see [`Table::lookups`]).
    pub fn scanned(&self, table: &str, column: &str) -> bool {
        self.scanned.contains(&(table, column))
    }

    /// Whether the set has `table`: every table of schema 3.0.0, and those of later
    /// revisions it has.
    pub fn holds(&self, table: &str) -> bool {
        self.columns.contains_key(table)
    }

    /// Whether `table` has `column` (a database of an older schema may lack some).
    pub fn has(&self, table: &str, column: &str) -> bool {
        self.columns.get(table).is_some_and(|c| c.contains(column))
    }

    /// How many rows of each later revision's addition the set holds that rocflow has no
    /// record of.
    pub fn unread(&self, conn: &Connection) -> rusqlite::Result<Vec<(&'static Addition, u64)>> {
        let mut unread = Vec::new();
        for addition in ADDITIONS {
            let Some(condition) = addition.unread else {
                continue;
            };
            let present = match addition.columns {
                None => self.added.contains(addition.table),
                Some(columns) => columns.iter().all(|c| self.has(addition.table, c)),
            };
            if !present {
                continue;
            }
            let sql = format!(
                "SELECT count(*) FROM {} WHERE {condition}",
                self.name(addition.table)
            );
            let rows: i64 = conn.query_row(&sql, [], |row| row.get(0))?;
            if rows > 0 {
                unread.push((addition, rows as u64));
            }
        }
        Ok(unread)
    }

    /// `SELECT` of `columns` (`alias.column, …`, each resolved to NULL where its table
    /// lacks it) from `from`, where `aliases` names the table of each alias.
    pub fn select(&self, columns: &str, aliases: &[(&str, &str)], from: &str) -> String {
        let list: Vec<String> = (columns.split(',').map(str::trim))
            .map(|c| {
                let (alias, column) = c.split_once('.').expect("columns are alias.column");
                let table = (aliases.iter().find(|(a, _)| *a == alias))
                    .expect("every alias is named")
                    .1;
                self.column(table, alias, column)
            })
            .collect();
        format!("SELECT {} FROM {from}", list.join(", "))
    }

    /// `column` of `table` under the alias `alias` for a select list, or NULL where the
    /// table lacks it.
    pub fn column(&self, table: &str, alias: &str, column: &str) -> String {
        if self.has(table, column) {
            format!("{alias}.\"{column}\"")
        } else {
            "NULL".to_owned()
        }
    }
}

/// What a database holds: its sets of rocpd tables, and what it has that this reader
/// does not know.
#[derive(Debug)]
pub struct Layout {
    pub sets: Vec<Tables>,
    /// Tables and columns of a newer schema, ignored.
    pub unknown: Vec<String>,
}

/// Why a database is not one this reader takes.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("it is not a rocpd database: it has no {}", .0.join(", "))]
    Missing(Vec<String>),
    /// Streams are numbered in 16 bits.
    #[error("the databases named hold more than 65536 processes, more than one run reads")]
    TooManyProcesses,
}

/// Finds the rocpd table sets of a database: one per `rocpd_metadata…` table, each
/// needing every table of the schema with the same suffix.
pub fn layout(conn: &Connection) -> Result<Layout, SchemaError> {
    let mut statement =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names: BTreeSet<String> = statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let known_columns = known_columns();
    let suffixes: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix(METADATA))
        .map(str::to_owned)
        .collect();
    let mut sets = Vec::new();
    let mut missing = BTreeSet::new();
    for suffix in &suffixes {
        let absent: Vec<&str> = (known_columns.iter().map(|(t, _)| *t))
            .filter(|t| !names.contains(&format!("{t}{suffix}")))
            .collect();
        if absent.is_empty() {
            sets.push(suffix.clone());
        } else {
            missing.extend(absent.into_iter().map(str::to_owned));
        }
    }
    if sets.is_empty() {
        if suffixes.is_empty() {
            missing.extend(known_columns.iter().map(|(t, _)| (*t).to_owned()));
        }
        return Err(SchemaError::Missing(missing.into_iter().collect()));
    }
    let known = |name: &str| {
        name.starts_with("sqlite_")
            // Aggregate tables rocflow's sink writes beside the rocpd ones.
            || name.starts_with("rocflow_")
            || sets.iter().any(|s| {
                let tables = (known_columns.iter().map(|(t, _)| *t))
                    .chain(ADDITIONS.iter().filter(|a| a.columns.is_none()).map(|a| a.table));
                tables.into_iter().any(|t| name == format!("{t}{s}"))
            })
    };
    let mut unknown: Vec<String> = names.iter().filter(|n| !known(n)).cloned().collect();
    let lookups: BTreeSet<_> = (Table::ALL.iter())
        .flat_map(|t| t.lookups())
        .copied()
        .collect();
    let mut tables = Vec::new();
    for suffix in sets {
        let added: BTreeSet<&'static str> = (ADDITIONS.iter())
            .filter(|a| a.columns.is_none() && names.contains(&format!("{}{suffix}", a.table)))
            .map(|a| a.table)
            .collect();
        let mut columns = BTreeMap::new();
        for (table, expected) in &known_columns {
            let name = format!("{table}{suffix}");
            let mut info = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
            let have: BTreeSet<String> = info
                .query_map([&name], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            unknown.extend(
                (have.iter())
                    .filter(|c| !expected.contains(&c.as_str()))
                    .map(|c| format!("{table}.{c}")),
            );
            columns.insert(*table, have);
        }
        // The tables of later revisions have what columns they have; none is unknown.
        for &table in &added {
            let name = format!("{table}{suffix}");
            let mut info = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
            let have: BTreeSet<String> = info
                .query_map([&name], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            columns.insert(table, have);
        }
        let mut set = Tables {
            suffix,
            columns,
            added,
            scanned: BTreeSet::new(),
        };
        for &(table, column) in &lookups {
            if set.has(table, column) && !searched(conn, &set.name(table), column)? {
                set.scanned.insert((table, column));
            }
        }
        tables.push(set);
    }
    unknown.sort();
    unknown.dedup();
    Ok(Layout {
        sets: tables,
        unknown,
    })
}

/// Whether SQLite finds the rows of `table` (quoted) with a given `column` by a search
/// (its key or an index), as its query planner says, rather than by scanning the table.
fn searched(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let sql = format!("EXPLAIN QUERY PLAN SELECT 1 FROM {table} WHERE \"{column}\" = ?1");
    let mut statement = conn.prepare(&sql)?;
    let steps: Vec<String> = statement
        .query_map([0], |row| row.get(3))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(!steps.is_empty() && steps.iter().all(|s| s.starts_with("SEARCH")))
}
