//! `rocflow analyze` on the simulated device, as users run it: each rule finds the
//! pattern its scenario (`examples/sim/analyze-RULE.toml`) injects, with the scenario's
//! numbers as evidence, and nothing on the clean scenario; the shipped scenarios give only
//! the findings that are true of them; the rocpd databases of a run give the spool's
//! findings; `--fail-if` gates as `rocflow diff`'s does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{assert_success, repo, rocflow, sim_scenarios};

/// The run of `scenario` (a file of examples/sim) on the simulated device, with the
/// default pipeline (trace-all), in a fresh directory: its `out` folder holds the spool
/// and a rocpd database per process.
fn run(scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let device = format!(
        "sim:{}",
        repo().join("examples/sim").join(scenario).display()
    );
    let out = dir.path().join("out");
    let args = [
        "run",
        "--device",
        &device,
        "-q",
        "-d",
        out.to_str().unwrap(),
        "--",
        "/bin/true",
    ];
    assert_success(&rocflow(&args, dir.path(), &[]));
    (dir, out)
}

/// `rocflow analyze INPUT --format json ARGS…`'s findings.
fn findings(input: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["analyze", input.to_str().unwrap(), "--format", "json"];
    all.extend_from_slice(args);
    let out = rocflow(&all, Path::new("."), &[]);
    assert_success(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"].as_array().unwrap().clone()
}

fn rules(findings: &[Value]) -> BTreeSet<String> {
    findings
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

/// The pieces of evidence of type `kind`.
fn evidence<'f>(finding: &'f Value, kind: &str) -> Vec<&'f Value> {
    (finding["evidence"].as_array().unwrap().iter())
        .filter(|e| e["type"] == kind)
        .collect()
}

fn u(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is no count"))
}

/// Each rule's scenario, with exactly the rules that find something in it: its own, and
/// those its pattern implies (said in the scenario's comment).
const SCENARIOS: &[(&str, &[&str])] = &[
    ("analyze-clean.toml", &[]),
    ("analyze-gpu-idle.toml", &["gpu-idle", "low-utilization"]),
    (
        "analyze-launch-bound.toml",
        &["launch-bound", "low-utilization"],
    ),
    ("analyze-low-utilization.toml", &["low-utilization"]),
    ("analyze-pageable-copy.toml", &["pageable-copy"]),
    ("analyze-serialized-copy.toml", &["serialized-copy"]),
    (
        "analyze-steady-state-allocation.toml",
        &["steady-state-allocation"],
    ),
    ("analyze-sync-copy.toml", &["sync-copy"]),
    ("analyze-sync-hot-spot.toml", &["sync-hot-spot"]),
];

/// `rocflow analyze` of each scenario's spool, and the report its run wrote (whose rules
/// were checked beside the sinks, as the records came), find its rules and no other, in
/// the same words.
#[test]
fn each_scenario_gives_its_rules_findings_and_no_other() {
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    for (scenario, expected) in SCENARIOS {
        let (_dir, out) = run(scenario);
        let found = findings(&out, &[]);
        let expected: BTreeSet<String> = expected.iter().map(|r| (*r).to_owned()).collect();
        assert_eq!(rules(&found), expected, "{scenario}: {found:#?}");
        let mut analyzed: Vec<(String, String)> = (found.iter())
            .map(|f| (text(&f["rule"]), text(&f["statement"])))
            .collect();
        let mut reported = support::truth::report_findings(&out.join("report.html"));
        analyzed.sort();
        reported.sort();
        assert_eq!(reported, analyzed, "{scenario}: the run's report");
    }
}

