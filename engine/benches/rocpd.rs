//! Records into rocpd databases. First the `trace-all` mix (a run on the simulated SDK of
//! the MI300X example scenario, 38 records per iteration: HIP and HSA calls, dispatches,
//! copies, allocations, ROCTx ranges), 2 M records replayed into one database on 1, 4 and
//! every core's threads of the rayon pool (records per second, and the process's CPU time
//! per record), and the peak memory of that replay at 2 M and 20 M records (a fresh
//! process each, best of three by wall time). Then a generated run
//! of ten million records from three processes, replayed into one database per process
//! (the default, written in parallel) and into one database for the run, and the replay's
//! peak memory on runs of 2 M, 10 M and 20 M records.
//!
//! Figures are records per second and ratios to a plain `read` of the same spool bytes,
//! measured in the same run (best of three each), with the CPU time per record (this
//! machine is shared: the hypervisor's steal is printed too). The one database is compared
//! with SQLite alone inserting the same rows into a fresh file, the way the sink wrote them
//! before it appended its tables as pages. Run with
//! `cargo bench -p rocflow --bench rocpd`, or as the executable it builds, from the
//! repository root (`ROCFLOW_BIN` names the `rocflow` executable the run on the simulated
//! SDK takes, if it is not beside the benchmark's); with the argument `trace-all`, only the
//! first part.

// The benchmarks' shared modules, which both hold `support/status.rs`; this one uses a
// part of the run benchmarks' one.
#[allow(dead_code, clippy::duplicate_mod)]
mod sim;
mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocflow::sqlite::{Statement, Value};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use support::{Run, best};

const RECORDS: u64 = 10_000_000;
/// Three processes share the generator's launches evenly (its copies, markers, counters
/// and PC samples come every 8th, 64th, 16th and 32nd launch).
const PROCESSES: u16 = 3;

/// Replays a spool into rocpd databases under `out`, every record into one rocpd sink of
/// `layout`; returns the records written.
fn replay(spool: &Path, out: &Path, layout: &str) -> u64 {
    let sink = support::sink("rocpd", "OUT/{hostname}-{pid}.db");
    let rest = format!("{sink}options = {{ layout = \"{layout}\" }}\n");
    let text = support::pipeline(support::COUNTERS, true, &rest);
    support::replay_to(&text, spool, out).sinks[0].records
}

/// Rows a statement inserts, and rows a transaction holds, when SQLite loads alone.
const ROWS: usize = 64;
const WINDOW: usize = 64 * 1024;

/// The time SQLite alone takes to load the rows of database `db` into a fresh file `into`:
/// the same tables, settings and statements (`INSERT OR FAIL`) as the sink's, each table's
/// rows in order of their ids, `ROWS` a statement and `WINDOW` a transaction, then the
/// indexes. Nothing else is timed:
/// the rows are read back a window at a time between the loads, their text interned so
/// that it binds without a copy, as the sink binds its fixed texts.
fn sqlite_alone(db: &Path, into: &Path) -> Duration {
    let source = Connection::open(db).unwrap();
    let _ = std::fs::remove_file(into);
    let fresh = Connection::open(into).unwrap();
    fresh.execute_batch(rocflow::sink::ROCPD_PRAGMAS).unwrap();
    let schema = |kind: &str| -> Vec<(String, String)> {
        let sql = "SELECT name, sql FROM sqlite_master WHERE type = ?1 AND sql IS NOT NULL";
        let mut statement = source.prepare(sql).unwrap();
        let rows = statement.query_map([kind], |r| Ok((r.get(0)?, r.get(1)?)));
        rows.unwrap().map(Result::unwrap).collect()
    };
    let statements = |of: &[(String, String)]| -> String {
        of.iter().map(|(_, sql)| format!("{sql};\n")).collect()
    };
    let tables = schema("table");
    fresh.execute_batch(&statements(&tables)).unwrap();
    let mut texts = Texts::default();
    let loading: Duration = (tables.iter())
        .map(|(table, _)| load(&source, &fresh, table, &mut texts))
        .sum();
    let indexes = statements(&schema("index"));
    let started = Instant::now();
    fresh
        .execute_batch(&format!("PRAGMA cache_size = -1024;\n{indexes}"))
        .unwrap();
    loading + started.elapsed()
}

