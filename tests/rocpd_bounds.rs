//! rocpd databases from elsewhere, shaped to cost: hundreds of sets of tables with row ids
//! far apart, tables without their keys, cells of megabytes, a file cut short while it is
//! read, a process of a hundred thousand agents. Each reads in time and memory that follow
//! what the database holds, and what it holds comes out.

use std::path::Path;

use rocflow::record::Batch;
use rocflow::source::{Rocpd, Source};
use rocflow::wire::Payload;
use rusqlite::Connection;
use support::{
    assert_says, assert_success, rocflow, rocflow_bounded, rocprofv3_db, sqlite_rows, text,
};

/// The tables rocpd keeps a run's events in.
const EVENT_TABLES: [&str; 6] = [
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_pmc_event",
];

/// `rocflow inspect --json` of `path` under `dir`, within a minute of CPU time.
fn inspect(path: &str, dir: &Path) -> serde_json::Value {
    let out = rocflow_bounded(&["inspect", "--json", path], dir);
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A database of 100 sets of rocpd tables (as a merged file holds them), each of the same
/// process, whose event tables' rows have the ids 1 and 2^63 - 1: read in pieces that
/// follow its rows, not in 4,096 pieces of each table's range of ids (two million
/// queries, minutes).
#[test]
fn sets_of_tables_with_row_ids_far_apart_read_in_pieces_of_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("sets.db");
    rocprofv3_db::write(&path, 4242, "node-a", 4);
    let one = inspect("sets.db", d);
    let s = rocprofv3_db::suffix(4242);
    let conn = Connection::open(&path).unwrap();
    for table in EVENT_TABLES {
        conn.execute_batch(&format!(
            "UPDATE {table}{s} SET id = 9223372036854775807 \
             WHERE id = (SELECT max(id) FROM {table}{s}) AND (SELECT count(*) FROM {table}{s}) > 1"
        ))
        .unwrap();
    }
    let tables: Vec<(String, String)> = sqlite_rows(
        &conn,
        &format!("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE '%{s}'"),
        |r| Ok((r.get(0)?, r.get(1)?)),
    );
    conn.execute_batch("BEGIN").unwrap();
    for set in 1..100 {
        let other = rocprofv3_db::suffix(100_000 + set);
        for (name, sql) in &tables {
            let copy = name.replace(&s, &other);
            conn.execute_batch(&format!(
                "{}; INSERT INTO \"{copy}\" SELECT * FROM \"{name}\";",
                sql.replace(&s, &other)
            ))
            .unwrap();
        }
    }
    conn.execute_batch("COMMIT").unwrap();
    drop(conn);

    let all = inspect("sets.db", d);
    assert_eq!(all["processes"].as_array().unwrap().len(), 100);
    let records = one["records"].as_object().unwrap();
    assert!(
        records["kernel_dispatch"].as_u64() == Some(4),
        "{records:?}"
    );
    for (kind, count) in records {
        let count = count.as_u64().unwrap();
        assert_eq!(all["records"][kind].as_u64(), Some(100 * count), "{kind}");
    }
}

/// Without the key of its events or an index of its dispatches' events (a database a
/// script rebuilt, say), a database reads the same: its tables read whole, its counter
/// values finding their dispatches through a map of the source's own. That it reads them
/// so, not through an index SQLite builds again for each piece or a scan per counter
/// value (the same result, in quadratic time), the source's unit tests check.
#[test]
fn tables_without_their_keys_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    rocprofv3_db::write(&d.join("keyed.db"), 77, "node-k", 12);
    std::fs::copy(d.join("keyed.db"), d.join("bare.db")).unwrap();
    let s = rocprofv3_db::suffix(77);
    let conn = Connection::open(d.join("bare.db")).unwrap();
    for table in ["rocpd_event", "rocpd_track", "rocpd_kernel_dispatch"] {
        let t = format!("{table}{s}");
        conn.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON; \
             CREATE TABLE bare AS SELECT * FROM \"{t}\"; \
             DROP TABLE \"{t}\"; ALTER TABLE bare RENAME TO \"{t}\";"
        ))
        .unwrap();
    }
    // The events' ids are no longer the table's key.
    let plan: String = conn
        .query_row(
            &format!("EXPLAIN QUERY PLAN SELECT 1 FROM rocpd_event{s} WHERE id = 5"),
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.starts_with("SCAN"), "{plan}");
    drop(conn);
    let summary = |db: &str| {
        let out = rocflow(&["summary", db, "--format", "json"], d, &[]);
        assert_success(&out);
        assert_eq!(support::messages(&out.stderr), "", "{db}: no warning");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (keyed, bare) = (summary("keyed.db"), summary("bare.db"));
    assert_eq!(keyed, bare);
    assert!(keyed.to_string().contains("SQ_WAVES"), "{keyed}");
    assert_eq!(
        inspect("bare.db", d)["records"],
        inspect("keyed.db", d)["records"]
    );
}

