//! The rocpd sink as users run it: `rocflow replay` of a generated run into rocpd
//! databases, opened with SQLite and read through the views AMD's rocpd tools query
//! (`kernels`, `top_kernels`, `kernel_summary`, `memory_copies`, `regions`, …). What the
//! views must show is computed from the records read back from the spool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use rocflow::catalog::Catalog;
use rocflow::pipeline::{self, Options};
use rocflow::record::{Batch, MemoryAllocation, Meta, Process, ScratchMemory};
use rocflow::sdk::Domain;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::wire::Payload;
use rusqlite::{Connection, OpenFlags, params};
use support::{assert_fails, text};

fn rocflow(args: &[&str], dir: &Path) -> Output {
    support::rocflow(args, dir, &[])
}

/// A pipeline that traces what the generator makes, into one rocpd sink.
fn pipeline(records: &str, options: &str) -> String {
    const GENERATED: &str = support::generated_pipeline!("db", "all");
    format!(
        r#"{GENERATED}pc_sampling.method = "host_trap"
[[sink]]
name = "db"
kind = "rocpd"
path = "out/{{hostname}}-{{pid}}.db"
records = [{records}]
options = {{ {options} }}
"#
    )
}

const ALL: &str =
    r#""kernel_dispatch", "api", "memory_copy", "marker", "counter_sample", "pc_sample""#;

/// Generates a run of `processes` processes recorded with `pipeline`, in a fresh directory.
fn setup(processes: u16, pipeline: &str) -> tempfile::TempDir {
    let processes = processes.to_string();
    support::generated(
        "db.toml",
        pipeline,
        &["--records", "40000", "--processes", &processes],
    )
}

fn replay(dir: &Path) -> Output {
    rocflow(&["replay", "run.rfraw"], dir)
}

/// rocpd's name of a host call's region: `DOMAIN/operation`.
fn region(domain_id: u8, operation_id: i32) -> String {
    let domain = Domain::from_sdk_value(domain_id.into()).unwrap();
    let operation = domain.operation_name(operation_id).unwrap();
    format!("{}/{operation}", domain.name().to_uppercase())
}

/// Durations by name, and the sum, minimum and maximum of each group.
type Durations = BTreeMap<String, Vec<i64>>;

/// What one process of the spool holds, as rocpd names it.
#[derive(Debug, Default)]
struct Expected {
    process: Option<Process>,
    kernels: Durations,
    copies: Durations,
    /// Host calls that last, by `category/name`.
    regions: Durations,
    markers: Vec<String>,
    counter_samples: usize,
    counter_total: f64,
    pc_samples: usize,
}

