//! `rocflow analyze`'s rules over kernels' counters and across ranks on the simulated
//! device, as users run them: each finds the kernel its scenario
//! (`examples/sim/analyze-RULE.toml`) gives the pattern, with the scenario's numbers as
//! evidence, from the spool and from the run's rocpd databases alike; none finds anything
//! on its clean scenario or on any other shipped scenario.

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{assert_success, repo, rocflow, sim_scenarios};

/// The counter rules.
const RULES: [&str; 4] = [
    "low-occupancy",
    "valu-utilization",
    "memory-bound",
    "atomic-contention",
];

/// What the scenarios' GPUs count for the counter rules (and `counters-basic`'s derived
/// counter needs).
const COUNTERS: &str = r#"counters=["SQ_WAVES", "SQ_INSTS_VALU", "OccupancyPercent",
    "VALUUtilization", "VALUBusy", "MemUnitBusy", "TCC_HIT", "TCC_MISS",
    "SerializedAtomicRatio"]"#;

/// The run of `counters-basic` (collecting `counters`) on `scenario`, in a fresh
/// directory: its `out` folder.
fn run(scenario: &Path, counters: &str) -> (tempfile::TempDir, PathBuf) {
    run_app(
        scenario,
        &["counters-basic", "--set", counters],
        &["/bin/true"],
    )
}

/// The run of `pipeline` (and its arguments) on `scenario` of `app`, in a fresh directory:
/// its `out` folder.
fn run_app(scenario: &Path, pipeline: &[&str], app: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let device = format!("sim:{}", scenario.display());
    let out = dir.path().join("out");
    let mut args = vec!["run"];
    args.extend_from_slice(pipeline);
    args.extend(["--device", &device, "-q", "-d", out.to_str().unwrap(), "--"]);
    args.extend_from_slice(app);
    assert_success(&rocflow(&args, dir.path(), &[]));
    (dir, out)
}

/// The rocpd databases of the run in `out`.
fn databases(out: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    found.sort();
    found
}

/// The counter rules' findings on `inputs`, as JSON.
fn findings(inputs: &[&Path]) -> Vec<Value> {
    findings_of(inputs, &RULES)
}

