//! API call arguments as users get them: a run on the simulated device with `args = true`
//! (the real tool asking the SDK's argument iteration, as on a GPU) into every sink, each
//! read back by its own reader. What the arguments must say follows from the scenario and
//! the run: the copies' `sizeBytes` are the sizes of the scenario's copies, a launch's
//! `dimBlocks` the workgroup of the kernel it dispatched.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use rusqlite::{Connection, OpenFlags};
use support::scenario::default_scenario;
use support::truth::Scenario;
use support::{assert_success, csv, decode_perfetto, duckdb, otf2_print, rocflow, run_on};

/// The context every pipeline here has: HIP calls with their arguments, and the copies
/// and kernels they made.
const CONTEXT: &str = r#"
[[context]]
name = "api"
tracing = ["hip_runtime_api", "memory_copy", "kernel_dispatch"]
args = true
"#;

/// The sinks of the run every test here reads: one of each kind.
const SINKS: &str = concat!(
    support::sink!("db", "rocpd", "out/run.db"),
    support::sink!("csv", "csv", "out/csv"),
    support::sink!("trace", "perfetto", "out/trace.pftrace"),
    support::sink!("ds", "parquet", "out/ds"),
    support::sink!("otf2", "otf2", "out/otf2"),
);

/// What a replay of the run keeps: the calls that copied more than a MiB.
const LARGE_COPIES: &str = r#"
[[transform]]
name = "large"
kind = "filter"
records = ["api"]
predicate = "args.sizeBytes > 1MiB"
[[sink]]
name = "csv"
kind = "csv"
path = "large"
"#;

/// A pipeline named `name` with [`CONTEXT`], then `rest`.
fn pipeline(name: &str, rest: &str) -> String {
    format!("[pipeline]\nname = \"{name}\"\n{CONTEXT}{rest}")
}

/// The directory of one run with [`SINKS`] on the simulated device, shared by the tests.
fn run() -> &'static Path {
    static RUN: OnceLock<tempfile::TempDir> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.toml"), pipeline("args", SINKS)).unwrap();
        let app = ["/bin/sleep", "0.2"];
        assert_success(&run_on("sim", "p.toml", &app, dir.path(), &[]));
        dir
    })
    .path()
}

/// The scenario of the simulated device the run profiles (its default).
fn scenario() -> Scenario {
    Scenario::of(&default_scenario())
}

/// The sizes of the run's copies, in order, as its scenario makes them.
fn copy_sizes() -> Vec<u64> {
    let scenario = scenario();
    let each = scenario.copies.iter().map(|c| c.bytes);
    let repeats = scenario.repeats() as usize;
    let mut sizes: Vec<u64> = each.flat_map(|bytes| [bytes].repeat(repeats)).collect();
    sizes.sort_unstable();
    sizes
}

/// The `args` field of each `function` call of an `api.csv`, as name → value.
fn csv_args(path: &Path, function: &str) -> Vec<BTreeMap<String, String>> {
    csv(path)
        .iter()
        .filter(|row| row["operation"] == function)
        .map(|row| {
            (row["args"].split(';'))
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap();
                    (name.to_owned(), value.to_owned())
                })
                .collect()
        })
        .collect()
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
    let db = open(&run().join("out/run.db"));
    // Each hipMemcpy's arguments, in order, with the types demangled.
    let memcpy: Vec<String> = query(
        &db,
        "SELECT group_concat(A.position || ' ' || A.type || ' ' || A.name, ', ') \
         FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id \
         JOIN (SELECT * FROM rocpd_arg ORDER BY position) A ON A.event_id = R.event_id \
         WHERE S.string = 'hipMemcpy' GROUP BY R.id",
    );
    assert_eq!(memcpy.len(), copy_sizes().len(), "a call a copy");
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
    let sizes: Vec<i64> = copy_sizes().into_iter().map(|b| b as i64).collect();
    assert_eq!((asked, copied), (sizes.clone(), sizes));
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
    let dispatches = scenario().records_per_process()["kernel_dispatch"];
    assert_eq!(launches.len() as u64, dispatches);
    for (asked, ran) in launches {
        assert_eq!(asked, ran);
    }
}

#[test]
fn csv_has_an_args_column_with_each_calls_arguments() {
    let dir = run();
    let api = dir.join("out/csv/api.csv");
    let memcpy = csv_args(&api, "hipMemcpy");
    let mut sizes: Vec<u64> = memcpy
        .iter()
        .map(|a| a["sizeBytes"].parse().unwrap())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, copy_sizes());
    for args in &memcpy {
        assert_eq!(
            args.keys().collect::<Vec<_>>(),
            ["dst", "kind", "sizeBytes", "src"]
        );
        assert!(["HostToDevice", "DeviceToHost"].contains(&args["kind"].as_str()));
    }
    let mallocs = csv_args(&api, "hipMalloc");
    let allocations = scenario().allocations;
    let each = scenario().repeats() as usize;
    assert_eq!(mallocs.len(), each * allocations.len());
    assert!(
        (mallocs.iter()).all(
            |a| allocations.contains(&a["size"].parse().unwrap()) && a["ptr"].starts_with("0x")
        )
    );
}

