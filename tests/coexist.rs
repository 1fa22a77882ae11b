//! rocflow beside another rocprofiler-sdk client in one process (`tests/apps/second_client.c`,
//! shaped like PyTorch's Kineto: kernel dispatch and HIP API buffer tracing), whichever
//! registers first: both are configured, both start their contexts, both get their
//! records, on the simulated SDK and on AMD's real one.

use std::path::{Path, PathBuf};
use std::process::Command;

use support::kit::{Kit, Node};
use support::scenario::default_scenario;
use support::truth::Scenario;
use support::{assert_says, assert_success, inspect, programs, repo, rocflow, sim_app, text};

/// `tests/apps/second_client.c` built into `dir`: as a tool library (`main: false`), or as
/// a program that starts the SDK with `rocprofiler_force_configure` itself.
pub fn second_client(dir: &Path, main: bool) -> PathBuf {
    let (built, flags): (_, &[&str]) = match main {
        false => (dir.join("libsecond_client.so"), &["-shared", "-fPIC"]),
        true => (dir.join("second_client"), &["-DSECOND_CLIENT_MAIN"]),
    };
    let mut cc = Command::new("cc");
    cc.args(flags)
        .arg("-o")
        .arg(&built)
        .arg(repo().join("tests/apps/second_client.c"))
        .arg("-ldl");
    assert_success(&cc.output().expect("cc runs"));
    built
}

/// What the second client wrote at its finalize: records per kind, and whether it got
/// there.
fn got(path: &Path) -> (u64, u64, bool) {
    let written = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the second client wrote {}: {e}", path.display()));
    let count = |kind: &str| {
        (written.lines())
            .find_map(|l| l.strip_prefix(kind)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{kind} in {written}"))
    };
    (
        count("kernel_dispatch"),
        count("hip_runtime_api"),
        written.lines().any(|l| l == "finalized"),
    )
}

/// `rocflow run PIPELINE --device sim --spool run.rfraw -- sim-app exit 0` in `dir`, `env` set.
fn run_sim(dir: &Path, pipeline: &str, env: &[(&str, &Path)]) -> std::process::Output {
    let app = sim_app();
    run_sim_app(dir, pipeline, &[app.to_str().unwrap(), "exit", "0"], env)
}

/// `rocflow run PIPELINE --device sim --spool run.rfraw -- APP…` in `dir`, `env` set.
fn run_sim_app(
    dir: &Path,
    pipeline: &str,
    app: &[&str],
    env: &[(&str, &Path)],
) -> std::process::Output {
    let mut args = vec![
        "run",
        pipeline,
        "--device",
        "sim",
        "--spool",
        "run.rfraw",
        "--set",
        "output_dir=out",
        "--",
    ];
    args.extend_from_slice(app);
    rocflow(&args, dir, env)
}

/// Kernel dispatches and HIP runtime calls of one process of the default scenario.
fn scenario_truth() -> (u64, u64) {
    let scenario = Scenario::of(&default_scenario());
    let hip_calls: u64 = (scenario.calls().iter())
        .filter(|(domain, _, _)| *domain == "hip_runtime_api")
        .map(|c| c.2)
        .sum();
    (
        scenario.records_per_process()["kernel_dispatch"],
        hip_calls * scenario.repeats(),
    )
}

#[test]
fn a_tool_the_user_names_in_rocp_tool_libraries_keeps_its_place_beside_rocflow() {
    let dir = tempfile::tempdir().unwrap();
    let client = second_client(dir.path(), false);
    let out = dir.path().join("second.txt");
    let output = run_sim(
        dir.path(),
        "kernel-trace",
        &[
            ("ROCP_TOOL_LIBRARIES", &client),
            ("SECOND_CLIENT_OUT", &out),
        ],
    );
    assert_success(&output);
    // The user's tool first, as they named it; rocflow's after it.
    assert_says(&output.stderr, "second-client: configured with priority 0");
    let (dispatches, hip_calls) = scenario_truth();
    assert_eq!(
        got(&out),
        (dispatches, hip_calls, true),
        "the second client's records: {}",
        text(&output.stderr)
    );
    let spool = inspect(dir.path(), "run.rfraw");
    assert_eq!(spool["records"]["kernel_dispatch"], dispatches, "{spool}");
}

#[test]
fn a_counting_context_another_client_started_first_is_named_and_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let client = second_client(dir.path(), false);
    let out = dir.path().join("second.txt");
    let count = Path::new("1");
    let output = run_sim(
        dir.path(),
        "counters-basic",
        &[
            ("ROCP_TOOL_LIBRARIES", &client),
            ("SECOND_CLIENT_OUT", &out),
            ("SECOND_CLIENT_COUNT", count),
        ],
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("did not start: another started context counts dispatches, perhaps another rocprofiler-sdk client's"),
        "{stderr}"
    );
    // The other client keeps its context and its records.
    assert_eq!(
        got(&out),
        (scenario_truth().0, scenario_truth().1, true),
        "{stderr}"
    );
}

