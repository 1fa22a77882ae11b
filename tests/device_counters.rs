//! Device counting end to end: `[context.device_counters]` on the simulated GPUs, every
//! sink's samples held against the scenario's truth, sampling at ROCTx ranges, the
//! permission-denied path, and the pipeline's errors.
//!
//! The truth is `support::truth::device`'s.

use std::collections::BTreeMap;
use std::path::Path;

use support::truth::Scenario;
use support::truth::device::{self, Key};
use support::truth::series::{self, Sampled};
use support::{assert_says, assert_success, csv, duckdb, entries, otf2_print, rocflow, run_on};

/// The MI300X scenario (two GPUs, two threads), paced over 400 ms so that reads come
/// while its kernels run.
fn scenario(extra: &str) -> String {
    let text = std::fs::read_to_string(support::repo().join("examples/sim/mi300x.toml")).unwrap();
    text.replacen(
        "[scenario]\n",
        &format!("[scenario]\nduration_ms = 400\n{extra}"),
        1,
    )
}

const PIPELINE: &str = r#"
[pipeline]
name = "device-counters-test"

[[context]]
name = "kernels"
tracing = ["kernel_dispatch"]

[[context]]
name = "device"

[context.device_counters]
collect = ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
interval = "20ms"
AT

[[sink]]
name = "csv"
kind = "csv"
path = "out/csv"

[[sink]]
name = "parquet"
kind = "parquet"
path = "out/parquet"

[[sink]]
name = "perfetto"
kind = "perfetto"
path = "out/trace.pftrace"

[[sink]]
name = "rocpd"
kind = "rocpd"
path = "out/run.db"

[[sink]]
name = "json"
kind = "json"
path = "out/{pid}_results.json"

[[sink]]
name = "otf2"
kind = "otf2"
path = "out/trace"

[[post]]
name = "report"
kind = "report"
path = "out/report.html"
"#;

/// A pipeline that writes what it reads as CSV tables.
const BACK: &str = r#"
[pipeline]
name = "back"
[[sink]]
name = "csv"
kind = "csv"
path = "back"
records = ["device_counter_sample"]
"#;

/// Runs the pipeline (sampling at `at`) on the scenario with `extra` settings in `dir`.
fn run(dir: &Path, at: &str, extra: &str) -> std::process::Output {
    std::fs::write(dir.join("scenario.toml"), scenario(extra)).unwrap();
    std::fs::write(dir.join("p.toml"), PIPELINE.replace("AT", at)).unwrap();
    run_on(
        "sim:scenario.toml",
        "p.toml",
        &["/bin/sleep", "0.1"],
        dir,
        &[],
    )
}

/// The device samples of the CSV sink that wrote to `dir`.
fn csv_samples(dir: &Path) -> BTreeMap<Key, f64> {
    device::samples(&csv(&dir.join("device_counter_sample.csv")))
}

/// Holds every sample against the truth; returns the number of reads per agent.
#[track_caller]
fn assert_truth(dir: &Path, samples: &BTreeMap<Key, f64>) -> BTreeMap<u32, usize> {
    let truth = Scenario::read(&dir.join("scenario.toml"));
    let ends = device::dispatch_ends(&csv(&dir.join("out/csv/kernel_dispatch.csv")));
    truth.device_reads(samples, &ends).unwrap()
}

