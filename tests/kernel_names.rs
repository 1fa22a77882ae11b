//! Kernel and marker names, decided once for the whole flow: the same name in the
//! terminal, every sink (CSV, Parquet, rocpd, Perfetto, OTF2), the summary and the report
//! of one run; demangled by default, mangled, truncated or renamed after the ROCTx range
//! on request (`[pipeline] kernel_names`, or `--kernel-names`), with the mangled name kept
//! where a format has a place for it.

use std::collections::BTreeMap;
use std::path::Path;

use support::cxxfilt::demangle;
use support::{assert_says, assert_success, csv, only, rocflow, sqlite_rows, tally, text};

/// trace-all (Perfetto, rocpd, summary, report) plus CSV, Parquet and OTF2: the outputs
/// of [`support::MARKERS`], with kernels and API calls.
fn every_output() -> String {
    support::MARKERS.replace("\"marker-trace\"", "\"trace-all\"")
}

fn scenario() -> toml::Value {
    let path = support::repo().join("examples/sim/mi300x.toml");
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The scenario's kernels (mangled), and how many dispatches each has in a run.
fn kernels(scenario: &toml::Value) -> (Vec<String>, usize) {
    let s = &scenario["scenario"];
    let each = s["threads"].as_integer().unwrap() * s["iterations"].as_integer().unwrap();
    let names = (scenario["kernel"].as_array().unwrap().iter())
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect();
    (names, each as usize)
}

/// Runs `pipeline` (written as names.toml) on the simulated device with `flags`; returns
/// rocflow's report of the run (on stderr).
fn run(dir: &Path, pipeline: &str, flags: &[&str], device: &str) -> String {
    std::fs::write(dir.join("names.toml"), pipeline).unwrap();
    let mut args = vec!["run", "names.toml", "--device", device];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "/bin/sleep", "0.1"]);
    let output = rocflow(&args, dir, &[]);
    assert_success(&output);
    text(&output.stderr)
}

/// The kernel name of every dispatch in each output, tallied: the CSV table, the Parquet
/// dataset (read by DuckDB), the rocpd database's dispatches by their kernel's display
/// name, the Perfetto trace's kernel slices (decoded with the official schema), the OTF2
/// archive's kernel regions entered (read by `otf2-print`), and the summary's calls.
fn names_in_outputs(dir: &Path, of: &[String]) -> BTreeMap<&'static str, BTreeMap<String, usize>> {
    let out = dir.join("rocflow-out");
    let rows = csv(&only(&out, "csv/kernel_dispatch.csv"));
    let parquet = only(&out, "parquet/kernel_dispatch/");
    let query = format!("SELECT kernel_name FROM '{}'", parquet.display());
    let parquet = support::duckdb(dir, &[&query]).remove(0);
    let db = rusqlite::Connection::open(only(&out, ".db")).unwrap();
    let rocpd: Vec<String> = sqlite_rows(&db, "SELECT name FROM kernels", |r| r.get(0));
    let trace = support::decode_perfetto(&[only(&out, ".pftrace")]);
    let slices = (trace[0]["events"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "B" && e["category"] == "kernel_dispatch")
        .map(|e| e["name"].as_str().unwrap().to_owned());
    // Kernels are HIP regions, as the API calls are: only the kernels' names count.
    let otf2 = (support::otf2_entered(&only(&out, ".otf2"), "\"HIP\" <23>").into_iter())
        .filter(|name| of.contains(name));
    let summary: BTreeMap<String, usize> = (csv(&out.join("summary/kernels.csv")).iter())
        .map(|row| (row["kernel"].clone(), row["calls"].parse().unwrap()))
        .collect();
    BTreeMap::from([
        ("csv", tally(rows.iter().map(|r| r["kernel_name"].clone()))),
        (
            "parquet",
            tally(parquet.iter().map(|r| r[0].as_str().unwrap().to_owned())),
        ),
        ("rocpd", tally(rocpd)),
        ("perfetto", tally(slices)),
        ("otf2", tally(otf2)),
        ("summary", summary),
    ])
}

/// Each name `each` times.
fn expected(names: &[String], each: usize) -> BTreeMap<String, usize> {
    names.iter().map(|n| (n.clone(), each)).collect()
}

/// Fails unless every output names the dispatches `names`, `each` times each.
fn assert_named(dir: &Path, names: &[String], each: usize) {
    for (output, found) in names_in_outputs(dir, names) {
        assert_eq!(found, expected(names, each), "{output}");
    }
}