#[test]
fn gpu_idle_names_the_gaps_and_the_host_calls_in_them() {
    let (_dir, out) = run("analyze-gpu-idle.toml");
    let found = findings(&out, &["--rule", "gpu-idle"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    // 50 iterations: a gap between each two, of the 5 ms of host calls less the 2 ms of
    // kernels they overlap.
    assert!(
        f["statement"].as_str().unwrap().contains(" 49 gaps "),
        "{f:#}"
    );
    let gaps = evidence(f, "span");
    assert_eq!(gaps.len(), 5);
    for gap in gaps {
        let len = u(&gap["end_ns"]) - u(&gap["start_ns"]);
        assert!((3_000_000..3_100_000).contains(&len), "{gap}");
        assert_eq!(gap["what"], "idle");
        // The scenario's GPU: rocflow's agent 1, after the host's CPU.
        assert_eq!(gap["agent"], 1);
    }
    let calls = evidence(f, "api");
    assert_eq!(calls[0]["function"], "hipDeviceGetAttribute", "{f:#}");
    let in_gaps = u(&calls[0]["total_ns"]);
    assert!(
        (49 * 3_000_000..49 * 3_005_000).contains(&in_gaps),
        "{in_gaps}"
    );
    assert_eq!(f["severity"], "warning");
    assert!(u(&f["at_stake_ns"]) >= 49 * 3_000_000);
}

#[test]
fn low_utilization_is_found_over_the_run_and_in_the_range() {
    let (_dir, out) = run("analyze-low-utilization.toml");
    let found = findings(&out, &["--rule", "low-utilization"]);
    assert_eq!(found.len(), 2, "{found:#?}");
    let run_wide = found
        .iter()
        .find(|f| !evidence(f, "span").is_empty())
        .unwrap();
    let range = found
        .iter()
        .find(|f| !evidence(f, "range").is_empty())
        .unwrap();
    let step = evidence(range, "range")[0];
    assert_eq!(
        (&step["label"], u(&step["instances"])),
        (&Value::from("step"), 200)
    );
    // 10 us of kernel in each iteration of some 35 us: under a third.
    for f in [run_wide, range] {
        let statement = f["statement"].as_str().unwrap();
        let percent: u64 = statement
            .split("kernels ")
            .nth(1)
            .unwrap()
            .split('%')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((25..=33).contains(&percent), "{statement}");
        assert_eq!(f["severity"], "info");
    }
}

#[test]
fn sync_copy_names_the_copies() {
    let (_dir, out) = run("analyze-sync-copy.toml");
    let found = findings(&out, &["--rule", "sync-copy"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let copies = evidence(&found[0], "copy");
    assert_eq!(copies.len(), 1);
    let c = copies[0];
    assert_eq!(
        (&c["function"], &c["direction"]),
        (&Value::from("hipMemcpy"), &Value::from("HOST_TO_DEVICE"))
    );
    assert_eq!(
        (u(&c["copies"]), u(&c["bytes"]), u(&c["total_ns"])),
        (50, 50 << 26, 50 * 2_000_000)
    );
    assert_eq!(found[0]["severity"], "warning");
    assert!(u(&found[0]["at_stake_ns"]) >= 50 * 2_000_000);
}

#[test]
fn pageable_copy_names_the_copies_outside_pinned_memory() {
    let (_dir, out) = run("analyze-pageable-copy.toml");
    let found = findings(&out, &["--rule", "pageable-copy"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    // The copies to the GPU come from the pinned buffer: only those back are found.
    let copies = evidence(&found[0], "copy");
    assert_eq!(copies.len(), 1, "{found:#?}");
    let c = copies[0];
    assert_eq!(
        (&c["function"], &c["direction"]),
        (&Value::from("hipMemcpy"), &Value::from("DEVICE_TO_HOST"))
    );
    assert_eq!(
        (u(&c["copies"]), u(&c["bytes"]), u(&c["total_ns"])),
        (50, 50 << 20, 50 * 5_000)
    );
    let statement = found[0]["statement"].as_str().unwrap();
    assert!(
        statement.contains(" 50 copies of 52428800 bytes "),
        "{statement}"
    );
    assert_eq!(u(&found[0]["at_stake_ns"]), 50 * 5_000);
    // 250 us of a run of some 100 ms.
    assert_eq!(found[0]["severity"], "info");
    assert!(
        found[0]["advice"]
            .as_str()
            .unwrap()
            .contains("hipHostMalloc")
    );
}

#[test]
fn serialized_copy_names_the_stream_its_copies_and_the_kernels_next_to_them() {
    let (_dir, out) = run("analyze-serialized-copy.toml");
    let found = findings(&out, &["--rule", "serialized-copy"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    // The thread's own stream: the process's first created, after the null stream (0).
    let streams = evidence(f, "stream");
    assert_eq!(streams.len(), 1, "{f:#}");
    assert_eq!((u(&streams[0]["stream"]), u(&streams[0]["agent"])), (1, 1));
    let copies = evidence(f, "copy");
    assert_eq!(copies.len(), 1, "{f:#}");
    let c = copies[0];
    assert_eq!(
        (&c["function"], &c["direction"]),
        (
            &Value::from("hipMemcpyAsync"),
            &Value::from("DEVICE_TO_HOST")
        )
    );
    assert_eq!(
        (u(&c["copies"]), u(&c["bytes"]), u(&c["total_ns"])),
        (50, 50 << 22, 50 * 100_000)
    );
    // Each copy waits for the second kernel, which is next to it.
    let kernels = evidence(f, "kernel");
    assert_eq!(kernels.len(), 1, "{f:#}");
    assert_eq!(kernels[0]["name"], "update(float*, float const*, int)");
    assert_eq!(
        (u(&kernels[0]["dispatches"]), u(&kernels[0]["total_ns"])),
        (50, 50 * 1_000_000)
    );
    // Each copy is shorter than its kernel: the copies' time is at stake.
    assert_eq!(u(&f["at_stake_ns"]), 50 * 100_000);
    let statement = f["statement"].as_str().unwrap();
    assert!(
        statement.contains(" 50 copies of 209715200 bytes ") && statement.contains("stream 1"),
        "{statement}"
    );
    // 5 ms of a run of some 110 ms.
    assert_eq!(f["severity"], "info");
}

#[test]
fn launch_bound_names_the_kernels_and_the_fusion_candidates() {
    let (_dir, out) = run("analyze-launch-bound.toml");
    let found = findings(&out, &["--rule", "launch-bound"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let kernels: BTreeSet<(String, u64, u64)> = evidence(&found[0], "kernel")
        .into_iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_owned(),
                u(&k["dispatches"]),
                u(&k["total_ns"]),
            )
        })
        .collect();
    let expected: BTreeSet<(String, u64, u64)> = [
        "scale(float*, int)",
        "shift(float*, int)",
        "clamp(float*, int)",
    ]
    .into_iter()
    .map(|k| (k.to_owned(), 200, 200 * 1_000))
    .collect();
    assert_eq!(kernels, expected);
    let pairs: Vec<(Vec<String>, u64)> = evidence(&found[0], "sequence")
        .into_iter()
        .map(|s| {
            (
                serde_json::from_value(s["kernels"].clone()).unwrap(),
                u(&s["times"]),
            )
        })
        .collect();
    for (a, b) in [("scale", "shift"), ("shift", "clamp")] {
        let pair = vec![format!("{a}(float*, int)"), format!("{b}(float*, int)")];
        assert!(pairs.contains(&(pair, 200)), "{a} → {b} in {pairs:?}");
    }
}

#[test]
fn sync_hot_spot_counts_the_calls_and_their_time() {
    let (_dir, out) = run("analyze-sync-hot-spot.toml");
    let found = findings(&out, &["--rule", "sync-hot-spot"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let calls = evidence(&found[0], "api");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"], "hipDeviceSynchronize");
    assert_eq!(
        (u(&calls[0]["calls"]), u(&calls[0]["total_ns"])),
        (50, 50 * 900_000)
    );
    assert_eq!(found[0]["severity"], "warning");
}

#[test]
fn steady_state_allocation_names_the_range_and_the_calls() {
    let (_dir, out) = run("analyze-steady-state-allocation.toml");
    let found = findings(&out, &["--rule", "steady-state-allocation"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let range = evidence(&found[0], "range");
    assert_eq!(
        (&range[0]["label"], u(&range[0]["instances"])),
        (&Value::from("step"), 50)
    );
    let calls: BTreeSet<(String, u64)> = evidence(&found[0], "api")
        .into_iter()
        .map(|c| (c["function"].as_str().unwrap().to_owned(), u(&c["calls"])))
        .collect();
    assert_eq!(
        calls,
        BTreeSet::from([("hipFree".into(), 50), ("hipMalloc".into(), 50)])
    );
    assert!(
        found[0]["statement"]
            .as_str()
            .unwrap()
            .starts_with("50 of 50 instances")
    );
}

#[test]
fn a_runs_rocpd_databases_give_its_spools_findings() {
    // pageable-copy reads the copies' addresses and the host allocations' agents, which
    // the databases keep as rocprofv3's do.
    // serialized-copy reads each dispatch's and copy's stream, which they keep in
    // rocpd_info_stream and their stream_id as rocprofv3's do.
    for scenario in [
        "analyze-sync-copy.toml",
        "analyze-pageable-copy.toml",
        "analyze-serialized-copy.toml",
    ] {
        let (_dir, out) = run(scenario);
        let from_spool = findings(&out, &[]);
        let databases = format!("{}/*.db", out.display());
        assert_eq!(
            findings(Path::new(&databases), &[]),
            from_spool,
            "{scenario}"
        );
        assert!(!from_spool.is_empty(), "{scenario}");
    }
}

/// The shipped scenarios hold patterns of their own; each finding on them is one that is
/// true of the scenario (its comment says what each iteration does).
#[test]
fn the_shipped_scenarios_give_only_true_findings() {
    // Each iteration of each makes synchronous hipMemcpy copies and a hipMalloc and hipFree
    // inside its ROCTx range; on mi300x and w7900 the host's copies keep the GPUs waiting
    // between iterations (the MI210 of mi300x runs 30 us of kernel an iteration of some
    // 190 us; the W7900 under 70 us of some 2.7 ms).
    let expected: &[(&str, &[&str])] = &[
        (
            "mi300x.toml",
            &[
                "gpu-idle",
                "low-utilization",
                "steady-state-allocation",
                "sync-copy",
            ],
        ),
        (
            "mi300x-rccl.toml",
            &["steady-state-allocation", "sync-copy"],
        ),
        (
            "w7900.toml",
            &[
                "gpu-idle",
                "low-utilization",
                "steady-state-allocation",
                "sync-copy",
            ],
        ),
    ];
    for scenario in sim_scenarios() {
        let name = scenario.file_name().unwrap().to_str().unwrap();
        if name.starts_with("analyze-") {
            continue;
        }
        let Some((_, rules_expected)) = expected.iter().find(|(n, _)| *n == name) else {
            panic!("no expectation for {name}");
        };
        let (_dir, out) = run(name);
        let found = findings(&out, &[]);
        let expected: BTreeSet<String> = rules_expected.iter().map(|r| (*r).to_owned()).collect();
        assert_eq!(rules(&found), expected, "{name}: {found:#?}");
    }
}

#[test]
fn fail_if_gates_on_findings_and_refuses_a_bad_predicate_before_any_work() {
    let (_dir, out) = run("analyze-sync-copy.toml");
    let input = out.to_str().unwrap();
    let code = |args: &[&str]| {
        let mut all = vec!["analyze", input];
        all.extend_from_slice(args);
        rocflow(&all, Path::new("."), &[])
    };
    assert_eq!(
        code(&["--fail-if", "severity >= warning"]).status.code(),
        Some(1)
    );
    assert_eq!(
        code(&["--fail-if", "rule == \"sync-copy\""]).status.code(),
        Some(1)
    );
    assert_eq!(
        code(&["--fail-if", "rule == \"gpu-idle\""]).status.code(),
        Some(0)
    );
    assert_eq!(
        code(&["--fail-if", "severity >= error"]).status.code(),
        Some(0)
    );
    for bad in [
        &["--fail-if", "severty >= warning"][..],
        &["--rule", "nope"],
        &["--set", "sync-copy.nope=1"],
    ] {
        let out = code(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty(), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error"),
            "{bad:?}"
        );
    }
    // A bad predicate is refused before the input is read: even a missing one.
    let out = rocflow(
        &["analyze", "/nonexistent", "--fail-if", "severty > 1"],
        Path::new("."),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-if"));
}

#[test]
fn findings_are_written_as_markdown_and_to_a_file() {
    let (dir, out) = run("analyze-sync-hot-spot.toml");
    let file = dir.path().join("findings.md");
    let args = [
        "analyze",
        out.to_str().unwrap(),
        "--format",
        "markdown",
        "-o",
        file.to_str().unwrap(),
    ];
    let printed = rocflow(&args, Path::new("."), &[]);
    assert_success(&printed);
    assert!(printed.stdout.is_empty());
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.starts_with("# Findings\n\n1 finding: 1 warning\n"),
        "{text}"
    );
    assert!(text.contains("| warning | `sync-hot-spot` |"), "{text}");
    assert!(
        text.contains("- hipDeviceSynchronize: 50 calls, 45.0 ms"),
        "{text}"
    );
}

/// A pipeline of trace-all with an `analyze` post-step, and its run of `scenario` in a
/// fresh directory: the run's output, and the directory.
fn run_with_step(step: &str, scenario: &str) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = format!(
        "[pipeline]\nname = \"p\"\nextends = [\"trace-all\"]\n\n[[post]]\nname = \"findings\"\nkind = \"analyze\"\n{step}"
    );
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let device = format!(
        "sim:{}",
        repo().join("examples/sim").join(scenario).display()
    );
    let args = [
        "run",
        "p.toml",
        "--device",
        &device,
        "-q",
        "--",
        "/bin/true",
    ];
    (rocflow(&args, dir.path(), &[]), dir)
}

#[test]
fn an_analyze_post_step_writes_the_findings_and_fails_the_run_when_its_gate_holds() {
    let step = "path = \"{output_dir}/findings.json\"\nrules = [\"sync-copy\"]\n";
    let (out, dir) = run_with_step(step, "analyze-sync-copy.toml");
    assert_success(&out);
    let written: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("rocflow-out/findings.json")).unwrap(),
    )
    .unwrap();
    let spool_findings = findings(&dir.path().join("rocflow-out"), &["--rule", "sync-copy"]);
    assert_eq!(written["findings"].as_array().unwrap(), &spool_findings);
    assert_eq!(
        rules(&spool_findings),
        BTreeSet::from(["sync-copy".to_owned()])
    );

    let gated = format!("{step}fail_if = 'rule == \"sync-copy\"'\nrequired = true\n");
    let (out, _dir) = run_with_step(&gated, "analyze-sync-copy.toml");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds for warning `sync-copy`"), "{stderr}");
    let (out, _dir) = run_with_step(&gated, "analyze-clean.toml");
    assert_success(&out);
}

#[test]
fn a_pipelines_analyze_step_is_checked_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = "[pipeline]\nname = \"p\"\nextends = [\"trace-all\"]\n\n[[post]]\nname = \"findings\"\nkind = \"analyze\"\npath = \"f.json\"\nfail_if = \"severty > 1\"\n";
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let out = rocflow(&["validate", "p.toml"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("p.toml:9:"), "{said}");
    assert!(said.contains("the names it can use"), "{said}");
}

#[test]
fn the_report_leads_with_the_findings_linked_to_the_tables() {
    let (_dir, out) = run("analyze-sync-copy.toml");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let findings = html
        .find("<h2 id=\"findings\">Findings</h2>")
        .expect("a findings section");
    let first_other = html.find("<h2").unwrap();
    assert_eq!(findings, first_other, "the findings come first");
    assert!(html.contains("<td><code>sync-copy</code></td>"), "{html}");
    assert!(html.contains("<a href=\"#memory_copies\">hipMemcpy HOST_TO_DEVICE: 50 copies"));
    assert!(html.contains("<h2 id=\"memory_copies\">"));
}

/// A database as rocprofv3 writes it (AMD's schema): a dispatch of 2 or 4 us every
/// 10 us, so its GPU runs kernels 30% of the time, in gaps too short for gpu-idle; no
/// copy a synchronous call made, no launch longer than its kernel, no range that repeats.
#[test]
fn the_rules_run_on_a_database_rocprofv3_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("node_1234_results.db");
    support::rocprofv3_db::write(&db, 1234, "node", 400);
    let found = findings(&db, &[]);
    assert_eq!(
        rules(&found),
        BTreeSet::from(["low-utilization".to_owned()]),
        "{found:#?}"
    );
    assert_eq!(found.len(), 1);
    let statement = found[0]["statement"].as_str().unwrap();
    assert!(
        statement.contains(" ran kernels 30% of the run "),
        "{statement}"
    );
    let run = evidence(&found[0], "span");
    assert_eq!(
        u(&run[0]["end_ns"]) - u(&run[0]["start_ns"]),
        400 * 10_000 - 10_000 + 5_000,
        "{run:?}"
    );
}
