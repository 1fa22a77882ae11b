//! rocprofv3's everyday options on `rocflow run`, `explain` and `replay`: each changes the
//! pipeline as an extending pipeline file would, a flag never silently replaces what the
//! pipeline says, and `rocflow run -- APP` needs no pipeline at all.

use std::path::Path;

use support::{assert_fails, assert_says, assert_success, rocflow, text, with_file, write_file};

/// `rocflow explain` without its `sources:` line, which names where each part came from
/// (the flags, or the file that says the same).
fn explained(args: &[&str], dir: &Path) -> String {
    let mut command = vec!["explain"];
    command.extend_from_slice(args);
    let out = rocflow(&command, dir, &[]);
    assert_success(&out);
    let plan = text(&out.stdout);
    let lines = plan
        .lines()
        .filter(|l| !l.trim_start().starts_with("sources:"));
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn explain_with_flags_is_the_explain_of_the_pipeline_they_describe() {
    // What the flags below say, written as a pipeline extending the same template.
    let (dir, _) = with_file(
        "same.toml",
        r#"[pipeline]
extends = ["kernel-trace"]

[params]
output_dir = "out"

[[context]]
name = "kernels"
period = { delay = "1s", duration = "2s", interval = "1s", repeat = 2 }

[[context]]
name = "pmc"
counters = { collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"], kernels = { include = "smooth", exclude = "reduce" }, iterations = "[2-5],[7]" }
period = { delay = "1s", duration = "2s", interval = "1s", repeat = 2 }
"#,
    );
    let flags = [
        "kernel-trace",
        "-d",
        "out",
        "--pmc",
        "SQ_WAVES,SQ_INSTS_VALU",
        "GRBM_GUI_ACTIVE",
        "--kernel-include-regex",
        "smooth",
        "--kernel-exclude-regex",
        "reduce",
        "--kernel-iteration-range",
        "[2-5]",
        "7",
        "--collection-period",
        "1000:2000:3",
        "--collection-period-unit",
        "msec",
    ];
    let with_flags = explained(&flags, dir.path());
    assert_eq!(with_flags, explained(&["same.toml"], dir.path()));
    // One period (a repeat of 0 is one, as rocprofv3 counts): no pause, no repeat.
    write_file(
        dir.path(),
        "once.toml",
        "[pipeline]\nextends = [\"kernel-trace\"]\n[[context]]\nname = \"kernels\"\nperiod = { delay = \"500ms\", duration = \"2s\" }\n",
    );
    assert_eq!(
        explained(&["kernel-trace", "-P", "0.5:2:0"], dir.path()),
        explained(&["once.toml"], dir.path())
    );
    // The flags did change the plan, and say so among its sources.
    assert_ne!(with_flags, explained(&["kernel-trace"], dir.path()));
    assert_says(&with_flags, "dispatch counting");
    let json = text(
        &rocflow(
            &["explain", "--json", "kernel-trace", "--stats"],
            dir.path(),
            &[],
        )
        .stdout,
    );
    assert!(
        json.contains("command line `--stats`"),
        "the flags are a source of the plan: {json}"
    );

    // --stats adds a summary step writing CSV tables where the pipeline writes, as a
    // `[[post]]` entry would; -d is its `output_dir`.
    write_file(
        dir.path(),
        "bare.toml",
        r#"[pipeline]
name = "bare"

[params]
output_dir = "rocflow-out"

[[context]]
name = "kernels"
tracing = ["kernel_dispatch"]

[[sink]]
name = "csv"
kind = "csv"
path = "{output_dir}/csv"
"#,
    );
    write_file(
        dir.path(),
        "stats.toml",
        r#"[pipeline]
extends = ["bare"]

[params]
output_dir = "elsewhere"

[[post]]
name = "stats"
kind = "summary"
path = "{output_dir}/stats"
formats = ["csv"]
"#,
    );
    let with_stats = explained(&["bare.toml", "--stats", "-d", "elsewhere"], dir.path());
    assert_eq!(with_stats, explained(&["stats.toml"], dir.path()));
    assert_says(&with_stats, "elsewhere/stats");
}

#[test]
fn stats_on_a_pipeline_with_a_summary_changes_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(&["explain", "trace-all", "--stats"], dir.path(), &[]);
    assert_success(&out);
    assert_says(
        &out.stderr,
        "`--stats`: the pipeline's summary step `summary` writes the statistics already",
    );
    assert_eq!(
        explained(&["trace-all", "--stats"], dir.path()),
        explained(&["trace-all"], dir.path())
    );
}

/// Runs `explain` with `args`, which must fail with exit code 2; gives stderr.
fn refused(args: &[&str], dir: &Path) -> String {
    let mut command = vec!["explain"];
    command.extend_from_slice(args);
    let out = rocflow(&command, dir, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing is explained");
    text(&out.stderr)
}

#[track_caller]
fn says(stderr: &str, needles: &[&str]) {
    for needle in needles {
        assert!(stderr.contains(needle), "no `{needle}` in:\n{stderr}");
    }
}

#[test]
fn a_flag_that_would_replace_what_the_pipeline_says_is_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    // The template's kernel filter comes from a parameter: that is the way to change it.
    says(
        &refused(
            &["counters-basic", "--kernel-include-regex", "gemm"],
            dir.path(),
        ),
        &[
            "error: `--kernel-include-regex` would replace `kernels.include` of context `counters`",
            "--> pipelines/counters-basic.toml:41:23",
            "the flag: `--kernel-include-regex gemm`",
            "help: the pipeline takes it from a parameter: --set kernel_regex=…",
        ],
    );
    // rocprofiler-sdk counts dispatches for one context only.
    says(
        &refused(&["counters-basic", "--pmc", "SQ_WAVES"], dir.path()),
        &[
            "error: `--pmc` adds a context that collects counters, and context `counters` collects counters",
            "--> pipelines/counters-basic.toml:39:1",
        ],
    );
    write_file(
        dir.path(),
        "serial.toml",
        "[[context]]\nname = \"k\"\ntracing = [\"kernel_dispatch\"]\nserialize = true\n",
    );
    says(
        &refused(&["serial.toml", "--pmc", "SQ_WAVES"], dir.path()),
        &[
            "and context `k` serializes dispatches",
            "--> serial.toml:4:13",
        ],
    );
    says(
        &refused(&["always-on", "-P", "1:2:0"], dir.path()),
        &[
            "error: `--collection-period` would replace the period of context `kernels`",
            "--> pipelines/always-on.toml:32:10",
            "the flag: `--collection-period 1:2:0`",
        ],
    );
    // -d is the `output_dir` parameter: --set saying the same is a second answer.
    says(
        &refused(
            &["kernel-trace", "-d", "a", "--set", "output_dir=b"],
            dir.path(),
        ),
        &["error: `-d` and `--set output_dir=…` both say where the outputs go"],
    );
    write_file(
        dir.path(),
        "fixed.toml",
        "[[context]]\nname = \"k\"\ntracing = [\"kernel_dispatch\"]\n[[sink]]\nname = \"p\"\nkind = \"perfetto\"\npath = \"k.pftrace\"\n",
    );
    says(
        &refused(&["fixed.toml", "--output-dir", "a"], dir.path()),
        &["`-d` sets the `output_dir` parameter, and pipeline fixed.toml has none"],
    );
}

#[test]
fn the_output_directory_takes_rocprofv3s_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let plan = explained(&["kernel-trace", "-d", "runs/%hostname%/%p"], dir.path());
    assert_says(
        &plan,
        "rocpd (rocpd): runs/{hostname}/{pid}/{hostname}-{pid}.db",
    );
    says(
        &refused(&["kernel-trace", "-d", "runs/%job%"], dir.path()),
        &[
            "error: rocflow has no value for `%job%` in an output directory",
            "--> command line:1:4",
        ],
    );
}

