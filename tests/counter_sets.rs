//! The simulated GPUs' real counter sets: with AMD's counter definitions named in its
//! scenario, each simulated agent offers every counter the definitions give its
//! architecture, with the SDK's dimensions, hardware values from the scenario's generator
//! and derived ones computed from them. Pipelines planned from the same definitions
//! collect all they ask for, checked against the truth the scenario gives.

use std::path::{Path, PathBuf};

use rocflow_core::sdk::limits;
use rocflow_counters::{Definitions, Resolved};
use support::truth::{self, Collects, Part, Scenario};
use support::{assert_says, assert_success, rocflow, run_on, text};

/// AMD's counter definitions, as rocprofiler-sdk ships them.
fn definitions() -> PathBuf {
    support::shared().join("data/counters/standard-schema.counter_defs.yaml")
}

/// The shipped scenario `name` (of `examples/sim`) with AMD's definitions, `iterations`
/// and one thread: each pass then gives a dispatch the same id, as the merged run does.
fn scenario(dir: &Path, name: &str, iterations: u32) -> PathBuf {
    let shipped = std::fs::read_to_string(support::repo().join("examples/sim").join(name));
    let mut text = String::new();
    for line in shipped.unwrap().lines() {
        match line.split_once(" = ") {
            Some(("iterations", _)) => text.push_str(&format!("iterations = {iterations}")),
            Some(("threads", _)) => text.push_str("threads = 1"),
            Some(("name", _)) if text.ends_with("[scenario]\n") => {
                text.push_str(&format!(
                    "{line}\ncounter_definitions = {:?}",
                    definitions().display()
                ));
            }
            _ => text.push_str(line),
        }
        text.push('\n');
    }
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A pipeline counting `counters` per dispatch of the GPUs of `arch`, planned from AMD's
/// definitions, into CSV.
fn pipeline(dir: &Path, arch: &str, counters: &[&str]) {
    let collect: Vec<String> = counters.iter().map(|c| format!("{c:?}")).collect();
    let text = format!(
        "[pipeline]\nname = \"counters\"\n[[context]]\nname = \"counters\"\n\
         tracing = [\"kernel_dispatch\"]\n[context.counters]\ndefinitions = {:?}\n\
         agents = [{arch:?}]\ncollect = [{}]\n[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n",
        definitions().display(),
        collect.join(", ")
    );
    std::fs::write(dir.join("p.toml"), text).unwrap();
}

/// Runs the pipeline on the scenario and holds its counter values to the truth: every
/// dispatch of the kernels `counted` (a regex) has each counter, each instance the value
/// the device gives it.
fn run_and_check(dir: &Path, counters: &[&'static str], counted: &'static str) -> String {
    let output = run_on("sim:scenario.toml", "p.toml", &["/bin/true"], dir, &[]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("is not available"), "{stderr}");
    let scenario = Scenario::read(&dir.join("scenario.toml"));
    let collects = Collects {
        dispatches: true,
        counters: counters.to_vec(),
        counted_kernels: Some(counted),
        ..Collects::default()
    };
    let tables = dir.join("out");
    let (seen, dispatches) = truth::csv_tables(&tables);
    let want = scenario.truth(&collects, 1, &dispatches);
    let differences = want.differences(&seen, &[Part::Kernels, Part::Counters], 1e-9);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    scenario.assert_fits(&collects, |kind| truth::csv_table(&tables, kind));
    stderr
}

/// Twenty SQ counters: the seven the shipped MI300X scenario lists and thirteen it does
/// not, which the definitions give gfx942.
const SQ: [&str; 20] = [
    "SQ_WAVES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
    "SQ_INSTS_VMEM_RD",
    "SQ_INSTS_VMEM_WR",
    "SQ_INSTS_LDS",
    "SQ_INSTS_MFMA",
    "SQ_CYCLES",
    "SQ_BUSY_CYCLES",
    "SQ_INSTS_SMEM",
    "SQ_INSTS_FLAT",
    "SQ_INSTS_BRANCH",
    "SQ_INSTS_GDS",
    "SQ_INSTS_SENDMSG",
    "SQ_IFETCH",
    "SQ_ACTIVE_INST_ANY",
    "SQ_ACTIVE_INST_VALU",
    "SQ_ACTIVE_INST_LDS",
    "SQ_ACTIVE_INST_VMEM",
    "SQ_INST_CYCLES_SALU",
];

#[test]
fn twenty_sq_counters_on_the_simulated_mi300x_are_all_collected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d, "mi300x.toml", 2);
    pipeline(d, "gfx942", &SQ);
    let explained = rocflow(&["explain", "p.toml"], d, &[]);
    assert_success(&explained);
    assert_says(&explained.stdout, "3 passes");
    // The MI210's kernel is not counted: the pipeline counts on the MI300X.
    let stderr = run_and_check(d, &SQ, "vectorAdd|smooth");
    assert_says(&stderr, "3 passes, merged into one run");
    let samples = support::csv(&d.join("out/counter_sample.csv"));
    for counter in SQ {
        assert!(
            samples.iter().any(|s| s["counter"] == counter),
            "no value of {counter}"
        );
    }
}

