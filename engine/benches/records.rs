//! Records through the engine: spool decoding, a transform pipeline into the CSV sink, and
//! the runner's peak memory on a short and a ten times longer replay.
//!
//! Figures are printed as records per second and as ratios to a plain `read` of the same
//! spool bytes, measured in the same run (best of three runs each). Run with `cargo bench -p rocflow --bench records`.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rocflow::spool::SpoolReader;
use rocflow::wire::Payload;
use support::{best, replay_in_child, write_spool};

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

/// Replays a spool through the bench pipeline; returns the records decoded.
fn replay(spool: &Path, out: &Path) -> u64 {
    let text = PIPELINE.replace("OUT", &out.display().to_string());
    let report = support::replay(&text, spool);
    report.records_in.iter().map(|(_, n)| n).sum()
}

fn main() {
    if support::serve_child(|spool, out| {
        replay(spool, out);
    }) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("5m.rfraw");
    let started = Instant::now();
    write_spool(&spool, 5_000_000, 2);
    let generated = started.elapsed();
    let bytes = std::fs::metadata(&spool).unwrap().len();

    let read_time = support::read_spool(&spool);
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
    write_spool(&small, 2_000_000, 2);
    write_spool(&large, 20_000_000, 2);
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
