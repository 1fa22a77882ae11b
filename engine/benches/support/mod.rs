//! What the benchmarks share: generated spools, the plain-read baseline, runs timed with
//! their CPU time and the hypervisor's steal, and peak memory measured in a fresh process.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod status;

// The binary's allocator, so that a replay measured here peaks and runs as `rocflow
// replay` does: under the system's malloc, the sinks benchmark's 20 M-record replays on 16
// cores peaked at 1.38-1.45 times the 2 M ones into Parquet and 1.31-1.37 into all five
// sinks, against 1.10-1.11 and 1.09-1.14 under the binary's (two rounds, in turns).
#[path = "../../src/allocator.rs"]
mod allocator;

use rocflow::generate;
use rocflow::plan::Plan;

/// A pipeline of the generator's traced kinds and `counters` (its PC samples too, with
/// `pc_sampling`), then `rest`: TOML of its `[[transform]]` and `[[sink]]` tables.
pub fn pipeline(counters: &[&str], pc_sampling: bool, rest: &str) -> String {
    // A list of strings in Rust's debug form is one in TOML.
    let sampling = if pc_sampling {
        "pc_sampling.method = \"host_trap\""
    } else {
        ""
    };
    format!(
        r#"
[pipeline]
name = "bench"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = {counters:?}
{sampling}
{rest}"#
    )
}

/// A `[[sink]]` table of `kind` (named after it) writing to `path`; `OUT` in it is where
/// [`replay_to`] writes.
pub fn sink(kind: &str, path: &str) -> String {
    format!("[[sink]]\nname = \"{kind}\"\nkind = \"{kind}\"\npath = \"{path}\"\n")
}

/// The counters the generator makes (the first alone for a lighter run).
pub const COUNTERS: &[&str] = &["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"];

/// Writes a generated run of `records` records from `processes` processes.
pub fn write_spool(path: &Path, records: u64, processes: u16) {
    let options = generate::Options {
        records,
        processes,
        seed: 3,
        plan: None,
    };
    generate::to_spool(&options, path).unwrap();
}

/// The baseline every figure is compared with: reading the spool's bytes, nothing else.
fn read_spool(path: &Path) -> Run {
    let bytes = std::fs::metadata(path).unwrap().len();
    best(|| {
        let mut file = std::fs::File::open(path).unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let mut read = 0;
        while let Ok(n @ 1..) = file.read(&mut buffer) {
            read += n;
        }
        assert_eq!(read as u64, bytes);
    })
}

/// What one measured run took.
#[derive(Clone, Copy)]
pub struct Run {
    pub wall: Duration,
    /// CPU time of this process (user and system).
    pub cpu: Duration,
    /// The share of the machine's CPU time the hypervisor gave to others meanwhile.
    pub steal: f64,
}

