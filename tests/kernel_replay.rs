//! Kernel replay end to end: counters of several passes in one run of the application on
//! the simulated SDK, which runs each dispatch once per pass as rocprofiler-sdk 1.4.1
//! does; the SDKs without it refuse the pipeline, naming the release that has it.

use std::collections::BTreeSet;

use support::{assert_says, assert_success, rocflow, text};

use crate::passes::{assert_every_counter_of_every_dispatch, run, setup};

#[test]
fn each_dispatch_is_replayed_per_pass_in_one_run_of_the_application() {
    let dir = setup("replay = \"kernel\"");
    let explained = rocflow(&["explain", "p.toml"], dir.path(), &[]);
    assert_success(&explained);
    let explained = text(&explained.stdout);
    assert_says(&explained, "1 run: each dispatch replayed 3 passes");
    assert!(
        !explained.contains("the application runs once per pass"),
        "{explained}"
    );
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("merged"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // Every counter of every pass, on each of the run's 6 dispatches, none twice.
    assert_every_counter_of_every_dispatch(&dir.path().join("out"));
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    assert_success(&inspect);
    let inspected: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let processes = inspected["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1, "one run: {inspected}");
}

#[test]
fn an_sdk_older_than_1_4_1_refuses_kernel_replay_before_the_application_starts() {
    let dir = setup("replay = \"kernel\"");
    let scenario = dir.path().join("scenario.toml");
    let older = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("[scenario]\n", "[scenario]\nsdk_version = \"1.3.5\"\n");
    std::fs::write(&scenario, older).unwrap();
    let output = run(dir.path(), &["/bin/sh", "-c", "touch ran"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert_says(
        &output.stderr,
        "context `counters` replays each dispatch for its counter passes, which rocprofiler-sdk 1.4.1 (ROCm 10.1) added; the rocprofiler-sdk in use is 1.3.5",
    );
    assert_says(&output.stderr, "leave `replay = \"kernel\"` out");
    assert!(!dir.path().join("ran").exists(), "the application ran");
    assert!(!dir.path().join("out").exists(), "outputs were written");
}

#[test]
fn rocprofv3s_kernel_replay_options_need_the_beta_and_counters_alone() {
    let dir = tempfile::tempdir().unwrap();
    let explain = |args: &[&str]| {
        let mut all = vec!["explain"];
        all.extend_from_slice(args);
        rocflow(&all, dir.path(), &[])
    };
    let refused = |args: &[&str], message: &str| {
        let output = explain(args);
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert_says(&output.stderr, message);
    };
    refused(
        &["--pmc", "SQ_WAVES", "--replay-mode", "kernel"],
        "kernel replay is a beta of rocprofiler-sdk: it needs `kernel_replay_beta_enabled`",
    );
    refused(
        &[
            "--kernel-trace",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
        ],
        "kernel replay runs the passes of counters, and this job collects none",
    );
    refused(
        &["--pmc", "SQ_WAVES", "--kernel-replay-beta-enabled", "--att"],
        "kernel replay runs each dispatch once per pass, which thread trace cannot share",
    );
    // An input file's keys are the options' names.
    let imported = |job: &str| {
        std::fs::write(
            dir.path().join("input.yaml"),
            format!("jobs:\n  - pmc: [SQ_WAVES]\n{job}"),
        )
        .unwrap();
        let output = rocflow(&["import-rocprofv3", "input.yaml"], dir.path(), &[]);
        assert_success(&output);
        text(&output.stdout)
    };
    let replays = "replay = \"kernel\"";
    for job in [
        "    replay_mode: kernel\n    kernel_replay_beta_enabled: true\n",
        "    kernel_replay_beta_enabled: true\n",
    ] {
        assert_says(imported(job), replays);
    }
    let application = imported("    replay_mode: application\n");
    assert!(!application.contains("replay = "), "{application}");
}

#[test]
fn a_replayed_dispatch_counts_once_toward_the_iteration_ranges() {
    // Each kernel runs 3 times; its second dispatch is counted, in every pass.
    let dir = setup("replay = \"kernel\"\niterations = \"[2]\"");
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    let out = dir.path().join("out");
    let mut dispatches = support::csv(&out.join("kernel_dispatch.csv"));
    assert_eq!(dispatches.len(), 6);
    dispatches.sort_by_key(|d| d["dispatch_id"].parse::<u64>().unwrap());
    let mut second: Vec<&str> = Vec::new();
    for kernel in ["gemm", "reduce"] {
        let of: Vec<&str> = (dispatches.iter())
            .filter(|d| d["kernel_name"] == kernel)
            .map(|d| d["dispatch_id"].as_str())
            .collect();
        assert_eq!(of.len(), 3, "{dispatches:?}");
        second.push(of[1]);
    }
    second.sort_unstable();
    let samples = support::csv(&out.join("counter_sample.csv"));
    let mut counted: Vec<&str> = samples.iter().map(|s| s["dispatch_id"].as_str()).collect();
    counted.sort_unstable();
    counted.dedup();
    assert_eq!(counted, second);
    // 40 counters of 8 values each, from all 3 passes.
    assert_eq!(samples.len(), 2 * 40 * 8);
}

/// The SDK writes a dispatch record and a set of counter values for every pass, all with
/// the dispatch's id, each with its pass's times (the simulated SDK's passes run 6 us
/// apart, the last at the dispatch's own time, as the application's completion follows
/// it). Every output holds each dispatch once, as the application ran it: its last pass's
/// record, the others counted, and its values of every pass with that pass's end.
#[test]
fn a_replayed_dispatch_is_traced_once_by_the_application_s_pass_and_the_others_counted() {
    let dir = setup("replay = \"kernel\"");
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    // 6 dispatches of 3 passes: 2 passes' records of each left out, and said so.
    assert_says(
        [output.stdout.as_slice(), &output.stderr].concat(),
        "replayed passes: 12 dispatch records",
    );
    let out = dir.path().join("out");
    let mut dispatches = support::csv(&out.join("kernel_dispatch.csv"));
    assert_eq!(dispatches.len(), 6, "{dispatches:?}");
    let num = |row: &std::collections::BTreeMap<String, String>, column: &str| {
        row[column].parse::<u64>().unwrap()
    };
    dispatches.sort_by_key(|d| num(d, "dispatch_id"));
    let mut ids: Vec<u64> = dispatches.iter().map(|d| num(d, "dispatch_id")).collect();
    ids.dedup();
    assert_eq!(ids.len(), 6, "each dispatch once: {dispatches:?}");
    // The application's executions follow one another on the queue; an earlier pass of a
    // dispatch runs before the one ahead of it ended.
    for pair in dispatches.windows(2) {
        assert!(
            num(&pair[1], "start_ns") >= num(&pair[0], "end_ns"),
            "{pair:?}"
        );
    }
    for d in &dispatches {
        assert_eq!(num(d, "duration_ns"), 1000, "{d:?}");
    }
    // Every value of a dispatch, whichever pass counted it, has the kept pass's end.
    let end: std::collections::BTreeMap<u64, u64> = (dispatches.iter())
        .map(|d| (num(d, "dispatch_id"), num(d, "end_ns")))
        .collect();
    let samples = support::csv(&out.join("counter_sample.csv"));
    assert_eq!(samples.len(), 6 * 40 * 8);
    for s in &samples {
        assert_eq!(num(s, "timestamp_ns"), end[&num(s, "dispatch_id")], "{s:?}");
    }
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    assert_success(&inspect);
    let inspected: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(
        inspected["processes"][0]["replayed_passes"], 12,
        "{inspected}"
    );
    assert_eq!(inspected["records"]["kernel_dispatch"], 6, "{inspected}");
}

/// The SDK replays single-packet dispatches outside HIP graph launches only: a graph's
/// dispatches run once, on the ordinary path, so they are counted by the first pass alone
/// (the tool is never asked for their passes), and the SDK warns once. rocflow says once
/// how many dispatches of which kernels were not replayed and the counters they lack,
/// counts them in the run's report and `inspect`, and its outputs hold none of those
/// counters' values for them.
#[test]
fn a_graph_launch_s_dispatches_are_not_replayed() {
    let dir = setup("replay = \"kernel\"");
    let scenario = dir.path().join("scenario.toml");
    let graphed = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("name = \"reduce\"\n", "name = \"reduce\"\ngraph = 1\n");
    std::fs::write(&scenario, graphed).unwrap();
    let pipeline = dir.path().join("p.toml");
    let mut with_parquet = std::fs::read_to_string(&pipeline).unwrap();
    with_parquet.push_str("[[sink]]\nname = \"parquet\"\nkind = \"parquet\"\npath = \"pq\"\n");
    std::fs::write(&pipeline, with_parquet).unwrap();
    let explained = rocflow(&["explain", "p.toml"], dir.path(), &[]);
    assert_success(&explained);
    let explained = text(&explained.stdout);
    let pass = |n: usize| -> BTreeSet<String> {
        (explained.lines())
            .find_map(|l| {
                l.trim()
                    .strip_prefix(&format!("pass {n}: "))
                    .map(str::to_owned)
            })
            .unwrap()
            .split(", ")
            .map(str::to_owned)
            .collect()
    };
    let first_pass = pass(1);
    let later: BTreeSet<String> = pass(2).into_iter().chain(pass(3)).collect();
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    let warned = "kernel replay does not replay the dispatches of a HIP graph launch";
    assert_eq!(stderr.matches(warned).count(), 1, "{stderr}");
    // rocflow's own warning, once, with the count, the kernel, why, and every counter of
    // the later passes.
    let said = "kernel replay did not replay 3 dispatches (3 of `reduce`): the SDK replays only single-packet dispatches outside HIP graph launches";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    let warning = stderr.lines().find(|l| l.contains(said)).unwrap();
    for counter in &later {
        assert!(
            warning.contains(&format!("`{counter}`")),
            "{counter}: {warning}"
        );
    }
    for counter in &first_pass {
        assert!(
            !warning.contains(&format!("`{counter}`")),
            "{counter}: {warning}"
        );
    }
    // The 3 dispatches of gemm are replayed in 3 passes, reduce's 3 launches are not.
    let report = [output.stdout.as_slice(), &output.stderr].concat();
    assert_says(&report, "replayed passes: 6 dispatch records");
    assert_says(
        &report,
        "not replayed: 3 dispatches, with the first pass's counters only",
    );
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    assert_success(&inspect);
    let inspected: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(
        inspected["processes"][0]["unreplayed_dispatches"], 3,
        "{inspected}"
    );
    let inspect = rocflow(&["inspect", "rocflow-out/last.rfraw"], dir.path(), &[]);
    assert_success(&inspect);
    assert_says(&inspect.stdout, "not replayed: 3 dispatches");
    let out = dir.path().join("out");
    let dispatches = support::csv(&out.join("kernel_dispatch.csv"));
    assert_eq!(dispatches.len(), 6, "{dispatches:?}");
    let csv: Vec<(String, String)> = (support::csv(&out.join("counter_sample.csv")).into_iter())
        .map(|s| (s["dispatch_id"].clone(), s["counter"].clone()))
        .collect();
    let parquet = parquet_samples(&support::only(&dir.path().join("pq"), "counter_sample"));
    for samples in [csv, parquet] {
        for kernel in ["gemm", "reduce"] {
            let ids: BTreeSet<&str> = (dispatches.iter())
                .filter(|d| d["kernel_name"] == kernel)
                .map(|d| d["dispatch_id"].as_str())
                .collect();
            assert_eq!(ids.len(), 3, "{dispatches:?}");
            let of: Vec<_> = (samples.iter())
                .filter(|(id, _)| ids.contains(id.as_str()))
                .collect();
            let counters: BTreeSet<String> = of.iter().map(|(_, c)| c.clone()).collect();
            match kernel {
                "gemm" => assert_eq!((of.len(), counters.len()), (3 * 40 * 8, 40)),
                // The later passes' counters are absent, not zero.
                _ => {
                    assert_eq!(of.len(), 3 * first_pass.len() * 8);
                    assert_eq!(counters, first_pass);
                }
            }
        }
    }
}

/// Each counter sample of a Parquet file as (dispatch id, counter).
fn parquet_samples(path: &std::path::Path) -> Vec<(String, String)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    (reader.get_row_iter(None).unwrap())
        .map(|row| {
            let row = row.unwrap();
            let column = |name: &str| match row.get_column_iter().find(|(n, _)| *n == name) {
                Some((_, Field::Str(value))) => value.clone(),
                Some((_, value)) => value.to_string(),
                None => panic!("no column {name} in {}", path.display()),
            };
            (column("dispatch_id"), column("counter"))
        })
        .collect()
}
