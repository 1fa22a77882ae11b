//! In-process sessions on the simulated SDK: the latency of `start()` and `stop()`, and a
//! session's cost per record against `rocflow run` of the same pipeline on the same paced
//! scenario (two threads, eight kernels, a hipLaunchKernel and a dispatch each). The cost
//! is all the CPU time spent, application and runner together (the session's process
//! reaps its runners, the run's runner its application), per record the outputs hold, as
//! `wait4` reports it for the one process the benchmark starts. Modes alternate, so that
//! both see the same machine. Run with `cargo bench -p rocflow --bench session`, or, built
//! (`cargo bench -p rocflow --bench session --no-run` names the executable), as a plain
//! program from the repository's root on a machine without cargo: it finds `rocflow` in
//! `ROCFLOW_BIN`, else in the folder above its own (`target/release/` for
//! `target/release/deps/session-…`), and the simulated SDK and the tool library beside
//! `rocflow`.
//!
//! The benchmark is also its own application: started with `ROCFLOW_BENCH_SESSION` set,
//! it opens a session (or, under `rocflow run`, waits for the scenario) and prints its
//! latencies.

#[allow(dead_code)]
mod sim;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The scenario's iterations and how long it is paced over.
const ITERATIONS: u64 = 4_000;
const DURATION_MS: u64 = 4_000;
/// Start/stop pairs timed after the scenario ended.
const PAIRS: usize = 2_000;

const PIPELINE: &str = r#"
[pipeline]
name = "spool-only"
[params]
output_dir = "out"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api"]
buffer = { size = "64MiB", watermark = "50%", policy = "lossless" }
"#;

fn main() {
    match std::env::var("ROCFLOW_BENCH_SESSION").as_deref() {
        Ok("session") => return application(true),
        Ok("run") => return application(false),
        _ => {}
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("spool-only.toml"), PIPELINE).unwrap();
    sim::scenario(dir, ITERATIONS);
    let big = std::fs::read_to_string(dir.join("big.toml")).unwrap();
    let paced = big.replacen(
        "[scenario]\n",
        &format!("[scenario]\nduration_ms = {DURATION_MS}\n"),
        1,
    );
    std::fs::write(dir.join("big.toml"), paced).unwrap();
    for round in 1..=3 {
        let run = measure(dir, false);
        let session = measure(dir, true);
        let per = |m: &Measured| m.cpu.as_nanos() as f64 / m.records as f64;
        println!(
            "round {round}: rocflow run {} records, {:.0} ns CPU each; session {} records, {:.0} ns CPU each: {:+.0} ns per record ({:.2}x); session start {}, stop {}",
            run.records,
            per(&run),
            session.records,
            per(&session),
            per(&session) - per(&run),
            per(&session) / per(&run),
            session.latency.as_deref().unwrap_or("?"),
            session.latency_stop.as_deref().unwrap_or("?"),
        );
    }
}

struct Measured {
    records: u64,
    cpu: Duration,
    latency: Option<String>,
    latency_stop: Option<String>,
}

/// One run of the application, as a session or under `rocflow run`: records in its
/// spool, CPU time of every process, and the session's latencies.
fn measure(dir: &Path, session: bool) -> Measured {
    let rocflow = sim::rocflow();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let bench = std::env::current_exe().unwrap();
    let mut command = match session {
        true => {
            let mut c = Command::new(&bench);
            c.env("ROCFLOW_BENCH_SESSION", "session")
                .env("LD_PRELOAD", library(&rocflow, "librocflow_sim.so"))
                .env(
                    "ROCFLOW_TOOL_LIBRARY",
                    library(&rocflow, "librocflow_tool.so"),
                )
                .env("ROCFLOW_BIN", &rocflow);
            c
        }
        false => {
            let mut c = Command::new(&rocflow);
            c.args([
                "run",
                "spool-only.toml",
                "--quiet",
                "--device",
                "sim:big.toml",
            ])
            .args(["--spool", "out/final/session.rfraw", "--"])
            .arg(&bench)
            .env("ROCFLOW_BENCH_SESSION", "run");
            c
        }
    };
    let output = dir.join("application.out");
    #[expect(
        clippy::zombie_processes,
        reason = "waited for below by wait4, which also gives its CPU time"
    )]
    let child = command
        .current_dir(dir)
        .env("ROCFLOW_SIM_SCENARIO", dir.join("big.toml"))
        .stdout(std::fs::File::create(&output).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be filled.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child spawned above, which nothing else waits for.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let printed = std::fs::read_to_string(output).unwrap();
    let field = |name: &str| {
        (printed.lines())
            .find_map(|l| l.strip_prefix(name))
            .map(str::to_owned)
    };
    Measured {
        records: records(&rocflow, &out.join("final/session.rfraw")),
        cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime)
            - Duration::from_nanos(field("pairs_cpu_ns ").map_or(0, |n| n.parse().unwrap())),
        latency: field("start "),
        latency_stop: field("stop "),
    }
}

/// A library built beside `rocflow` (or in `deps/`, where `cargo bench` builds it).
fn library(rocflow: &Path, name: &str) -> PathBuf {
    let dir = rocflow.parent().unwrap();
    [dir.join(name), dir.join("deps").join(name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not built beside {}", rocflow.display()))
}

/// The records a spool holds, as `rocflow inspect` counts them.
fn records(rocflow: &Path, spool: &Path) -> u64 {
    let out = Command::new(rocflow)
        .arg("inspect")
        .arg(spool)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    (text.lines())
        .skip_while(|l| l.trim() != "records:")
        .skip(1)
        .map_while(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The application: a session around the whole scenario, then timed start/stop pairs;
/// or, under `rocflow run`, the scenario alone.
fn application(session: bool) {
    let scenario = Duration::from_millis(DURATION_MS + 200);
    if !session {
        std::thread::sleep(scenario);
        return;
    }
    let opened = rocflow_session::Session::builder("spool-only.toml")
        .output("out")
        .open()
        .unwrap();
    opened.start().unwrap();
    std::thread::sleep(scenario);
    opened.stop().unwrap();
    let (mut starts, mut stops) = (Vec::new(), Vec::new());
    let before = cpu_time();
    for _ in 0..PAIRS {
        let t = Instant::now();
        opened.start().unwrap();
        starts.push(t.elapsed());
        let t = Instant::now();
        opened.stop().unwrap();
        stops.push(t.elapsed());
    }
    // Not the records' cost: the benchmark takes it out.
    println!("pairs_cpu_ns {}", (cpu_time() - before).as_nanos());
    opened.close().unwrap();
    println!("start {}", percentiles(&mut starts));
    println!("stop {}", percentiles(&mut stops));
}

/// This process's CPU time so far.
fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is a valid value to be filled.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000)
}

fn percentiles(times: &mut [Duration]) -> String {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    format!("median {:.2} us, p99 {:.2} us", at(0.5), at(0.99))
}
