//! Plugins end to end: the example plugins (built by cargo as dev-dependencies) and plugins
//! written in C (built here with `cc` against `plugins/include/rocflow_plugin.h`) loaded
//! into `rocflow run` on the simulated device, their outputs read back; plugins that cannot
//! load, fail or panic, and what rocflow then says and does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use regex::Regex;
use support::{
    assert_fails, assert_says, assert_success, built_plugins, csv, repo, rocflow, run_on, text,
};

/// Builds the C plugin `source` (under `plugins/`) as `librocflow_plugin_NAME.so` in `dir`.
fn build_c(source: &str, name: &str, dir: &Path) -> PathBuf {
    let library = dir.join(format!("librocflow_plugin_{name}.so"));
    let built = std::process::Command::new("cc")
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I",
        ])
        .arg(repo().join("plugins/include"))
        .arg(repo().join("plugins").join(source))
        .arg("-o")
        .arg(&library)
        .status()
        .expect("a C compiler (cc) runs");
    assert!(built.success(), "{source} builds");
    library
}

/// A directory with `p.toml` holding `pipeline`.
fn pipeline(pipeline: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    dir
}

/// `rocflow ARGS…` in `dir`, plugins found on ROCFLOW_PLUGIN_PATH=`path`.
fn with_plugins(args: &[&str], dir: &Path, path: &Path) -> Output {
    rocflow(args, dir, &[("ROCFLOW_PLUGIN_PATH", path)])
}

/// `rocflow run PIPELINE --device sim -- /bin/sleep 0.1` in `dir`, plugins found in `path`.
fn run_with(pipeline: &str, dir: &Path, path: &Path) -> Output {
    let env = [("ROCFLOW_PLUGIN_PATH", path)];
    run_on("sim", pipeline, &["/bin/sleep", "0.1"], dir, &env)
}

/// `run_with` of `p.toml` and the built plugins.
fn run(dir: &Path) -> Output {
    run_with("p.toml", dir, &built_plugins())
}

const TRACE: &str = support::traced_pipeline!("plugins-test", "trace");

/// The example transform plugin, on kernel dispatches.
const FAMILIES: &str = r#"
[[transform]]
name = "families"
kind = "plugin"
plugin = "kernel_family"
records = ["kernel_dispatch"]
"#;

/// Every record into CSV tables in `out/`.
const TABLES: &str = support::sink!("tables", "csv", "out");

/// An OpenMetrics exposition, checked line by line as the format requires: each family's
/// `# TYPE` first, counters' samples named `FAMILY_total`, labels quoted and escaped, and
/// `# EOF` last. Returns each family's samples: labels and value.
type Samples = BTreeMap<String, Vec<(BTreeMap<String, String>, f64)>>;

fn openmetrics(text: &str) -> Samples {
    let sample = Regex::new(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$").unwrap();
    let label = Regex::new(r#"^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)"#).unwrap();
    let (body, end) = text.rsplit_once("# EOF").expect("ends with # EOF");
    assert_eq!(end, "\n", "nothing after # EOF");
    let mut families = Samples::new();
    let mut current: Option<(String, String)> = None;
    for line in body.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut words = meta.splitn(3, ' ');
            let (keyword, name) = (words.next().unwrap(), words.next().unwrap());
            match keyword {
                "TYPE" => {
                    assert!(!families.contains_key(name), "{name} declared twice");
                    families.insert(name.to_owned(), Vec::new());
                    current = Some((name.to_owned(), words.next().unwrap().to_owned()));
                }
                "UNIT" => assert!(name.ends_with(&format!("_{}", words.next().unwrap()))),
                "HELP" => assert!(words.next().is_some_and(|h| !h.is_empty())),
                other => panic!("unknown `# {other}` line"),
            }
            assert_eq!(current.as_ref().map(|c| c.0.as_str()), Some(name), "{line}");
            continue;
        }
        let captures = sample
            .captures(line)
            .unwrap_or_else(|| panic!("not a sample: {line}"));
        let (family, kind) = current.as_ref().expect("a sample after its # TYPE");
        assert_eq!(kind, "counter");
        assert_eq!(&captures[1], format!("{family}_total"), "{line}");
        let mut labels = BTreeMap::new();
        let mut rest = captures.get(2).map_or("", |m| m.as_str());
        while !rest.is_empty() {
            let pair = label
                .captures(rest)
                .unwrap_or_else(|| panic!("bad labels: {line}"));
            labels.insert(
                pair[1].to_owned(),
                pair[2].replace("\\\"", "\"").replace("\\\\", "\\"),
            );
            rest = &rest[pair[0].len()..];
        }
        let value: f64 = captures[3].parse().unwrap();
        families.get_mut(family).unwrap().push((labels, value));
    }
    families
}