/// Reads the spool's records, per process id.
fn expected(spool: &Path) -> BTreeMap<u32, Expected> {
    let mut catalog = Catalog::default();
    let mut by_pid: BTreeMap<u32, Expected> = BTreeMap::new();
    for frame in SpoolReader::open(spool).unwrap() {
        let frame = frame.unwrap();
        let batch = match frame.payload {
            Payload::Meta(items) => {
                for item in &items {
                    if let Meta::Process(p) = item {
                        by_pid.entry(p.pid).or_default().process = Some(p.clone());
                    }
                }
                catalog.apply(frame.stream, items);
                continue;
            }
            Payload::Records(batch) => batch,
            Payload::Args(_) | Payload::Trace(_) => continue,
        };
        let meta = catalog.stream(frame.stream);
        let duration = |start: u64, end: u64| (end - start) as i64;
        match batch {
            Batch::KernelDispatch(records) => {
                for r in records {
                    let e = by_pid.entry(r.pid).or_default();
                    let name = meta.kernel_name(r.kernel_id).to_owned();
                    e.kernels
                        .entry(name)
                        .or_default()
                        .push(duration(r.start_ns, r.end_ns));
                }
            }
            Batch::MemoryCopy(records) => {
                for r in records {
                    let op = Domain::MemoryCopy
                        .operation_name(r.operation_id.into())
                        .unwrap();
                    let e = by_pid.entry(r.pid).or_default();
                    let name = format!("MEMORY_COPY_{op}");
                    e.copies
                        .entry(name)
                        .or_default()
                        .push(duration(r.start_ns, r.end_ns));
                }
            }
            Batch::Api(records) => {
                for r in records.into_iter().filter(|r| r.end_ns > r.start_ns) {
                    let name = region(r.domain_id, r.operation_id);
                    let e = by_pid.entry(r.pid).or_default();
                    e.regions
                        .entry(name)
                        .or_default()
                        .push(duration(r.start_ns, r.end_ns));
                }
            }
            Batch::Marker(records) => {
                for r in records.into_iter().filter(|r| r.end_ns > r.start_ns) {
                    let name = region(r.domain_id, r.operation_id);
                    let e = by_pid.entry(r.pid).or_default();
                    e.regions
                        .entry(name)
                        .or_default()
                        .push(duration(r.start_ns, r.end_ns));
                    e.markers.push(meta.string(r.message).to_owned());
                }
            }
            Batch::CounterSample(records) => {
                for r in records {
                    let e = by_pid.entry(r.pid).or_default();
                    e.counter_samples += 1;
                    e.counter_total += r.value;
                }
            }
            Batch::PcSample(records) => {
                for r in records {
                    by_pid.entry(r.pid).or_default().pc_samples += 1;
                }
            }
            other => panic!("the generator made {:?} records", other.kind()),
        }
    }
    by_pid
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Count, sum, minimum and maximum of each group of durations.
fn stats(groups: &Durations) -> BTreeMap<String, (i64, i64, i64, i64)> {
    groups
        .iter()
        .map(|(name, d)| {
            let (min, max) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
            (name.clone(), (d.len() as i64, d.iter().sum(), min, max))
        })
        .collect()
}

/// Rows of `sql` (four integer columns after a name) for one process id.
fn grouped(conn: &Connection, sql: &str, pid: u32) -> BTreeMap<String, (i64, i64, i64, i64)> {
    let mut statement = conn.prepare(sql).unwrap();
    statement
        .query_map(params![pid], |r| {
            Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn count(conn: &Connection, sql: &str, pid: u32) -> usize {
    conn.query_row(sql, params![pid], |r| r.get::<_, i64>(0))
        .unwrap() as usize
}

/// Checks the records of process `pid` through the data views.
fn check_process(conn: &Connection, pid: u32, want: &Expected) {
    let stat = "COUNT(*), SUM(duration), MIN(duration), MAX(duration)";
    assert!(!want.kernels.is_empty());
    assert_eq!(
        grouped(
            conn,
            &format!("SELECT name, {stat} FROM kernels WHERE pid = ?1 GROUP BY name"),
            pid
        ),
        stats(&want.kernels),
        "kernels of {pid}"
    );
    assert_eq!(
        grouped(
            conn,
            &format!("SELECT name, {stat} FROM memory_copies WHERE pid = ?1 GROUP BY name"),
            pid
        ),
        stats(&want.copies),
        "memory copies of {pid}"
    );
    assert_eq!(
        grouped(
            conn,
            &format!(
                "SELECT category || '/' || name, {stat} FROM regions WHERE pid = ?1 \
                 GROUP BY category, name"
            ),
            pid
        ),
        stats(&want.regions),
        "regions of {pid}"
    );
    let mut statement = conn
        .prepare(
            "SELECT json_extract(extdata, '$.message') FROM regions \
             WHERE pid = ?1 AND category LIKE 'MARKER_%' ORDER BY start, id",
        )
        .unwrap();
    let mut markers: Vec<String> = statement
        .query_map(params![pid], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut want_markers = want.markers.clone();
    markers.sort();
    want_markers.sort();
    assert_eq!(markers, want_markers, "marker messages of {pid}");
    assert_eq!(
        count(conn, "SELECT COUNT(*) FROM pmc_events WHERE pid = ?1", pid),
        want.counter_samples
    );
    let total: f64 = conn
        .query_row(
            "SELECT TOTAL(value) FROM counters_collection WHERE pid = ?1",
            params![pid],
            |r| r.get(0),
        )
        .unwrap();
    assert!((total - want.counter_total).abs() < 1e-6 * want.counter_total.max(1.0));
    assert_eq!(
        count(
            conn,
            "SELECT COUNT(*) FROM samples WHERE pid = ?1 AND category = 'PC_SAMPLING_HOST_TRAP'",
            pid
        ),
        want.pc_samples
    );
    let process = want.process.as_ref().unwrap();
    let row: (i64, String, String) = conn
        .query_row(
            "SELECT ppid, hostname, command FROM processes WHERE pid = ?1",
            params![pid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            i64::from(process.ppid),
            process.hostname.clone(),
            process.command.join(" ")
        )
    );
}

/// Checks the summary views of a database holding `processes`, and that every id in it
/// resolves.
fn check_summaries(conn: &Connection, processes: &[&Expected]) {
    let mut kernels = Durations::new();
    let mut copies = Durations::new();
    for p in processes {
        for (name, d) in &p.kernels {
            kernels.entry(name.clone()).or_default().extend(d);
        }
        for (name, d) in &p.copies {
            copies.entry(name.clone()).or_default().extend(d);
        }
    }
    let want = stats(&kernels);
    let total: i64 = want.values().map(|s| s.1).sum();
    let mut top = conn
        .prepare("SELECT name, total_calls, total_duration, percentage FROM top_kernels")
        .unwrap();
    let rows: Vec<(String, i64, f64, f64)> = top
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), want.len());
    assert!(rows.windows(2).all(|w| w[0].2 >= w[1].2), "longest first");
    for (name, calls, micros, percent) in rows {
        let (n, sum, _, _) = want[&name];
        assert_eq!(calls, n, "{name}");
        assert!(
            (micros - sum as f64 / 1000.0).abs() < 1e-6 * micros,
            "{name}"
        );
        assert!(
            (percent - sum as f64 * 100.0 / total as f64).abs() < 1e-9,
            "{name}"
        );
    }
    for (view, want) in [
        ("kernel_summary", &kernels),
        ("memory_copy_summary", &copies),
    ] {
        let sql = format!(
            "SELECT name, calls, \"DURATION (nsec)\", \"MIN (nsec)\", \"MAX (nsec)\" FROM {view}"
        );
        let mut statement = conn.prepare(&sql).unwrap();
        let got: BTreeMap<String, (i64, i64, i64, i64)> = statement
            .query_map([], |r| {
                Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, stats(want), "{view}");
    }
    let broken: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(broken, 0, "ids that resolve to no row");
    // Every view AMD ships runs (SQLite checks a view's query only when it is read).
    let views: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'view' \
             UNION SELECT name FROM sqlite_temp_master WHERE type = 'view'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for view in [
        "busy",
        "counters_collection",
        "kernel_summary_region",
        "top",
    ] {
        assert!(views.iter().any(|v| v == view), "no view {view}");
    }
    for view in &views {
        let mut statement = conn.prepare(&format!("SELECT * FROM \"{view}\"")).unwrap();
        let mut rows = statement.query([]).unwrap();
        rows.next().unwrap_or_else(|e| panic!("view {view}: {e}"));
    }
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

fn databases(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

#[test]
fn each_process_gets_a_database_that_rocpd_views_read() {
    let dir = setup(3, &pipeline(ALL, ""));
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = expected(&dir.path().join("run.rfraw"));
    assert_eq!(want.len(), 3);
    // Nothing but the databases: no staging files left behind.
    let paths = databases(dir.path());
    let names: Vec<_> = paths.iter().map(|p| p.file_name().unwrap()).collect();
    assert_eq!(
        names,
        ["gen-node-4000.db", "gen-node-4001.db", "gen-node-4002.db"]
    );
    for (path, (pid, process)) in paths.iter().zip(&want) {
        let conn = open(path);
        check_process(&conn, *pid, process);
        check_summaries(&conn, &[process]);
        let pids: i64 = conn
            .query_row("SELECT COUNT(*) FROM processes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(pids, 1);
    }
}

#[test]
fn one_database_for_the_run_holds_every_process() {
    let dir = setup(3, &pipeline(ALL, "layout = \"single\""));
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = expected(&dir.path().join("run.rfraw"));
    assert_eq!(want.len(), 3);
    let paths = databases(dir.path());
    assert_eq!(paths.len(), 1, "{paths:?}");
    let conn = open(&paths[0]);
    for (pid, process) in &want {
        check_process(&conn, *pid, process);
    }
    check_summaries(&conn, &want.values().collect::<Vec<_>>());
}

/// Opens databases as rocpd's importer does: attached to one connection, each suffixed
/// table under a union view named as the schema names it, then the data and summary views
/// (as the first database defines them) over those.
fn import(paths: &[PathBuf]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    let mut unions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, path) in paths.iter().enumerate() {
        conn.execute(
            "ATTACH DATABASE ?1 AS ?2",
            params![path.to_str().unwrap(), format!("db{i}")],
        )
        .unwrap();
        let uuid: String = conn
            .query_row(
                &format!("SELECT value FROM db{i}.rocpd_metadata WHERE tag = 'uuid'"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        let mut tables = conn
            .prepare(&format!(
                "SELECT name FROM db{i}.sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'"
            ))
            .unwrap();
        for table in tables.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            let table = table.unwrap();
            assert!(table.ends_with(&uuid), "{table} lacks the suffix {uuid}");
            let base = table.replace(&uuid, "");
            unions
                .entry(base.clone())
                .or_default()
                .push(format!("SELECT * FROM db{i}.{base}"));
        }
    }
    for (base, selects) in &unions {
        conn.execute_batch(&format!(
            "CREATE TEMP VIEW {base} AS {}",
            selects.join(" UNION ALL ")
        ))
        .unwrap();
    }
    let views: Vec<String> = conn
        .prepare(
            "SELECT sql FROM db0.sqlite_master WHERE type = 'view' AND name NOT LIKE 'rocpd_%' \
             ORDER BY rowid",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for view in views {
        conn.execute_batch(&view.replacen("CREATE VIEW", "CREATE TEMP VIEW", 1))
            .unwrap();
    }
    conn
}

#[test]
fn per_process_databases_merge_as_rocpd_imports_them() {
    let dir = setup(3, &pipeline(ALL, "layout = \"per_process\""));
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = expected(&dir.path().join("run.rfraw"));
    let conn = import(&databases(dir.path()));
    for (pid, process) in &want {
        check_process(&conn, *pid, process);
    }
    check_summaries(&conn, &want.values().collect::<Vec<_>>());
    let guids: i64 = conn
        .query_row("SELECT COUNT(DISTINCT guid) FROM processes", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(guids, 3, "each database has its own guid");
}

#[test]
fn counter_samples_without_their_dispatches_still_resolve() {
    let dir = setup(1, &pipeline("\"counter_sample\"", ""));
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = expected(&dir.path().join("run.rfraw"));
    let conn = open(&databases(dir.path())[0]);
    let samples: i64 = conn
        .query_row("SELECT COUNT(*) FROM rocpd_pmc_event", [], |r| r.get(0))
        .unwrap();
    assert_eq!(samples as usize, want[&4000].counter_samples);
    let broken: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(broken, 0);
    let dispatches: i64 = conn
        .query_row("SELECT COUNT(*) FROM kernels", [], |r| r.get(0))
        .unwrap();
    assert_eq!(dispatches, 0);
}

/// A run of one process with memory and scratch allocations, which the generator does not
/// make: (operation, bytes, duration) of each.
const ALLOCATIONS: &[(&str, u64, u64)] = &[
    ("ALLOCATE", 1 << 20, 4_000),
    ("ALLOCATE", 4 << 20, 6_000),
    ("VMEM_ALLOCATE", 1 << 30, 9_000),
    ("FREE", 1 << 20, 2_000),
    ("VMEM_FREE", 1 << 30, 3_000),
];
const SCRATCH: &[(&str, u64, u64)] = &[
    ("ALLOC", 65536, 1_500),
    ("ASYNC_RECLAIM", 65536, 700),
    ("FREE", 65536, 500),
];

fn write_allocations(path: &Path) {
    let op = |domain: Domain, name: &str| {
        let (id, _) = domain
            .operations()
            .iter()
            .find(|(_, n)| *n == name)
            .unwrap();
        *id as u8
    };
    let process = rocflow::generate::process(77, 1_000_000);
    let mut frames = Vec::new();
    rocflow::wire::encode_meta(0, &[Meta::Process(process)], &mut frames);
    let mut clock = 2_000_000;
    let mut allocations = Vec::new();
    for &(name, bytes, duration) in ALLOCATIONS {
        clock += 10_000;
        allocations.push(MemoryAllocation {
            pid: 77,
            tid: 78,
            agent: 1,
            start_ns: clock,
            end_ns: clock + duration,
            address: 0x7000_0000 + clock,
            bytes,
            operation_id: op(Domain::MemoryAllocation, name),
            ..Default::default()
        });
    }
    let scratch = SCRATCH
        .iter()
        .map(|&(name, bytes, duration)| {
            clock += 10_000;
            ScratchMemory {
                pid: 77,
                tid: 77,
                agent: 1,
                queue: 3,
                start_ns: clock,
                end_ns: clock + duration,
                bytes,
                flags: 2,
                operation_id: op(Domain::ScratchMemory, name),
                ..Default::default()
            }
        })
        .collect();
    rocflow::wire::encode_records(0, &Batch::MemoryAllocation(allocations), &mut frames);
    rocflow::wire::encode_records(0, &Batch::ScratchMemory(scratch), &mut frames);
    let mut spool = SpoolWriter::create(path).unwrap();
    spool.write(&frames).unwrap();
    spool.finish().unwrap();
}

#[test]
fn allocations_and_scratch_memory_have_their_types_and_levels() {
    let dir = tempfile::tempdir().unwrap();
    write_allocations(&dir.path().join("run.rfraw"));
    let toml = pipeline(r#""memory_allocation", "scratch_memory""#, "").replace(
        r#"tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]"#,
        r#"tracing = ["memory_allocation", "scratch_memory"]"#,
    );
    std::fs::write(dir.path().join("db.toml"), toml).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "db.toml"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let conn = open(&dir.path().join("out/gen-node-77.db"));
    let mut statement = conn
        .prepare(
            "SELECT type, level, size, duration, agent_abs_index, tid FROM memory_allocations \
             ORDER BY start",
        )
        .unwrap();
    type Row = (String, String, i64, i64, Option<i64>, i64);
    let got: Vec<Row> = statement
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // rocprofv3's types and levels: ALLOC/FREE of REAL or VIRTUAL memory, and scratch's
    // RECLAIM; only an allocation names its agent.
    let level = |name: &str| {
        if name.starts_with("VMEM") {
            "VIRTUAL"
        } else {
            "REAL"
        }
    };
    let kind = |name: &str| match name {
        "ALLOCATE" | "VMEM_ALLOCATE" | "ALLOC" => "ALLOC",
        "ASYNC_RECLAIM" => "RECLAIM",
        _ => "FREE",
    };
    let want: Vec<Row> = ALLOCATIONS
        .iter()
        .map(|&(name, bytes, duration)| (name, level(name), bytes, duration, 78))
        .chain(
            SCRATCH
                .iter()
                .map(|&(name, bytes, duration)| (name, "SCRATCH", bytes, duration, 77)),
        )
        .map(|(name, level, bytes, duration, tid)| {
            let kind = kind(name);
            let agent = (kind == "ALLOC").then_some(1);
            (
                kind.into(),
                level.into(),
                bytes as i64,
                duration as i64,
                agent,
                tid,
            )
        })
        .collect();
    assert_eq!(got, want);
    let sql = "SELECT alloc_flags FROM scratch_memory ORDER BY start";
    let flags: Vec<String> = support::sqlite_rows(&conn, sql, |r| r.get(0));
    assert_eq!(flags, ["2", "2", "2"]);
    let sql = "SELECT name, calls FROM memory_allocation_summary ORDER BY name";
    let summary: Vec<(String, i64)> =
        support::sqlite_rows(&conn, sql, |r| Ok((r.get(0)?, r.get(1)?)));
    let count = |k: &str| want.iter().filter(|w| w.0 == k).count() as i64;
    assert_eq!(
        summary,
        [
            ("MEMORY_ALLOCATION_ALLOC".to_owned(), count("ALLOC")),
            ("MEMORY_ALLOCATION_FREE".to_owned(), count("FREE")),
            ("MEMORY_ALLOCATION_RECLAIM".to_owned(), count("RECLAIM")),
        ]
    );
}

#[test]
fn aggregate_tables_sit_beside_the_rocpd_tables() {
    let aggregate = "[[transform]]\nname = \"per_kernel\"\nkind = \"aggregate\"\n\
        records = [\"kernel_dispatch\"]\ngroup_by = [\"kernel_name\"]\n\
        metrics = { calls = \"count()\", total_ns = \"sum(duration_ns)\" }\n";
    let dir = setup(1, &format!("{}{aggregate}", pipeline(ALL, "")));
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = stats(&expected(&dir.path().join("run.rfraw"))[&4000].kernels);
    let conn = open(&databases(dir.path())[0]);
    let mut statement = conn
        .prepare("SELECT kernel_name, calls, total_ns FROM rocflow_per_kernel")
        .unwrap();
    let got: BTreeMap<String, (i64, f64)> = statement
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want: BTreeMap<String, (i64, f64)> = want
        .into_iter()
        .map(|(name, (calls, total, _, _))| (name, (calls, total as f64)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_failed_database_leaves_what_was_at_its_path_and_no_partial_file() {
    let dir = setup(1, &pipeline(ALL, ""));
    // An earlier database is replaced.
    assert!(replay(dir.path()).status.success());
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Anything else is not.
    let path = dir.path().join("out/gen-node-4000.db");
    std::fs::write(&path, "notes, not a database\n").unwrap();
    let out = replay(dir.path());
    assert_fails(&out, 1, &["gen-node-4000.db", "not an earlier database"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "notes, not a database\n"
    );
    assert_eq!(databases(dir.path()), [path]);
}

#[test]
fn a_path_that_does_not_tell_processes_apart_is_an_error() {
    let dir = setup(2, &pipeline(ALL, "").replace("{pid}", "x"));
    let out = replay(dir.path());
    assert_fails(&out, 1, &["such as {pid} or {rank}"]);
    assert!(
        databases(dir.path()).is_empty(),
        "{:?}",
        databases(dir.path())
    );
}

#[test]
fn an_unknown_layout_is_rejected_with_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, pipeline(ALL, "layout = \"per_node\"")).unwrap();
    let errors = pipeline::compile_file(&path, &Options::default()).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 1, "{shown:#?}");
    let error = &errors[0];
    assert!(
        error
            .message
            .contains("`per_node` is not a valid `sink[0].options.layout`")
    );
    assert!(error.position().unwrap().ends_with(":14:22"), "{shown:?}");
    assert_eq!(error.hint.as_deref(), Some("did you mean `per_process`?"));
}

/// Everything a database holds, as text: each schema entry, then each table's rows in id
/// order, every column of them (SQL's `SELECT *`); the database's GUID, random in part, as
/// `GUID`.
fn dump(path: &Path) -> String {
    use rusqlite::types::ValueRef;
    let conn = open(path);
    let guid: String = conn
        .query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'guid'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut schema = conn
        .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY rowid")
        .unwrap();
    let entries: Vec<(String, String, Option<String>)> = schema
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = String::new();
    for (kind, name, sql) in entries {
        out += &format!("{kind} {name}: {}\n", sql.unwrap_or_default());
        if kind != "table" {
            continue;
        }
        let mut rows = conn
            .prepare(&format!("SELECT * FROM \"{name}\" ORDER BY rowid"))
            .unwrap();
        let columns = rows.column_count();
        let mut rows = rows.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let values: Vec<String> = (0..columns)
                .map(|i| match row.get_ref(i).unwrap() {
                    ValueRef::Null => "NULL".to_owned(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => format!("{v:?}"),
                    ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                    ValueRef::Blob(b) => format!("x{b:02x?}"),
                })
                .collect();
            out += &format!("  {}\n", values.join(", "));
        }
    }
    out.replace(&guid, "GUID")
        .replace(&guid.replace('-', "_"), "GUID")
}

/// The database of a fixed run, to the last value: what each record becomes is settled, so
/// that work on how it is written (order, threads, batching) cannot change it unseen. What
/// the records are is held to the scenario's truth by the matrix (`tests/matrix.rs`); after
/// a deliberate change of how they are written, the failure names the new dump to review
/// and copy over the expected one: no switch makes this test pass whatever is written.
#[test]
fn a_fixed_run_gives_exactly_the_database_it_always_has() {
    let dir = support::generated(
        "db.toml",
        &pipeline(ALL, "layout = \"single\""),
        &["--records", "1500", "--processes", "2"],
    );
    let out = replay(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paths = databases(dir.path());
    assert_eq!(paths.len(), 1, "{paths:?}");
    let actual = dump(&paths[0]);
    let expected_path = support::repo().join("tests/data/rocpd/generated-1500.dump");
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    if actual != expected {
        let kept = dir.keep().join("actual.dump");
        std::fs::write(&kept, &actual).unwrap();
        let (line, (want, got)) = (expected.lines().zip(actual.lines()).enumerate())
            .find(|(_, (a, b))| a != b)
            .unwrap_or((expected.lines().count(), ("(end)", "(more)")));
        panic!(
            "the database differs from {} at line {}:\n  expected {want}\n  actual   {got}\n\
             (the whole dump: {kept}; after a deliberate change, review it and \
             `cp {kept} {expected}`)",
            expected_path.display(),
            line + 1,
            kept = kept.display(),
            expected = expected_path.display()
        );
    }
}