#[test]
fn perfetto_api_slices_carry_the_arguments_as_debug_annotations() {
    let dir = run();
    let decoded = decode_perfetto(&[dir.join("out/trace.pftrace")]);
    let memcpy: Vec<&serde_json::Value> = decoded[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "hipMemcpy" && e["type"] == "B")
        .collect();
    let mut sizes: Vec<u64> = memcpy
        .iter()
        .map(|e| e["args"]["sizeBytes"].as_u64().unwrap())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, copy_sizes());
    for e in memcpy {
        let args = &e["args"];
        // Pointers as pointers, enumerators as text, beside the slice's own annotations.
        assert_eq!(args["dst"], "0x7f0000000000");
        assert!(args["kind"].is_string());
        assert!(args["correlation_id"].as_u64().unwrap() > 0);
    }
}

#[test]
fn parquet_has_the_arguments_as_a_list_duckdb_reads() {
    let dir = run();
    let rows = duckdb(
        dir,
        &[
            "SELECT a.value FROM (SELECT unnest(args) AS a FROM 'out/ds/api/*.parquet' \
           WHERE operation = 'hipMemcpy') WHERE a.name = 'sizeBytes' AND a.type = 'unsigned long' \
           AND a.position = 2",
        ],
    );
    let mut sizes: Vec<u64> = rows[0]
        .iter()
        .map(|r| r[0].as_str().unwrap().parse().unwrap())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, copy_sizes());
}

#[test]
fn otf2_enter_events_carry_the_arguments_as_string_attributes() {
    let dir = run();
    let printed = otf2_print(&[], &dir.join("out/otf2/traces.otf2"));
    let lines: Vec<&str> = printed.lines().collect();
    // `otf2-print` puts an event's attributes on the line after it.
    let memcpy: Vec<&str> = (lines.windows(2))
        .filter(|w| w[0].starts_with("ENTER") && w[0].contains("\"hipMemcpy\""))
        .map(|w| w[1])
        .collect();
    let mut sizes: Vec<u64> = memcpy
        .iter()
        .map(|attributes| {
            let at = attributes.find("(\"sizeBytes\"").unwrap();
            let value = attributes[at..].split(';').nth(2).unwrap();
            value.trim().split('"').nth(1).unwrap().parse().unwrap()
        })
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, copy_sizes());
    assert!(
        memcpy
            .iter()
            .all(|a| a.contains("(\"dst\"") && a.contains("\"0x7f0000000000\""))
    );
}

#[test]
fn a_filter_reads_arguments_with_sizes_in_binary_units() {
    let dir = run();
    std::fs::write(dir.join("large.toml"), pipeline("large", LARGE_COPIES)).unwrap();
    let last = dir.join("rocflow-out/last.rfraw");
    assert_success(&rocflow(
        &["replay", last.to_str().unwrap(), "large.toml"],
        dir,
        &[],
    ));
    let kept = csv(&dir.join("large/api.csv"));
    let large = copy_sizes().into_iter().filter(|&b| b > 1 << 20).count();
    // Only copies of more than a MiB are left: the calls without `sizeBytes` are dropped.
    assert!(large > 0 && large < copy_sizes().len());
    assert_eq!(kept.len(), large);
    assert!(kept.iter().all(|row| row["operation"] == "hipMemcpy"));
}

/// One delivery of more records than the tool converts at once goes out in parts, each
/// part's calls after their own arguments: every launch of a run whose 160,000 records
/// come in a single delivery still has its arguments, and none another's.
#[test]
fn calls_of_a_delivery_sent_in_parts_keep_their_arguments() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads, 5,000 iterations of eight launches: 160,000 records.
    support::launches_scenario(dir.path(), 5000);
    // A buffer that holds the whole run, so it comes in one delivery, at the end.
    let context = CONTEXT.replace(
        "args = true",
        "args = true\nbuffer = { size = \"256MiB\", watermark = \"100%\" }",
    );
    let sink = support::sink!("csv", "csv", "out/csv");
    let pipeline = format!("[pipeline]\nname = \"parts\"\n{context}{sink}");
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on(
        "sim:launches.toml",
        "p.toml",
        &["/bin/true"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    let launches = csv_args(&dir.path().join("out/csv/api.csv"), "hipLaunchKernel");
    let scenario = Scenario::read(&dir.path().join("launches.toml"));
    let (kernels, each) = (scenario.kernels.len(), scenario.repeats() as usize);
    assert_eq!(launches.len(), kernels * each);
    // Each launch's arguments name its kernel's workgroup, which no other kernel has.
    let mut blocks = BTreeMap::<String, usize>::new();
    for args in &launches {
        *blocks.entry(args["dimBlocks"].clone()).or_default() += 1;
    }
    assert_eq!(blocks.len(), kernels, "{blocks:?}");
    assert!(blocks.values().all(|&n| n == each), "{blocks:?}");
}
