//! `rocflow run PIPELINE` in a directory, on the simulated SDK with its scenario
//! `big.toml`, into the spool `run.rfraw`: how the run benchmarks start the runner.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `/bin/true` under `pipeline` in `dir`; fails with the output unless it succeeded.
pub fn run(dir: &Path, pipeline: &str) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_rocflow"))
        .args(["run", pipeline, "--device", "sim:big.toml"])
        .args(["--spool", "run.rfraw", "--", "/bin/true"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
