//! What the end-to-end tests share: running the `rocflow` binary as a user would, and
//! reading back what it wrote. Each test binary uses a part of it.
#![allow(dead_code)]

pub mod kit;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The test application (built by `cargo test` as the `sim-app` example).
pub fn sim_app() -> std::path::PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_rocflow"));
    exe.parent().unwrap().join("examples/sim-app")
}

/// The environment that opts in to rocprofiler-sdk's PC sampling beta, which the SDK, real
/// or simulated, leaves off otherwise.
pub const PC_SAMPLING_BETA: (&str, &str) = ("ROCPROFILER_PC_SAMPLING_BETA_ENABLED", "on");

/// Runs `rocflow args…` in `dir` with `env` set, and nothing from this machine's
/// environment that would change its answers (template path, ROCm installation).
pub fn rocflow(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Output {
    rocflow_command(args, dir, env)
        .output()
        .expect("rocflow runs")
}

/// Runs `rocflow args…` in `dir` with 4 GiB of memory and a minute of CPU time, for input
/// that could exhaust either: past them the process dies and the test fails, instead of
/// the machine.
pub fn rocflow_bounded(args: &[&str], dir: &Path) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = rocflow_command(args, dir, &[]);
    // SAFETY: between fork and exec the closure calls only setrlimit, which is
    // async-signal-safe, on a value it owns.
    unsafe {
        command.pre_exec(|| {
            for (resource, value) in [(libc::RLIMIT_AS, 4 << 30), (libc::RLIMIT_CPU, 60)] {
                let limit = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command.output().expect("rocflow runs")
}

/// The command [`rocflow`] runs, for a test that starts it itself.
pub fn rocflow_command(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Command {
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
    command
}

/// Where cargo puts the plugins the tests depend on.
pub fn built_plugins() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_rocflow"))
        .parent()
        .unwrap()
        .join("deps")
}

/// `rocflow run PIPELINE --device DEVICE -- APP…` in `dir`, with `env` set.
pub fn run_on(
    device: &str,
    pipeline: &str,
    app: &[&str],
    dir: &Path,
    env: &[(&str, &Path)],
) -> Output {
    let mut args = vec!["run", pipeline, "--device", device, "--"];
    args.extend_from_slice(app);
    rocflow(&args, dir, env)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails with the command's output unless it succeeded.
pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// The rows of a CSV file, by column name.
pub fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let content =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = content.lines();
    let header: Vec<String> = split_csv(lines.next().unwrap());
    lines
        .map(|line| header.iter().cloned().zip(split_csv(line)).collect())
        .collect()
}

/// Splits a CSV line; fields may be quoted (demangled kernel names hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// Runs the Python script `script` (under `tests/`) with `args`; its output, JSON, read.
/// `needs` says what a failure most likely lacks.
fn python<T: serde::de::DeserializeOwned>(
    script: &str,
    args: &[&std::ffi::OsStr],
    needs: &str,
) -> T {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests")
        .join(script);
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{} ({needs}): {}",
        script.display(),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Perfetto traces decoded with the official schema by `perfetto_decode.py`: per file, its
/// tracks and events. Fails on a trace a reader would have problems with.
pub fn decode_perfetto(files: &[PathBuf]) -> Vec<serde_json::Value> {
    let files: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let decoded: Vec<serde_json::Value> =
        python("perfetto_decode.py", &files, "needs `pip install perfetto`");
    for file in &decoded {
        assert_eq!(file["problems"], serde_json::json!([]), "{}", file["path"]);
    }
    decoded
}

/// Runs SQL in DuckDB in `dir`: the rows of each query.
pub fn duckdb(dir: &Path, queries: &[&str]) -> Vec<Vec<Vec<serde_json::Value>>> {
    let args: Vec<&std::ffi::OsStr> = std::iter::once(dir.as_os_str())
        .chain(queries.iter().map(std::ffi::OsStr::new))
        .collect();
    python(
        "support/duckdb_query.py",
        &args,
        "pip install duckdb==1.5.6, as .ci/run does",
    )
}

pub fn otf2_print(args: &[&str], archive: &Path) -> String {
    let out = Command::new("otf2-print")
        .args(args)
        .arg(archive)
        .output()
        .expect("otf2-print runs (Debian: apt-get install otf2-tools)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        out.stderr.is_empty(),
        "otf2-print warns: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}
