//! In-process sessions (`plugins/include/rocflow_session.h`, `rocflow.session`): the
//! examples' C program and Python script each profile windows of their own work on the
//! simulated device, and their outputs hold exactly the windows' iterations of the
//! scenario, as the ground truth counts them; under `rocflow run` a session limits the
//! run's outputs to its windows; and what a session cannot do is said.
//!
//! The scenario is paced (`duration_ms`), an iteration every period, and the examples
//! start and stop their windows half a period between iterations.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::truth::{self, Collects, Part, Scenario};
use support::{
    assert_says, assert_success, programs, repo, rocflow, rocflow_exe, sim_sdk, text, tool_library,
};

/// A paced copy of the MI300X scenario in `dir`: `iterations` every `period_ms`.
fn paced_scenario(dir: &Path, iterations: u64, period_ms: u64) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap();
    let paced = format!(
        "iterations = {iterations}\nduration_ms = {}",
        iterations * period_ms
    );
    let path = dir.join("paced.toml");
    std::fs::write(&path, text.replace("iterations = 100", &paced)).unwrap();
    path
}

/// What the `csv` template collects: `trace-all`'s system trace.
fn system_trace() -> Collects {
    Collects {
        dispatches: true,
        copies: true,
        allocations: true,
        markers: true,
        api: [
            "hip_runtime_api",
            "hsa_core_api",
            "hsa_amd_ext_api",
            "rccl_api",
        ]
        .map(|d| (d, vec![], vec![]))
        .to_vec(),
        ..Collects::default()
    }
}

/// Fails unless the CSV tables under `out` (the `csv` template's outputs, one process)
/// hold exactly `iterations` iterations of `scenario`, in counts and row by row.
fn assert_holds_iterations(out: &Path, scenario: &Path, iterations: u64) {
    let tables = support::entries(out, |name| !name.starts_with('.') && !name.contains('.'));
    let tables = tables
        .into_iter()
        .find(|p| p.join("kernel_dispatch.csv").is_file())
        .unwrap_or_else(|| panic!("no CSV tables in {}", out.display()));
    let (seen, dispatches) = truth::csv_tables(&tables);
    let mut within = Scenario::read(scenario);
    within.iterations = iterations;
    let collects = system_trace();
    let want = within.truth(&collects, 1, &dispatches);
    let differences = want.differences(&seen, &Part::ALL, 0.0);
    assert!(
        differences.is_empty(),
        "{}: not {iterations} iterations:\n{}",
        out.display(),
        differences.join("\n")
    );
    let misfits = within.misfits(&collects, |kind| truth::csv_table(&tables, kind));
    assert!(misfits.is_empty(), "{misfits:?}");
}

/// `program args…` in `dir` on the simulated device replaying `scenario`, as a user
/// starts it: the simulated SDK preloaded where the HIP runtime would bring the real one.
fn on_sim(program: &Path, args: &[&str], dir: &Path, scenario: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LD_PRELOAD", sim_sdk())
        .env("ROCFLOW_SIM_SCENARIO", scenario)
        .env("ROCFLOW_BIN", rocflow_exe())
        // Python's session loads the tool library this build's `rocflow run` loads, not a
        // stale one beside the binary.
        .env("ROCFLOW_TOOL_LIBRARY", tool_library())
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .output()
        .expect("the program runs")
}

#[test]
fn a_c_program_profiles_only_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 8, 200);
    let program = programs::session_window(dir);
    let out = on_sim(&program, &["csv", "out", "200"], dir, &scenario);
    assert_success(&out);
    assert_holds_iterations(&dir.join("out/final"), &scenario, 3);
    let left: Vec<PathBuf> = support::entries(&dir.join("out"), |_| true);
    assert_eq!(
        left,
        [dir.join("out/final")],
        "only the final phase is left"
    );
}

#[test]
fn under_rocflow_run_a_session_limits_the_run_to_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 8, 200);
    let program = programs::session_window(dir);
    let device = format!("sim:{}", scenario.display());
    // The run's contexts wait to be started, here by the session.
    let pipeline = "[pipeline]\nname = \"paused\"\nextends = [\"csv\"]\n\n[[context]]\nname = \"trace\"\nperiod = { paused = true }\n";
    std::fs::write(dir.join("paused.toml"), pipeline).unwrap();
    let args = [
        "run",
        "paused.toml",
        "--device",
        &device,
        "-d",
        "run-out",
        "--",
    ];
    let mut args = args.to_vec();
    let program = program.to_str().unwrap();
    args.extend([program, "csv", "unused", "200"]);
    let out = rocflow(&args, dir, &[]);
    assert_success(&out);
    assert_says(
        &out.stderr,
        "the session starts and stops the run's contexts",
    );
    assert_holds_iterations(&dir.join("run-out"), &scenario, 3);
    assert!(!dir.join("unused").exists(), "the run's outputs hold");
}