/// `count` copies of `text` as SQL makes them.
fn repeated(text: &str, count: usize) -> String {
    format!("replace(hex(zeroblob({count})), '00', '{text}')")
}

/// A kernel name of 4 MiB, a command line of 2 M words and a marker message of 3 MiB
/// (each copied into every output's metadata) are cut to the 1 MiB a text may have, with
/// one warning naming where they are.
#[test]
fn text_longer_than_a_mib_is_cut_to_it_with_a_warning_naming_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("long.db");
    rocprofv3_db::write(&path, 66, "node-l", 4);
    let s = rocprofv3_db::suffix(66);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "UPDATE rocpd_info_kernel_symbol{s} SET kernel_name = {} WHERE id = 1; \
         UPDATE rocpd_info_process{s} SET command = './app' || {}; \
         UPDATE rocpd_event{s} SET extdata = json_object('message', {}) \
             WHERE id = (SELECT event_id FROM rocpd_region{s} r \
                 JOIN rocpd_string{s} n ON n.id = r.name_id \
                 WHERE n.string = 'roctxThreadRangeA' ORDER BY r.id LIMIT 1);",
        repeated("k", 4 << 20),
        repeated(" a", 2 << 20),
        repeated("m", 3 << 20),
    ))
    .unwrap();
    drop(conn);
    let out = rocflow_bounded(&["inspect", "--json", "long.db"], d);
    assert_success(&out);
    let stderr = support::messages(&out.stderr);
    assert_eq!(stderr.matches("longer than 1 MiB").count(), 1, "{stderr}");
    assert_says(
        &out.stderr,
        "`rocpd_info_kernel_symbol.kernel_name` of row 1",
    );
    assert_says(&out.stderr, "`rocpd_info_process.command` of row 66");
    assert_says(&out.stderr, "`rocpd_event.extdata` of row");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The first MiB of the line, but for a space it may end in.
    let command = json["processes"][0]["command"].as_str().unwrap();
    assert!((1 << 20) - command.len() <= 1, "{}", command.len());
    assert!(command.starts_with("./app a a "), "{}", &command[..20]);
    assert_eq!(json["records"]["kernel_dispatch"], 4);

    let out = rocflow_bounded(&["summary", "long.db", "--format", "json"], d);
    assert_success(&out);
    let summary = text(&out.stdout);
    let name = "k".repeat(1 << 20);
    assert!(
        summary.contains(&format!("\"{name}\"")),
        "the name cut to 1 MiB"
    );
    assert!(!summary.contains(&format!("{name}k")));
}

const CUT: &str = "ROCFLOW_TEST_CUT_WHILE_READ";

/// A database shortened while it is read (copied or downloaded again over itself) is an
/// error naming it, not SIGBUS through a memory map of the pages it no longer has. Read
/// through the library in a process of its own (this test run again), with one reader,
/// cut once the reader has started on it.
#[test]
fn a_database_cut_while_it_is_read_is_an_error_not_a_signal() {
    if let Some(path) = std::env::var_os(CUT) {
        return read_while_cut(Path::new(&path));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.db");
    rocprofv3_db::write(&path, 31, "node-c", 4);
    let s = rocprofv3_db::suffix(31);
    let conn = Connection::open(&path).unwrap();
    // 300,000 API calls, read in one query (they have arguments) in the order of an index
    // of their events: the reader sends some and waits for room, part-way through the
    // table and the index, which fill the second half of the file.
    let columns = "nid, pid, tid, start, \"end\", name_id, event_id";
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) \
         INSERT INTO rocpd_region{s} ({columns}) SELECT {columns} FROM rocpd_region{s}, n \
         WHERE id = (SELECT r.id FROM rocpd_region{s} r JOIN rocpd_arg{s} a \
             ON a.event_id = r.event_id LIMIT 1); \
         CREATE INDEX by_event ON rocpd_region{s} (event_id);"
    ))
    .unwrap();
    drop(conn);
    let test = "rocpd_bounds::a_database_cut_while_it_is_read_is_an_error_not_a_signal";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(CUT, &path)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), None, "killed: {stdout}");
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // After the test's name, on its line.
    let (_, read) = stdout
        .split_once("read: ")
        .unwrap_or_else(|| panic!("{stdout}"));
    let error = read.lines().next().unwrap();
    assert!(error.contains("cut.db"), "{error}");
}

