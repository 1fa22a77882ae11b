//! Decoded thread traces in rocpd databases. rocpd's schema (3.0) has no thread-trace
//! tables, so they are rocflow's own, named `rocflow_thread_trace_*` so that AMD's rocpd
//! tools, which read `rocpd_*` tables and views only, pass them by: one row per traced
//! dispatch (or device trace window) and instruction, one per wave, of the database's
//! processes.

use std::path::Path;

use rusqlite::{Connection, params};

use super::decode::DecodedWave;
use super::tables::InstructionRow;
use crate::catalog::Catalog;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS rocflow_thread_trace_instruction (
    pid INTEGER NOT NULL, dispatch_id INTEGER, device_window INTEGER,
    code_object_id INTEGER NOT NULL,
    address INTEGER NOT NULL, instruction TEXT NOT NULL, hits INTEGER NOT NULL,
    total_latency_cycles INTEGER NOT NULL, mean_latency_cycles REAL NOT NULL,
    stall_cycles INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rocflow_thread_trace_wave (
    pid INTEGER NOT NULL, dispatch_id INTEGER, device_window INTEGER, agent INTEGER NOT NULL,
    shader_engine INTEGER NOT NULL, cu INTEGER NOT NULL, simd INTEGER NOT NULL,
    wave_slot INTEGER NOT NULL, begin_cycle INTEGER NOT NULL, end_cycle INTEGER NOT NULL,
    instructions INTEGER NOT NULL);
";

/// Adds the rows of the database's processes to the rocpd database at `db`; how many.
pub fn add(
    db: &Path,
    rows: &[InstructionRow],
    waves: &[DecodedWave],
    catalog: &Catalog,
) -> rusqlite::Result<usize> {
    let mut connection = Connection::open(db)?;
    let pids: Vec<u32> = {
        let mut query = connection.prepare("SELECT DISTINCT pid FROM rocpd_info_process")?;
        query
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?
    };
    let transaction = connection.transaction()?;
    transaction.execute_batch(SCHEMA)?;
    let mut added = 0;
    {
        let mut insert = transaction.prepare(
            "INSERT INTO rocflow_thread_trace_instruction VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?;
        for r in rows.iter().filter(|r| pids.contains(&r.pid)) {
            insert.execute(params![
                r.pid,
                r.traced.dispatch_id().map(|id| id as i64),
                r.traced.window().map(|w| w as i64),
                r.code_object as i64,
                r.address as i64,
                r.text,
                r.hits as i64,
                r.total_latency as i64,
                r.mean_latency(),
                r.stall as i64
            ])?;
            added += 1;
        }
        let mut insert = transaction.prepare(
            "INSERT INTO rocflow_thread_trace_wave VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?;
        for w in waves {
            let pid = catalog
                .stream(w.stream)
                .process
                .as_ref()
                .map_or(0, |p| p.pid);
            if !pids.contains(&pid) {
                continue;
            }
            insert.execute(params![
                pid,
                w.traced.dispatch_id().map(|id| id as i64),
                w.traced.window().map(|w| w as i64),
                w.agent,
                w.shader_engine,
                w.cu,
                w.simd,
                w.slot,
                w.begin,
                w.end,
                w.instructions.len() as i64
            ])?;
            added += 1;
        }
    }
    transaction.commit()?;
    Ok(added)
}
