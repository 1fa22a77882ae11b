//! `rocflow run trace-all` (the default system trace: a Perfetto trace, a rocpd database
//! per process, a summary and a report) on the simulated SDK, one process of 2 M and of
//! 20 M records (the run benchmark's scenario, longer): how long the outputs take to be
//! complete after the records end (the application has exited and its last buffers have
//! arrived), when each sink ends, and the peak RSS of the runner and of the application
//! (where the SDK's buffers and the tool library's queue are). Best of three by wall time.
//! Run with `cargo bench -p rocflow --bench trace_all`.

mod sim;

use std::time::Duration;

const SIZES: &[u64] = &[2_000_000, 20_000_000];

/// The seconds a progress line starting with `prefix` ends with (`… in 1.23 s`).
fn seconds(progress: &str, prefix: &str) -> Duration {
    // Heartbeats (`received … so far`) start alike, without the time.
    let secs = progress
        .lines()
        .filter_map(|l| l.strip_prefix("progress: ")?.strip_prefix(prefix))
        .find_map(|l| l.rsplit_once(" in ")?.1.strip_suffix(" s"))
        .unwrap_or_else(|| panic!("no `{prefix}… in N s` in:\n{progress}"));
    Duration::from_secs_f64(secs.parse().unwrap())
}

fn main() {
    for &records in SIZES {
        let iterations = records / sim::RECORDS_PER_ITERATION;
        let runs: Vec<sim::Run> = (0..3)
            .map(|_| {
                let dir = tempfile::tempdir().unwrap();
                sim::scenario(dir.path(), iterations);
                sim::run(dir.path(), "trace-all", &[])
            })
            .collect();
        let run = runs.iter().min_by_key(|r| r.wall).unwrap();
        let received = seconds(&run.stderr, "received ");
        let after = run.wall.saturating_sub(received);
        println!(
            "trace-all, {} M records (best of {} by wall time)",
            iterations * sim::RECORDS_PER_ITERATION / 1_000_000,
            runs.len()
        );
        println!(
            "  records received      {:>6.2} s after launch",
            received.as_secs_f64()
        );
        println!(
            "  outputs complete      {:>6.2} s after that (the whole run {:.2} s; other runs {})",
            after.as_secs_f64(),
            run.wall.as_secs_f64(),
            (runs.iter())
                .map(|r| format!("{:.2} s", r.wall.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for sink in ["perfetto", "rocpd"] {
            let ended = seconds(&run.stderr, &format!("sink `{sink}`: "));
            println!(
                "    sink {sink:<12}    {:>6.2} s after the records",
                ended.saturating_sub(received).as_secs_f64()
            );
        }
        for step in ["summary", "report"] {
            let took = seconds(&run.stderr, &format!("post-step `{step}` done"));
            println!("    post-step {step:<8}    {:>6.2} s", took.as_secs_f64());
        }
        println!(
            "  peak RSS: runner {:.0} MiB, application {:.0} MiB",
            run.runner_kb as f64 / 1024.0,
            run.application_kb as f64 / 1024.0
        );
    }
}
