//! SPM end to end: `[context.spm]` on the simulated GPUs, every sink's samples held against
//! the scenario's truth (a dispatch's samples of a counter add up to what dispatch counting
//! gives it), the rocpd database read back, an SDK without SPM, SPM's beta turned off, and
//! the pipeline's errors.
//!
//! The truth is `support::truth::spm`'s.

use std::collections::BTreeMap;
use std::path::Path;

use support::truth::Scenario;
use support::truth::series::{self, Sampled};
use support::truth::spm::{self, Streamed};
use support::{assert_says, assert_success, csv, duckdb, rocflow, run_on};

const COUNTERS: [&str; 2] = ["SQ_WAVES", "GRBM_GUI_ACTIVE"];

const PIPELINE: &str = r#"
[pipeline]
name = "spm-test"

[[context]]
name = "kernels"
tracing = ["kernel_dispatch"]

[[context]]
name = "spm"

[context.spm]
collect = ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
interval = 4096

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
"#;

/// A pipeline that writes what it reads as CSV tables.
const BACK: &str = r#"
[pipeline]
name = "back"
[[sink]]
name = "csv"
kind = "csv"
path = "back"
records = ["spm_sample"]
"#;

/// The MI300X scenario, with `extra` in its `[scenario]`.
fn scenario(extra: &str) -> String {
    let text = std::fs::read_to_string(support::repo().join("examples/sim/mi300x.toml")).unwrap();
    text.replacen("[scenario]\n", &format!("[scenario]\n{extra}"), 1)
}

/// Runs `pipeline` on the MI300X scenario, with `extra` in its `[scenario]`, in `dir`.
fn run(dir: &Path, pipeline: &str, extra: &str, env: &[(&str, &Path)]) -> std::process::Output {
    run_on_scenario(dir, pipeline, &scenario(extra), env)
}

/// Runs `pipeline` on the scenario `text` in `dir`.
fn run_on_scenario(
    dir: &Path,
    pipeline: &str,
    text: &str,
    env: &[(&str, &Path)],
) -> std::process::Output {
    std::fs::write(dir.join("scenario.toml"), text).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline).unwrap();
    run_on("sim:scenario.toml", "p.toml", &["/bin/true"], dir, env)
}

#[test]
fn every_output_holds_the_spm_samples_the_scenario_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_success(&run(d, PIPELINE, "", &[]));
    let rows = csv(&d.join("out/csv/spm_sample.csv"));
    let dispatches = spm::dispatches(&csv(&d.join("out/csv/kernel_dispatch.csv")));
    let streamed = spm::streamed(&rows);
    let truth = Scenario::read(&d.join("scenario.toml"));
    let samples = truth.spm_truth(&streamed, &dispatches, &COUNTERS).unwrap();
    assert_eq!(samples, rows.len());
    // A time series: more than one sample of a place in a dispatch.
    assert!(
        streamed.values().any(|s| s.times.len() > 1),
        "one sample each"
    );
    // Each names its dispatch's kernel.
    assert!(rows.iter().all(|r| !r["kernel_name"].is_empty()));

    // Parquet holds the CSV's samples.
    let parquet = duckdb(
        d,
        &["SELECT count(*), sum(value), count(DISTINCT dispatch_id) \
           FROM 'out/parquet/spm_sample/*.parquet'"],
    );
    let total: f64 = streamed.values().map(|s| s.sum).sum();
    assert_eq!(parquet[0][0][0].as_u64(), Some(rows.len() as u64));
    assert_eq!(parquet[0][0][1].as_f64(), Some(total));
    assert_eq!(parquet[0][0][2].as_u64(), Some(dispatches.len() as u64));

    // Perfetto: a counter track per GPU and counter, under the GPU's group, a value per
    // sample time, the places summed; rocpd: a sample per value on a track per agent, its
    // value a PMC event.
    let sums = series::csv(&rows);
    let perfetto = series::perfetto(&[d.join("out/trace.pftrace")], Sampled::Spm);
    assert_eq!(series::differences(&sums, &perfetto), None);
    let rocpd = series::rocpd(&[d.join("out/run.db")], Sampled::Spm);
    assert_eq!(series::differences(&sums, &rocpd), None);

    // The rocpd database read back as a source gives the samples again, each at its
    // dispatch and place.
    std::fs::write(d.join("back.toml"), BACK).unwrap();
    let replay = rocflow(&["replay", "out/run.db", "back.toml"], d, &[]);
    assert_success(&replay);
    let back = csv(&d.join("back/spm_sample.csv"));
    let back: BTreeMap<spm::Key, Streamed> = spm::streamed(&back);
    assert_eq!(back, streamed);
}

