//! Records into rocpd databases: a generated run of ten million records from three
//! processes, replayed into one database per process (the default, written in parallel)
//! and into one database for the run, and the replay's peak memory on a run a tenth as
//! long.
//!
//! Figures are records per second and ratios to a plain `read` of the same spool bytes,
//! measured in the same run (best of three each), with the CPU time per record (this
//! machine is shared: the hypervisor's steal is printed too). Run with
//! `cargo bench -p rocflow --bench rocpd`.

mod support;

use std::path::Path;

use support::{Run, best};

const RECORDS: u64 = 10_000_000;
/// Three processes share the generator's launches evenly (its copies, markers, counters
/// and PC samples come every 8th, 64th, 16th and 32nd launch).
const PROCESSES: u16 = 3;

/// Replays a spool into rocpd databases under `out`, every record into one rocpd sink of
/// `layout`; returns the records written.
fn replay(spool: &Path, out: &Path, layout: &str) -> u64 {
    let sink = support::sink("rocpd", "OUT/{hostname}-{pid}.db");
    let rest = format!("{sink}options = {{ layout = \"{layout}\" }}\n");
    let text = support::pipeline(support::COUNTERS, true, &rest);
    support::replay_to(&text, spool, out).sinks[0].records
}

/// Bytes of the files in `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn main() {
    let Some((dir, spool, bytes, yardstick)) = support::start(RECORDS, PROCESSES, |spool, out| {
        replay(spool, out, "per_process")
    }) else {
        return;
    };
    let records = yardstick.records();
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

    println!(
        "spool: {records} records from {PROCESSES} processes, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    yardstick.print_baselines();
    for (layout, run, bytes) in &layouts {
        yardstick.print_run(
            &format!("rocpd, layout = {layout}"),
            *run,
            &format!(
                "; {:.0} MiB of databases ({:.1} bytes/record)",
                *bytes as f64 / 1048576.0,
                *bytes as f64 / records as f64
            ),
        );
    }

    support::print_peaks(
        "into rocpd (layout = per_process)",
        dir.path(),
        PROCESSES,
        &[RECORDS / 10, RECORDS],
        |label| dir.path().join(format!("db-{label}")),
        |_| String::new(),
    );
}
