//! Records through the engine: spool decoding, a transform pipeline into the CSV sink, and
//! the runner's peak memory on a short and a ten times longer replay.
//!
//! Figures are printed as records per second and as ratios to a plain `read` of the same
//! spool bytes, measured in the same run (best of three runs each). Run with `cargo bench -p rocflow --bench records`.

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rocflow::generate;
use rocflow::pipeline::{self, Options};
use rocflow::plan::Plan;
use rocflow::sink;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::stage;
use rocflow::wire::Payload;

/// The replay measured for throughput and memory: a filter, a derived column and demangled
/// kernel names, every record into CSV.
const PIPELINE: &str = r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES"]
pc_sampling.method = "host_trap"
[[transform]]
name = "names"
kind = "kernel_name"
records = ["kernel_dispatch", "counter_sample"]
demangle = true
[[transform]]
name = "long"
kind = "filter"
records = ["kernel_dispatch"]
predicate = "duration_ns > 5000"
[[transform]]
name = "bandwidth"
kind = "derive"
records = ["memory_copy"]
column = "bytes_per_ns"
expression = "bytes / duration_ns"
[[sink]]
name = "tables"
kind = "csv"
path = "OUT"
"#;

const CHILD: &str = "ROCFLOW_BENCH_REPLAY";

fn plan(out: &Path) -> Plan {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.toml");
    std::fs::write(&path, PIPELINE.replace("OUT", &out.display().to_string())).unwrap();
    pipeline::compile_file(&path, &Options::default())
        .expect("the bench pipeline is valid")
        .plan
}

fn write_spool(path: &Path, records: u64) {
    let mut writer = SpoolWriter::create(path).unwrap();
    let options = generate::Options {
        records,
        processes: 2,
        seed: 3,
        plan: None,
    };
    generate::generate(&options, |bytes| writer.write(bytes)).unwrap();
    writer.finish().unwrap();
}

/// Replays a spool through the bench pipeline; returns the records decoded.
fn replay(spool: &Path, out: &Path) -> u64 {
    let plan = plan(out);
    let frames = SpoolReader::open(spool).unwrap().map(Result::unwrap);
    let report = stage::run(&plan, frames, &sink::open).unwrap();
    for s in &report.sinks {
        if let Err(e) = &s.outcome {
            panic!("sink {}: {e}", s.name);
        }
    }
    report.records_in.iter().map(|(_, n)| n).sum()
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

/// Runs a replay in a fresh process (so peaks do not mix) and returns its peak RSS in kB.
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

fn main() {
    if let Some(spool) = std::env::var_os(CHILD) {
        let out = std::env::var_os("ROCFLOW_BENCH_OUT").unwrap();
        replay(Path::new(&spool), Path::new(&out));
        println!("{}", peak_rss_kb());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("5m.rfraw");
    let started = Instant::now();
    write_spool(&spool, 5_000_000);
    let generated = started.elapsed();
    let bytes = std::fs::metadata(&spool).unwrap().len();

    // Baseline: reading the bytes, nothing else.
    let read_time = best(|| {
        let mut file = std::fs::File::open(&spool).unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let mut read = 0;
        while let Ok(n @ 1..) = file.read(&mut buffer) {
            read += n;
        }
        assert_eq!(read as u64, bytes);
    });
    let mut records = 0u64;
    let decode_time = best(|| {
        records = 0;
        for frame in SpoolReader::open(&spool).unwrap() {
            if let Payload::Records(batch) = frame.unwrap().payload {
                records += batch.len() as u64;
            }
        }
    });
    let out = dir.path().join("csv");
    let pipeline_time = best(|| {
        assert_eq!(replay(&spool, &out), records);
        std::fs::remove_dir_all(&out).unwrap();
    });

    let rate = |n: u64, t: Duration| n as f64 / t.as_secs_f64() / 1e6;
    println!(
        "spool: {records} records, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    println!(
        "  generate                         {:>7.1} M records/s",
        rate(records, generated)
    );
    println!(
        "  read (baseline)                  {:>7.1} M records/s  {:>6.2}x the read time",
        rate(records, read_time.wall),
        1.0
    );
    println!(
        "  decode                           {:>7.1} M records/s  {:>6.2}x",
        rate(records, decode_time.wall),
        decode_time.wall.as_secs_f64() / read_time.wall.as_secs_f64()
    );
    println!(
        "  filter+derive+demangle -> csv    {:>7.1} M records/s  {:>6.2}x",
        rate(records, pipeline_time.wall),
        pipeline_time.wall.as_secs_f64() / read_time.wall.as_secs_f64()
    );
    println!(
        "    its CPU time                   {:>7.0} ns/record ({:.1} M records per CPU-second; {:.0}% of the machine stolen by the hypervisor meanwhile)",
        pipeline_time.cpu.as_secs_f64() * 1e9 / records as f64,
        rate(records, pipeline_time.cpu),
        pipeline_time.steal * 100.0
    );

    let small = dir.path().join("2m.rfraw");
    let large = dir.path().join("20m.rfraw");
    write_spool(&small, 2_000_000);
    write_spool(&large, 20_000_000);
    let small_rss = replay_in_child(&small, &dir.path().join("csv-2m"));
    let large_rss = replay_in_child(&large, &dir.path().join("csv-20m"));
    println!("peak RSS of a replay (fresh process each)");
    println!(
        "  2M records                       {:>7.1} MiB",
        small_rss as f64 / 1024.0
    );
    println!(
        "  20M records                      {:>7.1} MiB  {:>6.2}x the 2M peak",
        large_rss as f64 / 1024.0,
        large_rss as f64 / small_rss as f64
    );
}
