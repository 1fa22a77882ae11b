//! The Perfetto sink on a generated 10 M record spool: records per second through the
//! stages into a trace, as a ratio to a plain `read` of the same spool bytes measured in the
//! same run (best of three runs each), CPU time per record, and the peak memory of a replay
//! of 2 M, 10 M and 20 M records. Run with `cargo bench -p rocflow --bench perfetto`.

mod support;

use std::path::Path;

use support::best;

/// Replays a spool into a trace at `out`, every kind the sink shows from a generated run
/// with annotations and flows; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    let text = support::pipeline(
        &support::COUNTERS[..1],
        false,
        &support::sink("perfetto", "OUT"),
    );
    support::replay_to(&text, spool, out).sinks[0].records
}

fn main() {
    let Some((dir, spool, bytes, yardstick)) = support::start(10_000_000, 2, replay) else {
        return;
    };
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
    support::print_peaks(
        "into Perfetto",
        dir.path(),
        2,
        &[2_000_000, 10_000_000, 20_000_000],
        |label| dir.path().join(format!("trace-{label}.pftrace")),
        |out| {
            std::fs::remove_file(out).unwrap();
            String::new()
        },
    );
}