/// Every counter `arch` has in AMD's definitions that one configuration can count (a
/// derived counter needing more of a block than it counts at once cannot be collected on
/// a GPU either).
fn every_counter(arch: &str) -> Vec<&'static str> {
    let defs = Definitions::load(&definitions()).unwrap();
    let resolver = defs.resolver(arch);
    let fits = |name: &str| {
        let needs = resolver.requirements(name).unwrap();
        let blocks = (needs.hardware.iter()).map(|c| match resolver.lookup(c) {
            Ok(Some(Resolved::Hardware { block, .. })) => block.to_owned(),
            other => panic!("{c}: {other:?}"),
        });
        let blocks: Vec<String> = blocks.collect();
        limits::exceeded(blocks.iter().map(String::as_str)).is_none()
    };
    let names = (defs.counters().iter())
        .filter(|c| c.definition_for(arch).is_some() && fits(&c.name))
        .map(|c| &*Box::leak(c.name.clone().into_boxed_str()));
    names.collect()
}

/// Collects every counter `arch` has from AMD's definitions on its GPUs in the shipped
/// scenario `scenario_name`, whose kernels `counted` are, and checks them.
fn walk(scenario_name: &str, arch: &str, counted: &'static str, at_least: usize) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d, scenario_name, 1);
    let counters = every_counter(arch);
    assert!(counters.len() >= at_least, "{arch}: {}", counters.len());
    pipeline(d, arch, &counters);
    let stderr = run_and_check(d, &counters, counted);
    assert_says(&stderr, "passes, merged into one run");
    let samples = support::csv(&d.join("out/counter_sample.csv"));
    let mut collected: Vec<&str> = samples.iter().map(|s| s["counter"].as_str()).collect();
    collected.sort_unstable();
    collected.dedup();
    assert_eq!(collected.len(), counters.len(), "{arch}");
}

#[test]
fn every_gfx942_counter_is_planned_collected_and_checked() {
    walk("mi300x.toml", "gfx942", "vectorAdd|smooth", 400);
}

#[test]
fn every_gfx1100_counter_is_planned_collected_and_checked() {
    walk("w7900.toml", "gfx1100", ".", 70);
}

#[test]
fn serialized_atomic_ratio_is_the_ratio_of_its_inputs_sums_per_dispatch() {
    // `TCP_ATOMIC_TAGCONFLICT_STALL_CYCLES_sum/TCP_GATE_EN1_sum` on gfx942: two derived
    // counters summing the hardware ones over their 352 instances, then their quotient.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d, "mi300x.toml", 2);
    let (stalls, gates) = ("TCP_ATOMIC_TAGCONFLICT_STALL_CYCLES", "TCP_GATE_EN1");
    pipeline(d, "gfx942", &["SerializedAtomicRatio", stalls, gates]);
    let output = run_on("sim:scenario.toml", "p.toml", &["/bin/true"], d, &[]);
    assert_success(&output);
    let samples = support::csv(&d.join("out/counter_sample.csv"));
    let of = |dispatch: &str, counter: &str| -> Vec<f64> {
        (samples.iter())
            .filter(|s| s["dispatch_id"] == dispatch && s["counter"] == counter)
            .map(|s| s["value"].parse().unwrap())
            .collect()
    };
    let ratios: Vec<&str> = (samples.iter())
        .filter(|s| s["counter"] == "SerializedAtomicRatio")
        .map(|s| s["dispatch_id"].as_str())
        .collect();
    assert_eq!(
        ratios.len(),
        4,
        "one value per dispatch of the MI300X's kernels"
    );
    for dispatch in ratios {
        let (stalled, gated) = (of(dispatch, stalls), of(dispatch, gates));
        assert_eq!(
            (stalled.len(), gated.len()),
            (352, 352),
            "8 XCCs × 4 SEs × 11"
        );
        let want = stalled.iter().sum::<f64>() / gated.iter().sum::<f64>();
        let got = of(dispatch, "SerializedAtomicRatio");
        assert_eq!(got.len(), 1);
        assert!((got[0] - want).abs() <= 1e-12 * want, "{got:?} != {want}");
    }
}

#[test]
fn a_scenario_naming_definitions_that_do_not_load_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scenario = std::fs::read_to_string(scenario(d, "w7900.toml", 1)).unwrap();
    let missing = scenario.replace(
        &format!("{:?}", definitions().display()),
        "\"no-such-defs.yaml\"",
    );
    std::fs::write(d.join("scenario.toml"), missing).unwrap();
    pipeline(d, "gfx1100", &["SQ_WAVES"]);
    let output = run_on("sim:scenario.toml", "p.toml", &["/bin/true"], d, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert_says(
        &output.stderr,
        "scenario scenario.toml: its counter definitions: no-such-defs.yaml: No such file",
    );
    assert!(!d.join("out").exists(), "nothing is written");
}
