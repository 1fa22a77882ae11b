//! The OTF2 sink on a generated 10 M record spool: records per second through the stages
//! into an archive, as a ratio to a plain `read` of the same spool bytes measured in the
//! same run (best of three runs each), CPU time per record, and the peak memory of a replay
//! of 1 M, 10 M and 20 M records. Needs the OTF2 library (`apt-get install libotf2-trace-dev`).
//! Run with `cargo bench -p rocflow --bench otf2`.

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rocflow::generate;
use rocflow::pipeline::{self, Options};
use rocflow::sink;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::stage;

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

const CHILD: &str = "ROCFLOW_BENCH_OTF2_REPLAY";

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

/// Replays a spool into an archive at `out`; returns the records the sink took.
fn replay(spool: &Path, out: &Path) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.toml");
    std::fs::write(&file, PIPELINE.replace("OUT", &out.display().to_string())).unwrap();
    let plan = pipeline::compile_file(&file, &Options::default())
        .expect("the bench pipeline is valid")
        .plan;
    let frames = SpoolReader::open(spool).unwrap().map(Result::unwrap);
    let report = stage::run(&plan, frames, &sink::open).unwrap();
    let sink = &report.sinks[0];
    if let Err(e) = &sink.outcome {
        panic!("sink {}: {e}", sink.name);
    }
    sink.records
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

/// Replays in a fresh process, so peaks do not mix; returns its peak RSS in kB.
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

/// Wall and CPU time of the fastest of three runs (this machine is shared: other work only
/// ever adds time), with the share of the machine the hypervisor stole meanwhile.
fn best(mut f: impl FnMut()) -> (Duration, Duration, f64) {
    (0..3)
        .map(|_| {
            let (cpu, ticks) = (process_cpu(), machine_ticks());
            let started = Instant::now();
            f();
            let wall = started.elapsed();
            let after = machine_ticks();
            let total: u64 = after.iter().zip(&ticks).map(|(a, b)| a - b).sum();
            let steal = (after[7] - ticks[7]) as f64 / total.max(1) as f64;
            (wall, process_cpu() - cpu, steal)
        })
        .min_by_key(|run| run.0)
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

/// This process's user and system CPU time (ticks of 10 ms in /proc/self/stat).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
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
    if let Some(spool) = std::env::var_os(CHILD) {
        let out = std::env::var_os("ROCFLOW_BENCH_OUT").unwrap();
        replay(Path::new(&spool), Path::new(&out));
        println!("{}", peak_rss_kb());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("10m.rfraw");
    write_spool(&spool, 10_000_000);
    let bytes = std::fs::metadata(&spool).unwrap().len();

    let (read_wall, ..) = best(|| {
        let mut file = std::fs::File::open(&spool).unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let mut read = 0;
        while let Ok(n @ 1..) = file.read(&mut buffer) {
            read += n;
        }
        assert_eq!(read as u64, bytes);
    });
    let out = dir.path().join("trace");
    let mut records = 0;
    let mut lanes = 0;
    let (wall, cpu, steal) = best(|| {
        records = replay(&spool, &out);
        lanes = locations(&out);
        std::fs::remove_dir_all(&out).unwrap();
    });

    let rate = |t: Duration| records as f64 / t.as_secs_f64() / 1e6;
    println!(
        "spool: {records} records for the sink, {:.0} MiB; archive: {lanes} locations",
        bytes as f64 / 1048576.0
    );
    println!(
        "  read (baseline)         {:>7.1} M records/s  {:>6.2}x the read time",
        rate(read_wall),
        1.0
    );
    println!(
        "  replay -> otf2          {:>7.1} M records/s  {:>6.2}x",
        rate(wall),
        wall.as_secs_f64() / read_wall.as_secs_f64()
    );
    println!(
        "    its CPU time          {:>7.0} ns/record ({:.1} M records per CPU-second; {:.0}% of \
         the machine stolen by the hypervisor meanwhile)",
        cpu.as_secs_f64() * 1e9 / records as f64,
        rate(cpu),
        steal * 100.0
    );

    // Memory is bounded by the locations, not the records: each location costs its event
    // chunks, and OTF2 keeps a 4 MiB file write buffer for each location from its first
    // flush on. Peak memory grows as more (rarely used) lanes reach their first flush, up
    // to about 4.5 MiB per location.
    let small = dir.path().join("1m.rfraw");
    let large = dir.path().join("20m.rfraw");
    write_spool(&small, 1_000_000);
    write_spool(&large, 20_000_000);
    println!("peak RSS of a replay into OTF2 (fresh process each)");
    let mut first = None;
    for (label, path) in [("1M", &small), ("10M", &spool), ("20M", &large)] {
        let out = dir.path().join(format!("trace-{label}"));
        let rss = replay_in_child(path, &out) as f64 / 1024.0;
        let first = *first.get_or_insert(rss);
        println!(
            "  {label:<4} records          {rss:>7.1} MiB  {:>5.2}x the 1M peak ({} locations)",
            rss / first,
            locations(&out)
        );
    }
}