#[test]
fn flags_with_nothing_to_apply_to_or_bad_values_point_at_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    // rocprofv3's kernel filters select counter collection, not traced kernels.
    says(
        &refused(&["trace-all", "--kernel-exclude-regex", "gemm"], dir.path()),
        &[
            "`--kernel-exclude-regex` selects the kernels whose counters are collected (as in rocprofv3), and pipeline pipelines/trace-all.toml collects none",
            "--> command line:1:1",
            "add --pmc NAME…",
        ],
    );
    says(
        &refused(
            &[
                "trace-all",
                "--pmc",
                "SQ_WAVES",
                "--kernel-include-regex",
                "a(",
            ],
            dir.path(),
        ),
        &[
            "error: invalid kernel regex: unclosed group",
            "--> command line:1:39",
        ],
    );
    says(
        &refused(&["trace-all", "-P", "1:2:0", "3:4:1"], dir.path()),
        &["rocflow collects in one period", "--> command line:1:27"],
    );
    says(
        &refused(&["trace-all", "-P", "1:x:0"], dir.path()),
        &["`x` in `1:x:0` is not a time"],
    );
    // Each counter of a list keeps its own place, for the counter checks.
    let defs = support::counters::shared(support::counters::STANDARD);
    let defs = defs.display().to_string();
    says(
        &refused(
            &[
                "trace-all",
                "--pmc",
                "SQ_WAVES,SQ_WAVEZ",
                "--counters",
                &defs,
            ],
            dir.path(),
        ),
        &[
            "error: unknown counter `SQ_WAVEZ`",
            "--> command line:1:16",
            "did you mean `SQ_WAVES`?",
        ],
    );
}