/// The shortest of three runs: this machine is shared, and other work only ever adds time.
pub fn best(mut f: impl FnMut()) -> Run {
    (0..3)
        .map(|_| {
            let (cpu, ticks) = (process_cpu(), machine_ticks());
            let started = Instant::now();
            f();
            let wall = started.elapsed();
            let after = machine_ticks();
            let total: u64 = after.iter().zip(&ticks).map(|(a, b)| a - b).sum();
            Run {
                wall,
                cpu: process_cpu() - cpu,
                steal: (after[7] - ticks[7]) as f64 / total.max(1) as f64,
            }
        })
        .min_by_key(|run| run.wall)
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

/// This process's user and system CPU time, from /proc (in ticks of 10 ms).
pub fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Peak resident memory of this process, from /proc (kB).
pub fn peak_rss_kb() -> u64 {
    status_kb("VmHWM:")
}

/// A size `/proc/self/status` gives in kB, by its label.
pub fn status_kb(label: &str) -> u64 {
    status::kb("self", label).unwrap()
}

const CHILD_SPOOL: &str = "ROCFLOW_BENCH_CHILD_SPOOL";
const CHILD_OUT: &str = "ROCFLOW_BENCH_CHILD_OUT";

/// In the child process [`replay_in_child`] starts: runs `replay` and prints the peak RSS;
/// returns whether this process was that child.
pub fn serve_child(replay: impl FnOnce(&Path, &Path) -> u64) -> bool {
    let (Some(spool), Some(out)) = (std::env::var_os(CHILD_SPOOL), std::env::var_os(CHILD_OUT))
    else {
        return false;
    };
    replay(Path::new(&spool), Path::new(&out));
    println!("{}", peak_rss_kb());
    true
}

/// A benchmark's generated spool: the folder it is in (removed when dropped), its path, its
/// size in bytes, and the baselines runs over it are measured against.
pub type Spool = (tempfile::TempDir, PathBuf, u64, Yardstick);

/// Starts a benchmark whose replays `replay(spool, out)` are measured in child processes
/// too: in such a child, runs the replay and returns `None`; otherwise writes a spool of
/// `records` records from `processes` processes and measures its baselines.
pub fn start(
    records: u64,
    processes: u16,
    replay: impl FnOnce(&Path, &Path) -> u64,
) -> Option<Spool> {
    if serve_child(replay) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join(format!("{}m.rfraw", records / 1_000_000));
    write_spool(&spool, records, processes);
    let bytes = std::fs::metadata(&spool).unwrap().len();
    let yardstick = Yardstick::measure(&spool);
    Some((dir, spool, bytes, yardstick))
}

/// Replays `spool` in a fresh process of this benchmark (so peaks do not mix); returns its
/// peak RSS in kB.
pub fn replay_in_child(spool: &Path, out: &Path) -> u64 {
    peak_in_child(&[
        (CHILD_SPOOL, spool.as_os_str()),
        (CHILD_OUT, out.as_os_str()),
    ])
}

/// Runs this benchmark again in a fresh process with `env`, which tells it what to do and
/// to print its peak RSS; returns that peak in kB.
pub fn peak_in_child(env: &[(&str, &OsStr)]) -> u64 {
    in_child(env).trim().parse().unwrap()
}

/// Runs this benchmark again with `env` (its child's part) and returns what it printed.
pub fn in_child(env: &[(&str, &OsStr)]) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Compiles the pipeline `text`.
pub fn plan(text: &str) -> Plan {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.toml");
    std::fs::write(&file, text).unwrap();
    rocflow::pipeline::compile_file(&file, &Default::default())
        .expect("the bench pipeline is valid")
        .plan
}

/// Replays `spool` through the pipeline `text` into its sinks (each must succeed).
pub fn replay(text: &str, spool: &Path) -> rocflow::stage::Report {
    let plan = plan(text);
    let mut source = rocflow::source::Spool::open(spool).unwrap();
    let report = rocflow::stage::run(&plan, &mut source, &rocflow::sink::open).unwrap();
    report.source.as_ref().expect("the spool reads whole");
    for sink in &report.sinks {
        if let Err(e) = &sink.outcome {
            panic!("sink {}: {e}", sink.name);
        }
    }
    report
}

/// Replays `spool` through the pipeline `text`, its `OUT` replaced by `out`.
pub fn replay_to(text: &str, spool: &Path, out: &Path) -> rocflow::stage::Report {
    replay(&text.replace("OUT", &out.display().to_string()), spool)
}

/// Decodes every frame of a spool (the fastest anything reads records); returns the
/// records and the best run.
fn decode(spool: &Path) -> (u64, Run) {
    let mut records = 0u64;
    let run = best(|| {
        records = 0;
        for frame in rocflow::spool::SpoolReader::open(spool).unwrap() {
            if let rocflow::wire::Payload::Records(batch) = frame.unwrap().payload {
                records += batch.len() as u64;
            }
        }
    });
    (records, run)
}

/// Figures of runs over one spool, each against a plain read of the same bytes.
pub struct Yardstick {
    records: u64,
    read: Duration,
    decode: Duration,
}

impl Yardstick {
    /// Reads and decodes the spool, the baselines of every figure.
    pub fn measure(spool: &Path) -> Yardstick {
        let read = read_spool(spool).wall;
        let (records, decode) = decode(spool);
        Yardstick {
            records,
            read,
            decode: decode.wall,
        }
    }

    /// The records in the spool.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Prints the read's and the decode's lines.
    pub fn print_baselines(&self) {
        println!(
            "  {:<32} {:>7.2} M records/s  {:>6.2}x the read time",
            "read (baseline)",
            self.rate(self.read),
            1.0
        );
        self.print("decode", self.decode);
    }

    fn rate(&self, t: Duration) -> f64 {
        self.records as f64 / t.as_secs_f64() / 1e6
    }

    /// A step's rate, and its time as a multiple of the read's.
    pub fn print(&self, step: &str, wall: Duration) {
        println!(
            "  {step:<32} {:>7.2} M records/s  {:>6.2}x",
            self.rate(wall),
            wall.as_secs_f64() / self.read.as_secs_f64()
        );
    }

    /// A step's rate and its CPU time per record; `output` says what it wrote, if anything.
    pub fn print_run(&self, step: &str, run: Run, output: &str) {
        self.print(step, run.wall);
        println!(
            "    its CPU time                   {:>7.0} ns/record ({:.2} M records per CPU-second; \
             {:.0}% of the machine stolen by the hypervisor meanwhile){output}",
            run.cpu.as_secs_f64() * 1e9 / self.records as f64,
            self.rate(run.cpu),
            run.steal * 100.0
        );
    }
}

/// Prints the peak memory of replays `title`, each in a fresh process of this benchmark
/// and against the first one's, of generated runs of `sizes` records from `processes`
/// processes, each into `out(label)`; `note(out)` adds what the replay wrote there. A
/// run's spool already in `dir` (as [`start`] writes it) is replayed as it is.
pub fn print_peaks(
    title: &str,
    dir: &Path,
    processes: u16,
    sizes: &[u64],
    out: impl Fn(&str) -> PathBuf,
    mut note: impl FnMut(&Path) -> String,
) {
    println!("peak RSS of a replay {title} (fresh process each)");
    let mut first = None;
    for &records in sizes {
        let millions = records / 1_000_000;
        let spool = dir.join(format!("{millions}m.rfraw"));
        if !spool.exists() {
            write_spool(&spool, records, processes);
        }
        let label = format!("{millions}M");
        let out = out(&label);
        let mib = replay_in_child(&spool, &out) as f64 / 1024.0;
        let (base, first) = first.get_or_insert((label.clone(), mib)).clone();
        println!(
            "  {:<32} {mib:>7.1} MiB  {:>6.2}x the {base} peak{}",
            format!("{label} records"),
            mib / first,
            note(&out)
        );
    }
}
