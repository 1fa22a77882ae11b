//! Reading rocpd databases: a generated run written by rocflow's rocpd sink, read back by
//! the rocpd source from one file and from eight files in parallel, converted to Parquet,
//! and the reader's peak memory at two sizes: all of it, what it allocated, and the pages of
//! files it maps, apart.
//!
//! Sizes by environment: `ROCPD_SOURCE_RECORDS` (default 20 M) and `ROCPD_SOURCE_SMALL`
//! (the smaller run peak memory is compared with, default a tenth of that). Run with
//! `cargo bench -p rocflow --bench rocpd_source`.

// The benchmarks' shared module; this one uses a part of it.
#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};

use rocflow::source::{Rocpd, Source};
use rocflow::wire::Payload;
use support::{COUNTERS, best, peak_rss_kb, write_spool};

const CHILD: &str = "ROCPD_SOURCE_CHILD";

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Writes a run of `records` records from `processes` processes as rocpd databases under
/// `dir`; returns their paths.
fn databases(dir: &Path, records: u64, processes: u16) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let spool = dir.join("run.rfraw");
    write_spool(&spool, records, processes);
    let out = dir.join("db");
    // One database per process.
    let to_rocpd = support::sink("rocpd", "OUT/{pid}.db");
    support::replay_to(&support::pipeline(COUNTERS, false, &to_rocpd), &spool, &out);
    std::fs::remove_file(&spool).unwrap();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// Reads every frame of the databases; returns the records.
fn read(paths: &[PathBuf]) -> u64 {
    let mut source = Rocpd::open(paths).unwrap();
    let mut records = 0;
    while let Some(frame) = source.next_frame() {
        if let Payload::Records(batch) = frame.payload {
            records += batch.len() as u64;
        }
    }
    source.finish().unwrap();
    records
}

/// The databases through a Parquet sink; returns the records written.
fn to_parquet(paths: &[PathBuf], out: &Path) -> u64 {
    let to_parquet = support::sink("parquet", &out.display().to_string());
    let text = support::pipeline(COUNTERS, false, &to_parquet);
    let plan = support::plan(&text);
    let mut source = Rocpd::open(paths).unwrap();
    let report = rocflow::stage::run(&plan, &mut source, &rocflow::sink::open).unwrap();
    report.source.as_ref().expect("the databases read whole");
    report.sinks[0].outcome.as_ref().expect("parquet writes");
    report.sinks[0].records
}

/// The peaks of a process's resident memory while it reads databases, in KiB.
struct Peaks {
    /// All of it (`VmHWM`).
    rss: u64,
    /// What it allocated (`RssAnon`).
    anon: u64,
    /// The pages of files it maps (`RssFile`): its binary and libraries, and a database's
    /// pages where SQLite maps the file.
    file: u64,
}

/// Reads the databases in a fresh process; returns its peaks.
fn peaks_in_child(paths: &[PathBuf]) -> Peaks {
    let list = std::env::join_paths(paths).unwrap();
    let printed = support::in_child(&[(CHILD, &list)]);
    let kb: Vec<u64> = printed
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let [rss, anon, file] = kb[..] else {
        panic!("the child printed {printed:?}")
    };
    Peaks { rss, anon, file }
}

/// The peaks of this process's memory while `f` runs, sampled every millisecond.
fn peaks_of(f: impl FnOnce()) -> Peaks {
    let done = std::sync::atomic::AtomicBool::new(false);
    let sample = |peaks: &mut (u64, u64)| {
        peaks.0 = peaks.0.max(support::status_kb("RssAnon:"));
        peaks.1 = peaks.1.max(support::status_kb("RssFile:"));
    };
    let (anon, file) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peaks = (0, 0);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                sample(&mut peaks);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            sample(&mut peaks);
            peaks
        });
        f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        sampler.join().unwrap()
    });
    Peaks {
        rss: peak_rss_kb(),
        anon,
        file,
    }
}

fn rate(records: u64, seconds: f64) -> String {
    format!("{:>7.2} M records/s", records as f64 / seconds / 1e6)
}

fn main() {
    if let Some(list) = std::env::var_os(CHILD) {
        let paths: Vec<PathBuf> = std::env::split_paths(&list).collect();
        let peaks = peaks_of(|| {
            read(&paths);
        });
        println!("{} {} {}", peaks.rss, peaks.anon, peaks.file);
        return;
    }
    let records = env("ROCPD_SOURCE_RECORDS", 20_000_000);
    let small = env("ROCPD_SOURCE_SMALL", records / 10);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!("rocpd source, {records} records, {cores} cores");

    let dir = tempfile::tempdir().unwrap();
    let one = databases(&dir.path().join("one"), records, 1);
    let eight = databases(&dir.path().join("eight"), records, 8);
    assert_eq!((one.len(), eight.len()), (1, 8));
    let mib = |paths: &[PathBuf]| {
        let bytes: u64 = paths
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        bytes as f64 / (1 << 20) as f64
    };
    for (label, paths) in [("1 database", &one), ("8 databases", &eight)] {
        let mut n = 0;
        let run = best(|| n = read(paths));
        println!(
            "  read {label:<14} {}  ({n} records, {:.0} MiB, {:.0} ns CPU/record)",
            rate(n, run.wall.as_secs_f64()),
            mib(paths),
            run.cpu.as_secs_f64() * 1e9 / n as f64
        );
    }
    let out = dir.path().join("parquet");
    for (label, paths) in [("1 db", &one), ("8 dbs", &eight)] {
        let mut n = 0;
        let run = best(|| {
            let _ = std::fs::remove_dir_all(&out);
            n = to_parquet(paths, &out);
        });
        println!(
            "  rocpd -> parquet ({label:<5})  {}  ({n} records in {:.2} s)",
            rate(n, run.wall.as_secs_f64()),
            run.wall.as_secs_f64()
        );
    }

    let large = peaks_in_child(&one);
    let smaller = databases(&dir.path().join("small"), small, 1);
    let small_peaks = peaks_in_child(&smaller);
    let mib = |kb: u64| kb as f64 / 1024.0;
    println!("  peak reading 1 database, at {small} and {records} records:");
    for (label, of) in [
        ("RSS", (|p: &Peaks| p.rss) as fn(&Peaks) -> u64),
        ("anonymous (RssAnon)", |p| p.anon),
        ("file-mapped (RssFile)", |p| p.file),
    ] {
        let (small, large) = (of(&small_peaks), of(&large));
        println!(
            "    {label:<22} {:>8.1} and {:>8.1} MiB ({:.2}x)",
            mib(small),
            mib(large),
            large as f64 / small as f64
        );
    }
}
