//! The OTF2 sink on a generated 10 M record spool: records per second through the stages
//! into an archive, as a ratio to a plain `read` of the same spool bytes measured in the
//! same run (best of three runs each), CPU time per record, and the peak memory of a replay
//! of 2 M, 10 M and 20 M records. Needs the OTF2 library (`apt-get install libotf2-trace-dev`).
//! Run with `cargo bench -p rocflow --bench otf2`.

mod support;

use std::path::Path;

use support::best;

/// Replays a spool into an archive at `out`, every kind the sink writes; returns the
/// records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    let text = support::pipeline(
        &support::COUNTERS[..1],
        false,
        &support::sink("otf2", "OUT"),
    );
    support::replay_to(&text, spool, out).sinks[0].records
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
    let Some((dir, spool, bytes, yardstick)) = support::start(10_000_000, 2, replay) else {
        return;
    };
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

    // Events wait in a small block per location while the run goes on; OTF2 writes up to
    // eight locations at a time at the end, so its file buffers exist for those alone.
    support::print_peaks(
        "into OTF2",
        dir.path(),
        2,
        &[2_000_000, 10_000_000, 20_000_000],
        |label| dir.path().join(format!("trace-{label}")),
        |out| format!(" ({} locations)", locations(out)),
    );
}
