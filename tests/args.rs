//! API call arguments as users get them: a run on the simulated device with `args = true`
//! (the real tool asking the SDK's argument iteration, as on a GPU) into every sink, each
//! read back by its own reader. What the arguments must say follows from the run itself:
//! a copy's `sizeBytes` is the size of the copy it made, a launch's `dimBlocks` the
//! workgroup of the kernel it dispatched.

mod support;

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use support::{assert_success, run_on};

/// The pipeline every test here runs: HIP calls with their arguments, the copies and
/// kernels they made, into each sink.
const PIPELINE: &str = r#"
[pipeline]
name = "args"
[[context]]
name = "api"
tracing = ["hip_runtime_api", "memory_copy", "kernel_dispatch"]
args = true
[[sink]]
name = "db"
kind = "rocpd"
path = "out/run.db"
"#;

/// Runs [`PIPELINE`] on the simulated device in a fresh directory.
fn run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PIPELINE).unwrap();
    assert_success(&run_on(
        "sim",
        "p.toml",
        &["/bin/sleep", "0.2"],
        dir.path(),
        &[],
    ));
    dir
}

fn query<T: rusqlite::types::FromSql>(db: &Connection, sql: &str) -> Vec<T> {
    let mut statement = db.prepare(sql).unwrap();
    let rows = statement.query_map([], |row| row.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

#[test]
fn rocpd_holds_each_calls_arguments_as_rocprofv3_writes_them() {
    let dir = run();
    let db = open(&dir.path().join("out/run.db"));
    // Each hipMemcpy's arguments, in order, with the types demangled.
    let memcpy: Vec<String> = query(
        &db,
        "SELECT group_concat(A.position || ' ' || A.type || ' ' || A.name, ', ') \
         FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id \
         JOIN (SELECT * FROM rocpd_arg ORDER BY position) A ON A.event_id = R.event_id \
         WHERE S.string = 'hipMemcpy' GROUP BY R.id",
    );
    assert!(!memcpy.is_empty());
    for args in &memcpy {
        assert_eq!(
            args,
            "0 void* dst, 1 void const* src, 2 unsigned long sizeBytes, 3 hipMemcpyKind kind"
        );
    }
    // The sizes the calls asked for are the copies' sizes.
    let asked: Vec<i64> = query(
        &db,
        "SELECT CAST(value AS INTEGER) FROM rocpd_arg WHERE name = 'sizeBytes' ORDER BY 1",
    );
    let copied: Vec<i64> = query(&db, "SELECT size FROM rocpd_memory_copy ORDER BY 1");
    assert_eq!(asked, copied);
    // A launch's block shape is its dispatch's workgroup, found through the correlation id
    // the call and the dispatch share.
    let launches: Vec<(String, String)> = {
        let mut statement = db
            .prepare(
                "SELECT A.value, '{z=' || K.workgroup_size_z || ', y=' || K.workgroup_size_y \
                 || ', x=' || K.workgroup_size_x || '}' \
                 FROM rocpd_arg A JOIN rocpd_event E ON E.id = A.event_id \
                 JOIN rocpd_event KE ON KE.stack_id = E.stack_id AND KE.id != E.id \
                 JOIN rocpd_kernel_dispatch K ON K.event_id = KE.id \
                 WHERE A.name = 'dimBlocks'",
            )
            .unwrap();
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap();
        rows.map(Result::unwrap).collect()
    };
    let dispatches: Vec<i64> = query(&db, "SELECT count(*) FROM rocpd_kernel_dispatch");
    assert_eq!(launches.len() as i64, dispatches[0]);
    for (asked, ran) in launches {
        assert_eq!(asked, ran);
    }
}
