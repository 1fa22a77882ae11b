//! `rocflow run PIPELINE` in a directory, on the simulated SDK with its scenario
//! `big.toml`, into the spool `run.rfraw`: how the run benchmarks start the runner.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Records per iteration of the scenario: two threads launch eight kernels each, a
/// `hipLaunchKernel` and a dispatch per launch.
pub const RECORDS_PER_ITERATION: u64 = 2 * 8 * 2;

/// The simulated SDK's MI300X example scenario, its threads running `iterations`
/// iterations.
pub fn example(iterations: u64) -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sim/mi300x.toml"
    ))
    .unwrap()
    .replace("iterations = 100", &format!("iterations = {iterations}"))
}

/// Writes `big.toml` into `dir`: the MI300X example's system with `iterations` iterations
/// of eight short kernels and no marker ranges.
pub fn scenario(dir: &Path, iterations: u64) {
    let base = example(iterations);
    let head = base[..base.find("[[kernel]]").unwrap()]
        .replace("marker_ranges = true", "marker_ranges = false");
    let kernels: String = (0..8)
        .map(|i| {
            format!(
                "\n[[kernel]]\nname = \"_Z7kernel{i}v\"\nduration_ns = 1000\n\
                 grid = [1024, 1, 1]\nworkgroup = [256, 1, 1]\n"
            )
        })
        .collect();
    std::fs::write(dir.join("big.toml"), head + &kernels).unwrap();
}

/// What a run printed, how long it took, and the runner's peak memory.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    pub peak_kb: u64,
}

/// Runs `/bin/true` under `pipeline` in `dir`; fails with the output unless it succeeded.
pub fn run(dir: &Path, pipeline: &str) -> Run {
    let (out, err) = (dir.join("run.stdout"), dir.join("run.stderr"));
    let started = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "wait4 reaps it below, and gives its peak memory, which `Child::wait` does not"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_rocflow"))
        .args(["run", pipeline, "--device", "sim:big.toml"])
        .args(["--spool", "run.rfraw", "--", "/bin/true"])
        .current_dir(dir)
        .stdout(Stdio::from(File::create(&out).unwrap()))
        .stderr(Stdio::from(File::create(&err).unwrap()))
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value of it, for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child spawned above, which nothing else waits for.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    let run = Run {
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
        wall,
        peak_kb: usage.ru_maxrss as u64,
    };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    run
}
