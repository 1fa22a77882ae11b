//! Opening a database as untrusted input and finding its rocpd tables. rocprofv3 names
//! every table with the database's UUID (`rocpd_region_<uuid>`) and adds plain-named
//! views over them; the views are the database's own SQL, so nothing here reads through
//! them: queries name the suffixed tables directly, and a database may hold several sets
//! (one per suffix, as a merged file does).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// The tables rocprofv3 writes (rocpd schema 3), without their suffix.
pub const TABLES: &[&str] = &[
    METADATA,
    STRING,
    NODE,
    PROCESS,
    THREAD,
    AGENT,
    QUEUE,
    STREAM,
    PMC,
    CODE_OBJECT,
    KERNEL_SYMBOL,
    TRACK,
    EVENT,
    ARG,
    PMC_EVENT,
    REGION,
    SAMPLE,
    KERNEL_DISPATCH,
    MEMORY_COPY,
    MEMORY_ALLOCATE,
];

pub const METADATA: &str = "rocpd_metadata";
pub const STRING: &str = "rocpd_string";
pub const NODE: &str = "rocpd_info_node";
pub const PROCESS: &str = "rocpd_info_process";
pub const THREAD: &str = "rocpd_info_thread";
pub const AGENT: &str = "rocpd_info_agent";
pub const QUEUE: &str = "rocpd_info_queue";
pub const STREAM: &str = "rocpd_info_stream";
pub const PMC: &str = "rocpd_info_pmc";
pub const CODE_OBJECT: &str = "rocpd_info_code_object";
pub const KERNEL_SYMBOL: &str = "rocpd_info_kernel_symbol";
pub const TRACK: &str = "rocpd_track";
pub const EVENT: &str = "rocpd_event";
pub const ARG: &str = "rocpd_arg";
pub const PMC_EVENT: &str = "rocpd_pmc_event";
pub const REGION: &str = "rocpd_region";
pub const SAMPLE: &str = "rocpd_sample";
pub const KERNEL_DISPATCH: &str = "rocpd_kernel_dispatch";
pub const MEMORY_COPY: &str = "rocpd_memory_copy";
pub const MEMORY_ALLOCATE: &str = "rocpd_memory_allocate";

/// The columns this reader knows, per table (what rocpd schema 3 defines); others are
/// from a newer schema and named in the database's note.
const COLUMNS: &[(&str, &[&str])] = &[
    (METADATA, &["id", "tag", "value"]),
    (STRING, &["id", "guid", "string"]),
    (
        NODE,
        &[
            "id",
            "guid",
            "hash",
            "machine_id",
            "system_name",
            "hostname",
            "release",
            "version",
            "hardware_name",
            "domain_name",
        ],
    ),
    (
        PROCESS,
        &[
            "id",
            "guid",
            "nid",
            "ppid",
            "pid",
            "init",
            "fini",
            "start",
            "end",
            "command",
            "environment",
            "extdata",
        ],
    ),
    (
        THREAD,
        &[
            "id", "guid", "nid", "ppid", "pid", "tid", "name", "start", "end", "extdata",
        ],
    ),
    (
        AGENT,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "uuid",
            "name",
            "model_name",
            "vendor_name",
            "product_name",
            "user_name",
            "extdata",
        ],
    ),
    (QUEUE, &["id", "guid", "nid", "pid", "name", "extdata"]),
    (STREAM, &["id", "guid", "nid", "pid", "name", "extdata"]),
    (
        PMC,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "agent_id",
            "target_arch",
            "event_code",
            "instance_id",
            "name",
            "symbol",
            "description",
            "long_description",
            "component",
            "units",
            "value_type",
            "block",
            "expression",
            "is_constant",
            "is_derived",
            "extdata",
        ],
    ),
    (
        CODE_OBJECT,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "agent_id",
            "uri",
            "load_base",
            "load_size",
            "load_delta",
            "storage_type",
            "extdata",
        ],
    ),
    (
        KERNEL_SYMBOL,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "code_object_id",
            "kernel_name",
            "display_name",
            "kernel_object",
            "kernarg_segment_size",
            "kernarg_segment_alignment",
            "group_segment_size",
            "private_segment_size",
            "sgpr_count",
            "arch_vgpr_count",
            "accum_vgpr_count",
            "extdata",
        ],
    ),
    (
        TRACK,
        &["id", "guid", "nid", "pid", "tid", "name_id", "extdata"],
    ),
    (
        EVENT,
        &[
            "id",
            "guid",
            "category_id",
            "stack_id",
            "parent_stack_id",
            "correlation_id",
            "call_stack",
            "line_info",
            "extdata",
        ],
    ),
    (
        ARG,
        &[
            "id", "guid", "event_id", "position", "type", "name", "value", "extdata",
        ],
    ),
    (
        PMC_EVENT,
        &["id", "guid", "event_id", "pmc_id", "value", "extdata"],
    ),
    (
        REGION,
        &[
            "id", "guid", "nid", "pid", "tid", "start", "end", "name_id", "event_id", "extdata",
        ],
    ),
    (
        SAMPLE,
        &["id", "guid", "track_id", "timestamp", "event_id", "extdata"],
    ),
    (
        KERNEL_DISPATCH,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "tid",
            "agent_id",
            "kernel_id",
            "dispatch_id",
            "queue_id",
            "stream_id",
            "start",
            "end",
            "private_segment_size",
            "group_segment_size",
            "workgroup_size_x",
            "workgroup_size_y",
            "workgroup_size_z",
            "grid_size_x",
            "grid_size_y",
            "grid_size_z",
            "region_name_id",
            "event_id",
            "extdata",
        ],
    ),
    (
        MEMORY_COPY,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "tid",
            "start",
            "end",
            "name_id",
            "dst_agent_id",
            "dst_address",
            "src_agent_id",
            "src_address",
            "size",
            "queue_id",
            "stream_id",
            "region_name_id",
            "event_id",
            "extdata",
        ],
    ),
    (
        MEMORY_ALLOCATE,
        &[
            "id",
            "guid",
            "nid",
            "pid",
            "tid",
            "agent_id",
            "type",
            "level",
            "start",
            "end",
            "address",
            "size",
            "queue_id",
            "stream_id",
            "event_id",
            "extdata",
        ],
    ),
];

