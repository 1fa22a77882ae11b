//! The Parquet sink on a generated 10 M record spool from three processes: records per
//! second through the stages into a dataset, as a ratio to a plain `read` of the same spool
//! bytes and to decoding it, measured in the same run (best of three each), the CPU time
//! per record, and the peak memory of a replay of 1 M, 10 M and 20 M records.
//! Run with `cargo bench -p rocflow --bench parquet`.

mod support;

use std::path::Path;
use std::time::Duration;

use rocflow::spool::SpoolReader;
use rocflow::wire::Payload;
use support::{Run, best, replay_in_child, write_spool};

/// Every record the generator makes, into one Parquet dataset with the default options.
const PIPELINE: &str = r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"]
pc_sampling.method = "host_trap"
[[sink]]
name = "tables"
kind = "parquet"
path = "OUT"
"#;

const RECORDS: u64 = 10_000_000;
const PROCESSES: u16 = 3;

/// Replays a spool into a dataset at `out`; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    let text = PIPELINE.replace("OUT", &out.display().to_string());
    support::replay(&text, spool).sinks[0].records
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
    if support::serve_child(|spool, out| {
        replay(spool, out);
    }) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("10m.rfraw");
    write_spool(&spool, RECORDS, PROCESSES);
    let bytes = std::fs::metadata(&spool).unwrap().len();

    let read = support::read_spool(&spool).wall;
    let mut records = 0u64;
    let decode = best(|| {
        records = 0;
        for frame in SpoolReader::open(&spool).unwrap() {
            if let Payload::Records(batch) = frame.unwrap().payload {
                records += batch.len() as u64;
            }
        }
    })
    .wall;
    let out = dir.path().join("dataset");
    let mut written = 0;
    let Run { wall, cpu, steal } = best(|| {
        assert_eq!(replay(&spool, &out), records);
        written = size(&out);
        std::fs::remove_dir_all(&out).unwrap();
    });

    let rate = |t: Duration| records as f64 / t.as_secs_f64() / 1e6;
    let ratio = |t: Duration| t.as_secs_f64() / read.as_secs_f64();
    println!(
        "spool: {records} records from {PROCESSES} processes, {:.0} MiB ({:.1} bytes/record)",
        bytes as f64 / 1048576.0,
        bytes as f64 / records as f64
    );
    println!(
        "  read (baseline)         {:>7.2} M records/s  {:>6.2}x the read time",
        rate(read),
        1.0
    );
    println!(
        "  decode                  {:>7.2} M records/s  {:>6.2}x",
        rate(decode),
        ratio(decode)
    );
    println!(
        "  replay -> parquet       {:>7.2} M records/s  {:>6.2}x",
        rate(wall),
        ratio(wall)
    );
    println!(
        "    its CPU time          {:>7.0} ns/record ({:.2} M records per CPU-second; {:.0}% of \
         the machine stolen by the hypervisor meanwhile); {:.0} MiB of Parquet ({:.1} \
         bytes/record)",
        cpu.as_secs_f64() * 1e9 / records as f64,
        rate(cpu),
        steal * 100.0,
        written as f64 / 1048576.0,
        written as f64 / records as f64
    );

    // Memory is bounded by the folders being written, each holding at most one row group's
    // encoded columns, and by the windows queued between the stages.
    let small = dir.path().join("1m.rfraw");
    let large = dir.path().join("20m.rfraw");
    write_spool(&small, RECORDS / 10, PROCESSES);
    write_spool(&large, RECORDS * 2, PROCESSES);
    println!("peak RSS of a replay into Parquet (fresh process each)");
    let mut first = None;
    for (label, path) in [("1M", &small), ("10M", &spool), ("20M", &large)] {
        let rss = replay_in_child(path, &dir.path().join(format!("dataset-{label}"))) as f64;
        let first = *first.get_or_insert(rss);
        println!(
            "  {label:<4} records          {:>7.1} MiB  {:>5.2}x the 1M peak",
            rss / 1024.0,
            rss / first
        );
    }
}