#[test]
fn the_example_plugins_classify_kernels_and_write_openmetrics() {
    let dir = pipeline(&format!(
        r#"{TRACE}
{FAMILIES}

{TABLES}

[[sink]]
name = "metrics"
kind = "plugin"
plugin = "openmetrics"
path = "metrics/{{hostname}}.prom"
options = {{ labels = {{ job = "test" }} }}
"#
    ));
    let output = run(dir.path());
    assert_success(&output);

    // The column the transform adds reaches the CSV sink, with each kernel's family.
    let kernels = csv(&dir.path().join("out/kernel_dispatch.csv"));
    let family_of: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "vectorAdd(float const*, float const*, float*, int)",
            "elementwise",
        ),
        (
            "void solver::smooth<8>(double const*, double*, int, int, int)",
            "other",
        ),
        (
            "reduce_kernel(float const*, float*, unsigned int)",
            "reduction",
        ),
    ]);
    assert_eq!(kernels.len(), 600, "the scenario's dispatches");
    for row in &kernels {
        assert_eq!(
            row["kernel_family"],
            family_of[row["kernel_name"].as_str()],
            "{row:?}"
        );
    }

    // The sink plugin's file holds the run's kernels, copies and calls, as the CSV does.
    let report = text(&output.stderr);
    let prom = std::fs::read_dir(dir.path().join("metrics"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = prom.file_name().unwrap().to_str().unwrap();
    assert_says(&report, &format!("\n    metrics/{file}\n"));
    let families = openmetrics(&std::fs::read_to_string(&prom).unwrap());
    let mut expected: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for row in &kernels {
        let entry = expected
            .entry((row["kernel_name"].clone(), row["kernel_family"].clone()))
            .or_default();
        entry.0 += 1.0;
        entry.1 += row["duration_ns"].parse::<f64>().unwrap() / 1e9;
    }
    let series = |family: &str| -> BTreeMap<(String, String), f64> {
        families[family]
            .iter()
            .map(|(labels, value)| {
                assert_eq!(labels["job"], "test");
                assert!(!labels["host"].is_empty());
                (
                    (labels["kernel"].clone(), labels["kernel_family"].clone()),
                    *value,
                )
            })
            .collect()
    };
    let dispatches = series("rocflow_kernel_dispatches");
    let seconds = series("rocflow_kernel_duration_seconds");
    assert_eq!(dispatches.len(), 3);
    for (kernel, (count, time)) in &expected {
        assert_eq!(dispatches[kernel], *count, "{kernel:?}");
        assert!((seconds[kernel] - time).abs() < 1e-9, "{kernel:?}");
    }
    let copies = csv(&dir.path().join("out/memory_copy.csv"));
    let copied: f64 = families["rocflow_memory_copies"].iter().map(|s| s.1).sum();
    assert_eq!(copied, copies.len() as f64);
    let bytes: f64 = copies
        .iter()
        .map(|r| r["bytes"].parse::<f64>().unwrap())
        .sum();
    let exposed: f64 = families["rocflow_memory_copy_bytes"]
        .iter()
        .map(|s| s.1)
        .sum();
    assert_eq!(exposed, bytes);
    let calls: f64 = families["rocflow_api_calls"].iter().map(|s| s.1).sum();
    assert_eq!(calls, csv(&dir.path().join("out/api.csv")).len() as f64);
}

#[test]
fn the_example_pipeline_runs_both_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo().join("examples/plugins.toml");
    let output = run_with(example.to_str().unwrap(), dir.path(), &built_plugins());
    assert_success(&output);
    let out = dir.path().join("rocflow-out");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    // Beside the run's spool and the link to it, the CSV sink's directory and the
    // OpenMetrics file.
    let named = |test: &dyn Fn(&str) -> bool| -> Vec<&PathBuf> {
        (files.iter())
            .filter(|f| test(f.file_name().unwrap().to_str().unwrap()))
            .collect()
    };
    let [tables] = named(&|n| n.starts_with("plugins-"))[..] else {
        panic!("{files:?}")
    };
    let [prom] = named(&|n| n.ends_with(".prom"))[..] else {
        panic!("{files:?}")
    };
    assert_eq!(
        named(&|n| n.starts_with("run-") && n.ends_with(".rfraw")).len(),
        1,
        "{files:?}"
    );
    assert_eq!(named(&|n| n == "last.rfraw").len(), 1, "{files:?}");
    assert_eq!(files.len(), 4, "{files:?}");
    let families = csv(&tables.join("per-family.csv"));
    let names: Vec<&str> = families
        .iter()
        .map(|r| r["kernel_family"].as_str())
        .collect();
    assert_eq!(names.len(), 3);
    for family in ["elementwise", "other", "reduction"] {
        assert!(names.contains(&family), "{names:?}");
    }
    let exposed = openmetrics(&std::fs::read_to_string(prom).unwrap());
    let dispatches: f64 = exposed["rocflow_kernel_dispatches"]
        .iter()
        .map(|s| s.1)
        .sum();
    assert_eq!(dispatches, 600.0);
}

