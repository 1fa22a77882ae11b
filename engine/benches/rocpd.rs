//! Records into rocpd databases: a generated run of ten million records from three
//! processes, replayed into one database per process (the default, written in parallel)
//! and into one database for the run, and the replay's peak memory on a run a tenth as
//! long.
//!
//! Figures are records per second and ratios to a plain `read` of the same spool bytes,
//! measured in the same run (best of three each), with the CPU time per record (this
//! machine is shared: the hypervisor's steal is printed too). Run with
//! `cargo bench -p rocflow --bench rocpd`.

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rocflow::generate;
use rocflow::pipeline::{self, Options};
use rocflow::sink;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::stage;
use rocflow::wire::Payload;

/// Every record the generator makes, into one rocpd sink.
const PIPELINE: &str = r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"]
pc_sampling.method = "host_trap"
[[sink]]
name = "db"
kind = "rocpd"
path = "@dir@/{hostname}-{pid}.db"
options = { layout = "@layout@" }
"#;

const CHILD: &str = "ROCFLOW_BENCH_ROCPD";
const RECORDS: u64 = 10_000_000;
/// Three processes share the generator's launches evenly (its copies, markers, counters
/// and PC samples come every 8th, 64th, 16th and 32nd launch).
const PROCESSES: u16 = 3;

fn write_spool(path: &Path, records: u64) {
    let mut writer = SpoolWriter::create(path).unwrap();
    let options = generate::Options {
        records,
        processes: PROCESSES,
        seed: 3,
        plan: None,
    };
    generate::generate(&options, |bytes| writer.write(bytes)).unwrap();
    writer.finish().unwrap();
}

/// Replays a spool into rocpd databases under `out`; returns the records written.
fn replay(spool: &Path, out: &Path, layout: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.toml");
    let text = PIPELINE
        .replace("@dir@", &out.display().to_string())
        .replace("@layout@", layout);
    std::fs::write(&file, text).unwrap();
    let plan = pipeline::compile_file(&file, &Options::default())
        .expect("the bench pipeline is valid")
        .plan;
    let frames = SpoolReader::open(spool).unwrap().map(Result::unwrap);
    let report = stage::run(&plan, frames, &sink::open).unwrap();
    let sink = &report.sinks[0];
    if let Err(e) = &sink.outcome {
        panic!("sink {}: {e}", sink.name);
    }
    sink.records
}

/// Peak resident memory of this process, from /proc (kB).
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Replays in a fresh process (so that peaks do not mix); returns its peak RSS in kB.
fn replay_in_child(spool: &Path, out: &Path) -> u64 {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, spool)
        .env("ROCFLOW_BENCH_OUT", out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

/// What one measured run took.
#[derive(Clone, Copy)]
struct Run {
    wall: Duration,
    /// CPU time of this process (user and system).
    cpu: Duration,
    /// The share of the machine's CPU time the hypervisor gave to others meanwhile.
    steal: f64,
}

/// The shortest of three runs: this machine is shared, and other work only ever adds time.
fn best(mut f: impl FnMut()) -> Run {
    (0..3)
        .map(|_| {
            let (cpu, ticks) = (process_cpu(), machine_ticks());
            let started = Instant::now();
            f();
            let wall = started.elapsed();
            let after = machine_ticks();
            let total: u64 = after.iter().zip(&ticks).map(|(a, b)| a - b).sum();
            Run {
                wall,
                cpu: process_cpu() - cpu,
                steal: (after[7] - ticks[7]) as f64 / total.max(1) as f64,
            }
        })
        .min_by_key(|run| run.wall)
        .unwrap()
}

/// The machine's CPU time counters (`cpu` line of /proc/stat: user … steal), in ticks.
fn machine_ticks() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    stat.lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().unwrap())
        .collect()
}

/// This process's user and system CPU time, from /proc (in ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Bytes of the files in `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn main() {
    if let Some(spool) = std::env::var_os(CHILD) {
        let out = std::env::var_os("ROCFLOW_BENCH_OUT").unwrap();
        replay(Path::new(&spool), Path::new(&out), "per_process");
        println!("{}", peak_rss_kb());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("10m.rfraw");
    write_spool(&spool, RECORDS);
    let bytes = std::fs::metadata(&spool).unwrap().len();

    // Baseline: reading the bytes, nothing else.
    let read = best(|| {
        let mut file = std::fs::File::open(&spool).unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let mut read = 0;
        while let Ok(n @ 1..) = file.read(&mut buffer) {
            read += n;
        }
        assert_eq!(read as u64, bytes);
    });
    let mut records = 0u64;
    let decode = best(|| {
        records = 0;
        for frame in SpoolReader::open(&spool).unwrap() {
            if let Payload::Records(batch) = frame.unwrap().payload {
                records += batch.len() as u64;
            }
        }
    });
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

    let rate = |t: Duration| records as f64 / t.as_secs_f64() / 1e6;
    let ratio = |t: Duration| t.as_secs_f64() / read.wall.as_secs_f64();
    println!(
        "spool: {records} records from {PROCESSES} processes, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    println!(
        "  read (baseline)                  {:>7.2} M records/s  {:>6.2}x the read time",
        rate(read.wall),
        1.0
    );
    println!(
        "  decode                           {:>7.2} M records/s  {:>6.2}x",
        rate(decode.wall),
        ratio(decode.wall)
    );
    for (layout, run, bytes) in &layouts {
        let name = format!("rocpd, layout = {layout}");
        println!(
            "  {name:<32} {:>7.2} M records/s  {:>6.2}x",
            rate(run.wall),
            ratio(run.wall)
        );
        println!(
            "    its CPU time                   {:>7.0} ns/record ({:.2} M records per CPU-second; \
             {:.0}% of the machine stolen by the hypervisor meanwhile); {:.0} MiB of databases \
             ({:.1} bytes/record)",
            run.cpu.as_secs_f64() * 1e9 / records as f64,
            rate(run.cpu),
            run.steal * 100.0,
            *bytes as f64 / 1048576.0,
            *bytes as f64 / records as f64
        );
    }

    let small = dir.path().join("1m.rfraw");
    write_spool(&small, RECORDS / 10);
    let small_rss = replay_in_child(&small, &dir.path().join("db-1m"));
    let large_rss = replay_in_child(&spool, &dir.path().join("db-10m"));
    println!("peak RSS of a replay into rocpd (fresh process each, layout = per_process)");
    println!(
        "  1M records                       {:>7.1} MiB",
        small_rss as f64 / 1024.0
    );
    println!(
        "  10M records                      {:>7.1} MiB  {:>6.2}x the 1M peak",
        large_rss as f64 / 1024.0,
        large_rss as f64 / small_rss as f64
    );
}