#[test]
fn a_kernel_filter_streams_only_its_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = PIPELINE.replace(
        "interval = 4096",
        "interval = 4096\nkernels = { include = \"vectorAdd\" }\niterations = \"[2-3]\"",
    );
    // One thread: the iterations are counted in the order the SDK sees the dispatches, which
    // is the order of their ids only when one thread dispatches.
    let one_thread = scenario("").replace("threads = 2", "threads = 1");
    assert_success(&run_on_scenario(d, &pipeline, &one_thread, &[]));
    let kernels = csv(&d.join("out/csv/kernel_dispatch.csv"));
    // The second and third dispatch of vectorAdd in each process.
    let mut chosen: Vec<_> = kernels
        .iter()
        .filter(|r| r["kernel_name"].starts_with("vectorAdd"))
        .map(|r| r["dispatch_id"].parse::<u64>().unwrap())
        .collect();
    chosen.sort_unstable();
    let chosen = &chosen[1..3];
    let dispatches: BTreeMap<_, _> = spm::dispatches(&kernels)
        .into_iter()
        .filter(|(id, _)| chosen.contains(id))
        .collect();
    let streamed = spm::streamed(&csv(&d.join("out/csv/spm_sample.csv")));
    let truth = Scenario::read(&d.join("scenario.toml"));
    truth.spm_truth(&streamed, &dispatches, &COUNTERS).unwrap();
}

#[test]
fn an_sdk_without_spm_is_refused_naming_the_release_that_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let output = run(d, PIPELINE, "sdk_version = \"1.2.0\"\n", &[]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        support::text(&output.stderr)
    );
    assert_says(
        &output.stderr,
        "context `spm` streams counters with SPM (`[context.spm]`), which rocprofiler-sdk 1.3.0 (ROCm 7.13) added; the rocprofiler-sdk in use is 1.2.0",
    );
    assert_says(
        &output.stderr,
        "install rocprofiler-sdk 1.3.0 (ROCm 7.13) or later",
    );
    // Refused before the application runs: nothing is written.
    assert!(!d.join("out").exists());
}

#[test]
fn the_sdk_refuses_spm_while_its_beta_is_off_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A value already set wins over the one `rocflow run` sets.
    let off = [("ROCPROFILER_SPM_BETA_ENABLED", Path::new("0"))];
    let output = run(d, PIPELINE, "", &off);
    assert_says(
        &output.stderr,
        "context `spm`: SPM is a beta of rocprofiler-sdk, off with ROCPROFILER_SPM_BETA_ENABLED=0 (`rocflow run` turns it on unless it is set); it collects nothing",
    );
    assert!(!d.join("out/csv/spm_sample.csv").exists());
    // The other context still collects.
    assert!(!csv(&d.join("out/csv/kernel_dispatch.csv")).is_empty());

    // Unset, `rocflow run` turns it on, and explain says so.
    let explained = rocflow(&["explain", "p.toml"], d, &[]);
    assert_says(&explained.stdout, "  ROCPROFILER_SPM_BETA_ENABLED=ON");
    assert_says(
        &explained.stdout,
        "SQ_WAVES, GRBM_GUI_ACTIVE, a sample every 4096 shader clock cycles of each dispatch",
    );
}

#[test]
fn spm_beside_dispatch_counting_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = "[pipeline]\nname = \"bad\"\n[[context]]\nname = \"both\"\n\
                    [context.counters]\ncollect = [\"SQ_WAVES\"]\n\
                    [context.spm]\ncollect = [\"SQ_WAVES\"]\nINTERVAL\n";
    let validate = |interval: &str| {
        std::fs::write(d.join("p.toml"), pipeline.replace("INTERVAL", interval)).unwrap();
        let output = rocflow(&["validate", "p.toml"], d, &[]);
        let said = support::text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{said}");
        output
    };
    let output = validate("");
    assert_says(
        &output.stderr,
        "context `both` streams SPM, and rocprofiler-sdk does not stream it beside `counters` in one context",
    );
    assert_says(&output.stderr, "p.toml:5:");
    assert_says(
        &output.stderr,
        "move `[context.spm]` to a context of its own",
    );
    let output = validate("interval = 0");
    assert_says(
        &output.stderr,
        "`context[0].spm.interval`: value is less than the minimum of 1",
    );
    assert_says(&output.stderr, "p.toml:9:");
}

#[test]
fn an_interval_the_gpu_does_not_stream_at_is_refused_with_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = PIPELINE.replace("interval = 4096", "interval = 16");
    let output = run(d, &pipeline, "", &[]);
    assert_says(
        &output.stderr,
        "context `spm`: gfx942 (agent 1) streams SPM every 32 to 1048576 shader clock cycles, not every 16; set `interval` in [context.spm] within that",
    );
    assert!(!d.join("out/csv/spm_sample.csv").exists());
}