#[test]
fn a_session_says_why_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 2, 10);
    let program = programs::session_window(dir);
    // No SDK in the process.
    let out = Command::new(&program)
        .args(["csv", "out", "10"])
        .current_dir(dir)
        .env("ROCFLOW_BIN", rocflow_exe())
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&out.stderr, "open: no rocprofiler-sdk in this process");
    assert_says(&out.stderr, "(status 4)");
    // A pipeline the runner refuses: its message, then the session's.
    let out = on_sim(&program, &["no-such-template", "out", "10"], dir, &scenario);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&out.stderr, "no-such-template");
    assert_says(&out.stderr, "open: the runner exited with 2");
    assert!(!dir.join("out/final").exists());
}

/// A forked child holds no session: its calls fail, it sends nothing, and its exit
/// leaves the parent's phase open, whose outputs then hold the parent alone.
#[test]
fn a_forked_child_holds_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 4, 200);
    let program = programs::session_program("tests/apps/session_fork.c", dir);
    let out = on_sim(&program, &["csv", "out"], dir, &scenario);
    assert_success(&out);
    assert_says(&out.stderr, "child start 2: the session belongs to process");
    let processes = support::entries(&dir.join("out/final"), |name| {
        name.starts_with(&format!("{}-", support::hostname()))
    });
    assert_eq!(processes.len(), 1, "{processes:?}");
}

/// A runner that hangs (here stopped by a signal) does not hold the application's exit:
/// the exit waits a bounded time for it and then says, once, what is lost and where the
/// runner, left running, would put its outputs.
#[test]
fn a_hung_runner_does_not_hold_the_process_exit() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 2, 200);
    let program = programs::session_program("tests/apps/session_exit.c", dir);
    // The runner, as the session starts it, with its pid kept for the test.
    let pid_file = dir.join("runner.pid");
    let wrapper = dir.join("rocflow");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' \"$@\"\n",
            pid_file.display(),
            rocflow_exe().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut app = Command::new(&program)
        .args(["csv", "out"])
        .current_dir(dir)
        .env("LD_PRELOAD", sim_sdk())
        .env("ROCFLOW_SIM_SCENARIO", &scenario)
        .env("ROCFLOW_BIN", &wrapper)
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(app.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
    let runner: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a signal to the runner this test's program started.
    unsafe { libc::kill(runner, libc::SIGSTOP) };
    app.stdin.take().unwrap().write_all(b"exit\n").unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = app.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(90) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: as above; the runner is this test's to end.
    unsafe {
        libc::kill(runner, libc::SIGKILL);
        libc::kill(runner, libc::SIGCONT);
    }
    let Some(status) = status else {
        let _ = app.kill();
        panic!("the process's exit waits for a hung runner");
    };
    let mut stderr = String::new();
    app.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    let said = format!("the runner (process {runner}) did not complete the phase within");
    assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
    assert_says(
        stderr.as_bytes(),
        "its records are lost unless it completes",
    );
    assert_says(stderr.as_bytes(), "out/.phase-1");
}

/// Another client started the SDK first (the simulated SDK starts as it loads, with the
/// tools of `ROCP_TOOL_LIBRARIES`): opening says so, with the way to profile both.
#[test]
fn a_session_says_when_another_client_started_the_sdk_first() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 2, 10);
    let program = programs::session_program("tests/apps/session_exit.c", dir);
    let client = crate::coexist::second_client(dir, false);
    let out = Command::new(&program)
        .args(["csv", "out"])
        .current_dir(dir)
        .env("LD_PRELOAD", sim_sdk())
        .env("ROCFLOW_SIM_SCENARIO", &scenario)
        .env("ROCFLOW_BIN", rocflow_exe())
        .env("ROCP_TOOL_LIBRARIES", &client)
        .env("SECOND_CLIENT_OUT", dir.join("second.txt"))
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&out.stderr, "second-client: configured with priority 0");
    assert_says(
        &out.stderr,
        "session_exit: rocprofiler-sdk was already started by another client in this process (it answers CONFIGURATION_LOCKED): rocflow cannot join late; run the application under `rocflow run`",
    );
    assert_says(&out.stderr, "(status 4)");
    assert!(!dir.join("out/final").exists());
}

/// A pipeline that samples PCs needs the SDK's PC sampling beta, which `rocflow run` turns
/// on in the application's environment: a session turns it on before its contexts are set
/// up, and the phase holds the samples.
#[test]
fn a_session_turns_on_the_pc_sampling_beta_its_pipeline_needs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scenario = paced_scenario(dir, 2, 200);
    let program = programs::session_program("tests/apps/session_exit.c", dir);
    let mut app = Command::new(&program)
        .args(["pc-sampling", "out"])
        .current_dir(dir)
        .env("LD_PRELOAD", sim_sdk())
        .env("ROCFLOW_SIM_SCENARIO", &scenario)
        .env("ROCFLOW_BIN", rocflow_exe())
        .env_remove("ROCPROFILER_PC_SAMPLING_BETA_ENABLED")
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // The window: from its start, over the scenario's iterations.
    let _ = BufReader::new(app.stdout.take().unwrap()).read_line(&mut line);
    std::thread::sleep(Duration::from_millis(600));
    drop(app.stdin.take());
    let out = app.wait_with_output().unwrap();
    assert_eq!(line, "started\n", "{}", text(&out.stderr));
    assert_success(&out);
    let spool = support::inspect(&dir.join("out/final"), "session.rfraw");
    assert!(
        spool["records"]["pc_sample"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{spool}\n{}",
        text(&out.stderr)
    );
}

