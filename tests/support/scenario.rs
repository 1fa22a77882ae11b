//! The simulated device's scenarios as the tests' ground truth: every count a run on the
//! simulated device delivers follows from its scenario file, so the tests derive what to
//! expect from the file itself, never from rocflow's outputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{repo, write_file};

/// The default scenario, `examples/sim/mi300x.toml`.
pub fn default_scenario() -> toml::Value {
    let path = repo().join("examples/sim/mi300x.toml");
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The default scenario with each of `settings` of its `[scenario]` table set, written
/// to `name` in `dir`: the scenario and its file.
pub fn scenario_with(dir: &Path, name: &str, settings: &[(&str, i64)]) -> (toml::Value, PathBuf) {
    let mut scenario = default_scenario();
    let table = scenario["scenario"].as_table_mut().unwrap();
    for (key, value) in settings {
        table.insert((*key).into(), toml::Value::Integer(*value));
    }
    let path = write_file(dir, name, &toml::to_string(&scenario).unwrap());
    (scenario, path)
}

/// Records of each kind one process delivers, from the scenario file's own numbers.
pub fn expected(scenario: &toml::Value) -> BTreeMap<String, u64> {
    let s = &scenario["scenario"];
    let iterations =
        (s["threads"].as_integer().unwrap() * s["iterations"].as_integer().unwrap()) as u64;
    let len = |key: &str| {
        scenario
            .get(key)
            .and_then(|v| v.as_array())
            .map_or(0, |a| a.len()) as u64
    };
    let (kernels, copies, allocations) = (len("kernel"), len("copy"), len("allocation"));
    let calls: u64 = scenario
        .get("call")
        .and_then(|v| v.as_array())
        .map_or(0, |calls| {
            calls
                .iter()
                .map(|c| c.get("count").and_then(|n| n.as_integer()).unwrap_or(1) as u64)
                .sum()
        });
    let mut counts = BTreeMap::new();
    counts.insert("kernel_dispatch".into(), iterations * kernels);
    counts.insert(
        "api".into(),
        iterations * (kernels + copies + 2 * allocations + calls),
    );
    counts.insert("memory_copy".into(), iterations * copies);
    counts.insert("memory_allocation".into(), iterations * 2 * allocations);
    if s.get("marker_ranges").and_then(|v| v.as_bool()) == Some(true) {
        counts.insert("marker".into(), iterations);
    }
    // A kind with no records has no table.
    counts.retain(|_, n| *n > 0);
    counts
}
