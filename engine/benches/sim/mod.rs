//! `rocflow run PIPELINE` in a directory, on the simulated SDK with its scenario
//! `big.toml`, into the spool `run.rfraw`: how the run benchmarks start the runner.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

#[path = "../support/status.rs"]
mod status;

/// Records per iteration of the scenario: two threads launch eight kernels each, a
/// `hipLaunchKernel` and a dispatch per launch.
pub const RECORDS_PER_ITERATION: u64 = 2 * 8 * 2;

/// `trace-all`'s context, without its sinks: the run only keeps the spool.
pub const CAPTURE: &str = r#"
[pipeline]
name = "capture"
[[context]]
name = "trace"
tracing = ["hip_runtime_api", "hsa_core_api", "hsa_amd_ext_api", "kernel_dispatch",
    "memory_copy", "memory_allocation", "scratch_memory", "marker_core_range_api", "rccl_api"]
buffer = { size = "64MiB", watermark = "87.5%", policy = "lossless" }
"#;

/// The simulated SDK's MI300X example scenario, its threads running `iterations`
/// iterations: the repository's in the current folder (a bench run as a plain program
/// from the root of a copy), else the one it was built from.
pub fn example(iterations: u64) -> String {
    let built = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sim/mi300x.toml");
    std::fs::read_to_string("examples/sim/mi300x.toml")
        .or_else(|_| std::fs::read_to_string(built))
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

/// The `rocflow` binary the benchmarks run, its libraries beside it: `ROCFLOW_BIN` (as
/// sessions find it), else the one in the folder above this executable's (`target/release/`
/// for `target/release/deps/NAME-HASH`, so a copy runs on another machine), else the one
/// cargo built it with.
pub fn rocflow() -> std::path::PathBuf {
    if let Some(bin) = std::env::var_os("ROCFLOW_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().unwrap();
    let above = (exe.parent().and_then(Path::parent)).map(|d| d.join("rocflow"));
    above
        .filter(|p| p.is_file())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_rocflow").into())
}

/// What a run printed, how long it took, and the peak memory of the runner and of the
/// application (the simulated SDK and the tool library in it), each its own.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    pub runner_kb: u64,
    pub application_kb: u64,
}

/// The peaks of `runner` and of its children until `done`: each process's high-water mark
/// read every 10 ms, so only what a process adds in its last 10 ms goes unseen. (`wait4`
/// gives one peak for the runner and the children it reaped together.)
fn watch(runner: u32, done: &AtomicBool) -> (u64, u64) {
    let peak_kb = |pid: &str| status::kb(pid, "VmHWM:").unwrap_or(0);
    let (pid, children_of) = (
        runner.to_string(),
        format!("/proc/{runner}/task/{runner}/children"),
    );
    let (mut own, mut children) = (0, 0);
    while !done.load(Ordering::Relaxed) {
        own = own.max(peak_kb(&pid));
        let pids = std::fs::read_to_string(&children_of);
        for pid in pids.unwrap_or_default().split_whitespace() {
            children = children.max(peak_kb(pid));
        }
        thread::sleep(Duration::from_millis(10));
    }
    (own, children)
}

/// Runs `/bin/true` under `pipeline` in `dir`, `options` added to `rocflow run`'s; fails
/// with the output unless it succeeded.
pub fn run(dir: &Path, pipeline: &str, options: &[&str]) -> Run {
    let (out, err) = (dir.join("run.stdout"), dir.join("run.stderr"));
    let started = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "waitpid reaps it below, while its memory is watched"
    )]
    let child = Command::new(rocflow())
        .args(["run", pipeline, "--device", "sim:big.toml"])
        .args(["--spool", "run.rfraw"])
        .args(options)
        .args(["--", "/bin/true"])
        .current_dir(dir)
        .stdout(Stdio::from(File::create(&out).unwrap()))
        .stderr(Stdio::from(File::create(&err).unwrap()))
        .spawn()
        .unwrap();
    let done = AtomicBool::new(false);
    let (status, wall, (runner_kb, application_kb)) = thread::scope(|scope| {
        let peaks = scope.spawn(|| watch(child.id(), &done));
        let mut status = 0;
        // SAFETY: waits for the child spawned above, which nothing else waits for.
        let pid = unsafe { libc::waitpid(child.id() as libc::pid_t, &mut status, 0) };
        let wall = started.elapsed();
        assert_eq!(pid, child.id() as libc::pid_t, "waitpid failed");
        done.store(true, Ordering::Relaxed);
        (status, wall, peaks.join().unwrap())
    });
    let run = Run {
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
        wall,
        runner_kb,
        application_kb,
    };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    run
}
