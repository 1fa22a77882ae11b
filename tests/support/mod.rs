//! What the end-to-end tests share: running the `rocflow` binary as a user would.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `rocflow args…` in `dir` with `env` set, and nothing from this machine's
/// environment that would change its answers (template path, ROCm installation).
pub fn rocflow(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rocflow"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .env_remove("ROCM_PATH");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("rocflow runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