#[test]
fn every_output_holds_the_device_samples_the_scenario_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_success(&run(d, "", ""));
    let samples = csv_samples(&d.join("out/csv"));
    let reads = assert_truth(d, &samples);
    // Both GPUs, read every 20 ms of a run of 400 ms and more.
    assert_eq!(reads.keys().copied().collect::<Vec<_>>(), [1, 2]);
    assert!(reads.values().all(|&n| n >= 5), "{reads:?}");

    // Parquet holds the CSV's rows.
    let rows = duckdb(
        d,
        &[
            "SELECT agent, epoch_ns(timestamp_ns), counter, xcc, aid, shader_engine, \
             agent_index, shader_array, wgp, instance, value \
             FROM 'out/parquet/device_counter_sample/*.parquet'",
        ],
    );
    let parquet: BTreeMap<Key, f64> = (rows[0].iter())
        .map(|r| {
            let int = |i: usize| r[i].as_u64().unwrap();
            let coordinates = std::array::from_fn(|c| int(3 + c) as u16);
            let key = (
                int(0) as u32,
                int(1),
                r[2].as_str().unwrap().to_owned(),
                coordinates,
            );
            (key, r[10].as_f64().unwrap())
        })
        .collect();
    assert_eq!(parquet, samples);

    // Per agent, counter and read, the instances summed: the report's plot per GPU and
    // counter (a point per read), Perfetto's counter track per GPU and counter (under the
    // GPU's group), and rocpd's sample per value on a track per agent (a PMC event).
    let sums = series::csv(&csv(&d.join("out/csv/device_counter_sample.csv")));
    assert_eq!(series::report(&d.join("out/report.html")), sums);
    let perfetto = series::perfetto(&[d.join("out/trace.pftrace")], Sampled::Device);
    assert_eq!(perfetto, sums);
    assert_eq!(
        series::rocpd(&[d.join("out/run.db")], Sampled::Device),
        sums
    );

    // JSON and OTF2 have no place for them, and are whole: the document reads, and
    // otf2-print reads the archive without a warning.
    let json = entries(&d.join("out"), |n| n.ends_with("_results.json"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json[0]).unwrap()).unwrap();
    assert!(json.is_object());
    assert!(otf2_print(&[], &d.join("out/trace/traces.otf2")).contains("ENTER"));

    // The rocpd database read back as a source gives the samples again.
    std::fs::write(d.join("back.toml"), BACK).unwrap();
    let replay = rocflow(&["replay", "out/run.db", "back.toml"], d, &[]);
    assert_success(&replay);
    let said = support::text(&replay.stderr);
    assert!(!said.contains("left out"), "{said}");
    assert_eq!(csv_samples(&d.join("back")), samples);
}

/// Derived counters of a device counting context, one of them reduced over two
/// dimensions.
const DERIVED: &str = r#"
[[context.device_counters.derived]]
name = "TOTAL"
expression = "reduce(SQ_WAVES,sum)+2*reduce(GRBM_GUI_ACTIVE,max)"
[[context.device_counters.derived]]
name = "WAVES_X2"
expression = "SQ_WAVES*2"
[[context.device_counters.reduce]]
counters = ["WAVES_X2"]
dimensions = ["DIMENSION_XCC", "DIMENSION_SHADER_ENGINE"]
op = "sum"
"#;

#[test]
fn derived_counters_and_reductions_apply_to_each_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // With a device metric, read beside the counters and passed on as it is.
    let output = run(d, &format!("metrics = [\"power_w\"]\n{DERIVED}"), "");
    assert_success(&output);
    let said = support::text(&output.stderr);
    assert!(!said.contains("arrived"), "{said}");
    let (mut raw, mut derived, mut power) = (BTreeMap::new(), BTreeMap::new(), 0);
    for (key, value) in csv_samples(&d.join("out/csv")) {
        match key.2.as_str() {
            "TOTAL" | "WAVES_X2" => derived.insert(key, value),
            "power_w" => {
                power += 1;
                None
            }
            _ => raw.insert(key, value),
        };
    }
    assert!(power > 0, "no metric passed on");
    // The collected counters are as the scenario gives them.
    let reads = assert_truth(d, &raw);
    assert!(reads.values().all(|&n| n >= 5), "{reads:?}");

    // Per read: the expressions of its collected values, WAVES_X2 summed over the XCCs and
    // shader engines of each of its other coordinates.
    let mut expected: BTreeMap<Key, f64> = BTreeMap::new();
    let mut grbm_max: BTreeMap<(u32, u64), f64> = BTreeMap::new();
    for ((agent, time, counter, coordinates), &value) in &raw {
        let total = (*agent, *time, "TOTAL".to_owned(), [0; 7]);
        if counter == "SQ_WAVES" {
            *expected.entry(total).or_default() += value;
            let mut reduced = *coordinates;
            (reduced[0], reduced[2]) = (0, 0);
            let x2 = (*agent, *time, "WAVES_X2".to_owned(), reduced);
            *expected.entry(x2).or_default() += 2.0 * value;
        } else {
            let max = grbm_max.entry((*agent, *time)).or_insert(f64::MIN);
            *max = max.max(value);
        }
    }
    for ((agent, time), max) in grbm_max {
        *expected
            .get_mut(&(agent, time, "TOTAL".to_owned(), [0; 7]))
            .unwrap() += 2.0 * max;
    }
    assert!(
        derived.values().any(|&v| v > 0.0),
        "every derived value is 0"
    );
    assert_eq!(derived, expected);

    // The plan says so: the reads gathered, then reduced.
    let explained = rocflow(&["explain", "p.toml"], d, &[]);
    assert_says(
        &explained.stdout,
        "device/reads on device_counter_sample: each dispatch's or read's values of SQ_WAVES, GRBM_GUI_ACTIVE together; derive TOTAL = ",
    );
    assert_says(
        &explained.stdout,
        "device/reduce[0] on device_counter_sample",
    );
}