/// What a text says with HTML's escapes, as the report writes it.
fn html(name: &str) -> String {
    name.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Every kernel `rocflow generate` names, templates with literals of several types among
/// them, is demangled as `c++filt` demangles it: the tests of the sinks that replay
/// generated runs expect `c++filt`'s names.
#[test]
fn generated_kernels_are_named_as_cxxfilt_names_them() {
    let mangled: Vec<String> = (rocflow::generate::KERNEL_NAMES.iter())
        .map(|name| (*name).to_owned())
        .collect();
    let ours: Vec<String> = (mangled.iter())
        .map(|name| rocflow::kernel_names::demangle(name))
        .collect();
    assert_eq!(ours, demangle(&mangled));
}

#[test]
fn every_output_names_kernels_demangled_and_keeps_the_mangled_name() {
    let dir = tempfile::tempdir().unwrap();
    let printed = run(dir.path(), &every_output(), &[], "sim");
    let (mangled, each) = kernels(&scenario());
    let demangled = demangle(&mangled);
    assert_ne!(demangled, mangled);
    assert_named(dir.path(), &demangled, each);
    let out = dir.path().join("rocflow-out");
    // The terminal's kernels and the report.
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for name in &demangled {
        assert!(printed.contains(name.as_str()), "{name} in:\n{printed}");
        assert!(report.contains(&html(name)), "{name} in the report");
    }
    // The scenario's ranges are named: every marker output and the report's markers say so.
    let message = scenario()["scenario"]["marker_message"]
        .as_str()
        .unwrap()
        .to_owned();
    for (output, found) in support::marker_messages(dir.path()) {
        assert_eq!(found, tally(vec![message.as_str(); each]), "{output}");
    }
    assert!(
        report.contains(&format!(">{message}<")),
        "the report's markers"
    );
    // The mangled names, where the formats have a place for them: rocpd's kernel symbols
    // (which AMD's tools read by their display name), the Parquet kernel symbols, OTF2's
    // canonical region names.
    let db = rusqlite::Connection::open(only(&out, ".db")).unwrap();
    let sql = "SELECT kernel_name, display_name FROM kernel_symbols";
    let symbols: BTreeMap<String, String> = sqlite_rows(&db, sql, |r| Ok((r.get(0)?, r.get(1)?)));
    let pairs: BTreeMap<String, String> = mangled.iter().cloned().zip(demangled.clone()).collect();
    assert_eq!(symbols, pairs);
    let parquet = only(&out, "parquet/kernel_symbols/");
    let query = format!(
        "SELECT mangled_name, kernel_name FROM '{}' ORDER BY 1",
        parquet.display()
    );
    let rows: BTreeMap<String, String> = (support::duckdb(dir.path(), &[&query]).remove(0))
        .into_iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
        .collect();
    assert_eq!(rows, pairs);
    let regions = support::otf2_print(&["-G"], &only(&out, ".otf2"));
    for (mangled, demangled) in &pairs {
        assert!(
            regions.lines().any(|l| l.starts_with("REGION ")
                && l.contains(&format!("Name: \"{demangled}\""))
                && l.contains(&format!("(Aka. \"{mangled}\""))),
            "{demangled} ({mangled}) in:\n{regions}"
        );
    }
    // A replay of the rocpd database names them the same: the mangled name came back.
    let replayed = tempfile::tempdir().unwrap();
    std::fs::write(replayed.path().join("names.toml"), every_output()).unwrap();
    let db = only(&out, ".db");
    let output = rocflow(
        &["replay", db.to_str().unwrap(), "names.toml"],
        replayed.path(),
        &[],
    );
    assert_success(&output);
    assert_named(replayed.path(), &demangled, each);
}

#[test]
fn mangled_and_truncated_on_request_from_the_flag_or_the_pipeline() {
    let (mangled, each) = kernels(&scenario());
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &every_output(),
        &["--kernel-names", "mangled"],
        "sim",
    );
    assert_named(dir.path(), &mangled, each);

    // rocprofv3 truncates to the base name: `void solver::smooth<8>(…)` is `smooth`.
    let dir = tempfile::tempdir().unwrap();
    let pipeline = every_output().replace(
        "extends = [\"trace-all\"]",
        "extends = [\"trace-all\"]\nkernel_names = \"truncated\"",
    );
    assert!(pipeline.contains("kernel_names"));
    run(dir.path(), &pipeline, &[], "sim");
    let truncated = ["vectorAdd", "smooth", "reduce_kernel"].map(String::from);
    assert_named(dir.path(), &truncated, each);

    // A spool replays in another form, the flag over the recorded pipeline's.
    let output = rocflow(
        &[
            "replay",
            "rocflow-out/last.rfraw",
            "--kernel-names",
            "mangled",
        ],
        dir.path(),
        &[],
    );
    assert_success(&output);
    assert_named(dir.path(), &mangled, each);
}

