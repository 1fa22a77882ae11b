//! A summary read from a rocpd database instead of a spool: the same sections, from the
//! data views AMD ships (`kernels`, `regions`, `memory_copies`, `memory_allocations`,
//! `counters_collection`), so runs kept only as databases can be summarized and compared
//! too. (Databases written by rocprofv3 use the same views but have not been tried.)

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};

use super::{Breakdown, Kind, Summary, size_class};

/// Whether the file at `path` is an SQLite database (by its header).
pub fn is_database(path: &Path) -> bool {
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// Each query gives, per row: the section's own key columns, then pid, agent (or NULL),
/// the duration (or counter value) and bytes.
const QUERIES: &[(Kind, usize, &str)] = &[
    (
        Kind::Kernels,
        1,
        "SELECT name, pid, agent_abs_index, duration, 0 FROM kernels",
    ),
    (
        Kind::Api,
        2,
        "SELECT lower(category), name, pid, NULL, duration, 0 FROM regions \
         WHERE category LIKE '%\\_API' ESCAPE '\\' AND category NOT LIKE 'MARKER%'",
    ),
    (
        Kind::Copies,
        1,
        // rocpd names copies by the SDK's full operation name (MEMORY_COPY_HOST_TO_DEVICE).
        "SELECT replace(name, 'MEMORY_COPY_', ''), pid, dst_agent_abs_index, duration, size \
         FROM memory_copies",
    ),
    (
        Kind::Allocations,
        1,
        "SELECT type, pid, agent_abs_index, duration, size FROM memory_allocations \
         WHERE level <> 'SCRATCH'",
    ),
    (
        Kind::Markers,
        1,
        "SELECT coalesce(nullif(json_extract(extdata, '$.message'), ''), name), pid, NULL, \
         duration, 0 FROM regions WHERE category LIKE 'MARKER%' AND name <> 'roctxMarkA'",
    ),
    (
        Kind::Counters,
        2,
        "SELECT kernel_name, counter_name, pid, agent_abs_index, value, 0 \
         FROM counters_collection",
    ),
];

impl Summary {
    /// The statistics of the run a rocpd database holds.
    pub fn of_rocpd(path: &Path, breakdown: Breakdown) -> Result<Summary, String> {
        let connection = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        let mut summary = Summary {
            breakdown,
            ..Summary::default()
        };
        for &(kind, keys, query) in QUERIES {
            let mut statement = connection
                .prepare(query)
                .map_err(|e| format!("{}: not a rocpd database? SQLite: {e}", path.display()))?;
            let mut rows = statement.query([]).map_err(|e| e.to_string())?;
            while let Some(row) = rows.next().map_err(|e| e.to_string())? {
                let text = |i: usize| match row.get::<_, Value>(i) {
                    Ok(Value::Text(s)) => s,
                    Ok(Value::Integer(v)) => v.to_string(),
                    _ => "<unknown>".to_owned(),
                };
                let number = |i: usize| match row.get::<_, Value>(i) {
                    Ok(Value::Integer(v)) => v as f64,
                    Ok(Value::Real(v)) => v,
                    _ => 0.0,
                };
                let mut own: Vec<String> = (0..keys).map(text).collect();
                let bytes = number(keys + 3) as u64;
                if kind == Kind::Copies {
                    own.push(size_class(bytes).to_owned());
                }
                let own: Vec<&str> = own.iter().map(String::as_str).collect();
                let agent = row.get::<_, Option<i64>>(keys + 1).ok().flatten();
                let at = (number(keys) as u32, agent.map(|a| a as u32));
                summary.add(kind, at, &own, number(keys + 2), bytes);
            }
        }
        Ok(summary)
    }
}