#[test]
fn later_transforms_can_use_a_column_a_plugin_adds() {
    let dir = pipeline(&format!(
        r#"{TRACE}
{FAMILIES}

[[transform]]
name = "reductions"
kind = "filter"
records = ["kernel_dispatch"]
predicate = "kernel_family == \"reduction\""

{TABLES}
records = ["kernel_dispatch"]
"#
    ));
    let explain = with_plugins(&["explain", "p.toml"], dir.path(), &built_plugins());
    assert_success(&explain);
    let plan = text(&explain.stdout);
    assert_says(
        &plan,
        "families on kernel_dispatch: plugin kernel_family at ",
    );
    assert_success(&run(dir.path()));
    let kernels = csv(&dir.path().join("out/kernel_dispatch.csv"));
    assert_eq!(kernels.len(), 200);
    assert!(
        kernels
            .iter()
            .all(|r| r["kernel_name"] == "reduce_kernel(float const*, float*, unsigned int)")
    );

    // The plugin added the column to kernel dispatches only.
    let everywhere = std::fs::read_to_string(dir.path().join("p.toml"))
        .unwrap()
        .replace("records = [\"kernel_dispatch\"]\npredicate", "predicate");
    std::fs::write(dir.path().join("p.toml"), everywhere).unwrap();
    let output = with_plugins(&["validate", "p.toml"], dir.path(), &built_plugins());
    assert_fails(
        &output,
        2,
        &[
            "`kernel_family` is not a column of memory_copy, api records",
            "add `records = [\"kernel_dispatch\"]`",
        ],
    );
}

#[test]
fn a_trusted_replay_loads_the_plugins_the_run_was_recorded_with() {
    let dir = pipeline(&format!(
        r#"{TRACE}
{FAMILIES}

{TABLES}

[[sink]]
name = "metrics"
kind = "plugin"
plugin = "openmetrics"
path = "run.prom"
"#
    ));
    assert_success(&run(dir.path()));
    let recorded = std::fs::read_to_string(dir.path().join("run.prom")).unwrap();
    std::fs::remove_file(dir.path().join("run.prom")).unwrap();
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    // No plugin path now: the recorded plan names the libraries themselves, and the spool
    // is trusted to run them.
    let args = ["replay", "rocflow-out/last.rfraw", "--trust-plan"];
    let replay = rocflow(&args, dir.path(), &[]);
    assert_success(&replay);
    let replayed = std::fs::read_to_string(dir.path().join("run.prom")).unwrap();
    assert_eq!(openmetrics(&replayed), openmetrics(&recorded));
    let kernels = csv(&dir.path().join("out/kernel_dispatch.csv"));
    assert!(kernels.iter().all(|r| !r["kernel_family"].is_empty()));
}