#[test]
fn renamed_after_the_roctx_range_around_the_launch() {
    let scenario = scenario();
    let (mangled, each) = kernels(&scenario);
    let message = scenario["scenario"]["marker_message"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &every_output(),
        &["--kernel-names", "renamed"],
        "sim",
    );
    // Every dispatch is launched inside an iteration's range: all go by its message.
    let renamed = [message.to_owned()];
    for (output, found) in names_in_outputs(dir.path(), &renamed) {
        assert_eq!(found, expected(&renamed, each * mangled.len()), "{output}");
    }
    // Each kernel keeps its mangled name, in a symbol of its own named after the range.
    let db = rusqlite::Connection::open(only(&dir.path().join("rocflow-out"), ".db")).unwrap();
    let symbols: Vec<(String, String)> = db
        .prepare("SELECT kernel_name, display_name FROM kernel_symbols WHERE display_name = ?1 ORDER BY 1")
        .unwrap()
        .query_map([message], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut kept = mangled.clone();
    kept.sort();
    let expected_symbols: Vec<(String, String)> =
        kept.into_iter().map(|m| (m, message.to_owned())).collect();
    assert_eq!(symbols, expected_symbols);

    // Outside every named range (the ranges have no message), kernels keep their names;
    // the ranges go by their ROCTx function in every output.
    let nameless = std::fs::read_to_string(support::repo().join("examples/sim/mi300x.toml"))
        .unwrap()
        .replace(&format!("marker_message = \"{message}\"\n"), "");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nameless.toml"), nameless).unwrap();
    let flags = ["--kernel-names", "renamed"];
    run(dir.path(), &every_output(), &flags, "sim:nameless.toml");
    assert_named(dir.path(), &demangle(&mangled), each);
    // One label where an output names a marker; the tables keep the empty message beside
    // the function, which their `operation` column holds.
    let function = "roctxThreadRangeA";
    for (output, found) in support::marker_messages(dir.path()) {
        let label = match output {
            "csv" | "parquet" | "rocpd" => "",
            _ => function,
        };
        assert_eq!(found, tally(vec![label; each]), "{output}");
    }
    let out = dir.path().join("rocflow-out");
    let markers = csv(&only(&out, "csv/marker.csv"));
    assert!(markers.iter().all(|row| row["operation"] == function));
    let summary: Vec<(String, String)> = (csv(&out.join("summary/markers.csv")).iter())
        .map(|row| (row["range"].clone(), row["calls"].clone()))
        .collect();
    assert_eq!(summary, [(function.to_owned(), each.to_string())]);
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains(function), "the report's markers");
}

/// `rocflow explain` of a pipeline with `--kernel-names`, and of the same pipeline saying
/// it: the plan is the same (but for the files it came from).
#[test]
fn the_flag_only_changes_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("says.toml"),
        "[pipeline]\nname = \"csv\"\nextends = [\"csv\"]\nkernel_names = \"truncated\"\n",
    )
    .unwrap();
    let explain = |args: &[&str]| {
        let output = rocflow(args, dir.path(), &[]);
        assert_success(&output);
        let plan = text(&output.stdout);
        plan.lines()
            .filter(|l| !l.trim_start().starts_with("sources:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let flagged = explain(&["explain", "csv", "--kernel-names", "truncated"]);
    assert_says(&flagged, "kernel names: truncated");
    assert_eq!(flagged, explain(&["explain", "says.toml"]));
    assert_ne!(flagged, explain(&["explain", "csv"]));
    let json = |args: &[&str]| {
        let output = rocflow(args, dir.path(), &[]);
        assert_success(&output);
        let mut plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        plan["pipeline"]["sources"] = serde_json::Value::Null;
        plan
    };
    assert_eq!(
        json(&["explain", "csv", "--kernel-names", "truncated", "--json"]),
        json(&["explain", "says.toml", "--json"])
    );
    // The same form twice is no conflict; another one is, named with both places.
    assert_success(&rocflow(
        &["explain", "says.toml", "--kernel-names", "truncated"],
        dir.path(),
        &[],
    ));
    let output = rocflow(
        &["explain", "says.toml", "--kernel-names", "mangled"],
        dir.path(),
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let conflict =
        "`--kernel-names mangled` conflicts with the pipeline's `kernel_names = \"truncated\"`";
    support::assert_says(&output.stderr, conflict);
    support::assert_says(&output.stderr, "says.toml:4:16");
    support::assert_says(&output.stderr, "the flag: `--kernel-names mangled`");
    support::assert_says(
        &output.stderr,
        "drop `--kernel-names`, or the pipeline's setting",
    );
    assert!(output.stdout.is_empty());
}