/// Reads the database at `path` with one reader, cutting it to half its size once the
/// first API calls are through.
fn read_while_cut(path: &Path) {
    // SAFETY: a set of CPUs, zeroed and then given CPU 0, passed by pointer with its size.
    unsafe {
        let mut cpus: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut cpus);
        assert_eq!(
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &cpus),
            0
        );
    }
    let mut source = Rocpd::open(&[path.to_owned()]).unwrap();
    while let Some(frame) = source.next_frame() {
        if matches!(frame.payload, Payload::Records(Batch::Api(_))) {
            break;
        }
    }
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(file.metadata().unwrap().len() / 2).unwrap();
    while source.next_frame().is_some() {}
    let error = source
        .finish()
        .expect_err("a database cut short is an error");
    println!("read: {error}");
}

/// A process of 40,000 agents (a database written by rocflow, its agents multiplied)
/// replays into a rocpd database in time that grows with the agents, not with their
/// square (half a minute at this count, 2 minutes of a release build at 100,000), each
/// agent written with its index among those of its type.
#[test]
fn a_process_of_many_agents_replays_into_rocpd_with_each_agent() {
    const AGENTS: i64 = 40_000;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let head = support::traced_pipeline!("agents", "t", r#"["kernel_dispatch"]"#);
    let write = [head, support::sink!("db", "rocpd", "db/run.db")].concat();
    let args = ["--records", "2000", "--processes", "1"];
    support::generate(d, "write.toml", &write, &args);
    let again = [head, support::sink!("db", "rocpd", "again/run.db")].concat();
    std::fs::write(d.join("again.toml"), again).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "write.toml"], d, &[]));
    // The agents' table of a database, named with its UUID.
    let agent_table = |conn: &Connection| -> String {
        let sql = "SELECT name FROM sqlite_master \
                   WHERE name LIKE 'rocpd_info_agent_%' AND type = 'table'";
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let conn = Connection::open(d.join("db/run.db")).unwrap();
    let agents = agent_table(&conn);
    let before: i64 = conn
        .query_row(&format!("SELECT count(*) FROM \"{agents}\""), [], |r| {
            r.get(0)
        })
        .unwrap();
    let columns = "nid, pid, type, logical_index, name, vendor_name, product_name, user_name";
    // Each a GPU with an index and a node id of its own, above the run's, and nothing
    // else in its `extdata`.
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {AGENTS}) \
         INSERT INTO \"{agents}\" (id, absolute_index, type_index, extdata, {columns}) \
         SELECT 1000 + i, 1000 + i, 0, \
             json_object('index', 1000 + i), {columns} \
         FROM \"{agents}\", n \
         WHERE id = (SELECT max(id) FROM \"{agents}\" WHERE type = 'GPU');"
    ))
    .unwrap();
    drop(conn);

    // A few seconds of CPU time in a debug build; with the square of the agents, 30.
    let out = support::rocflow_within(&["replay", "db/run.db", "again.toml"], d, 15);
    assert_success(&out);
    let conn = Connection::open(d.join("again/run.db")).unwrap();
    let sql = format!(
        "SELECT type, absolute_index, type_index, name FROM \"{}\" ORDER BY absolute_index",
        agent_table(&conn)
    );
    let rows: Vec<(String, i64, i64, String)> = sqlite_rows(&conn, &sql, |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    });
    assert_eq!(rows.len() as i64, before + AGENTS);
    // Each type's agents numbered in the order of their indexes.
    for kind in ["CPU", "GPU"] {
        let indexes: Vec<i64> = (rows.iter().filter(|r| r.0 == kind)).map(|r| r.2).collect();
        assert_eq!(
            indexes,
            (0..indexes.len() as i64).collect::<Vec<_>>(),
            "{kind}"
        );
    }
    let last = rows.last().unwrap();
    assert_eq!((last.0.as_str(), last.1), ("GPU", 1000 + AGENTS));
    assert_eq!(last.3, rows[rows.len() - 2].3, "the copied agent's name");
}
