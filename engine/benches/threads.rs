//! Each part of rocflow on 1, 4 and 16 threads (`--threads N`; 16, or as many as the
//! machine has cores where it has fewer): `rocflow run` on the simulated SDK writing a
//! compressed spool (its compressor on half the threads), reading the spool back (and one
//! stored as it is) and reading a rocpd database (`rocflow inspect`), and a replay of the
//! compressed spool into each sink.
//! Each figure is the wall time of the `rocflow` command, as records per second; the
//! lowest of `THREADS_RUNS` runs (default 2), in turns so that all see the same machine.
//! The run has `THREADS_RECORDS` records (default 2 M): launches and their dispatches.
//! Run with `cargo bench -p rocflow --bench threads`.

#[allow(dead_code)]
mod sim;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The spool's context, and a sink after it.
const CONTEXT: &str = r#"
[pipeline]
name = "threads"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api"]
buffer = { size = "64MiB", watermark = "50%", policy = "lossless" }
"#;

/// Each sink, and where it writes under `out`.
const SINKS: [(&str, &str); 5] = [
    ("perfetto", "out/run.pftrace"),
    ("otf2", "out/otf2"),
    ("parquet", "out/parquet"),
    ("csv", "out/csv"),
    ("rocpd", "out/run.db"),
];

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Runs `rocflow args…` in `dir` with `--threads threads`; returns its wall time, failing
/// with its output unless it succeeded.
fn rocflow(dir: &Path, args: &[&str], threads: usize) -> Duration {
    let started = Instant::now();
    let out = Command::new(sim::rocflow())
        .args(args)
        .args(["--threads", &threads.to_string()])
        .current_dir(dir)
        .env_remove("RAYON_NUM_THREADS")
        .output()
        .unwrap();
    let wall = started.elapsed();
    assert!(out.status.success(), "{args:?}: {out:?}");
    wall
}

fn main() {
    let records = env("THREADS_RECORDS", 2_000_000);
    let runs = env("THREADS_RUNS", 2);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut counts = vec![1, 4, cores.min(16)];
    counts.sort();
    counts.dedup();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    sim::scenario(d, records / sim::RECORDS_PER_ITERATION);
    std::fs::write(d.join("run.toml"), CONTEXT).unwrap();
    for (kind, path) in SINKS {
        let sink = format!("[[sink]]\nname = \"{kind}\"\nkind = \"{kind}\"\npath = \"{path}\"\n");
        std::fs::write(d.join(format!("{kind}.toml")), format!("{CONTEXT}{sink}")).unwrap();
    }
    // The database that is read: the spool's records, written once.
    let options = ["--threads", "1", "--spool-compression", "none"];
    sim::run(d, "run.toml", &options);
    std::fs::rename(d.join("run.rfraw"), d.join("plain.rfraw")).unwrap();
    rocflow(d, &["replay", "plain.rfraw", "rocpd.toml"], cores);
    std::fs::rename(d.join("out/run.db"), d.join("read.db")).unwrap();
    println!("rocflow's parts by threads, {records} records, {cores} cores, best of {runs}");

    // The lowest wall time of each part (in the order printed) on each number of threads.
    let mut best = BTreeMap::<(usize, &str), BTreeMap<usize, Duration>>::new();
    for _ in 0..runs {
        for &threads in &counts {
            let mut keep = |part, wall: Duration| {
                let walls = best.entry(part).or_default();
                let best = walls.entry(threads).or_insert(wall);
                *best = wall.min(*best);
            };
            let n = threads.to_string();
            let options = ["--threads", &n, "--spool-compression", "zstd"];
            let spool_write = (0, "spool write (compressed)");
            keep(spool_write, sim::run(d, "run.toml", &options).wall);
            let read = rocflow(d, &["inspect", "run.rfraw"], threads);
            keep((1, "spool read (compressed)"), read);
            let read = rocflow(d, &["inspect", "plain.rfraw"], threads);
            keep((2, "spool read (plain)"), read);
            keep(
                (3, "database read"),
                rocflow(d, &["inspect", "read.db"], threads),
            );
            for (i, (kind, _)) in SINKS.into_iter().enumerate() {
                let _ = std::fs::remove_dir_all(d.join("out"));
                let pipeline = format!("{kind}.toml");
                let wall = rocflow(d, &["replay", "run.rfraw", &pipeline], threads);
                keep((4 + i, kind), wall);
            }
        }
    }
    let mut header = format!("  {:<26}", "part");
    for threads in &counts {
        header += &format!("{:>24}", format!("{threads} threads"));
    }
    println!("{header}");
    for ((_, name), walls) in best {
        let mut line = format!("  {name:<26}");
        for wall in walls.values() {
            let rate = records as f64 / wall.as_secs_f64() / 1e6;
            line += &format!(
                "{:>24}",
                format!("{rate:.2} M/s ({:.2} s)", wall.as_secs_f64())
            );
        }
        println!("{line}");
    }
}