/// Loads the rows of `table` from `source` into `fresh`; returns the time the loads took.
fn load(source: &Connection, fresh: &Connection, table: &str, texts: &mut Texts) -> Duration {
    // Ids numbered 1, 2, … are left to SQLite, which numbers rows so (as the sink lets it);
    // others are given.
    let dense: bool = source
        .query_row(
            &format!("SELECT count(*) = coalesce(max(id), 0) FROM \"{table}\""),
            [],
            |r| r.get(0),
        )
        .unwrap();
    // The stored columns: generated ones are hidden (2 and 3) in `table_xinfo`.
    let columns: Vec<String> = source
        .prepare(&format!(
            "SELECT name FROM pragma_table_xinfo('{table}') WHERE hidden = 0"
        ))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .filter(|column: &String| !(dense && column == "id"))
        .collect();
    let (list, width) = (columns.join(", "), columns.len());
    let insert = |rows: usize| {
        let row = format!("({})", vec!["?"; width].join(", "));
        let values = vec![row; rows].join(", ");
        Statement::prepare(
            fresh,
            &format!("INSERT OR FAIL INTO \"{table}\" ({list}) VALUES {values}"),
        )
        .unwrap()
    };
    let (mut many, mut one) = (insert(ROWS), insert(1));
    let mut read = source
        .prepare(&format!("SELECT {list} FROM \"{table}\" ORDER BY id"))
        .unwrap();
    let mut rows = read.query([]).unwrap();
    let mut window: Vec<Value> = Vec::with_capacity(WINDOW * width);
    let mut loading = Duration::ZERO;
    loop {
        window.clear();
        while window.len() < WINDOW * width {
            let Some(row) = rows.next().unwrap() else {
                break;
            };
            window.extend((0..width).map(|i| match row.get_ref(i).unwrap() {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Int(v),
                ValueRef::Real(v) => Value::Real(v),
                ValueRef::Text(v) => Value::Str(texts.intern(v)),
                ValueRef::Blob(_) => unreachable!("rocpd rows hold no blobs"),
            }));
        }
        if window.is_empty() {
            return loading;
        }
        let started = Instant::now();
        fresh.execute_batch("BEGIN").unwrap();
        for batch in window.chunks(ROWS * width) {
            if batch.len() == ROWS * width {
                many.execute_with(batch).unwrap();
            } else {
                for row in batch.chunks(width) {
                    one.execute_with(row).unwrap();
                }
            }
        }
        fresh.execute_batch("COMMIT").unwrap();
        loading += started.elapsed();
    }
}

/// The distinct texts of the rows read back, kept for the benchmark's life.
#[derive(Default)]
struct Texts(std::collections::HashSet<&'static str>);

impl Texts {
    fn intern(&mut self, text: &[u8]) -> &'static str {
        let text = std::str::from_utf8(text).unwrap();
        match self.0.get(text) {
            Some(&kept) => kept,
            None => {
                let kept: &'static str = Box::leak(text.into());
                self.0.insert(kept);
                kept
            }
        }
    }
}

/// Bytes of the files in `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// Set in a child that replays a `trace-all` spool into one database (and so on the
/// threads its `RAYON_NUM_THREADS` says).
const CHILD_TRACE_ALL: &str = "ROCFLOW_BENCH_CHILD_TRACE_ALL";

/// Replays `spool` into one rocpd database under `out` through `trace-all`'s context;
/// returns the records written.
fn replay_trace_all(spool: &Path, out: &Path) -> u64 {
    let sink = support::sink("rocpd", "OUT/run.db") + "options = { layout = \"single\" }\n";
    let text = sim::CAPTURE.replace("name = \"capture\"", "name = \"rocpd\"") + &sink;
    support::replay_to(&text, spool, out).sinks[0].records
}

/// Keeps the spool of a `trace-all` run of about `records` records in `dir`.
fn capture(dir: &Path, records: u64) -> PathBuf {
    std::fs::write(dir.join("big.toml"), sim::example(records / 38)).unwrap();
    std::fs::write(dir.join("capture.toml"), sim::CAPTURE).unwrap();
    sim::run(dir, "./capture.toml", &["--quiet"]);
    dir.join("run.rfraw")
}

