//! `rocflow run` end to end: the real tool library loaded by the simulated SDK into real
//! processes (`/bin/sleep`, and a test program that forks, crashes, spawns threads), with
//! counts checked against what the scenario file says each process does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use support::scenario::{default_scenario, expected, scenario_with};
use support::truth::{self, Collects, Dispatches, Part, Scenario};
use support::{
    assert_fails, assert_says, assert_success, repo, rocflow, run_on, sim_app, sim_scenarios, text,
    with_file, write_file,
};

const TRACE: &str = concat!(
    support::traced_pipeline!(
        "run-test",
        "trace",
        r#"["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "rccl_api", "memory_copy", "memory_allocation", "marker_core_range_api"]"#
    ),
    "EXTRA\n",
    support::sink!("csv", "csv", "out"),
);

/// The default scenario (`examples/sim/mi300x.toml`), as the truth reads it.
fn default_truth() -> Scenario {
    Scenario::of(&default_scenario())
}

/// CSV rows per kind and process: kind → pid → rows.
type Rows = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Runs `rocflow run` in a fresh directory; returns its output and the CSV rows.
fn run(pipeline_extra: &str, device: &str, app: &[&str]) -> (Output, Rows, tempfile::TempDir) {
    run_with(pipeline_extra, device, app, &[])
}

/// [`run`] with `env` set.
fn run_with(
    pipeline_extra: &str,
    device: &str,
    app: &[&str],
    env: &[(&str, &Path)],
) -> (Output, Rows, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        TRACE.replace("EXTRA", pipeline_extra),
    )
    .unwrap();
    let output = run_on(device, "p.toml", app, dir.path(), env);
    let rows = rows(dir.path());
    (output, rows, dir)
}

/// The CSV rows a run in `dir` wrote.
fn rows(dir: &Path) -> Rows {
    let mut rows = Rows::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("out")) {
        for entry in entries {
            let path = entry.unwrap().path();
            let kind = path.file_stem().unwrap().to_string_lossy().into_owned();
            let content = std::fs::read_to_string(&path).unwrap();
            let per_pid = rows.entry(kind).or_default();
            for line in content.lines().skip(1) {
                let pid = line.split(',').next().unwrap().to_owned();
                per_pid.entry(pid).or_default().push(line.to_owned());
            }
        }
    }
    rows
}

/// A run of `/bin/sleep` on the simulated device with `pipeline_extra` and `env` that
/// succeeds without `kind` records and says why; its rows.
fn without(kind: &str, pipeline_extra: &str, env: &[(&str, &Path)], says: &str) -> Rows {
    let (output, rows, _dir) = run_with(pipeline_extra, "sim", &["/bin/sleep", "0.1"], env);
    assert_success(&output);
    assert_says(&output.stderr, says);
    assert!(!rows.contains_key(kind), "{:?}", totals(&rows));
    rows
}

/// Rows per kind, over all processes.
fn totals(rows: &Rows) -> BTreeMap<String, u64> {
    rows.iter()
        .map(|(k, p)| (k.clone(), p.values().map(|r| r.len() as u64).sum()))
        .collect()
}

/// Asserts that `rows` are those of `processes` processes (`which`, for the message), each
/// with the whole default scenario.
fn assert_each_process_whole(rows: &Rows, processes: usize, which: &str) {
    let want = expected(&default_scenario());
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (kind, per_pid) in rows {
        assert_eq!(per_pid.len(), processes, "{kind}: {which}");
        for (pid, lines) in per_pid {
            assert_eq!(lines.len() as u64, want[kind], "{kind} of process {pid}");
        }
    }
}

#[test]
fn sleep_receives_the_whole_scenario_with_kernel_names() {
    let (output, rows, dir) = run("", "sim", &["/bin/sleep", "0.2"]);
    assert_success(&output);
    assert_eq!(totals(&rows), expected(&default_scenario()));
    assert_eq!(rows["kernel_dispatch"].len(), 1, "one process");
    let dispatches = support::csv(&dir.path().join("out/kernel_dispatch.csv"));
    let names: std::collections::BTreeSet<String> = (dispatches.iter())
        .map(|row| row["kernel_name"].clone())
        .collect();
    let declared: std::collections::BTreeSet<String> = (default_truth().kernels.into_iter())
        .map(|k| k.name)
        .collect();
    assert_eq!(names, declared);
    assert_says(&output.stderr, "/bin/sleep exited with 0");
    // The spool holds the same run: replaying it gives the same counts.
    let inspect = text(&rocflow(&["inspect", "rocflow-out/last.rfraw"], dir.path(), &[]).stdout);
    let spooled = inspect
        .lines()
        .find_map(|l| l.trim().strip_prefix("kernel_dispatch"))
        .map(|n| n.trim().parse::<u64>().unwrap());
    assert_eq!(
        spooled,
        Some(expected(&default_scenario())["kernel_dispatch"]),
        "{inspect}"
    );
}

#[test]
fn each_forked_child_streams_the_scenario_of_its_own() {
    let app = sim_app();
    let (output, rows, _dir) = run("", "sim", &[app.to_str().unwrap(), "fork", "3"]);
    assert_success(&output);
    assert_each_process_whole(&rows, 4, "the parent and three children");
    assert_says(&output.stderr, "from 4 processes");
}