#[test]
fn a_device_is_read_at_every_roctx_range_push_and_pop() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An interval longer than the run: one read as sampling starts, the others at ranges.
    let at = "at = \"markers\"";
    let pipeline = PIPELINE.replace("interval = \"20ms\"", "interval = \"10min\"");
    std::fs::write(d.join("scenario.toml"), scenario("")).unwrap();
    std::fs::write(d.join("p.toml"), pipeline.replace("AT", at)).unwrap();
    assert_success(&run_on(
        "sim:scenario.toml",
        "p.toml",
        &["/bin/sleep", "0.1"],
        d,
        &[],
    ));
    let reads = assert_truth(d, &csv_samples(&d.join("out/csv")));
    let truth = Scenario::read(&d.join("scenario.toml"));
    // A push and a pop around each iteration of each thread, and the interval's first
    // read if it came after the SDK started the context.
    let ranges = (2 * truth.threads * truth.iterations) as usize;
    assert_eq!(reads.keys().copied().collect::<Vec<_>>(), [1, 2]);
    for (agent, n) in reads {
        assert!(
            n == ranges || n == ranges + 1,
            "agent {agent}: {n} reads, {ranges} ranges"
        );
    }
}

#[test]
fn a_process_without_cap_perfmon_is_told_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let output = run(d, "", "deny_perfmon = true\n");
    // The other context still collects.
    assert_success(&output);
    assert_says(&output.stderr, "context `device`");
    assert_says(&output.stderr, "CAP_PERFMON");
    assert_says(&output.stderr, "setcap cap_perfmon+ep");
    assert!(!csv(&d.join("out/csv/kernel_dispatch.csv")).is_empty());
    assert!(!d.join("out/csv/device_counter_sample.csv").exists());
}

#[test]
fn explain_says_what_is_read_and_when() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.toml"), PIPELINE.replace("AT", "at = \"markers\"")).unwrap();
    let output = rocflow(&["explain", "p.toml"], d, &[]);
    assert_success(&output);
    assert_says(
        &output.stdout,
        "device counting on the context's agents: SQ_WAVES, GRBM_GUI_ACTIVE, read every 20ms and at every ROCTx range push and pop",
    );
}

/// `rocflow validate` on `pipeline` (with `defs.yaml` beside it): exit code 2 and one
/// error, with `message`, at `at` (line:col) of p.toml.
#[track_caller]
fn rejects(pipeline: &str, message: &str, at: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("defs.yaml"), GRBM_DEFINITIONS).unwrap();
    std::fs::write(d.join("p.toml"), pipeline).unwrap();
    let output = rocflow(&["validate", "p.toml"], d, &[]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        support::text(&output.stderr)
    );
    assert_says(&output.stderr, message);
    assert_says(&output.stderr, &format!("p.toml:{at}"));
}

/// Three GRBM counters of gfx942, whose GRBM block counts two at once.
const GRBM_DEFINITIONS: &str = "schema-version: 1
GRBM_COUNT:
  architectures:
    gfx942:
      block: GRBM
      event: 0
  description: x