#[test]
fn run_without_a_pipeline_is_a_system_trace_and_flags_change_what_is_collected() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(
        &[
            "run",
            "--device",
            "sim",
            "-d",
            "trace",
            "--",
            "/bin/sleep",
            "0.1",
        ],
        dir.path(),
        &[],
    );
    assert_success(&out);
    assert_says(
        &out.stderr,
        "no pipeline given: running `trace-all`, a system trace like `rocprofv3 --sys-trace`",
    );
    let report = text(&out.stderr);
    for kind in ["kernel_dispatch", "memory_copy", "api", "marker"] {
        assert!(
            report.contains(&format!("\n  {kind}: ")),
            "{kind}: {report}"
        );
    }
    assert!(
        dir.path().join("trace/last.rfraw").exists(),
        "-d is where outputs go"
    );

    // Counters of the kernels and dispatches the flags select: vectorAdd on gfx942
    // (SQ_WAVES: 8 XCC x 4 SE, GRBM_GUI_ACTIVE: 8 XCC) and reduce on gfx90a (SQ_WAVES: 8 SE,
    // GRBM_GUI_ACTIVE: 1), ten dispatches each (as tests/run.rs counts them).
    write_file(
        dir.path(),
        "csv.toml",
        "[[context]]\nname = \"k\"\ntracing = [\"kernel_dispatch\"]\n[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n",
    );
    // The filter selects by the code object's (mangled) name or by the shown one, as a
    // regex that only the demangled signatures match shows.
    for regex in ["vectorAdd|reduce", r"^vectorAdd\(|^reduce_kernel\("] {
        let out = rocflow(
            &[
                "run",
                "csv.toml",
                "--device",
                "sim",
                "--pmc",
                "SQ_WAVES",
                "GRBM_GUI_ACTIVE",
                "--kernel-include-regex",
                regex,
                "--kernel-iteration-range",
                "[1-10]",
                "--",
                "/bin/sleep",
                "0.1",
            ],
            dir.path(),
            &[],
        );
        assert_success(&out);
        let samples = std::fs::read_to_string(dir.path().join("out/counter_sample.csv")).unwrap();
        let rows = samples.lines().count() - 1;
        assert_eq!(rows, 10 * (32 + 8) + 10 * (8 + 1), "{regex}");
    }
}

#[test]
fn replay_takes_the_output_flags_with_a_pipeline() {
    let (dir, _) = with_file(
        "p.toml",
        "[pipeline]\nspool_dir = \"{output_dir}\"\n[params]\noutput_dir = \"first\"\n[[context]]\nname = \"k\"\ntracing = [\"kernel_dispatch\"]\n[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"{output_dir}/csv\"\n",
    );
    let out = rocflow(
        &[
            "run",
            "p.toml",
            "--device",
            "sim",
            "--",
            "/bin/sleep",
            "0.1",
        ],
        dir.path(),
        &[],
    );
    assert_success(&out);
    assert!(!dir.path().join("first/stats").exists());
    let out = rocflow(
        &[
            "replay",
            "first/last.rfraw",
            "p.toml",
            "--stats",
            "-d",
            "again",
        ],
        dir.path(),
        &[],
    );
    assert_success(&out);
    let kernels = support::csv(&dir.path().join("again/stats/kernels.csv"));
    assert_eq!(kernels.len(), 3, "one row per kernel: {kernels:?}");
    assert!(dir.path().join("again/csv/kernel_dispatch.csv").exists());
    // The recorded pipeline is replayed as it was: flags have nothing to change.
    let out = rocflow(&["replay", "first/last.rfraw", "--stats"], dir.path(), &[]);
    assert_fails(&out, 2, &["give a pipeline"]);
}
