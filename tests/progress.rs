//! What a person sees while `rocflow run` and `rocflow replay` go on (a few plain lines
//! on a stderr that is not a terminal, none with `--quiet`), a run that profiled nothing,
//! and a run of several processes whose outputs name the process: a file each.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use support::{
    assert_says, assert_success, decode_perfetto, entries, rocflow, run_on, seconds_after, sim_app,
    text,
};

const PIPELINE: &str = concat!(
    support::traced_pipeline!("watched", "trace"),
    support::sink!("csv", "csv", "out/csv"),
    support::sink!("trace", "perfetto", "out/trace.pftrace"),
    "[[post]]\nname = \"stats\"\nkind = \"summary\"\npath = \"out/stats\"\n",
);

/// `rocflow run` of the pipeline on `/bin/sleep`, in a fresh directory, stderr piped.
fn run(args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PIPELINE).unwrap();
    let mut command = vec!["run", "p.toml", "--device", "sim"];
    command.extend_from_slice(args);
    command.extend_from_slice(&["--", "/bin/sleep", "0.1"]);
    (rocflow(&command, dir.path(), &[]), dir)
}

/// The progress lines of stderr.
fn progress(output: &Output) -> Vec<String> {
    text(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .map(str::to_owned)
        .collect()
}

/// `PREFIX N records…`: the number of records it says, for the line starting so.
fn records_in(lines: &[String], prefix: &str) -> u64 {
    let line = (lines.iter())
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line `{prefix}…` in {lines:#?}"));
    line[prefix.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn a_run_says_how_it_went_in_a_few_plain_lines_when_stderr_is_not_a_terminal() {
    let (output, _dir) = run(&[]);
    assert_success(&output);
    let lines = progress(&output);
    // One line as the records end, one per sink, one per post-step, in that order; a
    // run this short has no line in between.
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let received = records_in(&lines, "progress: received ");
    // When the application exited, which is before the stages took its last records.
    let (took, exited) = (
        seconds_after(&lines[0], " records from 1 process in "),
        seconds_after(&lines[0], " (the application exited after "),
    );
    assert!(exited <= took, "{}", lines[0]);
    assert!(lines[1].starts_with("progress: sink `csv`: "), "{lines:#?}");
    assert!(
        lines[2].starts_with("progress: sink `trace`: "),
        "{lines:#?}"
    );
    assert!(
        lines[3].starts_with("progress: post-step `stats` done in "),
        "{lines:#?}"
    );
    // What each sink wrote is what the report lists, and together what arrived.
    let csv = records_in(&lines, "progress: sink `csv`: ");
    let trace = records_in(&lines, "progress: sink `trace`: ");
    assert_eq!((csv, trace), (received, received));
    assert_says(&output.stderr, &format!("  csv: {csv} records"));
    // No bar's control sequences reach a file.
    assert!(
        !text(&output.stderr).contains('\u{1b}'),
        "{}",
        text(&output.stderr)
    );
}

/// Stdout is the application's: rocflow's report of a run (what it collected and wrote,
/// the summary's tables) is on stderr, as rocprofv3's is.
#[test]
fn a_runs_report_is_on_stderr_and_stdout_is_the_applications() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PIPELINE).unwrap();
    let line = "the application's own line";
    let output = run_on("sim", "p.toml", &["/bin/echo", line], dir.path(), &[]);
    assert_success(&output);
    assert_eq!(text(&output.stdout), format!("{line}\n"));
    support::assert_says_each(
        &output.stderr,
        &[
            "/bin/echo exited with 0\n",
            " records from 1 process in ",
            "  csv: ",
            "    out/stats/kernels.csv\n",
            "kernels by GPU time\n",
        ],
    );
}

/// `--quiet` leaves warnings and errors alone on stderr: no progress, no notes, no report;
/// the outputs are written all the same.
#[test]
fn quiet_runs_and_replays_print_only_problems() {
    let (output, dir) = run(&["--quiet"]);
    assert_success(&output);
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "");
    assert!(dir.path().join("out/stats/kernels.csv").is_file());

    // A replay says it read the records, and is quiet when asked.
    let spool = "rocflow-out/last.rfraw";
    let replay = rocflow(&["replay", spool, "p.toml"], dir.path(), &[]);
    assert_success(&replay);
    let lines = progress(&replay);
    assert!(records_in(&lines, "progress: read ") > 0, "{lines:#?}");
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_says(&replay.stdout, "  csv: ");
    let quiet = rocflow(&["replay", spool, "p.toml", "-q"], dir.path(), &[]);
    assert_success(&quiet);
    assert_eq!(text(&quiet.stderr), "");
    assert_eq!(text(&quiet.stdout), "");

    // Without a pipeline, a note says which one runs, unless quiet; a warning shows still.
    let app = sim_app();
    let crash = [app.to_str().unwrap(), "crash"];
    let run = |quiet: &[&str]| {
        let args = [&["run", "--device", "sim"], quiet, &["--"], &crash[..]].concat();
        let output = rocflow(&args, dir.path(), &[]);
        assert_eq!(output.status.code(), Some(128 + 11));
        text(&output.stderr)
    };
    let said = run(&[]);
    let told = [
        "note: no pipeline given",
        " records from 1 process in ",
        "progress: ",
    ];
    support::assert_says_each(&said, &told);
    let warning = said.lines().find(|l| l.contains("killed by signal 11"));
    let warning = warning.unwrap_or_else(|| panic!("{said}"));
    assert!(warning.starts_with("warning: "), "{warning}");
    assert_eq!(run(&["-q"]), format!("{warning}\n"));
}

#[test]
fn a_run_that_nothing_connects_to_fails_and_writes_no_outputs() {
    // ldconfig is statically linked: LD_PRELOAD cannot bring the simulated SDK into it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PIPELINE).unwrap();
    let output = run_on("sim", "p.toml", &["/sbin/ldconfig", "-p"], dir.path(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert_says(
        &output.stderr,
        "error: no process connected, nothing was profiled and no outputs were written: the simulated SDK did not load the tool into `/sbin/ldconfig` (a statically linked or setuid program ignores LD_PRELOAD)",
    );
    assert_says(&output.stderr, "/sbin/ldconfig exited with 0");
    assert!(!dir.path().join("out").exists(), "no empty outputs");
    let lines = progress(&output);
    assert!(
        lines.contains(&"progress: sink `csv`: nothing to write".to_owned()),
        "{lines:#?}"
    );
    // The spool is kept: it records what was asked and how the application ended.
    assert!(dir.path().join("rocflow-out/last.rfraw").exists());
    // The application's own failure stays its exit status.
    let failed = run_on(
        "sim",
        "p.toml",
        &["/sbin/ldconfig", "--nonsense"],
        dir.path(),
        &[],
    );
    assert_ne!(failed.status.code(), Some(0));
    assert_ne!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
}

/// Every sink kind with `{pid}` in its path, and rocpd's per-process databases.
const PER_PID: &str = concat!(
    support::traced_pipeline!(
        "per-pid",
        "trace",
        r#"["kernel_dispatch", "hip_runtime_api"]"#
    ),
    support::sink!("csv", "csv", "out/csv-{pid}"),
    support::sink!("trace", "perfetto", "out/{hostname}-{pid}.pftrace"),
    support::sink!("parquet", "parquet", "out/parquet-{pid}"),
    support::sink!("otf2", "otf2", "out/otf2-{pid}"),
    support::sink!("rocpd", "rocpd", "out/{pid}.db"),
    support::sink!("all", "csv", "out/all"),
    "[[post]]\nname = \"report\"\nkind = \"report\"\npath = \"out/report.html\"\n",
);

/// The pid column of a CSV table's rows.
fn pids_in(csv: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect()
}

#[test]
fn a_forked_run_writes_a_file_per_process_where_the_path_names_the_pid() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PER_PID).unwrap();
    let app = sim_app();
    let output = run_on(
        "sim",
        "p.toml",
        &[app.to_str().unwrap(), "fork", "3"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    assert_says(&output.stderr, "from 4 processes");
    let out = dir.path().join("out");

    // The path without a placeholder holds every process; each `{pid}` one holds its own.
    let all = pids_in(&out.join("all/kernel_dispatch.csv"));
    assert_eq!(all.len(), 4, "{all:?}");
    let per_pid: BTreeSet<String> = entries(&out, |n| n.starts_with("csv-"))
        .iter()
        .map(|d| {
            let pid = d.file_name().unwrap().to_string_lossy()["csv-".len()..].to_owned();
            assert_eq!(
                pids_in(&d.join("kernel_dispatch.csv")),
                BTreeSet::from([pid.clone()])
            );
            pid
        })
        .collect();
    assert_eq!(per_pid, all);

    let traces = entries(&out, |_| true);
    let traces: Vec<PathBuf> = traces
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pftrace"))
        .collect();
    assert_eq!(traces.len(), 4, "{traces:?}");
    // The report links each of them.
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for trace in &traces {
        let name = trace.file_name().unwrap().to_string_lossy();
        assert!(report.contains(&format!("href=\"{name}\"")), "{name}");
    }
    for (file, decoded) in traces.iter().zip(decode_perfetto(&traces)) {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let pid = name.rsplit('-').next().unwrap();
        let pids: BTreeSet<String> = (decoded["tracks"].as_object().unwrap().values())
            .filter_map(|t| t["pid"].as_u64())
            .map(|p| p.to_string())
            .collect();
        assert_eq!(pids, BTreeSet::from([pid.to_owned()]), "{}", file.display());
    }

    for prefix in ["parquet-", "otf2-"] {
        let pids: BTreeSet<String> = entries(&out, |n| n.starts_with(prefix))
            .iter()
            .map(|d| d.file_name().unwrap().to_string_lossy()[prefix.len()..].to_owned())
            .collect();
        assert_eq!(pids, all, "{prefix}");
    }
    let databases: BTreeSet<String> = entries(&out, |_| true)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(databases, all);
    // Each Parquet dataset and database describes its own process only.
    for pid in &all {
        let db = rusqlite::Connection::open(out.join(format!("{pid}.db"))).unwrap();
        let (processes, table) = (
            db.query_row("SELECT count(*) FROM rocpd_info_process", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap(),
            "rocpd_info_process",
        );
        assert_eq!(processes, 1, "{table} of {pid}");
    }
}

#[test]
fn per_process_databases_at_one_path_are_refused_naming_both_ways_out() {
    let pipeline = "[pipeline]\nname = \"clash\"\n[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"out/run.db\"\n";
    let dir = support::generated("p.toml", pipeline, &["--processes", "2"]);
    let out = rocflow(&["replay", "run.rfraw", "p.toml"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(
        &out.stderr,
        "error: sink `db`: writing out/run.db: two processes would write this output",
    );
    assert_says(
        &out.stderr,
        "such as {pid} or {rank}, or layout = \"single\" for one database of every process",
    );
    assert!(!dir.path().join("out/run.db").exists());
}