#[test]
fn a_second_copy_of_the_sdk_in_the_process_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("wheel/librocprofiler-sdk.so");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(support::sim_sdk(), &copy).unwrap();
    // A framework's own copy of the SDK, preloaded beside the one rocflow runs with: both
    // start and configure the tools they are told of.
    let output = run_sim(dir.path(), "kernel-trace", &[("LD_PRELOAD", &copy)]);
    let stderr = text(&output.stderr);
    let copy = copy.canonicalize().unwrap();
    for says in [
        "rocflow: rocprofiler-sdk is loaded 2 times in this process (".to_owned(),
        format!("{}", copy.display()),
        "rocflow's tool was configured again, by another copy of rocprofiler-sdk".to_owned(),
    ] {
        assert!(stderr.contains(&says), "says {says}: {stderr}");
    }
}

/// `rocprofiler-sdk client 'NAME' registered R context(s) and started S context(s)` of
/// AMD's SDK log, per client it names.
fn registered(stderr: &str, name: &str) -> Vec<(usize, usize)> {
    let client = format!("rocprofiler-sdk client '{name}' registered ");
    (stderr.lines())
        .filter_map(|line| {
            let rest = &line[line.find(&client)? + client.len()..];
            let numbers: Vec<usize> = (rest.split(' ')).filter_map(|w| w.parse().ok()).collect();
            Some((numbers[0], numbers[1]))
        })
        .collect()
}

/// Both clients registered and started their contexts with AMD's SDK, the second one's
/// calls went through the call logger with SUCCESS, and it was finalized.
fn assert_both_started(stderr: &str, out: &Path) {
    assert_eq!(registered(stderr, "second-client"), [(1, 1)], "{stderr}");
    let rocflow = registered(stderr, "rocflow");
    assert!(
        rocflow.len() == 1 && rocflow[0].0 > 0 && rocflow[0].1 > 0,
        "rocflow's contexts: {rocflow:?}\n{stderr}"
    );
    for kind in ["kind=11", "kind=5"] {
        let call = "rocprofiler_configure_buffer_tracing_service(ctx=";
        assert!(
            stderr.lines().any(|l| l.contains(call)
                && l.contains(kind)
                && l.ends_with("ROCPROFILER_STATUS_SUCCESS")),
            "the second client traces {kind}: {stderr}"
        );
    }
    // No HSA runtime in the kit: nothing dispatches, but the client ran to its finalize.
    assert_eq!(got(out), (0, 0, true), "{stderr}");
}

#[test]
fn both_clients_register_and_start_with_amds_sdk_through_rocp_tool_libraries() {
    let kit = Kit::get();
    let dir = tempfile::tempdir().unwrap();
    let client = second_client(dir.path(), false);
    let out = dir.path().join("second.txt");
    // ROCTx registers with rocprofiler-register, which starts the SDK and the tools named.
    let roctx_app = kit.bin("roctx_app");
    let run = kit.run(
        Node::NoGpu,
        "marker-trace",
        &[roctx_app.as_os_str()],
        &[
            ("ROCP_TOOL_LIBRARIES", client.to_str().unwrap()),
            ("SECOND_CLIENT_OUT", out.to_str().unwrap()),
        ],
    );
    assert!(run.output.status.success(), "{}", run.printed());
    let stderr = run.stderr();
    assert_both_started(&stderr, &out);
    assert_eq!(run.inspect()["records"]["marker"], 9, "{}", run.printed());
}