/// Opens `path` to read only, with nothing of the file's own SQL trusted: its views and
/// triggers are never run by the queries here, and `trusted_schema = OFF` keeps functions
/// its schema might name from running when SQLite parses it.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.execute_batch("PRAGMA trusted_schema = OFF; PRAGMA query_only = ON;")?;
    Ok(conn)
}

/// One set of rocpd tables in a database: the suffix its tables share, and the columns
/// each has.
#[derive(Debug, Clone)]
pub struct Tables {
    suffix: String,
    columns: BTreeMap<&'static str, BTreeSet<String>>,
}

impl Tables {
    /// `table` with this set's suffix, quoted for SQL.
    pub fn name(&self, table: &str) -> String {
        format!("\"{}{}\"", table, self.suffix.replace('"', "\"\""))
    }

    /// Whether `table` has `column` (a database of an older schema may lack some).
    pub fn has(&self, table: &str, column: &str) -> bool {
        self.columns.get(table).is_some_and(|c| c.contains(column))
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
/// needing every table of [`TABLES`] with the same suffix.
pub fn layout(conn: &Connection) -> Result<Layout, SchemaError> {
    let mut statement =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names: BTreeSet<String> = statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let suffixes: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix(METADATA))
        .map(str::to_owned)
        .collect();
    let mut sets = Vec::new();
    let mut missing = BTreeSet::new();
    for suffix in &suffixes {
        let absent: Vec<&str> = (TABLES.iter().copied())
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
            missing.extend(TABLES.iter().map(|t| (*t).to_owned()));
        }
        return Err(SchemaError::Missing(missing.into_iter().collect()));
    }
    let known = |name: &str| {
        name.starts_with("sqlite_")
            // Aggregate tables rocflow's sink writes beside the rocpd ones.
            || name.starts_with("rocflow_")
            || sets
                .iter()
                .any(|s| TABLES.iter().any(|t| name == format!("{t}{s}")))
    };
    let mut unknown: Vec<String> = names.iter().filter(|n| !known(n)).cloned().collect();
    let mut tables = Vec::new();
    for suffix in sets {
        let mut columns = BTreeMap::new();
        for &(table, expected) in COLUMNS {
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
            columns.insert(table, have);
        }
        tables.push(Tables { suffix, columns });
    }
    unknown.sort();
    unknown.dedup();
    Ok(Layout {
        sets: tables,
        unknown,
    })
}
