//! `rocflow run trace-all` (the default system trace: a Perfetto trace, a rocpd database
//! per process, a summary and a report) on the simulated SDK, one process of 2 M and of
//! 20 M records (the run benchmark's scenario, longer): when the application exits (a sink
//! slower than it holds it back), how long the outputs take to be complete after that and
//! after the stages took the last record, when each sink ends, and the peak RSS of the
//! runner and of the application (where the SDK's buffers and the tool library's queue
//! are). Best of three by wall time.
//! Run with `cargo bench -p rocflow --bench trace_all`.

#[allow(dead_code)]
mod sim;

use std::time::Duration;

const SIZES: &[u64] = &[2_000_000, 20_000_000];

/// The seconds that follow `marker` (`… 1.23 s`) on the progress line starting with
/// `prefix`.
fn seconds(progress: &str, prefix: &str, marker: &str) -> Duration {
    // Heartbeats (`received … so far`) start alike, without the time.
    let secs = progress
        .lines()
        .filter_map(|l| l.strip_prefix("progress: ")?.strip_prefix(prefix))
        .find_map(|l| l.split_once(marker)?.1.split_once(" s"))
        .unwrap_or_else(|| panic!("no `{prefix}…{marker}N s` in:\n{progress}"))
        .0;
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
        let exited = seconds(&run.stderr, "received ", " (the application exited after ");
        let received = seconds(&run.stderr, "received ", " in ");
        println!(
            "trace-all, {} M records (best of {} by wall time)",
            iterations * sim::RECORDS_PER_ITERATION / 1_000_000,
            runs.len()
        );
        println!(
            "  application exited    {:>6.2} s after launch",
            exited.as_secs_f64()
        );
        println!(
            "  records taken         {:>6.2} s after launch, by the stages",
            received.as_secs_f64()
        );
        println!(
            "  outputs complete      {:>6.2} s after the application exited, {:.2} s after the records were taken (the whole run {:.2} s; other runs {})",
            run.wall.saturating_sub(exited).as_secs_f64(),
            run.wall.saturating_sub(received).as_secs_f64(),
            run.wall.as_secs_f64(),
            (runs.iter())
                .map(|r| format!("{:.2} s", r.wall.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut sinks_ended = Duration::ZERO;
        for sink in ["perfetto", "rocpd"] {
            let ended = seconds(&run.stderr, &format!("sink `{sink}`: "), " in ");
            sinks_ended = sinks_ended.max(ended);
            println!(
                "    sink {sink:<12}    {:>6.2} s after the records were taken",
                ended.saturating_sub(received).as_secs_f64()
            );
        }
        let mut steps = Duration::ZERO;
        for step in ["summary", "report"] {
            let took = seconds(&run.stderr, &format!("post-step `{step}` done"), " in ");
            steps += took;
            println!("    post-step {step:<8}    {:>6.2} s", took.as_secs_f64());
        }
        // The post-steps start once the sinks and the collectors beside them ended, the
        // report's rules checked on the trace's collector once its records end; what else
        // the outputs waited for is those checks.
        println!(
            "    after the sinks       {:>6.2} s waiting for the report's checks and the runner's end",
            run.wall
                .saturating_sub(sinks_ended)
                .saturating_sub(steps)
                .as_secs_f64()
        );
        println!(
            "  peak RSS: runner {:.0} MiB, application {:.0} MiB",
            run.runner_kb as f64 / 1024.0,
            run.application_kb as f64 / 1024.0
        );
    }
}