#[test]
fn a_client_that_forces_the_sdk_first_and_rocflow_both_start_with_amds_sdk() {
    let kit = Kit::get();
    let dir = tempfile::tempdir().unwrap();
    let app = second_client(dir.path(), true);
    let out = dir.path().join("second.txt");
    let run = kit.run(
        Node::NoGpu,
        "kernel-trace",
        &[app.as_os_str(), "1".as_ref()],
        &[("SECOND_CLIENT_OUT", out.to_str().unwrap())],
    );
    let stderr = run.stderr();
    // The program's own client is the forced one, configured first; rocflow's tool, named
    // by ROCP_TOOL_LIBRARIES, joins it as the SDK starts.
    assert_says(&stderr, "second-client: rocprofiler_force_configure -> 0");
    assert_says(&stderr, "second-client: configured with priority 0");
    assert_both_started(&stderr, &out);
    assert!(run.collected_nothing(), "{}", run.printed());
}

/// `tests/apps/roctx_markers.c` built into `dir` against `tests/apps/legacy_roctx.c`, a
/// stand-in for roctracer's legacy ROCTx library (`libroctx64.so`), with the ROCTx header
/// of the kit.
fn legacy_roctx_program(dir: &Path) -> PathBuf {
    programs::legacy_roctx(dir);
    let app = dir.join("roctx_markers");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&app)
        .arg(repo().join("tests/apps/roctx_markers.c"))
        .arg("-I")
        .arg(Kit::get().root.join("include"))
        .arg("-L")
        .arg(dir)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-lroctx64")
        .output()
        .expect("cc runs");
    assert_success(&cc);
    app
}

#[test]
fn roctx_of_the_legacy_library_reaches_rocflow_through_its_tracer_callback() {
    let dir = tempfile::tempdir().unwrap();
    let app = legacy_roctx_program(dir.path());
    let output = run_sim_app(dir.path(), "marker-trace", &[app.to_str().unwrap()], &[]);
    assert_success(&output);
    let db = rusqlite::Connection::open(support::only(&dir.path().join("out"), ".db")).unwrap();
    // Ranges are rocpd regions, a mark is a sample, as AMD's rocpd has them.
    let mut regions: Vec<(String, String)> = db
        .prepare(
            "SELECT json_extract(extdata, '$.message') AS m, category, start AS t FROM regions \
             WHERE category LIKE 'MARKER%' UNION ALL \
             SELECT json_extract(extdata, '$.message'), category, timestamp FROM samples \
             WHERE category LIKE 'MARKER%' ORDER BY t",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // The scenario's own ranges come through the simulated SDK.
    regions.retain(|(message, _)| message != "solve");
    let messages: Vec<&str> = regions.iter().map(|r| r.0.as_str()).collect();
    // The program's mark, thread ranges (push to pop) and process ranges (start to stop),
    // as the SDK's marker_core_range_api gives them, in the order they began.
    assert_eq!(
        messages,
        ["setup done", "step", "io", "step", "io", "step"],
        "{regions:?}\n{}",
        text(&output.stderr)
    );
}

/// `tests/apps/roctx_loop.c` (the overhead benchmark's program) built into `dir`.
fn roctx_loop(dir: &Path) -> PathBuf {
    let app = dir.join("roctx_loop");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&app)
        .arg(repo().join("tests/apps/roctx_loop.c"))
        .arg("-ldl")
        .output()
        .expect("cc runs");
    assert_success(&cc);
    app
}

#[test]
fn a_programs_own_roctx_ranges_reach_rocflow_through_the_simulated_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let app = roctx_loop(dir.path());
    // 1000 timed pairs after 10 to warm up.
    let output = run_sim_app(
        dir.path(),
        "marker-trace",
        &[app.to_str().unwrap(), "1000", "10"],
        &[],
    );
    assert_success(&output);
    assert_says(&output.stdout, "ns_per_pair ");
    let db = rusqlite::Connection::open(support::only(&dir.path().join("out"), ".db")).unwrap();
    // Beside the scenario's own ranges ("solve"), each of the program's, with its message.
    let (ranges, backwards): (i64, i64) = db
        .query_row(
            "SELECT count(*), count(*) FILTER (WHERE end < start) FROM regions \
             WHERE category LIKE 'MARKER%' AND json_extract(extdata, '$.message') = 'roctx_loop'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((ranges, backwards), (1010, 0), "{}", text(&output.stderr));
}