/// One replay in a fresh process on `threads` threads: records, wall time, CPU time, peak
/// RSS (MiB).
fn replay_in_child(spool: &Path, out: &Path, threads: usize) -> (u64, Duration, Duration, f64) {
    let threads = threads.to_string();
    let started = Instant::now();
    let printed = support::in_child(&[
        (CHILD_TRACE_ALL, OsStr::new("1")),
        ("RAYON_NUM_THREADS", OsStr::new(&threads)),
        ("ROCFLOW_BENCH_CHILD_SPOOL", spool.as_os_str()),
        ("ROCFLOW_BENCH_CHILD_OUT", out.as_os_str()),
    ]);
    let wall = started.elapsed();
    let [records, cpu_ms, kb] = printed.split_whitespace().collect::<Vec<_>>()[..] else {
        panic!("the child printed {printed:?}");
    };
    std::fs::remove_dir_all(out).unwrap();
    (
        records.parse().unwrap(),
        wall,
        Duration::from_millis(cpu_ms.parse().unwrap()),
        kb.parse::<f64>().unwrap() / 1024.0,
    )
}

/// The `trace-all` mix into one database: records per second at 1, 4 and every core's
/// threads, and the peak memory at 2 M and 20 M records.
fn trace_all() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut threads = vec![1, 4, cores];
    threads.sort_unstable();
    threads.dedup();
    println!("trace-all into one rocpd database (best of 3 by wall time, a fresh process each)");
    // Each thread count's peak at 2 M records.
    let mut first_peaks = std::collections::HashMap::new();
    for records in [2_000_000, 20_000_000] {
        let dir = tempfile::tempdir().unwrap();
        let spool = capture(dir.path(), records);
        let out = dir.path().join("out");
        let counts: &[usize] = if records == 2_000_000 {
            &threads
        } else {
            &[cores]
        };
        for &count in counts {
            let runs: Vec<_> = (0..3)
                .map(|_| replay_in_child(&spool, &out, count))
                .collect();
            let (records, wall, cpu, peak) = *runs.iter().min_by_key(|r| r.1).unwrap();
            let first = *first_peaks.entry(count).or_insert(peak);
            println!(
                "  {:>2} M records, {count:>2} threads {:>6.2} M records/s ({:.2} s, CPU {:.0} ns/record; runs {})  peak RSS {peak:>6.1} MiB, {:.2}x the 2 M peak",
                records / 1_000_000,
                records as f64 / wall.as_secs_f64() / 1e6,
                wall.as_secs_f64(),
                cpu.as_secs_f64() * 1e9 / records as f64,
                (runs.iter())
                    .map(|r| format!("{:.2} s", r.1.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", "),
                peak / first
            );
        }
    }
}

fn main() {
    if std::env::var_os(CHILD_TRACE_ALL).is_some() {
        support::serve_child(|spool, out| {
            let records = replay_trace_all(spool, out);
            print!("{records} {} ", support::process_cpu().as_millis());
            records
        });
        return;
    }
    trace_all();
    if std::env::args().skip(1).any(|arg| arg == "trace-all") {
        return;
    }
    let Some((dir, spool, bytes, yardstick)) = support::start(RECORDS, PROCESSES, |spool, out| {
        replay(spool, out, "per_process")
    }) else {
        return;
    };
    let records = yardstick.records();
    let out = dir.path().join("db");
    let layouts: Vec<(&str, Run, u64)> = ["per_process", "single"]
        .into_iter()
        .map(|layout| {
            let run = best(|| {
                let _ = std::fs::remove_dir_all(&out);
                assert_eq!(replay(&spool, &out, layout), records);
            });
            (layout, run, size(&out))
        })
        .collect();

    // The rows the sink wrote into the run's one database, loaded by SQLite alone.
    let single: PathBuf = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let fresh = dir.path().join("alone.db");
    let alone = (0..3).map(|_| sqlite_alone(&single, &fresh)).min().unwrap();

    println!(
        "spool: {records} records from {PROCESSES} processes, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    yardstick.print_baselines();
    for (layout, run, bytes) in &layouts {
        yardstick.print_run(
            &format!("rocpd, layout = {layout}"),
            *run,
            &format!(
                "; {:.0} MiB of databases ({:.1} bytes/record)",
                *bytes as f64 / 1048576.0,
                *bytes as f64 / records as f64
            ),
        );
    }

    yardstick.print("SQLite alone, same rows (inserted)", alone);
    let (_, sink, _) = layouts.last().unwrap();
    println!(
        "    the one database is written at {:.0}% of SQLite alone's rate",
        alone.as_secs_f64() / sink.wall.as_secs_f64() * 100.0
    );

    support::print_peaks(
        "into rocpd (layout = per_process)",
        dir.path(),
        PROCESSES,
        &[RECORDS / 5, RECORDS, RECORDS * 2],
        |label| dir.path().join(format!("db-{label}")),
        |_| String::new(),
    );
}
