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

/// Records of each kind one process delivers, from the scenario file's own numbers (see
/// [`crate::truth::Scenario`]).
pub fn expected(scenario: &toml::Value) -> BTreeMap<String, u64> {
    crate::truth::Scenario::of(scenario).records_per_process()
}