#[test]
fn a_transform_drops_the_rows_its_output_leaves_out() {
    let dir = pipeline(&format!(
        r#"{TRACE}
[[transform]]
name = "sample"
kind = "plugin"
plugin = "probe"
records = ["kernel_dispatch"]
options = {{ keep_every = 2 }}

{TABLES}
"#
    ));
    assert_success(&run(dir.path()));
    let kernels = csv(&dir.path().join("out/kernel_dispatch.csv"));
    assert!(
        (250..=350).contains(&kernels.len()),
        "{} of 600",
        kernels.len()
    );
    assert!(
        kernels
            .iter()
            .all(|r| r["probe_row"].parse::<u32>().unwrap() % 2 == 0)
    );
    // Other kinds did not pass through the transform.
    assert_eq!(csv(&dir.path().join("out/memory_copy.csv")).len(), 400);
}

#[test]
fn a_sink_plugin_written_in_c() {
    let plugins = tempfile::tempdir().unwrap();
    build_c("examples/c/table_rows.c", "table_rows", plugins.path());
    let dir = pipeline(&format!(
        r#"{TRACE}
{TABLES}

[[sink]]
name = "rows"
kind = "plugin"
plugin = "table_rows"
path = "rows.csv"
"#
    ));
    assert_success(&run_with("p.toml", dir.path(), plugins.path()));
    let rows = csv(&dir.path().join("rows.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in rows {
        let table = csv(&dir.path().join(format!("out/{}.csv", row["table"])));
        assert_eq!(row["records"], table.len().to_string());
        let total: u64 = table
            .iter()
            .map(|r| r["duration_ns"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(row["duration_ns"], total.to_string());
    }
}

/// `rocflow validate` of a pipeline naming a plugin; returns stderr after checking exit 2.
fn invalid(transform_or_sink: &str, plugin_path: &Path) -> String {
    let dir = pipeline(&format!("{TRACE}\n{transform_or_sink}"));
    let output = with_plugins(&["validate", "p.toml"], dir.path(), plugin_path);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    text(&output.stderr)
}

/// `rocflow run` of a pipeline naming a plugin, with an application that would leave a file
/// behind; returns stderr after checking exit 2 and that the application never started.
fn refused_run(transform_or_sink: &str, plugin_path: &Path) -> String {
    let dir = pipeline(&format!("{TRACE}\n{transform_or_sink}"));
    let env = [("ROCFLOW_PLUGIN_PATH", plugin_path)];
    let app = ["/usr/bin/touch", "started"];
    let output = run_on("sim", "p.toml", &app, dir.path(), &env);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(!dir.path().join("started").exists(), "the application ran");
    text(&output.stderr)
}

/// The C plugins `sources` (file under `plugins/`, name) built in a directory, and a plugin
/// path of that directory and the built plugins.
fn with_c_plugins(sources: &[(&str, &str)]) -> (tempfile::TempDir, std::ffi::OsString) {
    let plugins = tempfile::tempdir().unwrap();
    for (source, name) in sources {
        build_c(source, name, plugins.path());
    }
    let path = std::env::join_paths([plugins.path(), &built_plugins()]).unwrap();
    (plugins, path)
}

/// Asserts that what `refuse` says of each pipeline entry holds its message and points
/// into the pipeline.
fn assert_refused(cases: &[(String, &str)], refuse: impl Fn(&str) -> String) {
    for (entry, message) in cases {
        let stderr = refuse(entry);
        assert!(
            stderr.contains(message),
            "{entry}\nwants: {message}\n{stderr}"
        );
        assert!(
            stderr.contains("p.toml:"),
            "points into the pipeline:\n{stderr}"
        );
    }
}

fn plugin_transform(plugin: &str, options: &str) -> String {
    format!(
        "[[transform]]\nname = \"t\"\nkind = \"plugin\"\nplugin = \"{plugin}\"\nrecords = [\"kernel_dispatch\"]\n{options}"
    )
}

#[test]
fn plugins_that_are_not_there_fail_validation() {
    let (_plugins, path) = with_c_plugins(&[("tests/c/no_entry.c", "no_entry")]);
    let path = Path::new(&path);
    let cases = [
        (
            plugin_transform("no_entry", ""),
            "is not a rocflow plugin: it does not export `rocflow_plugin_v1`",
        ),
        (
            plugin_transform("nothing", ""),
            "no plugin named `nothing` (librocflow_plugin_nothing.so is in none of",
        ),
        (
            plugin_transform("../../nothing", ""),
            "`../../nothing` is not a plugin name: a name is letters, digits, `_` and `-`",
        ),
        (
            "[[sink]]\nname = \"s\"\nkind = \"csv\"\nplugin = \"openmetrics\"\npath = \"out\"\n"
                .into(),
            "`sink[0].plugin` does not belong to this `kind`",
        ),
        (
            "[[sink]]\nname = \"s\"\nkind = \"plugin\"\npath = \"out\"\n".into(),
            "`sink[0]` is missing `plugin`",
        ),
    ];
    assert_refused(&cases, |entry| invalid(entry, path));
    let path_given = invalid(&plugin_transform("../../nothing", ""), path);
    assert_says(
        &path_given,
        "help: name the library librocflow_plugin_NAME.so, put its directory on ROCFLOW_PLUGIN_PATH",
    );
}

#[test]
fn validate_and_explain_run_no_plugin_code() {
    let plugins = tempfile::tempdir().unwrap();
    build_c("tests/c/constructor.c", "constructor", plugins.path());
    let dir = pipeline(&format!(
        "{TRACE}\n[[sink]]\nname = \"nothing\"\nkind = \"plugin\"\nplugin = \"constructor\"\npath = \"nothing\"\n"
    ));
    let marker = dir.path().join("constructed");
    let env = [
        ("ROCFLOW_PLUGIN_PATH", plugins.path()),
        ("ROCFLOW_TEST_MARKER", marker.as_path()),
    ];
    let validate = rocflow(&["validate", "p.toml"], dir.path(), &env);
    assert_success(&validate);
    assert_success(&rocflow(&["explain", "p.toml"], dir.path(), &env));
    assert!(!marker.exists(), "validate or explain loaded the plugin");
    assert_says(
        &validate.stderr,
        "note: plugin `constructor` is checked without loading it: whether it is a sink and takes these options is checked when `rocflow run` or `replay` loads it",
    );
    // Loading it runs the constructor: the marker is a witness.
    assert_success(&rocflow(&["plugins", "list"], dir.path(), &env));
    assert!(marker.exists());
}

#[test]
fn plugins_that_cannot_work_stop_a_run_before_it_starts() {
    let (_plugins, path) = with_c_plugins(&[("tests/c/wrong_abi.c", "wrong_abi")]);
    let path = Path::new(&path);
    let cases = [
        (
            plugin_transform("wrong_abi", ""),
            "is built for plugin ABI version 2; this rocflow loads version 1",
        ),
        (
            plugin_transform("probe", "options = { panic = \"create\" }"),
            "plugin `probe` panicked: the probe panics in Create, as asked",
        ),
        (
            plugin_transform("probe", "options = { panic = \"process\" }"),
            "plugin `probe` panicked: the probe panics in Process, as asked (at plugins/tests/probe/src/lib.rs:",
        ),
        (
            plugin_transform("probe", "options = { keep_evry = 2 }"),
            "plugin `probe` failed: options: unknown field `keep_evry`",
        ),
        (
            plugin_transform("openmetrics", ""),
            "plugin `openmetrics` is not a transform; it is a sink",
        ),
        (
            "[[sink]]\nname = \"s\"\nkind = \"plugin\"\nplugin = \"openmetrics\"\npath = \"m.prom\"\noptions = { labels = { kernel = \"x\" } }\n".into(),
            "`kernel` cannot be a label",
        ),
    ];
    let sample = refused_run(
        &plugin_transform("probe", "options = { panic = \"process\" }"),
        path,
    );
    assert_says(
        &sample,
        "validation runs a transform on a sample kernel_dispatch record",
    );
    // Option errors point into the pipeline, not at a place in the JSON rocflow made.
    let typo = refused_run(
        &plugin_transform("probe", "options = { keep_evry = 2 }"),
        path,
    );
    assert!(!typo.contains("at line 1 column"), "{typo}");
    assert_refused(&cases, |entry| refused_run(entry, path));
}

#[test]
fn a_panicking_transform_passes_its_records_on_and_the_run_goes_on() {
    // The probe gets through the one record validation gives it, then panics on the run's
    // batches of kernel dispatches.
    let dir = pipeline(&format!(
        r#"{TRACE}
[[transform]]
name = "fragile"
kind = "plugin"
plugin = "probe"
records = ["kernel_dispatch"]
options = {{ panic = "process", over_rows = 1 }}

{TABLES}
"#
    ));
    let output = run(dir.path());
    assert_success(&output);
    let stderr = text(&output.stderr);
    let warning = Regex::new(
        r"warning: transform `fragile` failed on (\d+) records; first: kernel_dispatch records of stream \d+: plugin `probe` panicked: the probe panics in Process, as asked",
    )
    .unwrap();
    let failed: usize = warning
        .captures(&stderr)
        .unwrap_or_else(|| panic!("{stderr}"))[1]
        .parse()
        .unwrap();
    let kernels = csv(&dir.path().join("out/kernel_dispatch.csv"));
    assert_eq!(kernels.len(), 600, "every record went on");
    assert!(failed > 300, "most batches are large: {failed} of 600");
}

#[test]
fn a_failing_sink_plugin_does_not_stop_the_other_sinks() {
    let dir = pipeline(&format!(
        r#"{TRACE}
{TABLES}

[[sink]]
name = "panics"
kind = "plugin"
plugin = "probe"
path = "ignored-1"
options = {{ panic = "write" }}

[[sink]]
name = "fails"
kind = "plugin"
plugin = "probe"
path = "ignored-2"
options = {{ fail = "finish" }}

[[sink]]
name = "finishes"
kind = "plugin"
plugin = "probe"
path = "probe.txt"
"#
    ));
    let output = run(dir.path());
    // A sink failed.
    assert_fails(
        &output,
        1,
        &[
            "error: sink `panics`: plugin `probe` panicked: the probe panics in Write, as asked",
            "error: sink `fails`: plugin `probe` failed: the probe fails in Finish, as asked",
        ],
    );
    assert_eq!(csv(&dir.path().join("out/kernel_dispatch.csv")).len(), 600);
    // A plugin sink writes where rocflow stages it: a failed one leaves nothing behind, a
    // finished one's output is moved to its path (and reported there).
    let mut entries: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "p.toml" && name != "rocflow-out")
        .collect();
    entries.sort();
    assert_eq!(entries, ["out", "probe.txt"], "{}", text(&output.stderr));
    let written = std::fs::read_to_string(dir.path().join("probe.txt")).unwrap();
    assert_says(&written, "kernel_dispatch ");
    assert_says(&output.stderr, "    probe.txt\n");
}

/// A sink slower than the application does not hold it back: past what the runner keeps
/// in memory (64 MiB, about 880,000 of these records), frames wait on disk, the application
/// exits while the sink still waits on its first batch, and the sink then gets every
/// record, each once. Held back, the application could not exit before the sink had taken
/// all but its last 64 MiB, and this sink takes nothing until rocflow says it has exited.
#[test]
fn a_sink_slower_than_the_application_does_not_hold_it_back() {
    let dir = tempfile::tempdir().unwrap();
    // 2 M records.
    support::launches_scenario(dir.path(), 62_500);
    let pipeline = format!(
        r#"{}
[[sink]]
name = "slow"
kind = "plugin"
plugin = "probe"
path = "probe.txt"
options = {{ first_write_after = "exited" }}
"#,
        support::traced_pipeline!(
            "slow-sink",
            "trace",
            r#"["kernel_dispatch", "hip_runtime_api"]"#
        ),
    );
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let plugins = built_plugins();
    let stderr = dir.path().join("stderr.txt");
    let mut rocflow = support::Spawned::start(
        support::rocflow_command(
            &[
                "run",
                "p.toml",
                "--device",
                "sim:launches.toml",
                "--",
                "/bin/true",
            ],
            dir.path(),
            &[("ROCFLOW_PLUGIN_PATH", plugins.as_path())],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap()),
    );
    // What rocflow says every 10 s while the stages are behind an application that exited.
    let behind = Regex::new(
        r"(?m)^progress: the application exited after [0-9.]+ s; the stages have taken [0-9]+ of its 2000000 records$",
    )
    .unwrap();
    support::wait_until("the application exits while the sink waits", || {
        behind.is_match(&std::fs::read_to_string(&stderr).unwrap())
    });
    std::fs::write(dir.path().join("exited"), "").unwrap();
    let status = rocflow.0.wait().unwrap();
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{said}");
    let written = std::fs::read_to_string(dir.path().join("probe.txt")).unwrap();
    let rows: u64 = (written.lines())
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(rows, 2_000_000, "every record reached the sink once");
}

#[test]
fn plugins_list_shows_each_plugin_its_kinds_and_whether_it_loads() {
    let plugins = tempfile::tempdir().unwrap();
    build_c("tests/c/wrong_abi.c", "wrong_abi", plugins.path());
    build_c("tests/c/no_entry.c", "no_entry", plugins.path());
    build_c("examples/c/table_rows.c", "table_rows", plugins.path());
    build_c("examples/c/table_rows.c", "probe", plugins.path());
    let path = std::env::join_paths([plugins.path(), &built_plugins()]).unwrap();
    let output = with_plugins(&["plugins", "list"], plugins.path(), Path::new(&path));
    assert_success(&output);
    let stdout = text(&output.stdout);
    let line = |name: &str| -> Vec<String> {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}:\n{stdout}"));
        line.split("  ")
            .map(|w| w.trim().to_owned())
            .filter(|w| !w.is_empty())
            .collect()
    };
    let dir = plugins.path().display().to_string();
    let built = built_plugins().display().to_string();
    assert_eq!(line("kernel_family")[1..4], ["transform", "1", "yes"]);
    assert!(line("kernel_family")[4].starts_with(&built));
    assert_eq!(line("openmetrics")[1..4], ["sink", "1", "yes"]);
    assert_eq!(line("table_rows")[1..4], ["sink", "1", "yes"]);
    assert_eq!(line("wrong_abi")[1..4], ["?", "2", "no"]);
    assert_eq!(line("no_entry")[1..4], ["?", "?", "no"]);
    // The C build of table_rows named `probe` comes first on the path and hides the probe.
    assert_eq!(line("probe")[1..4], ["sink", "1", "yes"]);
    assert!(line("probe")[4].starts_with(&dir));
    for expected in [
        "table_rows 1.0: Counts each table's records and sums their durations, as CSV",
        "error: ",
        "is built for plugin ABI version 2; this rocflow loads version 1",
        "hint: rebuild the plugin against this rocflow's rocflow_plugin.h",
        "does not export `rocflow_plugin_v1`",
        &format!("shadows {built}/librocflow_plugin_probe.so"),
    ] {
        assert!(stdout.contains(expected), "wants {expected}:\n{stdout}");
    }
}