#[test]
fn programs_a_shell_starts_are_one_stream_each() {
    // The shell forks, and each child execs a program that loads the tool anew: the
    // forked child, which sends nothing before it execs, must not leave a stream of its own.
    let script = "/bin/sleep 0.2 & /bin/sleep 0.2; wait";
    let (output, rows, dir) = run("", "sim", &["/bin/sh", "-c", script]);
    assert_success(&output);
    assert_says(&output.stderr, "from 3 processes");
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    let spool: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let pids: Vec<u64> = spool["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().expect("every stream says its process"))
        .collect();
    let unique: std::collections::BTreeSet<u64> = pids.iter().copied().collect();
    assert_eq!(unique.len(), 3, "{pids:?}");
    // Each sleep replays the whole scenario.
    let want = expected(&default_scenario());
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (kind, per_pid) in &rows {
        let whole = per_pid
            .values()
            .filter(|lines| lines.len() as u64 == want[kind]);
        assert_eq!(whole.count(), 2, "{kind}: {:?}", per_pid.keys());
    }
}

/// The per-process outputs of `base` (a database and a trace per pid) for kernels, HIP
/// calls and copies, flushed every 10 ms.
const PER_PID: &str = r#"
[pipeline]
name = "per-pid"
extends = ["base"]

[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy"]
buffer = { flush_interval = "10ms" }
"#;

#[test]
fn a_program_that_execs_another_is_one_process_with_it() {
    // A launcher that has done GPU work and then execs the application (a wrapper's
    // `exec ./app`): the application loads the tool anew under the same pid. Both
    // programs' records are that pid's, in its one database and one trace.
    let app = sim_app();
    let app = app.to_str().unwrap();
    let (dir, _) = with_file("p.toml", PER_PID);
    let output = run_on(
        "sim",
        "p.toml",
        &[app, "exec", app, "exit", "0"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    let spool = support::inspect(dir.path(), "rocflow-out/last.rfraw");
    let processes = spool["processes"].as_array().unwrap();
    let described = |p: &serde_json::Value| (p["pid"].as_u64().unwrap(), p["command"].clone());
    let (pid, commands): (Vec<u64>, Vec<serde_json::Value>) =
        processes.iter().map(described).unzip();
    assert_eq!(pid.len(), 2, "a stream for each program: {processes:?}");
    assert_eq!(pid[0], pid[1], "{processes:?}");
    let pid = pid[0];

    let out = dir.path().join("rocflow-out");
    let outputs = |extension: &str| support::entries(&out, |name| name.ends_with(extension));
    let named = |extension: &str| out.join(format!("{}-{pid}.{extension}", support::hostname()));
    assert_eq!(outputs(".db"), [named("db")]);
    assert_eq!(outputs(".pftrace"), [named("pftrace")]);
    let traced = Collects {
        dispatches: true,
        copies: true,
        api: vec![("hip_runtime_api", vec![], vec![])],
        ..Collects::default()
    };
    let truth = default_truth().truth(&traced, 2, &Dispatches::new());
    let parts = [Part::Kernels, Part::KernelTime, Part::Api, Part::Copies];
    for (output, seen) in [
        ("rocpd", truth::rocpd(&named("db"))),
        ("perfetto", truth::perfetto(&[named("pftrace")])),
    ] {
        let differences = truth.differences(&seen, &parts, 0.0);
        assert!(differences.is_empty(), "{output}: {differences:#?}");
    }
    // The database describes the process as each program did.
    let db = rusqlite::Connection::open(named("db")).unwrap();
    let rows: Vec<(u64, String)> = support::sqlite_rows(
        &db,
        "SELECT pid, command FROM rocpd_info_process ORDER BY start",
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
    );
    let want: Vec<(u64, String)> = (commands.iter())
        .map(|c| (pid, c.as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(rows, want);
}

#[test]
fn connections_beyond_the_descriptors_leave_later_processes_profiled() {
    // Under the usual limit of 1,024 descriptors, the application holds 1,100 connections
    // to the runner that say nothing, closes them, then forks two children: the runner
    // read at most what its descriptors allow meanwhile, and took the children's streams.
    let mut hard = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a writable rlimit for the call to fill in.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) },
        0
    );
    assert!(
        hard.rlim_max >= 1200,
        "the application needs 1,200 descriptors; the hard limit is {}",
        hard.rlim_max
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", "")).unwrap();
    let app = sim_app();
    let args = ["run", "p.toml", "--device", "sim", "--"];
    let app = [app.to_str().unwrap(), "connections", "1100", "2"];
    let mut command = support::rocflow_command(&[&args[..], &app].concat(), dir.path(), &[]);
    let output = support::with_descriptors(&mut command, 1024)
        .output()
        .expect("rocflow runs");
    assert_success(&output);
    assert_each_process_whole(&rows(dir.path()), 3, "the parent and two children");
}

#[test]
fn a_process_that_cannot_reach_rocflow_fails_the_run_naming_it() {
    // The shell and the first program it starts are profiled; then the shell execs a
    // program whose tool finds no runner at its socket.
    let script = "/bin/sleep 0.1; ROCFLOW_SOCKET=$ROCFLOW_SOCKET.gone exec /bin/sleep 0.1";
    let (output, rows, dir) = run("", "sim", &["/bin/sh", "-c", script]);
    let spool = support::inspect(dir.path(), "rocflow-out/last.rfraw");
    let pid = spool["processes"][0]["pid"].as_u64().unwrap();
    assert_fails(
        &output,
        1,
        &[
            "rocflow: cannot connect to the runner",
            &format!("error: process {pid} could not reach rocflow: the outputs lack"),
        ],
    );
    // What the profiled program did is kept.
    assert_eq!(totals(&rows), expected(&default_scenario()));
}

#[test]
fn every_shipped_scenario_is_delivered_whole() {
    let scenarios = sim_scenarios();
    assert!(scenarios.len() >= 3, "{scenarios:?}");
    for path in scenarios {
        let scenario: toml::Value =
            toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let device = format!("sim:{}", path.display());
        let (output, rows, _dir) = run("", &device, &["/bin/sleep", "0.2"]);
        assert_success(&output);
        assert_eq!(totals(&rows), expected(&scenario), "{}", path.display());
    }
}

#[test]
fn a_crash_keeps_everything_sent_and_passes_the_signal_on() {
    let app = sim_app();
    let (output, rows, _dir) = run("", "sim", &[app.to_str().unwrap(), "crash"]);
    assert_eq!(
        output.status.code(),
        Some(128 + 11),
        "stderr:\n{}",
        text(&output.stderr)
    );
    assert_eq!(totals(&rows), expected(&default_scenario()));
    assert_says(&output.stderr, "warning: ");
    assert_says(&output.stderr, "killed by signal 11");
}

#[test]
fn threads_of_the_application_and_of_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("threads", 4), ("iterations", 25)];
    let (scenario, path) = scenario_with(dir.path(), "four-threads.toml", &settings);
    let app = sim_app();
    let device = format!("sim:{}", path.display());
    let (output, rows, _run) = run("", &device, &[app.to_str().unwrap(), "threads", "8"]);
    assert_success(&output);
    assert_eq!(totals(&rows), expected(&scenario));
    let tids: std::collections::BTreeSet<&str> = rows["api"]
        .values()
        .flatten()
        .map(|line| line.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(
        tids.len(),
        4,
        "API calls come from the scenario's four threads"
    );
}

#[test]
fn counters_follow_the_kernel_filter_and_iteration_range() {
    let extra = r#"
[context.counters]
collect = ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
kernels = { include = "vectorAdd|reduce" }
iterations = "[1-10]"
"#;
    let (output, rows, _dir) = run(extra, "sim", &["/bin/sleep", "0.2"]);
    assert_success(&output);
    // Ten dispatches of each kernel the filter keeps, vectorAdd on gfx942 and reduce on
    // gfx90a (smooth is left out), each a value per instance of the counters its GPU has.
    let scenario = default_truth();
    let values =
        scenario.samples_per_iteration("vectorAdd|reduce", &["SQ_WAVES", "GRBM_GUI_ACTIVE"]);
    assert_eq!(totals(&rows)["counter_sample"], 10 * values);
}

#[test]
fn counter_values_keep_their_kernel_when_dispatches_complete_together() {
    // Four scenario threads complete dispatches at once, so the values of several
    // dispatches interleave in the counters' buffer.
    let dir = tempfile::tempdir().unwrap();
    let (scenario, path) = scenario_with(dir.path(), "four-threads.toml", &[("threads", 4)]);
    let scenario = Scenario::of(&scenario);
    // Every counter of gfx942, so each dispatch has hundreds of values.
    let collect: Vec<&str> = (scenario.agents[0].counters.iter())
        .map(|c| c.name.as_str())
        .collect();
    let extra = format!("[context.counters]\ncollect = {collect:?}\n");
    let device = format!("sim:{}", path.display());
    let (output, rows, _run) = run(&extra, &device, &["/bin/sleep", "0.2"]);
    assert_success(&output);
    let fields = |line: &str| -> Vec<String> { line.split(',').map(str::to_owned).collect() };
    // kernel_dispatch: pid, tid, agent, queue, dispatch_id, kernel_id, …
    let kernel_of: BTreeMap<String, String> = rows["kernel_dispatch"]
        .values()
        .flatten()
        .map(|line| {
            let f = fields(line);
            (f[4].clone(), f[5].clone())
        })
        .collect();
    // counter_sample: pid, agent, dispatch_id, kernel_id, …
    let samples: Vec<&String> = rows["counter_sample"].values().flatten().collect();
    assert_eq!(
        samples.len() as u64,
        scenario.counter_samples_per_process(&collect)
    );
    let wrong: Vec<&&String> = samples
        .iter()
        .filter(|line| {
            let f = fields(line);
            kernel_of.get(&f[2]) != Some(&f[3])
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} samples name another kernel than their dispatch, e.g. {}",
        wrong.len(),
        samples.len(),
        wrong[0]
    );
}

#[test]
fn counters_for_gpus_the_node_lacks_say_so() {
    let extra = "[context.counters]\ncollect = [\"SQ_WAVES\"]\nagents = [\"gfx11*\"]\n";
    let rows = without(
        "counter_sample",
        extra,
        &[],
        "rocflow: context `trace`: no GPU of this node (gfx942, gfx90a) is among its counters' agents; no counters are collected",
    );
    assert_eq!(
        totals(&rows)["kernel_dispatch"],
        expected(&default_scenario())["kernel_dispatch"],
        "the rest is collected"
    );
}

/// The simulated device has its scenario's counters and no others: a name none of its
/// GPUs has is a mistake, refused before anything runs, as a definitions file's would be.
#[test]
fn a_counter_the_simulated_device_lacks_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", "kernel-trace", "--device", "sim", "--pmc", "SQ_WAVE"];
    let output = rocflow(
        &[&args[..], &["--", "/bin/sleep", "0.1"]].concat(),
        dir.path(),
        &[],
    );
    assert_fails(
        &output,
        2,
        &[
            "error: unknown counter `SQ_WAVE`: the simulated device has none of that name",
            "--> command line:1:7",
            "did you mean `SQ_WAVES`?",
        ],
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing is written: {left:?}");

    // `validate --device` checks as the run would; a counter of another GPU of the node
    // says which has it.
    let pipeline = "[pipeline]\nextends = [\"kernel-trace\"]\n[[context]]\nname = \"kernels\"\n\
                    agents = [\"gfx90a\"]\n[context.counters]\n\
                    collect = [\"SQ_WAVES\", \"SQ_INSTS_VALU\"]\n";
    write_file(dir.path(), "p.toml", pipeline);
    let validated = rocflow(&["validate", "p.toml", "--device", "sim"], dir.path(), &[]);
    assert_fails(
        &validated,
        2,
        &[
            "error: `SQ_INSTS_VALU` is not a counter of the selected GPUs (gfx90a)",
            "--> p.toml:7:24",
            "gfx942 of the simulated device has it",
        ],
    );
    let w7900 = support::repo().join("examples/sim/w7900.toml");
    let device = format!("sim:{}", w7900.display());
    let pipeline = pipeline.replace("\"gfx90a\"", "\"gpu\"");
    write_file(
        dir.path(),
        "p.toml",
        &pipeline.replace("SQ_INSTS_VALU", "TCC_HIT"),
    );
    let validated = rocflow(
        &["validate", "p.toml", "--device", &device],
        dir.path(),
        &[],
    );
    let stderr = assert_fails(&validated, 2, &["error: unknown counter `TCC_HIT`"]);
    assert!(!stderr.contains("`SQ_WAVES`"), "the W7900 has it: {stderr}");
}

/// Counters that gave no value in a run are named at its end: those no GPU offered (here
/// defined in the definitions given, which the simulated GPUs lack), and those of kernels
/// the filter left out.
#[test]
fn counters_without_a_value_are_named_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let defs = support::counters::shared(support::counters::STANDARD);
    let args = ["run", "kernel-trace", "--device", "sim", "--counters"];
    let pmc = ["--pmc", "GRBM_COUNT", "SQ_WAVES", "--", "/bin/sleep", "0.1"];
    let output = rocflow(
        &[&args[..], &[defs.to_str().unwrap()], &pmc].concat(),
        dir.path(),
        &[],
    );
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert_says(
        &stderr,
        "warning: counter `GRBM_COUNT` gave no value: no GPU the run profiled offers it",
    );
    assert!(!stderr.contains("`SQ_WAVES` gave"), "{stderr}");

    let extra = "[context.counters]\ncollect = [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]\n\
                 kernels = { include = \"no_such_kernel\" }\n";
    let (output, rows, _dir) = run(extra, "sim", &["/bin/sleep", "0.1"]);
    assert_success(&output);
    assert_says(
        &output.stderr,
        "warning: counters `SQ_WAVES`, `GRBM_GUI_ACTIVE` gave no value: no dispatch was counted",
    );
    assert_eq!(
        totals(&rows)["kernel_dispatch"],
        expected(&default_scenario())["kernel_dispatch"],
        "the rest is collected"
    );
}

#[test]
fn pc_sampling_turns_on_amds_beta_and_delivers_host_trap_samples() {
    // The simulated SDK, like the real one, samples only with AMD's beta on: rocflow
    // turns it on for the application.
    let extra = r#"pc_sampling = { method = "host_trap", unit = "time", interval = 1000 }"#;
    let (output, rows, _dir) = run(extra, "sim", &["/bin/sleep", "0.2"]);
    assert_success(&output);
    let sampled = Collects {
        pc_samples: true,
        ..Collects::default()
    };
    let want = default_truth().truth(&sampled, 1, &Dispatches::new());
    assert_eq!(totals(&rows)["pc_sample"], want.pc_samples);
}

#[test]
fn a_node_without_a_gpu_reports_no_agent_and_still_traces_host_calls() {
    // As the real SDK on a node without a GPU driver: no agent at all, not even the CPU,
    // and the tracing services are accepted.
    let (_scenario, path) = with_file(
        "no-gpu.toml",
        "[scenario]\nname = \"no-gpu\"\nthreads = 1\niterations = 3\nmarker_ranges = true\n\n[[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipGetDeviceCount\"\n",
    );
    let device = format!("sim:{}", path.display());
    let (output, rows, dir) = run("", &device, &["/bin/sleep", "0.1"]);
    assert_success(&output);
    assert_eq!(totals(&rows), Scenario::read(&path).records_per_process());
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    let inspect: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(inspect["processes"][0]["agents"], serde_json::json!([]));
}

#[test]
fn a_tool_both_preloaded_and_force_configured_is_configured_once() {
    // As the real SDK: forcing configuration once the SDK is initialized is refused.
    let app = sim_app();
    let (output, rows, _dir) = run("", "sim", &[app.to_str().unwrap(), "force"]);
    assert_success(&output);
    assert_says(&output.stdout, "rocprofiler_force_configure: 16");
    assert_says(&output.stderr, "1 process in");
    assert_eq!(rows["kernel_dispatch"].len(), 1, "one stream");
}

/// A context of its own sampling PCs as `configuration` says, beside the one that traces:
/// a configuration the SDK refuses leaves it without records, and the run with the rest.
fn pc_context(configuration: &str) -> String {
    format!("[[context]]\nname = \"pc\"\npc_sampling = {configuration}\n")
}

#[test]
fn pc_sampling_stays_off_when_the_user_turns_amds_beta_off() {
    // A site that forbids the beta (AMD warns that it can hang the machine) keeps it off.
    let extra = pc_context(r#"{ method = "host_trap", unit = "time", interval = 1000 }"#);
    let off = (rocflow::sdk::PC_SAMPLING_BETA, Path::new("off"));
    without(
        "pc_sample",
        &extra,
        &[off],
        "PC sampling on gfx942 is a beta of rocprofiler-sdk, off with ROCPROFILER_PC_SAMPLING_BETA_ENABLED=off (`rocflow run` turns it on unless it is set)",
    );
}

#[test]
fn an_unsupported_pc_sampling_configuration_is_explained() {
    let extra = pc_context(r#"{ method = "stochastic", unit = "cycles", interval = 1024 }"#);
    without(
        "pc_sample",
        &extra,
        &[],
        "PC sampling Stochastic in Cycles is not supported on gfx942 (agent 1)",
    );
}

#[test]
fn roctx_pause_and_resume_stop_and_start_collection() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [
        ("threads", 1),
        ("iterations", 30),
        ("pause_at", 10),
        ("resume_at", 20),
    ];
    let (_, path) = scenario_with(dir.path(), "paused.toml", &settings);
    let (output, rows, _run) = run(
        "",
        &format!("sim:{}", path.display()),
        &["/bin/sleep", "0.1"],
    );
    assert_success(&output);
    assert_eq!(
        totals(&rows)["kernel_dispatch"],
        20 * 3,
        "iterations 10 to 19 are paused"
    );
}

/// A scenario paced over two seconds (one thread, an iteration every 50 ms), traced in
/// two collection periods whose edges fall halfway between iterations: the dispatches
/// collected are those of the iterations scheduled inside a period, give or take the one
/// at each edge that real timers may let in or keep out.
#[test]
fn a_paced_scenario_delivers_the_work_inside_its_collection_periods() {
    let dir = tempfile::tempdir().unwrap();
    let (iterations, duration_ms) = (40, 2000);
    let settings = [
        ("threads", 1),
        ("iterations", iterations),
        ("duration_ms", duration_ms),
    ];
    let (scenario, path) = scenario_with(dir.path(), "paced.toml", &settings);
    let every_ms = (duration_ms / iterations) as u64;
    let (delay, duration, interval) = (525u64, 300, 400);
    let extra = format!(
        "period = {{ delay = \"{delay}ms\", duration = \"{duration}ms\", interval = \"{interval}ms\", repeat = 1 }}"
    );
    let device = format!("sim:{}", path.display());
    let (output, rows, _run) = run(&extra, &device, &["/bin/sleep", "0.1"]);
    assert_success(&output);

    let kernels = Scenario::of(&scenario).kernels.len() as u64;
    // One thread: dispatch n (from 1) is one of iteration (n - 1) / kernels.
    let mut per_iteration: BTreeMap<u64, u64> = BTreeMap::new();
    for line in rows["kernel_dispatch"].values().flatten() {
        let dispatch: u64 = line.split(',').nth(4).unwrap().parse().unwrap();
        *per_iteration.entry((dispatch - 1) / kernels).or_default() += 1;
    }
    let second = delay + duration + interval;
    let mut near = std::collections::BTreeSet::new();
    for (start, end) in [(delay, delay + duration), (second, second + duration)] {
        // The iterations scheduled in [start, end).
        let inside = start.div_ceil(every_ms)..end.div_ceil(every_ms);
        for i in inside.start + 1..inside.end - 1 {
            assert_eq!(
                per_iteration.get(&i),
                Some(&kernels),
                "iteration {i} of {inside:?} is collected whole: {per_iteration:?}"
            );
        }
        near.extend(inside.start - 1..inside.end + 1);
    }
    let outside: Vec<&u64> = (per_iteration.keys())
        .filter(|i| !near.contains(i))
        .collect();
    assert!(
        outside.is_empty(),
        "iterations {outside:?} are outside the periods: {per_iteration:?}"
    );
}

/// The issue's run: the simulated device's work is done long before a collection period
/// two seconds in. The run says it collected nothing and why, fails, and claims no cost
/// per record.
#[test]
fn a_run_that_collects_nothing_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", "kernel-trace", "--device", "sim", "-P", "2000:100:0"];
    let unit = [
        "--collection-period-unit",
        "msec",
        "--",
        "/bin/sleep",
        "0.1",
    ];
    let output = rocflow(&[&args[..], &unit].concat(), dir.path(), &[]);
    assert_fails(
        &output,
        1,
        &[
            "error: no records were collected: context `kernels` starts at initialization, after 2s, collects for 100ms",
            "unless `duration_ms` in the scenario spreads it over time",
        ],
    );
    // Wherever rocflow writes its report of the run.
    let said = text(&output.stdout) + &text(&output.stderr);
    assert_says(&said, "0 records from 1 process");
    assert!(!said.contains("ns/record"), "{said}");
}

#[test]
fn roctx_messages_reach_every_sink_and_the_summary() {
    // The simulated SDK passes each range's message to the marker callbacks only, as the
    // real one does: the tool must take it from there.
    let dir = tempfile::tempdir().unwrap();
    // API arguments too: their names and the messages share the stream's string table.
    let calls = "[[context]]\nname = \"calls\"\ntracing = [\"hip_runtime_api\"]\nargs = true\n";
    let pipeline = format!("{}{calls}", support::MARKERS);
    std::fs::write(dir.path().join("markers.toml"), pipeline).unwrap();
    let output = run_on(
        "sim",
        "markers.toml",
        &["/bin/sleep", "0.2"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    let scenario = default_truth();
    let ranges = scenario.repeats() as usize;
    let message = scenario.marker.as_deref().unwrap();
    for (sink, found) in support::marker_messages(dir.path()) {
        assert_eq!(found, support::tally(vec![message; ranges]), "{sink}");
    }
    let copies = support::csv(&support::only(dir.path(), "csv/api.csv"));
    let copies: Vec<&str> = (copies.iter())
        .filter(|row| row["operation"] == "hipMemcpy")
        .map(|row| row["args"].as_str())
        .collect();
    assert_eq!(
        copies.len(),
        ranges * scenario.copies.len(),
        "a call a copy"
    );
    assert!(
        copies
            .iter()
            .all(|a| a.starts_with("dst=") && a.contains(";sizeBytes=")),
        "{copies:?}"
    );
    let summary = support::csv(&dir.path().join("rocflow-out/summary/markers.csv"));
    let rows: Vec<(&str, &str)> = (summary.iter())
        .map(|row| (row["range"].as_str(), row["calls"].as_str()))
        .collect();
    assert_eq!(rows, [(message, ranges.to_string().as_str())]);
    // The spool keeps them: a replay names the ranges the same.
    let args = [
        "replay",
        "rocflow-out",
        "markers.toml",
        "--set",
        "output_dir=replayed",
    ];
    assert_success(&rocflow(&args, dir.path(), &[]));
    let replayed = support::csv(&support::only(dir.path(), "replayed/csv/marker.csv"));
    let replayed = replayed.iter().map(|r| r["message"].as_str());
    assert_eq!(
        support::tally(replayed),
        support::tally(vec![message; ranges])
    );
}

#[test]
fn the_exit_code_is_the_applications() {
    let app = sim_app();
    let (output, _rows, _dir) = run("", "sim", &[app.to_str().unwrap(), "exit", "3"]);
    assert_eq!(output.status.code(), Some(3));
}

#[test]
fn an_sdk_older_than_the_tool_supports_is_a_user_error_naming_both_versions() {
    // ROCm 6.4's rocprofiler-sdk, as installed: an ELF file named with its version.
    let rocm = tempfile::tempdir().unwrap();
    let lib = rocm.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::write(lib.join("librocprofiler-sdk.so.0.6.0"), b"\x7fELF").unwrap();
    std::os::unix::fs::symlink(
        "librocprofiler-sdk.so.0.6.0",
        lib.join("librocprofiler-sdk.so"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", "")).unwrap();
    let env = [("ROCM_PATH", rocm.path())];
    let output = run_on("rocm", "p.toml", &["/bin/true"], dir.path(), &env);
    assert_fails(
        &output,
        2,
        &[
            "rocprofiler-sdk 0.6.0 at",
            "is older than rocflow supports (1.0.0 or later)",
        ],
    );
    assert!(!dir.path().join("out").exists(), "nothing started");
}

#[test]
fn a_missing_application_is_a_user_error() {
    let (output, _rows, _dir) = run("", "sim", &["/no/such/app"]);
    assert_eq!(output.status.code(), Some(2));
    assert_says(&output.stderr, "cannot start `/no/such/app`");
}

/// Per agent, whether any two kernel dispatches overlap in time.
fn overlapping_agents(rows: &Rows) -> Vec<String> {
    let mut spans: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for line in rows["kernel_dispatch"].values().flatten() {
        let fields: Vec<&str> = line.split(',').collect();
        let (start, end) = (fields[6].parse().unwrap(), fields[7].parse().unwrap());
        spans.entry(fields[2]).or_default().push((start, end));
    }
    spans
        .into_iter()
        .filter_map(|(agent, mut spans)| {
            spans.sort_unstable();
            spans
                .windows(2)
                .any(|w| w[1].0 < w[0].1)
                .then(|| agent.to_owned())
        })
        .collect()
}

#[test]
fn serialized_kernels_run_one_at_a_time_on_each_agent() {
    // Two scenario threads launch on queues of their own: their kernels overlap…
    let (output, rows, _dir) = run("", "sim", &["/bin/sleep", "0.2"]);
    assert_success(&output);
    assert!(!overlapping_agents(&rows).is_empty());
    // …unless the context serializes them (and then none is lost).
    let (output, rows, _dir) = run("serialize = true", "sim", &["/bin/sleep", "0.2"]);
    assert_success(&output);
    assert_eq!(totals(&rows), expected(&default_scenario()));
    assert_eq!(overlapping_agents(&rows), Vec::<String>::new());
}

#[test]
fn a_wrong_scenario_is_a_user_error_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = "[scenario]\nname = \"x\"\nthreads = 1\niterations = 1\n\
                    [[agent]]\nname = \"gfx942\"\nproduct = \"p\"\ncu_count = 1\n\
                    [[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipLaunchKernal\"\n";
    let line = 9;
    std::fs::write(dir.path().join("bad.toml"), scenario).unwrap();
    std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", "")).unwrap();
    let output = run_on("sim:bad.toml", "p.toml", &["/bin/true"], dir.path(), &[]);
    let stderr = assert_fails(
        &output,
        2,
        &["`hipLaunchKernal` is not a function of hip_runtime_api"],
    );
    assert!(
        stderr.contains(&format!("line {line},")),
        "line {line}: {stderr}"
    );
    assert!(
        !dir.path().join("rocflow-out").exists(),
        "nothing is written"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

/// The tool's messages number an agent as `inspect` and the report do: the CPU comes first.
#[test]
fn the_tools_messages_number_agents_as_inspect_does() {
    let extra = pc_context(r#"{ method = "stochastic", unit = "cycles", interval = 1024 }"#);
    let (output, _, dir) = run(&extra, "sim", &["/bin/sleep", "0.1"]);
    assert_success(&output);
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    let inspect: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let agents = inspect["processes"][0]["agents"].as_array().unwrap();
    let gfx942 = agents.iter().find(|a| a["name"] == "gfx942").unwrap();
    assert_eq!(gfx942["index"], 1, "after the CPU: {agents:?}");
    assert_says(&output.stderr, "on gfx942 (agent 1)");
}

/// The `.csv` files a run wrote in `dir`, each's lines sorted (processes' frames reach the
/// stages in an order of their own).
fn sorted_rows(dir: &Path) -> BTreeMap<String, Vec<String>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let mut lines: Vec<String> = (std::fs::read_to_string(&path).unwrap().lines())
                .map(str::to_owned)
                .collect();
            lines.sort();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                lines,
            )
        })
        .collect()
}

/// With `--spool-compression zstd` (what `auto` does on 8 cores or more), the spool stores
/// the records of every process compressed, in a fraction of the size they take stored as
/// they are, and replaying it writes every row the run wrote.
#[test]
fn a_compressed_spool_replays_to_the_rows_of_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, path) = scenario_with(dir.path(), "long.toml", &[("iterations", 2000)]);
    write_file(dir.path(), "p.toml", &TRACE.replace("EXTRA", ""));
    let (device, app) = (format!("sim:{}", path.display()), sim_app());
    let run = |compression: &str, spool: &str| {
        let args = ["run", "p.toml", "--device", &device, "--spool", spool];
        let compression = ["--spool-compression", compression, "--"];
        let fork = [app.to_str().unwrap(), "fork", "2"];
        let output = rocflow(&[&args[..], &compression, &fork].concat(), dir.path(), &[]);
        assert_success(&output);
        std::fs::read(dir.path().join(spool)).unwrap()
    };
    let plain = run("none", "plain.rfraw");
    let spool = run("zstd", "run.rfraw");
    let ran = sorted_rows(&dir.path().join("out"));
    // The three processes' dispatches, and the header.
    let dispatches = 3 * expected(&scenario)["kernel_dispatch"] as usize;
    assert_eq!(ran["kernel_dispatch.csv"].len(), dispatches + 1);

    // Each frame's header: its encoding byte, and the length of what follows.
    let (mut at, mut compressed) = (rocflow::wire::STREAM_HEADER, 0);
    while at < spool.len() {
        compressed += usize::from(spool[at + 1] == 1);
        let len = u32::from_le_bytes(spool[at + 4..at + 8].try_into().unwrap()) as usize;
        at += rocflow::wire::FRAME_HEADER + len;
    }
    // How many frames the records take depends on when the tool flushes them: a frame
    // of records a process at least.
    assert!(compressed >= 3, "{compressed} frames compressed");
    assert!(
        spool.len() * 4 < plain.len(),
        "{} bytes compressed, {} as they are",
        spool.len(),
        plain.len()
    );

    let replay = tempfile::tempdir().unwrap();
    std::fs::write(replay.path().join("run.rfraw"), spool).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw"], replay.path(), &[]));
    assert_eq!(sorted_rows(&replay.path().join("out")), ran);
}

#[test]
fn graph_launches_and_hip_events_keep_their_own_records_times() {
    // Their records are laid out apart from an API call's (the correlation id, the thread
    // and the times at other offsets): each is read as its own, or its times are another
    // field's.
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap();
    scenario.push_str(
        "\n[[call]]\ndomain = \"hip_graph\"\nfunction = \"EXEC_LAUNCH\"\nduration_ns = 9000\n\n[[call]]\ndomain = \"hip_event\"\nfunction = \"WAIT\"\nduration_ns = 2500\n",
    );
    std::fs::write(dir.path().join("scenario.toml"), scenario).unwrap();
    let extra = "[[context]]\nname = \"newer\"\ntracing = [\"hip_graph\", \"hip_event\"]\n";
    std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", extra)).unwrap();
    let output = run_on(
        "sim:scenario.toml",
        "p.toml",
        &["/bin/sleep", "0.1"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    let table = std::fs::read_to_string(dir.path().join("out/api.csv")).unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (tid, start, end, domain, operation) = (
        column("tid"),
        column("start_ns"),
        column("end_ns"),
        column("domain"),
        column("operation"),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let threads: BTreeSet<&str> = (rows.iter())
        .filter(|r| r[domain] == "hip_runtime_api")
        .map(|r| r[tid])
        .collect();
    let truth = default_truth();
    for (name, op, ns) in [
        ("hip_graph", "EXEC_LAUNCH", 9000),
        ("hip_event", "WAIT", 2500),
    ] {
        let of: Vec<&Vec<&str>> = rows.iter().filter(|r| r[domain] == name).collect();
        assert_eq!(of.len() as u64, truth.repeats(), "{name}: {table}");
        for r in of {
            assert_eq!(r[operation], op, "{r:?}");
            let took = r[end].parse::<u64>().unwrap() - r[start].parse::<u64>().unwrap();
            assert_eq!(took, ns, "{r:?}");
            assert!(threads.contains(r[tid]), "{r:?} on a thread of {threads:?}");
        }
    }
}

#[test]
fn a_simulated_older_sdk_refuses_the_domains_added_since_before_the_application_starts() {
    // A scenario may be an older SDK, to try a pipeline against an older ROCm.
    let dir = tempfile::tempdir().unwrap();
    let scenario = std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap();
    let scenario = scenario.replace("[scenario]\n", "[scenario]\nsdk_version = \"1.3.0\"\n");
    std::fs::write(dir.path().join("scenario.toml"), scenario).unwrap();
    let pipeline = |domain: &str| {
        let extra = format!("[[context]]\nname = \"newer\"\ntracing = [\"{domain}\"]\n");
        std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", &extra)).unwrap();
        run_on(
            "sim:scenario.toml",
            "p.toml",
            &["/bin/sleep", "0.1"],
            dir.path(),
            &[],
        )
    };
    let output = pipeline("hip_event");
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert_says(
        &output.stderr,
        "context `newer` traces `hip_event`, which rocprofiler-sdk 1.4.1 (ROCm 10.1) added; the rocprofiler-sdk in use is 1.3.0",
    );
    assert_says(
        &output.stderr,
        "install rocprofiler-sdk 1.4.1 (ROCm 10.1) or later",
    );
    assert!(!dir.path().join("out").exists(), "nothing ran");
    // HIP graphs came with 1.3.0.
    assert_success(&pipeline("hip_graph"));
}

/// HIP graphs are HIP's in every SDK; the record of their launches only since 1.3.0. On an
/// older simulated SDK a scenario's graph is still launched, its nodes dispatched under
/// the `hipGraphLaunch`, with no graph launch recorded and no dispatch in a graph node (the
/// SDK has no `HIP_GRAPH` callbacks to number them by); on 1.3.0 each launch is recorded,
/// and its dispatch is node 0 of its graph, whether or not `hip_graph` is traced.
#[test]
fn an_older_sdk_launches_graphs_without_their_records() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap();
    let nodes = "\n[[kernel]]\nname = \"_Z10graph_stepPf\"\nduration_ns = 4000\n\
                 grid = [65536, 1, 1]\nworkgroup = [256, 1, 1]\ngraph = 1\n";
    let run_at = |sdk: &str, extra: &str| {
        let scenario = base.replace(
            "[scenario]\n",
            &format!("[scenario]\nsdk_version = \"{sdk}\"\n"),
        );
        std::fs::write(dir.path().join("scenario.toml"), scenario + nodes).unwrap();
        std::fs::write(dir.path().join("p.toml"), TRACE.replace("EXTRA", extra)).unwrap();
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        let app = ["/bin/sleep", "0.1"];
        assert_success(&run_on(
            "sim:scenario.toml",
            "p.toml",
            &app,
            dir.path(),
            &[],
        ));
        let rows = |kind: &str| -> Vec<String> {
            let table = std::fs::read_to_string(dir.path().join(format!("out/{kind}.csv")));
            table.map_or(Vec::new(), |t| {
                t.lines().skip(1).map(str::to_owned).collect()
            })
        };
        let dispatches = rows("kernel_dispatch");
        let steps: Vec<&String> = dispatches.iter().filter(|r| r.contains("graph_step")).collect();
        let header = std::fs::read_to_string(dir.path().join("out/kernel_dispatch.csv")).unwrap();
        let columns: Vec<&str> = header.lines().next().unwrap().split(',').collect();
        let column = |name| columns.iter().position(|c| *c == name).unwrap();
        let (exec, node) = (column("graph_exec_id"), column("graph_node_id"));
        let nodes: Vec<(String, String)> = (steps.iter())
            .map(|r| {
                let cells: Vec<&str> = r.split(',').collect();
                (cells[exec].to_owned(), cells[node].to_owned())
            })
            .filter(|placed| placed.0 != "0")
            .collect();
        // The scenario's one thread instantiates its one graph: executable graph 1.
        assert!(nodes.iter().all(|placed| *placed == ("1".into(), "0".into())), "{nodes:?}");
        let launches = rows("api")
            .iter()
            .filter(|r| r.contains(",hipGraphLaunch,"))
            .count();
        (
            steps.len() as u64,
            launches as u64,
            rows("graph_launch").len() as u64,
            nodes.len() as u64,
        )
    };
    let repeats = default_truth().repeats();
    assert_eq!(run_at("1.2.0", ""), (repeats, repeats, 0, 0));
    assert_eq!(run_at("1.3.0", ""), (repeats, repeats, 0, repeats));
    let traced = "[[context]]\nname = \"graphs\"\ntracing = [\"hip_graph\"]\n";
    assert_eq!(run_at("1.3.0", traced), (repeats, repeats, repeats, repeats));
}
