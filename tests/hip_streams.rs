//! Each kernel dispatch and memory copy on the HIP stream it was enqueued on, as a run on
//! the simulated device records it: the scenario names the streams (each thread creates
//! its own), the simulated SDK reports them as the real one does, and the tool attaches
//! each operation's stream as rocprofv3 does, into the rocpd database's `stream_id`.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{Connection, OpenFlags};
use support::{assert_success, rocflow};

/// Two threads, each with a kernel and a copy on streams of its own (1 and 2) and a kernel
/// and a copy on the null stream; the kernels and copies told apart by duration and size.
const SCENARIO: &str = r#"
[scenario]
name = "streams"
threads = 2
iterations = 3

[[agent]]
name = "gfx942"
product = "AMD Instinct MI300X"
cu_count = 304
xcc = 8
shader_engines = 32
lds_kb = 64
max_engine_clk_mhz = 2100

[[kernel]]
name = "_Z2onv"
duration_ns = 10000
grid = [256, 1, 1]
workgroup = [256, 1, 1]
stream = 1

[[kernel]]
name = "_Z4nullv"
duration_ns = 20000
grid = [256, 1, 1]
workgroup = [256, 1, 1]

[[copy]]
direction = "device_to_host"
bytes = 4096
duration_ns = 3000
stream = 2

[[copy]]
direction = "host_to_device"
bytes = 8192
duration_ns = 3000
"#;

/// Per operation (kernel duration or copy size) and OS thread: the stream handles its
/// rows name, by `rocpd_info_stream`'s `extdata`.
type Streams = BTreeMap<(i64, i64), BTreeSet<i64>>;

fn streams(db: &Connection, table: &str, what: &str) -> Streams {
    let sql = format!(
        "SELECT {what}, T.tid, json_extract(S.extdata, '$.handle') FROM {table} X \
         JOIN rocpd_info_stream S ON S.id = X.stream_id \
         JOIN rocpd_info_thread T ON T.id = X.tid"
    );
    let mut statement = db.prepare(&sql).unwrap();
    let rows = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
    let mut out = Streams::new();
    for row in rows.unwrap() {
        let (operation, tid, handle): (i64, i64, i64) = row.unwrap();
        out.entry((operation, tid)).or_default().insert(handle);
    }
    out
}

#[test]
fn each_operation_is_on_the_stream_its_thread_enqueued_it_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("streams.toml"), SCENARIO).unwrap();
    let args = [
        "run",
        "--device",
        "sim:streams.toml",
        "-q",
        "-d",
        "out",
        "--",
        "/bin/true",
    ];
    assert_success(&rocflow(&args, dir.path(), &[]));
    let db = (std::fs::read_dir(dir.path().join("out")).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .expect("a rocpd database");
    let db = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let kernels = streams(&db, "rocpd_kernel_dispatch", "X.\"end\" - X.start");
    let copies = streams(&db, "rocpd_memory_copy", "X.size");
    let threads: BTreeSet<i64> = kernels.keys().map(|k| k.1).collect();
    assert_eq!(threads.len(), 2, "{kernels:?}");
    let mut created = BTreeSet::new();
    for tid in threads {
        let on = |streams: &Streams, operation| {
            let handles = &streams[&(operation, tid)];
            assert_eq!(
                handles.len(),
                1,
                "one stream for all iterations: {handles:?}"
            );
            *handles.first().unwrap()
        };
        // The null stream's work: the SDK's stream 0.
        assert_eq!(on(&kernels, 20_000), 0);
        assert_eq!(on(&copies, 8192), 0, "hipMemcpy names no stream");
        // The thread's own two streams, apart from each other and from the other thread's.
        let (kernel, copy) = (on(&kernels, 10_000), on(&copies, 4096));
        assert!(
            kernel != 0 && copy != 0 && kernel != copy,
            "{kernel}, {copy}"
        );
        assert!(
            created.insert(kernel) && created.insert(copy),
            "{created:?}"
        );
    }
    // The SDK numbers a process's streams from 1 as they are created.
    assert_eq!(created, BTreeSet::from([1, 2, 3, 4]));
}
