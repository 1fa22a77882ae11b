//! The OTF2 sink on a generated 10 M record spool: records per second through the stages
//! into an archive, as a ratio to a plain `read` of the same spool bytes measured in the
//! same run (best of three runs each), CPU time per record, and the peak memory of a replay
//! of 1 M, 10 M and 20 M records. Needs the OTF2 library (`apt-get install libotf2-trace-dev`).
//! Run with `cargo bench -p rocflow --bench otf2`.

// The benchmarks' shared module; this one uses a part of it.
#[allow(dead_code)]
mod support;

use std::path::Path;

use support::{Peaks, Yardstick, best, replay_in_child, write_spool};

/// Every kind the sink writes, straight into OTF2.
const PIPELINE: &str = r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES"]
[[sink]]
name = "trace"
kind = "otf2"
path = "OUT"
"#;

/// Replays a spool into an archive at `out`; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    support::replay_to(PIPELINE, spool, out)
}

/// The archive's locations, from its event files.
fn locations(archive: &Path) -> usize {
    std::fs::read_dir(archive.join("traces"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "evt")
        })
        .count()
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
    let out = dir.path().join("trace");
    let mut records = 0;
    let mut lanes = 0;
    let run = best(|| {
        records = replay(&spool, &out);
        lanes = locations(&out);
        std::fs::remove_dir_all(&out).unwrap();
    });

    println!(
        "spool: {total} records ({records} for the sink), {:.0} MiB; archive: {lanes} locations",
        bytes as f64 / 1048576.0
    );
    yardstick.print_baselines();
    yardstick.print_run("replay -> otf2", run, "");

    // Events wait in a small block per location while the run goes on; OTF2 writes one
    // location at a time at the end, so its 4 MiB file buffer exists once, not per location.
    let small = dir.path().join("1m.rfraw");
    let large = dir.path().join("20m.rfraw");
    write_spool(&small, 1_000_000, 2);
    write_spool(&large, 20_000_000, 2);
    let mut peaks = Peaks::new("into OTF2");
    for (label, path) in [("1M", &small), ("10M", &spool), ("20M", &large)] {
        let out = dir.path().join(format!("trace-{label}"));
        let rss = replay_in_child(path, &out);
        peaks.print(label, rss, &format!(" ({} locations)", locations(&out)));
    }
}