/// The findings of `rules` on `inputs`, as JSON.
fn findings_of(inputs: &[&Path], rules: &[&str]) -> Vec<Value> {
    let mut args = vec!["analyze", "--format", "json"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(rules.iter().flat_map(|r| ["--rule", r]));
    let out = rocflow(&args, Path::new("."), &[]);
    assert_success(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"].as_array().unwrap().clone()
}

/// A pipeline collecting counters `NAMES` of every dispatch.
const ALL_COUNTERS: &str = r#"
[pipeline]
name = "all-counters"
extends = ["base"]
[[context]]
name = "counters"
tracing = ["kernel_dispatch"]
[context.counters]
collect = NAMES
"#;

fn scenario(name: &str) -> PathBuf {
    repo().join("examples/sim").join(name)
}

/// A rule's case: its id, the counters its scenario gives `_Z6updatePfPKfi`, and what its
/// statement says.
type Case = (&'static str, &'static [(&'static str, f64)], &'static str);

#[test]
fn each_counter_rule_finds_its_kernel_with_the_counters_behind_it() {
    let cases: [Case; 4] = [
        (
            "low-occupancy",
            &[("OccupancyPercent", 6.0)],
            "6.0% occupancy over 50 dispatches",
        ),
        (
            "valu-utilization",
            &[("VALUUtilization", 21.0), ("VALUBusy", 71.0)],
            "21.0% of their lanes",
        ),
        (
            "memory-bound",
            &[
                ("MemUnitBusy", 93.0),
                ("VALUBusy", 12.0),
                ("TCC_HIT", 2e6),
                ("TCC_MISS", 8e6),
            ],
            "busy 93.0% of its time, its VALU 12.0%, L2 hit rate 20.0%",
        ),
        (
            "atomic-contention",
            &[("SerializedAtomicRatio", 0.42)],
            "42% of their cycles",
        ),
    ];
    for (rule, counters, says) in cases {
        let (_dir, out) = run(&scenario(&format!("analyze-{rule}.toml")), COUNTERS);
        let spool = findings(&[&out]);
        assert_eq!(spool.len(), 1, "{rule}: {spool:#?}");
        let f = &spool[0];
        assert_eq!(f["rule"], rule);
        assert_eq!(f["severity"], "warning", "{f:#}");
        let statement = f["statement"].as_str().unwrap();
        assert!(
            statement.contains("update(float*, float const*, int)"),
            "{statement}"
        );
        assert!(statement.contains(says), "{rule}: {statement}");
        let evidence = f["evidence"].as_array().unwrap();
        let kernel = evidence.iter().find(|e| e["type"] == "kernel").unwrap();
        assert_eq!(kernel["dispatches"], 50, "{f:#}");
        assert_eq!(kernel["total_ns"], 50 * 1_000_000, "{f:#}");
        for &(counter, value) in counters {
            let shown = evidence
                .iter()
                .find(|e| e["type"] == "counter" && e["counter"] == counter)
                .unwrap_or_else(|| panic!("{rule}: no {counter} in {f:#}"));
            let shown = shown["value"].as_f64().unwrap();
            assert!(
                (shown - value).abs() <= 1e-9 * value,
                "{rule}: {counter} {shown}"
            );
        }
        // The run's rocpd database gives the spool's findings.
        let databases = databases(&out);
        assert_eq!(databases.len(), 1, "{databases:?}");
        assert_eq!(findings(&[&databases[0]]), spool, "{rule}");
    }
}

#[test]
fn no_counter_rule_finds_anything_on_the_clean_or_a_shipped_scenario() {
    let (_dir, out) = run(&scenario("analyze-counters-clean.toml"), COUNTERS);
    assert_eq!(findings(&[&out]), Vec::<Value>::new());
    // The other shipped scenarios, with every counter their GPUs have.
    let shipped = sim_scenarios().into_iter().filter(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.starts_with("analyze-")
    });
    for scenario in shipped {
        let text = std::fs::read_to_string(&scenario).unwrap();
        let mut names: Vec<&str> = (text.split("[[agent.counter]]").skip(1))
            .filter_map(|table| table.trim().strip_prefix("name = \""))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert!(!names.is_empty(), "{}", scenario.display());
        let dir = tempfile::tempdir().unwrap();
        let pipeline = dir.path().join("all-counters.toml");
        let collect = format!("{names:?}");
        std::fs::write(&pipeline, ALL_COUNTERS.replace("NAMES", &collect)).unwrap();
        let (_dir, out) = run_app(&scenario, &[pipeline.to_str().unwrap()], &["/bin/true"]);
        assert_eq!(
            findings(&[&out]),
            Vec::<Value>::new(),
            "{}",
            scenario.display()
        );
    }
}

/// Four MPI ranks, each a process of the simulated application.
const RANKS: &str =
    "for r in 0 1 2 3; do OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=4 /bin/true & done; wait";

#[test]
fn rank_imbalance_names_the_slow_rank_and_every_ranks_time() {
    let scenario = scenario("analyze-rank-imbalance.toml");
    let (_dir, out) = run_app(&scenario, &["trace-all"], &["sh", "-c", RANKS]);
    let spool = findings_of(&[&out], &["rank-imbalance"]);
    assert_eq!(spool.len(), 1, "{spool:#?}");
    let f = &spool[0];
    assert_eq!(f["severity"], "warning", "{f:#}");
    let statement = f["statement"].as_str().unwrap();
    assert!(
        statement.starts_with("kernel update(float*, float const*, int) took 80.0 ms on rank 2, 60% longer than the median 50.0 ms of 4 processes"),
        "{statement}"
    );
    assert_eq!(f["at_stake_ns"], 30_000_000);
    let ranks: Vec<(u64, f64)> = (f["evidence"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "rank")
        .map(|e| (e["rank"].as_u64().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(ranks, [(2, 8e7), (0, 5e7), (1, 5e7), (3, 5e7)]);
    // The ranks' databases, given together, say the same.
    let databases = databases(&out);
    // The shell's and the four ranks'.
    assert_eq!(databases.len(), 5, "{databases:?}");
    let inputs: Vec<&Path> = databases.iter().map(PathBuf::as_path).collect();
    assert_eq!(findings_of(&inputs, &["rank-imbalance"]), spool);
}

#[test]
fn balanced_ranks_and_single_processes_give_no_rank_imbalance() {
    // Without the launcher's variables, each process replays the clean scenario.
    let scenario = scenario("analyze-rank-imbalance.toml");
    let app = RANKS.replace("OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=4 ", "");
    let (_dir, out) = run_app(&scenario, &["trace-all"], &["sh", "-c", &app]);
    assert_eq!(databases(&out).len(), 5);
    assert_eq!(
        findings_of(&[&out], &["rank-imbalance"]),
        Vec::<Value>::new()
    );
    for scenario in sim_scenarios() {
        let (_dir, out) = run_app(&scenario, &["trace-all"], &["/bin/true"]);
        let found = findings_of(&[&out], &["rank-imbalance"]);
        assert_eq!(found, Vec::<Value>::new(), "{}", scenario.display());
    }
}