GRBM_CP_BUSY:
  architectures:
    gfx942:
      block: GRBM
      event: 1
  description: x
GRBM_GUI_ACTIVE:
  architectures:
    gfx942:
      block: GRBM
      event: 2
  description: x
";

const HEAD: &str = "[pipeline]\nname = \"bad\"\n[[context]]\nname = \"device\"\n";

#[test]
fn counters_that_need_two_passes_are_refused() {
    rejects(
        &format!(
            "{HEAD}[context.device_counters]\ndefinitions = \"defs.yaml\"\n\
             collect = [\"GRBM_COUNT\", \"GRBM_CP_BUSY\", \"GRBM_GUI_ACTIVE\"]\n"
        ),
        "these counters need 2 passes; a device is sampled in one",
        "7:",
    );
}

#[test]
fn device_and_dispatch_counting_in_one_context_is_refused() {
    rejects(
        &format!(
            "{HEAD}[context.counters]\ncollect = [\"SQ_WAVES\"]\n\
             [context.device_counters]\ncollect = [\"SQ_WAVES\"]\n"
        ),
        "does not count dispatches in the same context",
        "5:",
    );
}

#[test]
fn a_zero_interval_is_refused() {
    rejects(
        &format!("{HEAD}[context.device_counters]\ncollect = [\"SQ_WAVES\"]\ninterval = \"0ms\"\n"),
        "device counters cannot be read every 0 s",
        "7:12",
    );
}

#[test]
fn an_unknown_sampling_moment_is_refused() {
    rejects(
        &format!("{HEAD}[context.device_counters]\ncollect = [\"SQ_WAVES\"]\nat = \"kernels\"\n"),
        "kernels",
        "7:6",
    );
}

