//! The tool never takes the application down: a panic inside one of its callbacks, provoked
//! in the real tool library loaded into a real application (`ROCFLOW_TOOL_PANIC`, which the
//! tests' build of the tool understands), is reported once, switches profiling off, and
//! leaves the application to finish with its own exit code, with the records that reached
//! rocflow before the fault kept; with the simulated SDK, and with AMD's real one.

use std::path::Path;
use std::process::Output;

use support::{rocflow, rocflow_command, sim_app, text};

/// Kernel dispatches and ROCTx ranges with their messages, in small buffers delivered
/// often, to CSV tables and the run's spool.
const PIPELINE: &str = r#"
[pipeline]
name = "faults"
spool_dir = "out"

[[context]]
name = "trace"
tracing = ["kernel_dispatch", "marker_core_range_api"]
buffer = { size = "16KiB", watermark = "50%", flush_interval = "50ms" }

[[sink]]
name = "tables"
kind = "csv"
path = "out/tables"
"#;

/// `rocflow run` of the sim app ending with `exit 3`, with `ROCFLOW_TOOL_PANIC=fault`:
/// its output and directory.
fn run_with_fault(fault: &str) -> (Output, tempfile::TempDir) {
    run_app_with_fault(&["exit", "3"], fault)
}

/// `rocflow run` of `sim-app ARGS…` with `ROCFLOW_TOOL_PANIC=fault`.
fn run_app_with_fault(args: &[&str], fault: &str) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PIPELINE).unwrap();
    let app = sim_app();
    let run = [
        "run",
        "p.toml",
        "--device",
        "sim",
        "--",
        app.to_str().unwrap(),
    ];
    let output = rocflow_command(&run, dir.path(), &[])
        .args(args)
        .env("ROCFLOW_TOOL_PANIC", fault)
        .output()
        .expect("rocflow runs");
    (output, dir)
}

/// Checks that the application ended with its own exit code and that stderr holds one
/// report, naming `callback`; stderr.
fn assert_survived(output: &Output, callback: &str) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "the app's own: {stderr}");
    assert_one_report(&stderr, callback);
    stderr
}

/// Checks that `stderr` holds one line about the tool's failure, the report of the panic
/// `ROCFLOW_TOOL_PANIC` provoked in `callback`, and nothing of the default panic hook.
fn assert_one_report(stderr: &str, callback: &str) {
    let reports: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("internal error"))
        .collect();
    assert_eq!(reports.len(), 1, "{stderr}");
    assert!(
        reports[0].starts_with(&format!(
            "rocflow tool: internal error in {callback}: ROCFLOW_TOOL_PANIC asked call "
        )) && reports[0].ends_with("; profiling disabled, the application continues"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked at"),
        "one line, no hook: {stderr}"
    );
}

/// `rocflow inspect --json` of the run's spool.
fn spool(dir: &Path) -> serde_json::Value {
    let output = rocflow(&["inspect", "--json", "out"], dir, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn records(spool: &serde_json::Value, kind: &str) -> u64 {
    spool["records"][kind].as_u64().unwrap_or(0)
}

/// What the same run collects without a fault: kernel dispatches in the spool.
fn whole_run() -> u64 {
    let (output, dir) = run_with_fault("");
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    records(&spool(dir.path()), "kernel_dispatch")
}

#[test]
fn a_panic_in_the_buffer_callback_keeps_the_records_delivered_before_it() {
    let (output, dir) = run_with_fault("on_buffer@3");
    let stderr = assert_survived(&output, "on_buffer");
    let spool = spool(dir.path());
    assert_eq!(spool["complete"], true, "{spool}");
    let kept = records(&spool, "kernel_dispatch");
    assert!(kept > 0, "the first deliveries are kept: {spool}\n{stderr}");
    assert!(kept < whole_run(), "the later ones are not: {spool}");
    // The sink wrote what the spool holds.
    let rows = support::csv(&support::only(dir.path(), "out/tables/kernel_dispatch.csv"));
    assert_eq!(rows.len() as u64, kept);
}

#[test]
fn a_panic_in_the_marker_callback_switches_profiling_off() {
    let (output, dir) = run_with_fault("on_marker@10");
    assert_survived(&output, "on_marker");
    let spool = spool(dir.path());
    assert_eq!(spool["complete"], true, "{spool}");
}

#[test]
fn a_panic_in_initialize_leaves_the_application_unprofiled() {
    let (output, dir) = run_with_fault("initialize");
    assert_survived(&output, "initialize");
    assert_eq!(records(&spool(dir.path()), "kernel_dispatch"), 0);
}

#[test]
fn a_panic_in_the_signal_handler_leaves_the_application_its_own_death() {
    // The handler flushes on SIGSEGV; a panic there must not turn it into SIGABRT.
    let (output, _dir) = run_app_with_fault(&["crash"], "the signal handler");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(128 + libc::SIGSEGV), "{stderr}");
    assert_one_report(&stderr, "the signal handler");
}

/// The same with AMD's real rocprofiler-sdk (the kit `tests/realsdk.rs` uses), which
/// loads the tool through rocprofiler-register into a program that only uses ROCTx and
/// calls its marker and buffer callbacks itself: whichever panics, the program ends as it
/// would unprofiled.
#[test]
fn with_amds_sdk_a_panicking_callback_leaves_the_program_its_exit_code() {
    let kit = support::kit::Kit::get();
    let markers = support::RoctxMarkers::build(kit);
    // A message callback mid-program, and the one delivery, at finalize. Either way the
    // tool is off before the delivery: the run has no records and fails for that, while
    // the program ends as it would have.
    for (fault, callback) in [("on_marker@3", "on_marker"), ("on_buffer", "on_buffer")] {
        let run = markers.run(kit, &[("ROCFLOW_TOOL_PANIC", fault)]);
        assert!(run.collected_nothing(), "{}", run.printed());
        support::assert_says(run.printed(), "exited with 0");
        assert_one_report(&run.stderr(), callback);
        assert_eq!(run.inspect()["complete"], true, "{}", run.printed());
    }
}
