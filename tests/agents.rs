//! `rocflow agents` lists a device's agents as its SDK reports them, and `rocflow counters
//! list` asks the device when no definitions file is found. The simulated device's agents
//! come from its scenario: every shipped scenario's agents and counters are listed as the
//! scenario describes them.

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{
    assert_says, assert_says_each, assert_success, repo, rocflow, rocflow_without_rocm,
    sim_scenarios, text,
};

/// The shipped scenarios.
fn scenarios() -> Vec<PathBuf> {
    let files = sim_scenarios();
    assert!(files.len() >= 2, "{files:?}");
    files
}

/// A scenario file, as JSON.
fn scenario(path: &Path) -> Value {
    let scenario: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    serde_json::to_value(scenario).unwrap()
}

fn agents(device: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["agents", "--device", device];
    args.extend_from_slice(extra);
    rocflow(&args, &repo(), &[])
}

fn json(device: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = agents(device, &args);
    assert_success(&out);
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

#[test]
fn every_scenarios_agents_are_listed_as_it_describes_them() {
    for path in scenarios() {
        let device = format!("sim:{}", path.display());
        let described = scenario(&path);
        let gpus = described["agent"].as_array().unwrap();
        let listed = json(&device, &["--counters"]);
        // The host CPU, then the scenario's GPUs.
        assert_eq!(listed.len(), gpus.len() + 1, "{}", path.display());
        assert_eq!(listed[0]["type"], "cpu");
        for (gpu, agent) in gpus.iter().zip(&listed[1..]) {
            let context = path.display();
            assert_eq!(agent["type"], "gpu", "{context}");
            assert_eq!(agent["name"], gpu["name"], "{context}");
            assert_eq!(agent["product"], gpu["product"], "{context}");
            assert_eq!(agent["compute_units"], gpu["cu_count"], "{context}");
            if let Some(xcc) = gpu.get("xcc") {
                assert_eq!(&agent["xccs"], xcc, "{context}");
            }
            let mut named: Vec<&str> = gpu["counter"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            named.sort();
            let counters = agent["counters"].as_array().unwrap();
            let names: Vec<&str> = counters
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, named, "{context}");
            // Each counter with its dimensions as the scenario gives them.
            for c in gpu["counter"].as_array().into_iter().flatten() {
                let listed = counters
                    .iter()
                    .find(|l| l["name"] == c["name"].as_str().unwrap());
                let dims: Vec<(String, i64)> = c
                    .get("dimensions")
                    .and_then(|d| d.as_array())
                    .into_iter()
                    .flatten()
                    .map(|d| (d[0].as_str().unwrap().to_owned(), d[1].as_i64().unwrap()))
                    .collect();
                let listed_dims: Vec<(String, i64)> = listed.unwrap()["dimensions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| (d[0].as_str().unwrap().to_owned(), d[1].as_i64().unwrap()))
                    .collect();
                assert_eq!(listed_dims, dims, "{context}: {}", c["name"]);
            }
            let sampling = &agent["pc_sampling"]["configurations"];
            let configured = gpu.get("pc_sampling").and_then(|p| p.as_array());
            assert_eq!(
                sampling.as_array().map_or(0, Vec::len),
                configured.map_or(0, Vec::len),
                "{context}"
            );
        }
    }
}

#[test]
fn the_text_listing_shows_each_agent_and_its_properties() {
    let path = repo().join("examples/sim/mi300x.toml");
    let out = agents(&format!("sim:{}", path.display()), &[]);
    assert_success(&out);
    let listing = text(&out.stdout);
    for line in [
        "node 0 (logical 0): CPU Simulated host CPU",
        "node 1 (logical 1): GPU gfx942, AMD Instinct MI300X",
        "  compute units: 304,",
        "XCCs: 8",
        "LDS: 64 KiB per CU",
        "  gfx target version: 90402",
        "  clock: 2100 MHz",
        "  PC sampling: host_trap in time, interval 1..=1000000000",
    ] {
        assert!(listing.contains(line), "no {line:?} in:\n{listing}");
    }
    assert!(!listing.contains("counters:"), "{listing}");
    let out = agents(&format!("sim:{}", path.display()), &["--counters"]);
    assert_success(&out);
    let with_counters = text(&out.stdout);
    let waves = with_counters
        .lines()
        .find(|l| l.starts_with("    SQ_WAVES "))
        .unwrap();
    let words: Vec<&str> = waves.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "SQ_WAVES",
            "SHADER_ENGINE[4]",
            "XCC[8]",
            "Waves",
            "dispatched"
        ]
    );
    // The built-in scenario is the shipped MI300X one.
    let builtin = agents("sim", &[]);
    assert_success(&builtin);
    assert_eq!(text(&builtin.stdout), listing);
}

#[test]
fn a_scenario_that_does_not_read_is_the_users_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = agents(
        &format!("sim:{}", dir.path().join("nope.toml").display()),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says(&out.stderr, "nope.toml");
}

#[test]
fn counters_list_asks_the_device_without_definitions() {
    let path = repo().join("examples/sim/w7900.toml");
    let device = format!("sim:{}", path.display());
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow_without_rocm(&["counters", "list", "--device", &device], dir.path());
    assert_success(&out);
    let listed: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    let mut named: Vec<String> = scenario(&path)["agent"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["counter"].as_array().cloned().unwrap_or_default())
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    named.sort();
    named.dedup();
    assert_eq!(listed, named);
    assert!(
        text(&out.stdout)
            .lines()
            .all(|l| l.contains("  hardware  "))
    );

    // Neither definitions nor an SDK: one error that says both and what to do.
    let nowhere = tempfile::tempdir().unwrap();
    let out = rocflow_without_rocm(&["counters", "list"], nowhere.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says_each(
        &out.stderr,
        &[
            "no counter definitions found",
            "no rocprofiler-sdk found",
            "--device sim",
        ],
    );
}
