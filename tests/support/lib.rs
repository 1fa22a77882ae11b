//! What rocflow's tests share: running the `rocflow` binary as a user would, reading back
//! what it wrote, and the files of real rocprofiler-sdk data they check against. One crate,
//! a dev-dependency of every package with tests (named `support` there), so that no test
//! reaches across crates for its helpers.

pub mod counters;
pub mod cxxfilt;
pub mod imports;
pub mod kit;
pub mod names;
pub mod peer;
pub mod programs;
pub mod rocprofv3_db;
pub mod scenario;
pub mod truth;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn repo() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap()
}

/// `../shared` beside the repository: real rocprofiler-sdk data and AMD's SDK kit.
pub fn shared() -> PathBuf {
    repo().join("../shared")
}

/// Every pipeline the repository ships, sorted: the template library (`pipelines/`) and the
/// examples (`examples/`, less the simulated device's scenarios in `examples/sim`).
pub fn pipelines() -> Vec<PathBuf> {
    fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("examples/sim") {
                collect(&path, files);
            } else if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    collect(&repo().join("pipelines"), &mut files);
    collect(&repo().join("examples"), &mut files);
    files.sort();
    files
}

/// The simulated device's shipped scenarios (`examples/sim/*.toml`), sorted.
pub fn sim_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/sim"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// Writes `launches.toml` into `dir`: the MI300X example's system running only launches,
/// on its two threads, `iterations` times eight: a hipLaunchKernel call and its dispatch
/// each, `32 * iterations` records. Kernel `k{i}` has a workgroup of `64 * (i + 1)`, which
/// no other kernel has.
pub fn launches_scenario(dir: &Path, iterations: u64) {
    let example = example_scenario("mi300x.toml", iterations);
    let head = example[..example.find("[[kernel]]").unwrap()]
        .replace("marker_ranges = true", "marker_ranges = false");
    let kernels: String = (0..8)
        .map(|i| {
            format!(
                "[[kernel]]\nname = \"k{i}\"\nduration_ns = 1000\n\
                 grid = [1024, 1, 1]\nworkgroup = [{}, 1, 1]\n",
                64 * (i + 1)
            )
        })
        .collect();
    std::fs::write(dir.join("launches.toml"), head + &kernels).unwrap();
}

/// The example scenario `examples/sim/NAME`, its threads running `iterations` iterations.
pub fn example_scenario(name: &str, iterations: u64) -> String {
    let text = std::fs::read_to_string(repo().join("examples/sim").join(name)).unwrap();
    let line = (text.lines())
        .find(|l| l.starts_with("iterations = "))
        .unwrap_or_else(|| panic!("{name} states no iterations"));
    text.replacen(line, &format!("iterations = {iterations}"), 1)
}

/// This machine's host name, as processes on it see it.
pub fn hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    name.trim_end().to_owned()
}

