//! What tracing ROCTx costs the application: ns per `roctxRangePushA`/`roctxRangePop` pair
//! at the highest rate a program calls them (`tests/apps/roctx_loop.c`), with no tool, with
//! a null tool (`tests/apps/null_tool.c`: the SDK services marker-trace asks for, the
//! buffered records and the callbacks that carry ROCTx messages, their data discarded),
//! with the null tool asking for the records only, and with rocflow (`rocflow run
//! marker-trace`), on AMD's real rocprofiler-sdk (the kit of `$REALSDK`, by default
//! `../shared/realsdk` beside the repository) and on the simulated SDK. The four run
//! interleaved, nine rounds, medians (medians of five moved by a fifth from one run to the
//! next on 16 cores); the target is rocflow within 1.5× of the null tool, which leaves the
//! SDK's own cost of those services aside.
//!
//! Run with `cargo bench -p rocflow --bench overhead`, or as the plain executable from the
//! repository root: `rocflow` and its libraries are found as the other benchmarks find
//! them (`ROCFLOW_BIN`, else beside the executable's folder), the C programs are built
//! with `cc`. Without the kit, or without the Debian packages its libraries need, the real
//! SDK's half says why it is skipped.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
mod sim;
use std::process::{Command, Output};

/// Pairs timed per run, after a tenth as many to warm up.
const PAIRS: u64 = 1_000_000;
const ROUNDS: usize = 9;
/// rocflow's target: its cost per pair against the null tool's.
const TARGET: f64 = 1.5;

/// Who traces the program's ROCTx calls.
#[derive(Clone, Copy)]
enum Mode {
    NoTool,
    /// The null tool, buffered records only: what a tool pays that leaves messages out.
    NullRecords,
    NullTool,
    Rocflow,
}

const MODES: [Mode; 4] = [
    Mode::NoTool,
    Mode::NullRecords,
    Mode::NullTool,
    Mode::Rocflow,
];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::NoTool => "no tool",
            Mode::NullRecords => "null tool, records only",
            Mode::NullTool => "null tool",
            Mode::Rocflow => "rocflow marker-trace",
        }
    }
}

/// The SDK the program's ROCTx calls reach.
enum Sdk {
    /// AMD's kit at this directory: its `env.sh` sets up every run.
    Real(PathBuf),
    /// rocflow's simulated SDK, preloaded, with this scenario.
    Simulated(PathBuf),
}

/// The programs every run uses.
struct Programs {
    rocflow: PathBuf,
    roctx_loop: PathBuf,
    null_tool: PathBuf,
}

impl Sdk {
    fn name(&self) -> &'static str {
        match self {
            Sdk::Real(_) => "AMD's rocprofiler-sdk (real SDK kit)",
            Sdk::Simulated(_) => "the simulated SDK",
        }
    }

    /// Runs `roctx_loop` under `mode` in `dir`; the command's output.
    fn run(&self, programs: &Programs, mode: Mode, dir: &Path) -> Output {
        let pairs = PAIRS.to_string();
        let (warmup, app) = ((PAIRS / 10).to_string(), &programs.roctx_loop);
        let mut command = match self {
            // `env.sh` puts the kit first on the loader path (and mends its links).
            Sdk::Real(kit) => {
                let mut c = Command::new("bash");
                c.arg("-c")
                    .arg("source \"$0\" && exec \"$@\"")
                    .arg(kit.join("env.sh"));
                c
            }
            Sdk::Simulated(_) => Command::new("env"),
        };
        match mode {
            Mode::Rocflow => {
                command
                    .arg(&programs.rocflow)
                    .arg("run")
                    .arg("marker-trace");
                if let Sdk::Simulated(scenario) = self {
                    command
                        .arg("--device")
                        .arg(format!("sim:{}", scenario.display()));
                }
                command.args(["--spool", "run.rfraw", "--set", "output_dir=out", "--"]);
            }
            Mode::NullTool | Mode::NullRecords => {
                command.env("ROCP_TOOL_LIBRARIES", &programs.null_tool);
                let records_only = matches!(mode, Mode::NullRecords);
                command.env("NULL_TOOL_RECORDS_ONLY", u8::from(records_only).to_string());
            }
            Mode::NoTool => {}
        }
        // rocflow preloads the simulated SDK itself.
        if let (Sdk::Simulated(scenario), Mode::NoTool | Mode::NullRecords | Mode::NullTool) =
            (self, mode)
        {
            let sim = programs.rocflow.with_file_name("librocflow_sim.so");
            command
                .env("LD_PRELOAD", sim)
                .env("ROCFLOW_SIM_SCENARIO", scenario);
        }
        command.arg(app).args([&pairs, &warmup]).current_dir(dir);
        command.output().expect("the command starts")
    }
}

