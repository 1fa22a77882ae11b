//! The Perfetto sink on a generated 10 M record spool: records per second through the
//! stages into a trace, as a ratio to a plain `read` of the same spool bytes measured in the
//! same run (best of three runs each), CPU time per record, and the peak memory of a replay
//! of 1 M, 10 M and 20 M records. Run with `cargo bench -p rocflow --bench perfetto`.

// The benchmarks' shared module; this one uses a part of it.
#[allow(dead_code)]
mod support;

use std::path::Path;

use support::{Peaks, Yardstick, best, replay_in_child, write_spool};

/// Every kind the sink shows from a generated run, with annotations and flows.
const PIPELINE: &str = r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES"]
[[sink]]
name = "trace"
kind = "perfetto"
path = "OUT"
"#;

/// Replays a spool into a trace at `out`; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    support::replay_to(PIPELINE, spool, out)
}

fn main() {
    if support::serve_child(|spool, out| {
        replay(spool, out);
    }) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("10m.rfraw");
    write_spool(&spool, 10_000_000, 2);
    let bytes = std::fs::metadata(&spool).unwrap().len();

    let yardstick = Yardstick::measure(&spool);
    let total = yardstick.records();
    let out = dir.path().join("trace.pftrace");
    let mut records = 0;
    let mut size = 0;
    let run = best(|| {
        records = replay(&spool, &out);
        size = std::fs::metadata(&out).unwrap().len();
        std::fs::remove_file(&out).unwrap();
    });

    println!(
        "spool: {total} records ({records} for the sink), {:.0} MiB; trace: {:.0} MiB",
        bytes as f64 / 1048576.0,
        size as f64 / 1048576.0
    );
    yardstick.print_baselines();
    yardstick.print_run("replay -> perfetto", run, "");

    // Memory is bounded by the tracks, not the records: each timeline holds back at most
    // its reorder buffer, and a window's packets are written before the next is taken.
    let small = dir.path().join("1m.rfraw");
    let large = dir.path().join("20m.rfraw");
    write_spool(&small, 1_000_000, 2);
    write_spool(&large, 20_000_000, 2);
    let mut peaks = Peaks::new("into Perfetto");
    for (label, path) in [("1M", &small), ("10M", &spool), ("20M", &large)] {
        let out = dir.path().join(format!("trace-{label}.pftrace"));
        peaks.print(label, replay_in_child(path, &out), "");
        std::fs::remove_file(&out).unwrap();
    }
}