/// The seconds that follow `marker` in `line` (`… 1.23 s`).
pub fn seconds_after(line: &str, marker: &str) -> f64 {
    let (_, rest) = line
        .split_once(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in {line}"));
    let (seconds, _) = rest.split_once(" s").unwrap_or_else(|| panic!("{line}"));
    seconds.parse().unwrap_or_else(|_| panic!("{line}"))
}

/// `rocflow inspect --json SPOOL` in `dir` (SPOOL a spool, or a directory: its newest).
pub fn inspect(dir: &Path, spool: &str) -> serde_json::Value {
    let out = rocflow(&["inspect", "--json", spool], dir, &[]);
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where cargo put the binaries of this build (`target/debug`): the test running now is in
/// its `deps/`. (`CARGO_BIN_EXE_rocflow` is known only to the `rocflow` package's tests.)
fn build_dir() -> PathBuf {
    let test = std::env::current_exe().expect("the test knows its own path");
    let deps = test.parent().unwrap();
    deps.parent().unwrap().to_path_buf()
}

/// A folder holding the simulated trace decoder (built by `cargo test`) under the name
/// of AMD's, `librocprof-trace-decoder.so`, as ROCm installs it.
pub fn sim_decoder_folder(dir: &Path) -> PathBuf {
    let folder = dir.join("decoder");
    std::fs::create_dir_all(&folder).unwrap();
    let built = newest_built("librocprof_trace_decoder.so");
    std::fs::copy(built, folder.join("librocprof-trace-decoder.so")).unwrap();
    folder
}

/// The simulated rocprofiler-sdk library that `cargo test` built.
pub fn sim_sdk() -> PathBuf {
    newest_built("librocflow_sim.so")
}

/// rocflow's tool library that `cargo test` built, the one `rocflow run` loads.
pub fn tool_library() -> PathBuf {
    newest_built("librocflow_tool.so")
}

/// The library `name` of the build tree: where `cargo test` puts it (`deps/`) or where
/// `cargo build` does, whichever was built last, as `rocflow run` picks it.
fn newest_built(name: &str) -> PathBuf {
    ["", "deps"]
        .map(|sub| build_dir().join(sub).join(name))
        .into_iter()
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("cargo test builds {name}"))
}

/// The `rocflow` binary that `cargo test` built.
pub fn rocflow_exe() -> PathBuf {
    let exe = build_dir().join("rocflow");
    assert!(
        exe.is_file(),
        "{} is missing: cargo builds it for the tests of the rocflow package",
        exe.display()
    );
    exe
}

/// A folder for the tests' own files that outlive one test (`CARGO_TARGET_TMPDIR`'s kin).
pub fn target_tmp() -> PathBuf {
    build_dir().join("tmp")
}

/// Fails naming each `.rs` file beside a test binary's root (`tests/tests.rs`) that the
/// root does not declare as a module (`mod NAME;`): cargo builds only what the root
/// declares, so a file left out would never run. Each test binary checks itself with it.
pub fn assert_every_file_is_a_module(root: &Path) {
    let undeclared = undeclared_modules(root);
    assert!(
        undeclared.is_empty(),
        "never run: {undeclared:?}; declare each as `mod NAME;` in {}",
        root.display()
    );
}

/// The `.rs` files beside `root` that it does not declare as modules, sorted.
fn undeclared_modules(root: &Path) -> Vec<PathBuf> {
    let text =
        std::fs::read_to_string(root).unwrap_or_else(|e| panic!("reading {}: {e}", root.display()));
    let declared: BTreeSet<&str> = (text.lines())
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut undeclared: Vec<PathBuf> = (std::fs::read_dir(root.parent().unwrap()).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file() && path != root)
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .filter(|path| !declared.contains(path.file_stem().unwrap().to_str().unwrap()))
        .collect();
    undeclared.sort();
    undeclared
}

/// How long [`wait_until`] waits at most: a guard against a test that would hang, long
/// enough for a loaded machine; never what a test measures.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Waits until `event` has happened, looking every 20 ms; fails saying what did not happen
/// (`what`) if it has not within [`PATIENCE`].
pub fn wait_until(what: &str, mut event: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !event() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A process a test started in a process group of its own, which ends, with what it
/// started (an application, a post-step), when the test lets go of it: a test that fails
/// while waiting for it leaves nothing running.
pub struct Spawned(pub std::process::Child);

impl Spawned {
    pub fn start(command: &mut Command) -> Spawned {
        use std::os::unix::process::CommandExt;
        Spawned(
            command
                .process_group(0)
                .spawn()
                .expect("the command starts"),
        )
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // SAFETY: signalling the process group this test started.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The test application (built by `cargo test` as the `sim-app` example).
pub fn sim_app() -> PathBuf {
    build_dir().join("examples/sim-app")
}

/// The simulated SDK's library, which `cargo test` builds as a dependency of the tests.
pub fn sim_library() -> PathBuf {
    build_dir().join("deps/librocflow_sim.so")
}

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
    rocflow_within(args, dir, 60)
}

/// [`rocflow_bounded`] with `cpu_seconds` of CPU time: for work whose cost must follow its
/// input's size, not grow with its square.
pub fn rocflow_within(args: &[&str], dir: &Path, cpu_seconds: u64) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = rocflow_command(args, dir, &[]);
    // SAFETY: between fork and exec the closure calls only setrlimit, which is
    // async-signal-safe, on a value it owns.
    unsafe {
        command.pre_exec(move || {
            for (resource, value) in [(libc::RLIMIT_AS, 4 << 30), (libc::RLIMIT_CPU, cpu_seconds)] {
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

/// `command`, made to run with at most `soft` descriptors open at once (the soft limit, as
/// `ulimit -n` sets it; the hard limit stays, for a program that raises its own).
pub fn with_descriptors(command: &mut Command, soft: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure calls only getrlimit and setrlimit, which
    // are async-signal-safe, on a value it owns.
    unsafe {
        command.pre_exec(move || {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit.rlim_cur = soft;
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        })
    }
}

/// The command [`rocflow`] runs, for a test that starts it itself.
pub fn rocflow_command(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Command {
    let mut command = Command::new(rocflow_exe());
    command
        .args(args)
        .current_dir(dir)
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .env_remove("ROCM_PATH")
        .env_remove("ROCPROFILER_PC_SAMPLING_BETA_ENABLED")
        .env_remove("ROCPROF_ATT_LIBRARY_PATH");
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// Runs `command` to its end, and for each of `names` the most threads so named it had at
/// once (as `/proc/PID/task/*/comm` shows them, 15 bytes at most), sampled every few
/// milliseconds. A name ending in `*` stands for every name that begins with the rest
/// (`otf2 location *`: threads numbered after what they write).
pub fn output_and_most_threads(command: &mut Command, names: &[&str]) -> (Output, Vec<usize>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let child = (command.stdout(std::process::Stdio::piped()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rocflow starts");
    let tasks = PathBuf::from(format!("/proc/{}/task", child.id()));
    let ended = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut most = vec![0; names.len()];
            while !ended.load(Ordering::Relaxed) {
                let comms: Vec<String> = (std::fs::read_dir(&tasks).into_iter().flatten())
                    .flatten()
                    .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
                    .collect();
                for (most, name) in most.iter_mut().zip(names) {
                    let named = comms.iter().filter(|c| named(c.trim_end(), name)).count();
                    *most = (*most).max(named);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            most
        });
        let out = child.wait_with_output().expect("rocflow runs");
        ended.store(true, Ordering::Relaxed);
        (out, sampler.join().unwrap())
    })
}

/// Whether a thread named `comm` is one [`output_and_most_threads`]'s `name` stands for.
fn named(comm: &str, name: &str) -> bool {
    match name.strip_suffix('*') {
        Some(prefix) => comm.starts_with(prefix),
        None => comm == name,
    }
}

/// `rocflow args…` in `dir` where no ROCm can be found (see [`without_rocm`]), nor
/// anything the environment could name: `ROCPROFILER_METRICS_PATH` is `dir/metrics` and
/// `ROCM_PATH` is `dir/rocm`, both empty, `LD_LIBRARY_PATH` is empty and
/// `ROCPROFILER_REGISTER_LIBRARY` unset.
pub fn rocflow_without_rocm(args: &[&str], dir: &Path) -> Output {
    let (metrics, rocm) = (dir.join("metrics"), dir.join("rocm"));
    for empty in [&metrics, &rocm] {
        std::fs::create_dir_all(empty).unwrap();
    }
    let mut command = rocflow_command(args, dir, &[]);
    command
        .env("ROCPROFILER_METRICS_PATH", metrics)
        .env("ROCM_PATH", rocm)
        .env("LD_LIBRARY_PATH", "")
        .env_remove("ROCPROFILER_REGISTER_LIBRARY");
    without_rocm(&command).output().expect("rocflow runs")
}

/// `command` run where this machine's ROCm cannot be found, for a test of what rocflow
/// says without one: in a private mount namespace (`unshare`, as the kit's `fake-gpu.sh`
/// makes one; as root, or mapped to root where not) where `/opt/rocm` is empty and the
/// system loader's cache lists nothing, the places rocflow looks for counter definitions
/// and the SDK besides the environment, which the test sets. Nothing outside changes.
fn without_rocm(command: &Command) -> Command {
    const HIDE: &str = "set -e
if [ -d /opt/rocm ]; then mount -t tmpfs rocflow-test-no-rocm /opt/rocm; fi
mount --bind /dev/null /etc/ld.so.cache
exec \"$@\"";
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut hidden = Command::new("unshare");
    hidden
        .args(if root {
            ["--mount"].as_slice()
        } else {
            &["--map-root-user", "--mount"]
        })
        .args(["--propagation", "private", "sh", "-c", HIDE, "sh"])
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => hidden.env(key, value),
            None => hidden.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        hidden.current_dir(dir);
    }
    hidden
}

/// Where cargo puts the plugins the tests depend on.
pub fn built_plugins() -> PathBuf {
    build_dir().join("deps")
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

/// A fresh directory holding `pipeline` as `name`, and `run.rfraw`: a synthetic run that
/// `rocflow generate` recorded with it, `args` adding to its command line (`--records N`,
/// `--processes N`, `--seed N`).
pub fn generated(name: &str, pipeline: &str, args: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), name, pipeline, args);
    dir
}

/// [`generated`] in `dir`. The built plugins are on the plugin path, for a pipeline that
/// names one.
pub fn generate(dir: &Path, name: &str, pipeline: &str, args: &[&str]) {
    std::fs::write(dir.join(name), pipeline).unwrap();
    let mut command = vec!["generate", "run.rfraw", "--pipeline", name];
    command.extend_from_slice(args);
    let plugins = built_plugins();
    assert_success(&rocflow(
        &command,
        dir,
        &[("ROCFLOW_PLUGIN_PATH", &plugins)],
    ));
}

/// The head of a pipeline named `$pipeline` that records all a generated run holds: one
/// context, `$context`, with kernels, HIP calls, copies, markers and three counters. A
/// macro, so that a test's pipeline can be a constant (`concat!`-ed).
#[macro_export]
macro_rules! generated_pipeline {
    ($pipeline:literal, $context:literal) => {
        concat!(
            $crate::traced_pipeline!(
                $pipeline,
                $context,
                r#"["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]"#
            ),
            r#"counters.collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"]"#,
            "\n",
        )
    };
}

/// The head of a pipeline named `$pipeline` with one context, `$context`, tracing
/// `$tracing` (a TOML list; by default kernels, HIP calls and copies). A macro, as
/// [`generated_pipeline!`] is.
#[macro_export]
macro_rules! traced_pipeline {
    ($pipeline:literal, $context:literal) => {
        $crate::traced_pipeline!(
            $pipeline,
            $context,
            r#"["kernel_dispatch", "hip_runtime_api", "memory_copy"]"#
        )
    };
    ($pipeline:literal, $context:literal, $tracing:literal) => {
        concat!(
            "\n[pipeline]\nname = \"",
            $pipeline,
            "\"\n[[context]]\nname = \"",
            $context,
            "\"\ntracing = ",
            $tracing,
            "\n",
        )
    };
}

/// A `[[sink]]` table named `$name`, of `$kind`, writing to `$path`. A macro, as
/// [`generated_pipeline!`] is.
#[macro_export]
macro_rules! sink {
    ($name:literal, $kind:literal, $path:literal) => {
        concat!(
            "[[sink]]\nname = \"",
            $name,
            "\"\nkind = \"",
            $kind,
            "\"\npath = \"",
            $path,
            "\"\n",
        )
    };
}

/// A counter value's coordinates: the columns of its dimensions in the tables of counter
/// samples (CSV, Parquet).
pub const COORDINATES: [&str; 7] = [
    "xcc",
    "aid",
    "shader_engine",
    "agent_index",
    "shader_array",
    "wgp",
    "instance",
];

/// The key-value metadata of the Parquet file at `path`: key → value ("" for none).
pub fn parquet_key_values(path: &Path) -> std::collections::BTreeMap<String, String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let metadata = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    (metadata.unwrap_or_default().into_iter())
        .map(|kv| (kv.key, kv.value.unwrap_or_default()))
        .collect()
}

/// The rows `sql` selects from `db`, each read by `row`.
pub fn sqlite_rows<T, C: FromIterator<T>>(
    db: &rusqlite::Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
) -> C {
    let mut statement = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let rows = statement.query_map([], row).unwrap();
    rows.map(|r| r.unwrap_or_else(|e| panic!("{sql}: {e}")))
        .collect()
}

/// A fresh directory holding `text` as the file `name`, and the file's path.
pub fn with_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), name, text);
    (dir, path)
}

/// Writes `text` to the file `name` in `dir`, and returns its path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A command's stderr without the progress lines (`progress: …`) that `run` and `replay`
/// write where stderr is not a terminal: its warnings and errors.
pub fn messages(stderr: &[u8]) -> String {
    text(stderr)
        .lines()
        .filter(|line| !line.starts_with("progress: "))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Fails with `output` (a command's stdout or stderr) unless it says `needle`.
pub fn assert_says(output: impl AsRef<[u8]>, needle: &str) {
    let output = text(output.as_ref());
    assert!(output.contains(needle), "no {needle:?} in:\n{output}");
}

/// Fails with `output` unless it says each of `needles`.
pub fn assert_says_each(output: impl AsRef<[u8]>, needles: &[&str]) {
    needles
        .iter()
        .for_each(|needle| assert_says(&output, needle));
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

/// Whether `rocflow run` ended as a run whose pipeline got none of the records it asked
/// for ends: it said so and failed for that (exit 1), with no other error.
pub fn collected_nothing(output: &Output) -> bool {
    let stderr = text(&output.stderr);
    let mut errors = stderr.lines().filter(|l| l.starts_with("error: "));
    let nothing = errors
        .next()
        .is_some_and(|e| e.starts_with("error: no records were collected"));
    output.status.code() == Some(1) && nothing && errors.next().is_none()
}

/// Fails unless the command exited with `code` and its stderr says each of `needles`;
/// returns the stderr, for what else a test checks in it.
pub fn assert_fails(output: &Output, code: i32, needles: &[&str]) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "stderr:\n{stderr}");
    assert_says_each(&stderr, needles);
    stderr
}

/// The `names` columns of each row (as [`csv`] reads them), in that order.
pub fn columns<'a, const N: usize>(
    rows: &'a [BTreeMap<String, String>],
    names: [&str; N],
) -> Vec<[&'a str; N]> {
    rows.iter()
        .map(|row| names.map(|name| row[name].as_str()))
        .collect()
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
    let script = repo().join("tests").join(script);
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

/// marker-trace's Perfetto trace and rocpd database, plus CSV tables, Parquet and OTF2: every
/// output [`marker_messages`] reads.
pub const MARKERS: &str = r#"[pipeline]
name = "markers"
extends = ["marker-trace"]

[[sink]]
name = "csv"
kind = "csv"
path = "{output_dir}/csv"

[[sink]]
name = "parquet"
kind = "parquet"
path = "{output_dir}/parquet"

[[sink]]
name = "otf2"
kind = "otf2"
path = "{output_dir}/otf2"
"#;

/// How many times each value occurs.
pub fn tally<S: Into<String>>(values: impl IntoIterator<Item = S>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for value in values {
        *counts.entry(value.into()).or_default() += 1;
    }
    counts
}

/// The ROCTx messages of the marker records in each output of a run under `dir`, tallied:
/// the CSV and Parquet marker tables, the rocpd database's regions, the Perfetto trace's
/// marker slices (decoded with the official schema) and the OTF2 archive's user regions
/// entered (read by `otf2-print`).
pub fn marker_messages(dir: &Path) -> BTreeMap<&'static str, BTreeMap<String, usize>> {
    let csv = csv(&only(dir, "csv/marker.csv"));
    let db = rusqlite::Connection::open(only(dir, ".db")).unwrap();
    let regions: Vec<String> = db
        .prepare(
            "SELECT json_extract(extdata, '$.message') FROM regions WHERE category LIKE 'MARKER%'",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|message| message.unwrap().unwrap_or_default())
        .collect();
    let trace = decode_perfetto(&[only(dir, ".pftrace")]);
    let slices = (trace[0]["events"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "B" && e["category"].as_str().unwrap().starts_with("marker"))
        .map(|e| e["name"].as_str().unwrap().to_owned());
    BTreeMap::from([
        ("csv", tally(csv.iter().map(|r| r["message"].clone()))),
        (
            "parquet",
            tally(parquet_strings(&only(dir, "parquet/marker/"), "message")),
        ),
        ("rocpd", tally(regions)),
        ("perfetto", tally(slices)),
        ("otf2", tally(otf2_entered(&only(dir, ".otf2"), "USER"))),
    ])
}

/// Runs SQL in DuckDB in `dir`: the rows of each query.
pub fn duckdb(dir: &Path, queries: &[&str]) -> Vec<Vec<Vec<serde_json::Value>>> {
    let args: Vec<&std::ffi::OsStr> = std::iter::once(dir.as_os_str())
        .chain(queries.iter().map(std::ffi::OsStr::new))
        .collect();
    python(
        "support/duckdb_query.py",
        &args,
        "pip install duckdb==1.5.6, as tests/run-all does",
    )
}

/// What `otf2-print ARGS ARCHIVE` prints; it must print no warning.
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

/// The regions entered in an OTF2 archive, by name, of those defined with `paradigm` (by
/// their ids: regions of other paradigms may have the same names).
pub fn otf2_entered(archive: &Path, paradigm: &str) -> Vec<String> {
    let name = |line: &str, key: &str| line.split(key).nth(1)?.split('"').nth(1).map(str::to_owned);
    let paradigm = format!("Paradigm: {paradigm},");
    let regions: BTreeSet<String> = (otf2_print(&["-G"], archive).lines())
        .filter(|l| l.starts_with("REGION ") && l.contains(&paradigm))
        .filter_map(|l| l.split_whitespace().nth(1).map(|id| format!("<{id}>")))
        .collect();
    (otf2_print(&[], archive).lines())
        .filter(|l| l.starts_with("ENTER "))
        .filter(|l| {
            l.split_whitespace()
                .last()
                .is_some_and(|id| regions.contains(id))
        })
        .filter_map(|l| name(l, "Region:"))
        .collect()
}

/// The entries of `dir` (files and folders, not below) whose names `keep` takes, sorted.
pub fn entries(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| keep(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    found.sort();
    found
}

/// The one file under `dir` whose path contains `part`.
pub fn only(dir: &Path, part: &str) -> PathBuf {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().contains(part) {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "{part} in {}: {found:?}", dir.display());
    found.remove(0)
}

/// The string column `name` of a Parquet file.
fn parquet_strings(path: &Path, name: &str) -> Vec<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    (reader.get_row_iter(None).unwrap())
        .map(
            |row| match row.unwrap().get_column_iter().find(|(n, _)| *n == name) {
                Some((_, Field::Str(value))) => value.clone(),
                other => panic!("column {name} of {}: {other:?}", path.display()),
            },
        )
        .collect()
}

/// `tests/apps/roctx_markers.c`, a program that only uses ROCTx, built against a kit's
/// ROCTx, with [`MARKERS`] beside it to profile it into every output.
pub struct RoctxMarkers {
    build: tempfile::TempDir,
    app: PathBuf,
}

impl RoctxMarkers {
    pub fn build(kit: &kit::Kit) -> RoctxMarkers {
        let build = tempfile::tempdir().unwrap();
        std::fs::write(build.path().join("markers.toml"), MARKERS).unwrap();
        let app = roctx_markers(kit, build.path());
        RoctxMarkers { build, app }
    }

    /// `rocflow run` of [`MARKERS`] and the program on a node without a GPU, `env` set.
    pub fn run(&self, kit: &kit::Kit, env: &[(&str, &str)]) -> kit::Run {
        let pipeline = self.build.path().join("markers.toml");
        let pipeline = pipeline.to_str().unwrap();
        kit.run(kit::Node::NoGpu, pipeline, &[self.app.as_os_str()], env)
    }
}

/// Builds `tests/apps/roctx_markers.c` into `dir` against the kit's ROCTx; the program.
fn roctx_markers(kit: &kit::Kit, dir: &Path) -> PathBuf {
    let app = dir.join("roctx_markers");
    let source = repo().join("tests/apps/roctx_markers.c");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&app)
        .arg(&source)
        .arg("-I")
        .arg(kit.root.join("include"))
        .arg("-L")
        .arg(&kit.links)
        .arg("-lrocprofiler-sdk-roctx")
        .output()
        .expect("cc runs");
    assert_success(&cc);
    app
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_the_root_does_not_declare_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tests.rs");
        std::fs::write(&root, "//! Tests.\n\nmod cli;\n// mod replay;\nmod run;\n").unwrap();
        for file in ["cli.rs", "replay.rs", "run.rs", "zeta.rs", "notes.md"] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("data.rs")).unwrap();
        let names: Vec<PathBuf> = ["replay.rs", "zeta.rs"]
            .iter()
            .map(|f| dir.path().join(f))
            .collect();
        assert_eq!(undeclared_modules(&root), names);
    }
}