#[test]
fn a_read_larger_than_the_tools_first_room_is_read_whole() {
    // 8 x 32 x 20 = 5120 values of one counter per read: more than the tool makes room
    // for at first, which the SDK says; the read is made again with room for them all.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let big = "[[agent.counter]]\nname = \"SQ_BUSY_CYCLES\"\n\
               dimensions = [[\"DIMENSION_XCC\", 8], [\"DIMENSION_SHADER_ENGINE\", 32], \
               [\"DIMENSION_INSTANCE\", 20]]\n";
    let scenario = scenario("").replacen(
        "[[agent.counter]]\n",
        &format!("{big}[[agent.counter]]\n"),
        1,
    );
    std::fs::write(d.join("scenario.toml"), scenario).unwrap();
    let pipeline = PIPELINE
        .replace("\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"", "\"SQ_BUSY_CYCLES\"")
        .replace("AT", "agents = [\"gfx942\"]");
    std::fs::write(d.join("p.toml"), pipeline).unwrap();
    assert_success(&run_on(
        "sim:scenario.toml",
        "p.toml",
        &["/bin/sleep", "0.1"],
        d,
        &[],
    ));
    let samples = csv_samples(&d.join("out/csv"));
    let reads = assert_truth(d, &samples);
    // How many reads a loaded machine makes in the paced run varies; each is whole.
    assert!(reads[&1] >= 1, "{reads:?}");
    let mut per_read: BTreeMap<u64, usize> = BTreeMap::new();
    for (_, time, _, _) in samples.keys() {
        *per_read.entry(*time).or_default() += 1;
    }
    assert!(per_read.values().all(|&n| n == 5120), "{per_read:?}");
}

#[test]
fn a_forked_child_leaves_reading_the_devices_to_its_parent() {
    // Each child replays the scenario, ROCTx ranges and all; the devices are the parent's
    // to read, and a child's ranges read nothing (its copy of the sampler has no thread).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("scenario.toml"), scenario("")).unwrap();
    // A database per process.
    let pipeline = PIPELINE.replace("out/run.db", "out/{pid}.db");
    std::fs::write(d.join("p.toml"), pipeline.replace("AT", "at = \"markers\"")).unwrap();
    let app = support::sim_app();
    let app = [app.to_str().unwrap(), "fork", "3"];
    assert_success(&run_on("sim:scenario.toml", "p.toml", &app, d, &[]));
    let pids = |table: &str| -> std::collections::BTreeSet<String> {
        let rows = csv(&d.join(format!("out/csv/{table}.csv")));
        rows.into_iter().map(|r| r["pid"].clone()).collect()
    };
    assert_eq!(
        pids("kernel_dispatch").len(),
        4,
        "the parent and three children"
    );
    let readers = pids("device_counter_sample");
    assert_eq!(readers.len(), 1, "{readers:?}");
    let reads = csv_samples(&d.join("out/csv"));
    assert!(!reads.is_empty());
}

/// AMD-SMI's metrics, read with the counters: each GPU's value of each metric is one its
/// scenario gives (idle or busy), read at the moment of the counters' read, every read.
#[test]
fn amd_smi_metrics_are_read_with_the_counters_of_each_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names = [
        "power_w",
        "temperature_c",
        "gfx_clock_mhz",
        "mem_clock_mhz",
        "gfx_busy_percent",
        "mem_busy_percent",
        "vram_used_bytes",
    ];
    let metrics = format!("metrics = {names:?}");
    assert_success(&run(d, &metrics, ""));
    let explained = rocflow(&["explain", "p.toml"], d, &[]);
    assert_says(
        &explained.stdout,
        &format!("with each read, through AMD-SMI: {}", names.join(", ")),
    );
    // What the scenario gives each GPU (in agent order after the CPU): idle and busy.
    let scenario: toml::Table = toml::from_str(&scenario("")).unwrap();
    let gpus = scenario["agent"].as_array().unwrap();
    let given = |gpu: usize, metric: &str| -> Vec<f64> {
        let smi = gpus[gpu]["smi"].as_table().unwrap();
        match (metric, smi.get(metric)) {
            ("gfx_busy_percent", None) => vec![0.0, 100.0],
            (_, Some(toml::Value::Array(pair))) => pair
                .iter()
                .map(|v| v.as_integer().unwrap() as f64)
                .collect(),
            (_, Some(v)) => vec![v.as_integer().unwrap() as f64],
            (_, None) => panic!("the scenario gives no {metric}"),
        }
    };
    let samples = csv_samples(&d.join("out/csv"));
    let mut reads: BTreeMap<(u32, String), std::collections::BTreeSet<u64>> = BTreeMap::new();
    for ((agent, at, counter, coordinates), value) in &samples {
        reads
            .entry((*agent, counter.clone()))
            .or_default()
            .insert(*at);
        if let Some(metric) = names.iter().find(|n| **n == counter) {
            assert_eq!(coordinates, &[0; 7], "{metric} has one instance");
            let gpu = *agent as usize - 1;
            assert!(
                given(gpu, metric).contains(value),
                "agent {agent}'s {metric} is {value}, not one of {:?}",
                given(gpu, metric)
            );
        }
    }
    for agent in [1, 2] {
        let counted = &reads[&(agent, "SQ_WAVES".to_owned())];
        assert!(!counted.is_empty(), "agent {agent} was never read");
        for metric in names {
            let read = &reads[&(agent, metric.to_owned())];
            // Every read of the counters reads the metrics too (a read can also come
            // before the GPU has counted anything, with metrics and no counter value).
            assert!(
                counted.is_subset(read),
                "agent {agent}'s {metric} is read with its counters: {read:?} {counted:?}"
            );
        }
    }
    // The database keeps each GPU's metrics apart: read back, it gives every sample.
    std::fs::write(d.join("back.toml"), BACK).unwrap();
    assert_success(&rocflow(&["replay", "out/run.db", "back.toml"], d, &[]));
    assert_eq!(csv_samples(&d.join("back")), samples);
    // Idle most of the paced run: the idle power is among the readings.
    let idle = given(0, "power_w")[0];
    assert!(
        (samples.iter()).any(|((a, _, c, _), v)| *a == 1 && c == "power_w" && *v == idle),
        "agent 1 never read idle"
    );
}
