//! Records through the engine: spool decoding, a transform pipeline into the CSV sink, and
//! the runner's peak memory on a short and a ten times longer replay.
//!
//! Figures are printed as records per second and as ratios to a plain `read` of the same
//! spool bytes, measured in the same run (best of three runs each). Run with `cargo bench -p rocflow --bench records`.

// The benchmarks' shared module; this one uses a part of it.
#[allow(dead_code)]
mod support;

use std::path::Path;
use std::time::Instant;

use support::{Yardstick, best, write_spool};

/// The transforms of the replay measured for throughput and memory: a filter, a derived
/// column and kernel names rewritten (after they were demangled, as always); every record
/// (of one counter, with PC samples) then goes into CSV.
const TRANSFORMS: &str = r#"
[[transform]]
name = "names"
kind = "kernel_name"
records = ["kernel_dispatch", "counter_sample"]
rename = [{ pattern = "\(.*\)$", replacement = "" }]
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
"#;

/// Replays a spool through the bench pipeline; returns the records decoded.
fn replay(spool: &Path, out: &Path) -> u64 {
    let rest = format!("{TRANSFORMS}{}", support::sink("csv", "OUT"));
    let report = support::replay_to(
        &support::pipeline(&support::COUNTERS[..1], true, &rest),
        spool,
        out,
    );
    report.records_in.iter().map(|(_, n)| n).sum()
}

fn main() {
    if support::serve_child(replay) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("5m.rfraw");
    let started = Instant::now();
    write_spool(&spool, 5_000_000, 2);
    let generated = started.elapsed();
    let bytes = std::fs::metadata(&spool).unwrap().len();

    let yardstick = Yardstick::measure(&spool);
    let records = yardstick.records();
    let out = dir.path().join("csv");
    let pipeline = best(|| {
        assert_eq!(replay(&spool, &out), records);
        std::fs::remove_dir_all(&out).unwrap();
    });

    println!(
        "spool: {records} records, {:.0} MiB ({:.1} bytes/record); generated at {:.1} M records/s",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64,
        records as f64 / generated.as_secs_f64() / 1e6
    );
    yardstick.print_baselines();
    yardstick.print_run("filter+derive+rename -> csv", pipeline, "");

    support::print_peaks(
        "into CSV",
        dir.path(),
        2,
        &[2_000_000, 20_000_000],
        |label| dir.path().join(format!("csv-{label}")),
        |_| String::new(),
    );
}