/// The nanoseconds per pair `roctx_loop` printed, after checking that the run succeeded
/// and that its tool traced every pair; else what went wrong.
fn ns_per_pair(mode: Mode, output: &Output) -> Result<f64, String> {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    let failed = || format!("{}: {}\n{stdout}{stderr}", mode.name(), output.status);
    if !output.status.success() {
        return Err(failed());
    }
    let figure = |text: &str, prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
    };
    let ranges = (PAIRS + PAIRS / 10) as f64;
    let traced = match mode {
        Mode::NoTool => Some(ranges),
        Mode::NullRecords | Mode::NullTool => figure(&stderr, "null-tool: "),
        Mode::Rocflow => figure(&stderr, "marker: "),
    };
    if traced != Some(ranges) {
        return Err(format!(
            "{}: {ranges} ranges, but the tool traced {traced:?}\n{stderr}",
            mode.name()
        ));
    }
    figure(&stdout, "ns_per_pair ").ok_or_else(failed)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Builds the C programs into `dir` with `cc`.
fn build(dir: &Path, rocflow: PathBuf) -> Programs {
    let programs = Programs {
        rocflow,
        roctx_loop: dir.join("roctx_loop"),
        null_tool: dir.join("libnull_tool.so"),
    };
    let apps = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apps");
    let apps = if apps.exists() {
        apps
    } else {
        PathBuf::from("tests/apps")
    };
    for (out, source, flags) in [
        (&programs.roctx_loop, "roctx_loop.c", &[][..]),
        (
            &programs.null_tool,
            "null_tool.c",
            &["-shared", "-fPIC"][..],
        ),
    ] {
        let cc = Command::new("cc")
            .args(["-O2", "-Wall"])
            .args(flags)
            .arg("-o")
            .arg(out)
            .arg(apps.join(source))
            .arg("-ldl")
            .output()
            .expect("cc runs");
        assert!(
            cc.status.success(),
            "{}",
            String::from_utf8_lossy(&cc.stderr)
        );
    }
    programs
}

/// The kit, or why there is none: `$REALSDK`, else `../shared/realsdk` beside this
/// repository (`cargo bench` runs in `engine/`), else beside the working directory (the
/// executable run elsewhere from a copy of the repository's root).
fn kit() -> Result<PathBuf, String> {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realsdk");
    let kit = std::env::var_os("REALSDK")
        .map(PathBuf::from)
        .or_else(|| beside.exists().then_some(beside))
        .unwrap_or_else(|| PathBuf::from("../shared/realsdk"));
    if kit.join("env.sh").exists() {
        Ok(kit.canonicalize().unwrap())
    } else {
        Err(format!(
            "no real SDK kit at {} (set REALSDK to its directory)",
            kit.display()
        ))
    }
}

/// Measures the four modes on `sdk`, interleaved, and prints the medians and ratios; says
/// why not where a run fails.
fn measure(sdk: &Sdk, programs: &Programs) -> Result<(), String> {
    let mut figures: [Vec<f64>; 4] = Default::default();
    for _ in 0..ROUNDS {
        for (mode, figures) in MODES.into_iter().zip(&mut figures) {
            let dir = tempfile::tempdir().unwrap();
            figures.push(ns_per_pair(mode, &sdk.run(programs, mode, dir.path()))?);
        }
    }
    let [none, records, null, rocflow] = figures.map(median);
    println!(
        "{} ({PAIRS} pairs a run, medians of {ROUNDS} interleaved rounds)",
        sdk.name()
    );
    for (mode, ns) in MODES.into_iter().zip([none, records, null, rocflow]) {
        println!("  {:<25} {ns:>9.1} ns per push/pop pair", mode.name());
    }
    let ratio = rocflow / null;
    println!(
        "  rocflow / null tool       {ratio:>9.2}×  (target ≤ {TARGET}×: {}); rocflow / records only {:.2}×, null tool / records only {:.2}×, null tool / no tool {:.1}×, rocflow / no tool {:.1}×",
        if ratio <= TARGET { "met" } else { "missed" },
        rocflow / records,
        null / records,
        null / none,
        rocflow / none
    );
    Ok(())
}

fn main() {
    let rocflow = sim::rocflow();
    let dir = tempfile::tempdir().unwrap();
    let programs = build(dir.path(), rocflow);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("ROCTx overhead on {cores} cores");
    match kit() {
        Ok(kit) => {
            if let Err(why) = measure(&Sdk::Real(kit), &programs) {
                println!(
                    "{}: skipped, a run failed: {why}",
                    Sdk::Real(PathBuf::new()).name()
                );
            }
        }
        Err(why) => println!("{}: skipped, {why}", Sdk::Real(PathBuf::new()).name()),
    }
    // The scenario's system with no threads of its own: every record is the program's.
    let scenario = dir.path().join("no-threads.toml");
    let example = sim::example(100);
    std::fs::write(&scenario, example.replace("threads = 2", "threads = 0")).unwrap();
    if let Err(why) = measure(&Sdk::Simulated(scenario), &programs) {
        panic!("the simulated SDK: {why}");
    }
}
