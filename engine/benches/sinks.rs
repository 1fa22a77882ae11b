//! Every sink at the speed of reading the spool: a `trace-all` run on the simulated SDK (the
//! MI300X example scenario, 38 records per iteration: HIP and HSA calls, dispatches, copies,
//! allocations, ROCTx ranges) of 2 M and of 20 M records is kept as a spool, then replayed
//! into Perfetto, OTF2, Parquet, CSV and rocpd each alone and into all five at once: records
//! per second and the peak RSS of each replay (a fresh process each, best of three by wall
//! time), and each peak against the same sinks' at 2 M.
//!
//! `ROCFLOW_BENCH_RUNS` sets the runs per figure (3), `ROCFLOW_BENCH_COMPRESSION` how the
//! spool is stored (`none`, so that the figures are the sinks' and not the decompressor's;
//! `zstd` or `auto` as `rocflow run --spool-compression` takes them).
//! Run with `cargo bench -p rocflow --bench sinks`, or as the executable it builds, from the
//! repository root; the replays use the global rayon pool (`RAYON_NUM_THREADS`).

// The benchmarks' shared modules, which both hold `support/status.rs`; this one uses a
// part of each.
#[allow(dead_code, clippy::duplicate_mod)]
mod sim;
#[allow(dead_code)]
mod support;

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

const SIZES: &[u64] = &[2_000_000, 20_000_000];

/// What is replayed into, alone and then all at once, and where each writes under the
/// replay's folder `OUT`.
const SINKS: &[(&str, &str)] = &[
    ("perfetto", "OUT/trace.pftrace"),
    ("otf2", "OUT/otf2"),
    ("parquet", "OUT/parquet"),
    ("csv", "OUT/csv"),
    ("rocpd", "OUT/{pid}.db"),
];

/// The sinks a child replays into, by name, apart by commas.
const CHILD_SINKS: &str = "ROCFLOW_BENCH_CHILD_SINKS";

/// The capture pipeline with the sinks `names` added.
fn pipeline(names: &str) -> String {
    let sinks: String = (names.split(','))
        .map(|name| {
            let (kind, path) = SINKS.iter().find(|(k, _)| *k == name).unwrap();
            support::sink(kind, path)
        })
        .collect();
    sim::CAPTURE.replace("name = \"capture\"", "name = \"sinks\"") + &sinks
}

/// In a child: replays the spool into the sinks named in [`CHILD_SINKS`] and prints the
/// records, the seconds the replay took, the CPU seconds of the process and the peak RSS
/// (kB).
fn serve_child() -> bool {
    let Some(names) = std::env::var_os(CHILD_SINKS) else {
        return false;
    };
    let text = pipeline(names.to_str().unwrap());
    support::serve_child(|spool, out| {
        let started = Instant::now();
        let report = support::replay_to(&text, spool, out);
        let records: u64 = report.records_in.iter().map(|(_, n)| n).sum();
        print!(
            "{records} {} {} ",
            started.elapsed().as_secs_f64(),
            cpu_seconds()
        );
        records
    })
}

/// User and system CPU time of this process, all its threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given, nothing else.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// One replay: records, wall time, CPU time (of the whole process), peak RSS in MiB.
struct Replay {
    records: u64,
    wall: Duration,
    cpu: f64,
    peak_mib: f64,
}

/// Replays `spool` into `names` in a fresh process; `out` is emptied afterwards.
fn replay(spool: &Path, out: &Path, names: &str) -> Replay {
    let printed = support::in_child(&[
        (CHILD_SINKS, OsStr::new(names)),
        ("ROCFLOW_BENCH_CHILD_SPOOL", spool.as_os_str()),
        ("ROCFLOW_BENCH_CHILD_OUT", out.as_os_str()),
    ]);
    let fields: Vec<&str> = printed.split_whitespace().collect();
    let [records, secs, cpu, kb] = fields[..] else {
        panic!("the child printed {printed:?}");
    };
    std::fs::remove_dir_all(out).unwrap();
    Replay {
        records: records.parse().unwrap(),
        wall: Duration::from_secs_f64(secs.parse().unwrap()),
        cpu: cpu.parse().unwrap(),
        peak_mib: kb.parse::<f64>().unwrap() / 1024.0,
    }
}

/// Keeps the spool of a `trace-all` run of about `records` records in `dir`.
fn capture(dir: &Path, records: u64, compression: &str) -> std::path::PathBuf {
    let iterations = records / 38;
    std::fs::write(dir.join("big.toml"), sim::example(iterations)).unwrap();
    std::fs::write(dir.join("capture.toml"), sim::CAPTURE).unwrap();
    sim::run(
        dir,
        "./capture.toml",
        &["--spool-compression", compression, "--quiet"],
    );
    dir.join("run.rfraw")
}

fn main() {
    if serve_child() {
        return;
    }
    let runs: usize = std::env::var("ROCFLOW_BENCH_RUNS").map_or(3, |r| r.parse().unwrap());
    let compression =
        std::env::var("ROCFLOW_BENCH_COMPRESSION").unwrap_or_else(|_| "none".to_string());
    let all = SINKS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(",");
    let configs: Vec<&str> = (SINKS.iter().map(|(k, _)| *k))
        .chain([all.as_str()])
        .collect();
    println!(
        "replays of a trace-all spool (compression {compression}) on {} threads, best of {runs} by wall time, a fresh process each",
        rayon::current_num_threads()
    );
    let mut first_peaks: Vec<f64> = Vec::new();
    for &size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let spool = capture(dir.path(), size, &compression);
        let bytes = std::fs::metadata(&spool).unwrap().len();
        let out = dir.path().join("out");
        println!(
            "{} M records ({:.0} MiB of spool)",
            size / 1_000_000,
            bytes as f64 / 1048576.0
        );
        for (i, names) in configs.iter().enumerate() {
            let replays: Vec<Replay> = (0..runs).map(|_| replay(&spool, &out, names)).collect();
            let best = replays.iter().min_by_key(|r| r.wall).unwrap();
            let label = if names.contains(',') {
                "all five"
            } else {
                names
            };
            let first = *first_peaks.get(i).unwrap_or(&best.peak_mib);
            if first_peaks.len() <= i {
                first_peaks.push(best.peak_mib);
            }
            println!(
                "  {label:<10} {:>6.2} M records/s ({:.2} s; {:.0} ns of CPU per record; runs {})  peak RSS {:>7.1} MiB, {:.2}x the 2 M peak",
                best.records as f64 / best.wall.as_secs_f64() / 1e6,
                best.wall.as_secs_f64(),
                best.cpu * 1e9 / best.records as f64,
                (replays.iter())
                    .map(|r| format!("{:.2} s", r.wall.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", "),
                best.peak_mib,
                best.peak_mib / first
            );
        }
    }
}
