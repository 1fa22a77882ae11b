//! rocflow against AMD's own converter, on the same data: a generated run (2 M records by
//! default; `ROCFLOW_PEER_RECORDS` sets how many, `ROCFLOW_PEER_FORMATS` which formats,
//! e.g. `csv,otf2`: AMD's Perfetto conversion of 2 M records takes more than 20 minutes) is written into a rocpd database by
//! rocflow's sink, then AMD's `rocpd convert` turns the database into CSV, Perfetto and
//! OTF2 while `rocflow replay` turns the run's spool, and then the same database AMD read,
//! into the same formats with only that sink; last, AMD's `rocpd summary` and `rocflow
//! summary` of the database. All are timed as separate processes, the shortest of three
//! runs each, and printed with the ratios.
//!
//! Needs AMD's kit (`../shared/rocpd-peer`, or `$ROCPD_PEER`) and a Python with its
//! requirements (`$ROCPD_PYTHON`). Not part of CI. Run with
//! `cargo bench -p rocflow --bench rocpd_peer`.

// The benchmarks' shared module; this one uses its pipeline text and generated spool.
#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use support::write_spool;

/// Each format: AMD's name for it, the kind of rocflow's sink writing it and the path in
/// `OUT` it writes.
const FORMATS: [(&str, &str, &str); 3] = [
    ("csv", "csv", "OUT/{hostname}-{pid}"),
    ("pftrace", "perfetto", "OUT/{hostname}-{pid}.pftrace"),
    ("otf2", "otf2", "OUT/trace"),
];

/// Runs `command(run)` to success [`RUNS`] times; returns the shortest time it took (this
/// machine is shared, and other work only ever adds time). The files the run before
/// wrote are on disk first, so that their write-back does not take this one's cores.
fn timed(mut command: impl FnMut(usize) -> Command) -> f64 {
    (0..RUNS)
        .map(|run| {
            let mut command = command(run);
            // SAFETY: no preconditions.
            unsafe { libc::sync() };
            let started = Instant::now();
            let out = command.output().expect("the command runs");
            let wall = started.elapsed();
            assert!(
                out.status.success(),
                "{command:?}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            wall.as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Runs of each command.
const RUNS: usize = 3;

/// `rocflow replay INPUT PIPELINE` (a spool or a database) of what the generator makes,
/// collected by one context, with `sink` (a `[[sink]]` table) as the pipeline's only sink.
fn replay(input: &Path, dir: &Path, name: &str, sink: &str) -> Command {
    let pipeline = dir.join(format!("{name}.toml"));
    std::fs::write(&pipeline, support::pipeline(support::COUNTERS, true, sink)).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_rocflow"));
    command.arg("replay").arg(input).arg(&pipeline);
    command
}

fn main() {
    let records: u64 = std::env::var("ROCFLOW_PEER_RECORDS")
        .ok()
        .map_or(2_000_000, |n| {
            n.parse().expect("ROCFLOW_PEER_RECORDS is a number")
        });
    let kit = std::env::var_os("ROCPD_PEER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/rocpd-peer"),
        PathBuf::from,
    );
    let rocpd = kit.join("bin/rocpd");
    assert!(
        rocpd.is_file(),
        "AMD's rocpd kit is missing at {}",
        kit.display()
    );

    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("run.rfraw");
    write_spool(&spool, records, 1);
    let db_dir = dir.path().join("db");
    let sink = support::sink("rocpd", &format!("{}/run.db", db_dir.display()));
    let written = timed(|_| replay(&spool, dir.path(), "rocpd", &sink));
    let db = db_dir.join("run.db");
    let mib = std::fs::metadata(&db).unwrap().len() as f64 / (1 << 20) as f64;
    println!(
        "{records} generated records; rocflow replay wrote the rocpd database \
         ({mib:.0} MiB) in {written:.2} s"
    );
    println!(
        "{:<8} {:>13} {:>18} {:>7} {:>18} {:>7}",
        "format", "rocpd convert", "rocflow from spool", "ratio", "rocflow from db", "ratio"
    );
    let chosen = std::env::var("ROCFLOW_PEER_FORMATS").unwrap_or_default();
    let chosen: Vec<&str> = chosen.split(',').filter(|f| !f.is_empty()).collect();
    let formats = FORMATS
        .iter()
        .filter(|(f, ..)| chosen.is_empty() || chosen.contains(f));
    for &(format, kind, path) in formats {
        // A directory of its own for each run: files just deleted in the same place make
        // the file system slower to create the next ones.
        let amd = timed(|run| {
            let mut convert = Command::new(&rocpd);
            let out = dir.path().join(format!("amd-{format}-{run}"));
            convert.args(["convert", "-f", format, "-d"]).arg(out);
            convert.arg("-i").arg(&db);
            convert
        });
        let [spooled, read] = [("spool", &spool), ("db", &db)].map(|(from, input)| {
            timed(|run| {
                let out = dir
                    .path()
                    .join(format!("rocflow-{format}-from-{from}-{run}"));
                let sink = support::sink(kind, &path.replace("OUT", &out.display().to_string()));
                replay(input, dir.path(), format, &sink)
            })
        });
        println!(
            "{format:<8} {amd:>12.2}s {spooled:>17.2}s {:>6.1}x {read:>17.2}s {:>6.1}x",
            amd / spooled,
            amd / read
        );
    }
    let amd = timed(|_| {
        let mut summary = Command::new(&rocpd);
        summary.args(["summary", "-i"]).arg(&db);
        summary
    });
    let ours = timed(|_| {
        let mut summary = Command::new(env!("CARGO_BIN_EXE_rocflow"));
        summary.arg("summary").arg(&db);
        summary
    });
    println!(
        "summary  rocpd summary {amd:.2}s, rocflow summary of the database {ours:.2}s: {:.1}x",
        amd / ours
    );
}
