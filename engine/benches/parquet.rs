//! The Parquet sink on a generated 10 M record spool from three processes: records per
//! second through the stages into a dataset, as a ratio to a plain `read` of the same spool
//! bytes and to decoding it, measured in the same run (best of three each), the CPU time
//! per record, and the peak memory of a replay of 2 M, 10 M and 20 M records.
//! Run with `cargo bench -p rocflow --bench parquet`.

mod support;

use std::path::Path;

use support::best;

const RECORDS: u64 = 10_000_000;
const PROCESSES: u16 = 3;

/// Replays a spool into a dataset at `out`, every record in one Parquet dataset with the
/// default options; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    let text = support::pipeline(support::COUNTERS, true, &support::sink("parquet", "OUT"));
    support::replay_to(&text, spool, out).sinks[0].records
}

/// Bytes of the files under `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            match e.file_type().unwrap().is_dir() {
                true => size(&e.path()),
                false => e.metadata().unwrap().len(),
            }
        })
        .sum()
}

fn main() {
    let Some((dir, spool, bytes, yardstick)) = support::start(RECORDS, PROCESSES, replay) else {
        return;
    };
    let records = yardstick.records();
    let out = dir.path().join("dataset");
    let mut written = 0;
    let run = best(|| {
        assert_eq!(replay(&spool, &out), records);
        written = size(&out);
        std::fs::remove_dir_all(&out).unwrap();
    });

    println!(
        "spool: {records} records from {PROCESSES} processes, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    yardstick.print_baselines();
    yardstick.print_run(
        "replay -> parquet",
        run,
        &format!(
            "; {:.0} MiB of Parquet ({:.1} bytes/record)",
            written as f64 / 1048576.0,
            written as f64 / records as f64
        ),
    );

    // Memory is bounded by the folders being written, each holding at most one row group's
    // encoded columns, and by the windows queued between the stages.
    support::print_peaks(
        "into Parquet",
        dir.path(),
        PROCESSES,
        &[RECORDS / 5, RECORDS, RECORDS * 2],
        |label| dir.path().join(format!("dataset-{label}")),
        |_| String::new(),
    );
}