/// The Python package's interpreter, as the campaign tests find it.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("ROCFLOW_PYTHON") {
        return python.into();
    }
    let data = std::env::var_os("XDG_DATA_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".local/share"),
        PathBuf::from,
    );
    data.join("rocflow/venv/bin/python")
}

#[test]
fn a_python_script_profiles_a_phase_and_a_window() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Long periods: the warm-up phase's end, in between, writes its outputs and starts
    // the next runner, which takes seconds on a busy machine.
    let scenario = paced_scenario(dir, 10, 800);
    let script = repo().join("examples/session/window.py");
    let out = on_sim(
        &python(),
        &[script.to_str().unwrap(), "csv", "out", "800"],
        dir,
        &scenario,
    );
    assert_success(&out);
    assert_holds_iterations(&dir.join("out/warmup"), &scenario, 1);
    assert_holds_iterations(&dir.join("out/final"), &scenario, 3);
    // Each phase has its spool, which replays into the same records.
    assert!(dir.join("out/warmup/session.rfraw").is_file());
}

/// Under AMD's real SDK kit: a program that initialized before it opens a session. The
/// tool configures through `rocprofiler_force_configure` and initialize starts only the
/// tool's own context (kernel names, ROCTx control), as the SDK's log says; the pipeline's
/// contexts start with `start` and stop with `stop`, as the call logger shows. The kit runs no kernel, so the
/// runner finds no records, which it says, and close reports.
#[test]
fn under_the_real_sdk_contexts_start_and_stop_with_the_session() {
    use support::kit::Kit;
    let kit = Kit::get();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let program = dir.join("session_late");
    let tool = tool_library();
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&program)
        .arg(repo().join("tests/apps/session_late.c"))
        .arg("-I")
        .arg(repo().join("plugins/include"))
        .arg("-L")
        .arg(&kit.links)
        .arg("-lrocprofiler-sdk")
        // The kit's aqlprofile leaves the HSA runtime's symbols to whoever loads one.
        .arg("-Wl,--allow-shlib-undefined")
        .arg(&tool)
        .arg(format!("-Wl,-rpath,{}", tool.parent().unwrap().display()))
        .output()
        .expect("cc runs");
    assert_success(&cc);
    let out = Command::new(&program)
        .args(["kernel-trace", "out"])
        .current_dir(dir)
        .env("ROCFLOW_BIN", rocflow_exe())
        .env("LD_LIBRARY_PATH", kit.library_path())
        .env("ROCPROFILER_METRICS_PATH", kit.metrics())
        .env("LD_PRELOAD", kit.root.join("lib/libcallshim.so"))
        .env("ROCPROFILER_LOG_LEVEL", "info")
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .output()
        .expect("the program runs");
    let stderr = text(&out.stderr);
    assert_success(&out);
    // The program's steps and the tool's calls, in the order they happened.
    let lines: Vec<&str> = stderr.lines().collect();
    let position = |needle: &str| {
        (lines.iter())
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{stderr}"))
    };
    let between = |from: &str, to: &str, function: &str| -> Vec<&str> {
        lines[position(from)..position(to)]
            .iter()
            .filter_map(|l| l.strip_prefix("[callshim] "))
            .filter(|l| l.starts_with(function))
            .collect()
    };
    // The SDK's own log says it was forced, after the program's own call and within open.
    let forced = position("forcing rocprofiler configuration");
    assert!(position("session_late: initialized 0") < forced, "{stderr}");
    assert!(forced < position("session_late: opened 0"), "{stderr}");
    assert_says(
        &out.stderr,
        "client 'rocflow' registered 2 context(s) and started 1 context(s)",
    );
    // Opening starts the tool's own context only.
    let at_open = between(
        "session_late: initialized",
        "session_late: opened 0",
        "rocprofiler_start_context",
    );
    assert_eq!(at_open.len(), 1, "{at_open:?}");
    let started = between(
        "session_late: opened 0",
        "session_late: started 0",
        "rocprofiler_start_context",
    );
    let stopped = between(
        "session_late: started 0",
        "session_late: stopped 0",
        "rocprofiler_stop_context",
    );
    assert!(!started.is_empty(), "{stderr}");
    assert_eq!(started.len(), stopped.len(), "{stderr}");
    for call in started.iter().chain(&stopped) {
        assert!(call.ends_with("ROCPROFILER_STATUS_SUCCESS"), "{call}");
    }
    assert_says(&out.stderr, "no records were collected");
    assert_says(
        &out.stderr,
        "session_late: closed 3: the runner exited with",
    );
}
