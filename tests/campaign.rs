//! `rocflow campaign` on a LocalCluster of 2 workers: the ranks of a job, in each form an
//! input takes, become one Parquet dataset filed by host and rank, with each process's rank
//! and clock offset, and each rank's GPU busy time and idle gaps; the kernel and API
//! summaries across ranks equal `rocflow summary` of the same inputs, per rank and overall,
//! and a scheduler already running (as on a cluster) gives the same as a LocalCluster;
//! bad inputs are named each and leave nothing; a missing Python package is one error with
//! the install hint; and the package's own tests pass.
//!
//! The campaign's Python is `ROCFLOW_PYTHON`'s (tests/run-all installs the package into
//! target/rocflow-venv and names it there), else the README's environment's.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{
    Spawned, assert_says, assert_success, duckdb, hostname, rocflow, rocflow_command, text,
};

/// `rocflow campaign --workers 2 ARGS…` in `dir`.
pub(crate) fn campaign(args: &[&str], dir: &Path) -> Output {
    let mut all = vec!["campaign", "--workers", "2"];
    all.extend_from_slice(args);
    rocflow(&all, dir, &[])
}

/// Profiles `/bin/true` on the simulated device as rank `rank` of a job of `size`, into
/// `dir/rank-RANK`, as an MPI launcher (Open MPI) would start it.
fn rank(dir: &Path, rank: u32, size: u32) -> PathBuf {
    let out = dir.join(format!("rank-{rank}"));
    let args = ["run", "kernel-trace", "--device", "sim", "-q", "-d"];
    let mut command = rocflow_command(&args, dir, &[]);
    command
        .arg(&out)
        .args(["--", "/bin/true"])
        .env("OMPI_COMM_WORLD_RANK", rank.to_string())
        .env("OMPI_COMM_WORLD_SIZE", size.to_string());
    assert_success(&command.output().unwrap());
    out
}

fn inspect(input: &Path) -> Value {
    let out = rocflow(
        &["inspect", "--json", input.to_str().unwrap()],
        Path::new("."),
        &[],
    );
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// No file or folder of a campaign that failed is left beside its would-be folder.
fn assert_nothing_written(dir: &Path, name: &str) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|entry| entry.contains(name))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_ranks_of_a_job_become_one_dataset_filed_by_host_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let runs: Vec<PathBuf> = (0..3).map(|r| rank(d, r, 3)).collect();
    // Each form an input takes: a run folder, a glob of databases, a list naming a spool.
    std::fs::write(d.join("ranks.txt"), "# the last rank\nrank-2/last.rfraw\n").unwrap();
    let out = campaign(&["rank-0", "rank-1/*.db", "@ranks.txt", "-o", "camp"], d);
    assert_success(&out);

    let rows = duckdb(
        d,
        &[
            "SELECT host, rank, COUNT(*) FROM read_parquet('camp/dataset/kernel_dispatch/*/*/*.parquet', \
             hive_partitioning = true) GROUP BY ALL ORDER BY rank",
            "SELECT host, pid, rank, world_size, start_unix_ns IS NULL, \
             clock_offset_ns = start_unix_ns - start_ns \
             FROM 'camp/dataset/processes.parquet' ORDER BY rank",
            "SELECT MIN(start_unix_ns) FROM 'camp/dataset/processes.parquet'",
        ],
    );
    let host = hostname();
    let dispatches: Vec<Vec<Value>> = runs
        .iter()
        .enumerate()
        .map(|(r, run)| {
            vec![
                json!(host),
                json!(r),
                inspect(run)["records"]["kernel_dispatch"].clone(),
            ]
        })
        .collect();
    assert_eq!(rows[0], dispatches);
    let processes: Vec<Vec<Value>> = runs
        .iter()
        .enumerate()
        .map(|(r, run)| {
            // A database keeps no wall clock; a spool does, and with it the clock offset.
            let database = r == 1;
            let clock = if database { Value::Null } else { json!(true) };
            let pid = inspect(run)["processes"][0]["pid"].clone();
            vec![json!(host), pid, json!(r), json!(3), json!(database), clock]
        })
        .collect();
    assert_eq!(rows[1], processes);
    let wall = rows[2][0][0].as_i64().unwrap();
    assert!(
        wall >= before - 1_000_000_000,
        "the wall clock {wall} is before the runs"
    );

    // Each rank's GPUs' busy time and idle gaps, against the union of its kernels' times
    // computed apart in SQL (kernels on several queues overlap and count once); the busy
    // map's bins hold all of it.
    let rows = duckdb(
        d,
        &[
            "SELECT host, rank, agent, busy_ns, gaps, longest_gap_ns FROM 'camp/gpu_gaps.parquet' \
             ORDER BY ALL",
            UNION,
            "SELECT host, rank, agent, CAST(SUM(busy_ns) AS BIGINT), COUNT(*) \
             FROM 'camp/gpu_busy.parquet' GROUP BY ALL ORDER BY ALL",
        ],
    );
    assert!(!rows[0].is_empty(), "the ranks ran kernels");
    assert_eq!(rows[0], rows[1]);
    let binned: Vec<_> = rows[2].iter().map(|r| r[..4].to_vec()).collect();
    let busy: Vec<_> = rows[0].iter().map(|r| r[..4].to_vec()).collect();
    assert_eq!(binned, busy, "the bins hold all the busy time");
    assert!(rows[2].iter().all(|r| r[4] == json!(200)), "200 bins a GPU");
}

/// Per rank and GPU of a campaign `camp`, the busy time, the idle gaps and the longest gap,
/// from its kernels' times: merged into segments where one starts before those before it
/// ended.
const UNION: &str = "
WITH d AS (SELECT host, rank, agent, epoch_ns(start_ns) AS s, epoch_ns(end_ns) AS e
           FROM read_parquet('camp/dataset/kernel_dispatch/*/*/*.parquet', hive_partitioning = true)),
r AS (SELECT *, MAX(e) OVER (PARTITION BY host, rank, agent ORDER BY s, e
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM d),
g AS (SELECT *, SUM(CASE WHEN reach IS NULL OR s > reach THEN 1 ELSE 0 END)
                OVER (PARTITION BY host, rank, agent ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS segment
      FROM r),
segments AS (SELECT host, rank, agent, segment, MIN(s) AS s, MAX(e) AS e FROM g GROUP BY ALL),
gaps AS (SELECT *, s - LAG(e) OVER (PARTITION BY host, rank, agent ORDER BY segment) AS gap
         FROM segments)
SELECT host, rank, CAST(agent AS BIGINT), CAST(SUM(e - s) AS BIGINT), COUNT(*) - 1,
       CAST(COALESCE(MAX(gap), 0) AS BIGINT)
FROM gaps GROUP BY ALL ORDER BY ALL";

/// The table `table` of `rocflow summary --format json ARGS…`, as JSON rows.
fn summary(dir: &Path, table: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["summary", "--format", "json"];
    all.extend_from_slice(args);
    let out = rocflow(&all, dir, &[]);
    assert_success(&out);
    let tables: Value = serde_json::from_slice(&out.stdout).unwrap();
    tables[table].as_array().unwrap().clone()
}

/// The statistics' columns of a campaign's summaries, after the host, rank and names.
const STATISTICS: [&str; 8] = [
    "calls", "total_ns", "mean_ns", "min_ns", "max_ns", "p50_ns", "p95_ns", "p99_ns",
];

/// Asserts the statistics of a campaign's row (from `at` on) are `want`'s: calls and total
/// exactly, the rest to rounding.
fn assert_same_statistics(got: &[Value], want: &Value, what: &str) {
    assert_eq!(got[0], want["calls"], "calls of {what}");
    assert_eq!(
        got[1].as_f64(),
        want["total_ns"].as_f64(),
        "total of {what}"
    );
    for (got, column) in got.iter().zip(STATISTICS).skip(2) {
        let (got, want) = (got.as_f64().unwrap(), want[column].as_f64().unwrap());
        assert!(
            (got - want).abs() <= want.abs() * 1e-12,
            "{column} of {what}: {got} against {want}"
        );
    }
}

/// Asserts the campaign's summary `recipe` (kernels, api) in `d`/camp, read back from its
/// Parquet and its CSV, holds `rocflow summary`'s table `table` of `inputs`, keyed by the
/// columns `names`: per rank as `--by process` gives it, and overall.
pub(crate) fn assert_equals_summary(
    d: &Path,
    inputs: &[&str],
    recipe: &str,
    table: &str,
    names: &[&str],
) {
    let columns = ["host", "rank"]
        .iter()
        .chain(names)
        .chain(&STATISTICS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let rows = duckdb(
        d,
        &[
            &format!("SELECT {columns} FROM 'camp/{recipe}.parquet'"),
            &format!("SELECT {columns} FROM read_csv('camp/{recipe}.csv')"),
            "SELECT rank, pid, host FROM 'camp/dataset/processes.parquet'",
        ],
    );
    let got = &rows[0];
    assert_eq!(
        rows[1], *got,
        "{recipe}.csv holds what {recipe}.parquet does"
    );
    let process_of = |rank: &Value| {
        let process = rows[2].iter().find(|row| row[0] == *rank);
        process.expect("every rank is a process")
    };
    let (overall, per_rank): (Vec<&Vec<Value>>, Vec<&Vec<Value>>) =
        got.iter().partition(|row| row[1].is_null());
    let named = |want: &Value, row: &[Value]| names.iter().zip(row).all(|(n, v)| want[n] == *v);

    let mut want = summary(d, table, &[inputs, &["--by", "process"]].concat());
    assert_eq!(
        per_rank.len(),
        want.len(),
        "a {recipe} row per rank and name"
    );
    for row in &per_rank {
        let process = process_of(&row[1]);
        assert_eq!(row[0], process[2], "the host of rank {}", row[1]);
        let pid = process[1].to_string();
        let own = &row[2..2 + names.len()];
        let at = want
            .iter()
            .position(|w| w["process"].as_str() == Some(&pid) && named(w, own))
            .unwrap_or_else(|| panic!("rocflow summary has no {own:?} in process {pid}"));
        let what = format!("{own:?} of rank {}", row[1]);
        assert_same_statistics(&row[2 + names.len()..], &want.remove(at), &what);
    }

    let want = summary(d, table, inputs);
    assert_eq!(
        overall.len(),
        want.len(),
        "an overall {recipe} row per name"
    );
    for (row, want) in overall.iter().zip(&want) {
        let own = &row[2..2 + names.len()];
        assert!(
            named(want, own),
            "overall rows with the most time first: {own:?}"
        );
        assert_same_statistics(&row[2 + names.len()..], want, &format!("{own:?}"));
    }
}

#[test]
fn the_kernel_and_api_summaries_across_ranks_equal_rocflow_summary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Three ranks (pids 4000 to 4002) of kernels and API calls of many durations.
    let generate = [
        "generate",
        "job.rfraw",
        "--records",
        "30000",
        "--processes",
        "3",
        "--seed",
        "7",
    ];
    assert_success(&rocflow(&generate, d, &[]));
    assert_success(&campaign(&["job.rfraw", "-o", "camp"], d));
    assert_equals_summary(d, &["job.rfraw"], "kernels", "kernels", &["kernel"]);
    let api = ["domain", "function"];
    assert_equals_summary(d, &["job.rfraw"], "api", "api", &api);
}

/// `rocflow campaign diff` compares two campaigns through rocflow's own command line, and
/// its gate exits 1 when it holds, 0 when not, 2 on a bad expression.
#[test]
fn campaign_diff_gates_through_rocflow() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let generate = [
        "generate",
        "job.rfraw",
        "--records",
        "3000",
        "--processes",
        "2",
    ];
    assert_success(&rocflow(&generate, d, &[]));
    assert_success(&campaign(&["job.rfraw", "-o", "camp"], d));
    let diff = |gate: &str| {
        let args = ["campaign", "diff", "camp", "camp", "--format", "json"];
        rocflow(&[&args[..], &["--fail-if", gate]].concat(), d, &[])
    };
    // A campaign against itself: every kernel's time ratio is 1.
    let same = diff("kernel_time_ratio > 1.0");
    assert_success(&same);
    let json: Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(json["metrics"]["kernel_time_ratio"], json!(1.0), "{json}");
    assert!(!json["kernels"].as_array().unwrap().is_empty(), "{json}");
    assert_eq!(diff("kernel_time_ratio >= 1.0").status.code(), Some(1));
    // What cannot be decided is a usage error before anything is compared or printed.
    for bad in ["kernel_time_ratio >", "worst_counter_ratio > 1"] {
        let out = diff(bad);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert_says(&out.stderr, &format!("--fail-if `{bad}`"));
    }
    assert_says(
        &diff("worst_counter_ratio > 1").stderr,
        "campaigns have every `rocflow diff` metric but worst_counter_ratio",
    );
}

/// `python -m distributed.cli.MODULE ARGS…` in `dir` (the package's Dask's command line),
/// its output dropped, where no rocflow is on the PATH.
fn dask(module: &str, args: &[&str], dir: &Path) -> Spawned {
    let mut command = Command::new(python());
    command
        .args(["-m", &format!("distributed.cli.{module}")])
        .args(args)
        .current_dir(dir)
        // No rocflow on the way: the tasks run the one the campaign names.
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Spawned::start(&mut command)
}

#[test]
fn a_campaign_runs_on_a_scheduler_already_running_as_on_its_own_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let generate = [
        "generate",
        "job.rfraw",
        "--records",
        "5000",
        "--processes",
        "2",
    ];
    assert_success(&rocflow(&generate, d, &[]));
    assert_success(&campaign(&["job.rfraw", "-o", "local"], d));

    // A scheduler and two workers of their own, as a cluster's are: they know nothing of
    // the campaign but its file system.
    let file = "scheduler.json";
    let scheduler_args = [
        "--scheduler-file",
        file,
        "--port",
        "0",
        "--dashboard-address",
        ":0",
    ];
    let _scheduler = dask("dask_scheduler", &scheduler_args, d);
    support::wait_until("the scheduler writes its file", || {
        std::fs::read_to_string(d.join(file)).is_ok_and(|text| text.contains("address"))
    });
    let worker_args = [
        "--scheduler-file",
        file,
        "--nworkers",
        "2",
        "--nthreads",
        "1",
    ];
    let _workers = dask("dask_worker", &worker_args, d);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(file)).unwrap()).unwrap();
    let address = written["address"].as_str().unwrap();

    for (how, folder) in [
        (["--scheduler-file", file], "by-file"),
        (["--scheduler", address], "by-address"),
    ] {
        let out = rocflow(
            &["campaign", "job.rfraw", "-o", folder, how[0], how[1]],
            d,
            &[],
        );
        assert_success(&out);
        for table in ["kernels.csv", "api.csv", "gpu_gaps.csv"] {
            let read = |folder: &str| std::fs::read_to_string(d.join(folder).join(table)).unwrap();
            assert_eq!(read(folder), read("local"), "{table} {how:?}");
        }
    }
}

#[test]
fn bad_inputs_are_named_each_exit_2_and_leave_no_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_success(&rocflow(
        &["generate", "good.rfraw", "--records", "1000"],
        d,
        &[],
    ));
    std::fs::write(d.join("torn.rfraw"), "RFRAW but not a spool").unwrap();
    std::fs::write(d.join("notes.db"), "a text file, not SQLite").unwrap();

    let out = campaign(&["good.rfraw", "torn.rfraw", "notes.db", "-o", "camp"], d);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for named in [
        "torn.rfraw`: ",
        "notes.db`: ",
        "2 of 3 inputs could not be read",
    ] {
        assert_says(&out.stderr, named);
    }
    assert_nothing_written(d, "camp");

    // Inputs that name nothing, before any work.
    for (input, says) in [
        ("missing.db", "`missing.db`: no such file or folder"),
        ("ranks-*.db", "`ranks-*.db` matches no file"),
        ("@list.txt", "cannot read the input list"),
        (
            "good.txt",
            "is neither a rocpd database (.db), a spool (.rfraw) nor a run folder",
        ),
    ] {
        std::fs::write(d.join("good.txt"), "").unwrap();
        let out = campaign(&["good.rfraw", input, "-o", "camp"], d);
        assert_eq!(out.status.code(), Some(2), "{input}: {}", text(&out.stderr));
        assert_says(&out.stderr, says);
        assert_nothing_written(d, "camp");
    }

    // Two inputs of the same rank (two runs of one job, or one run named twice over).
    assert_success(&rocflow(
        &["generate", "again.rfraw", "--records", "1000"],
        d,
        &[],
    ));
    let out = campaign(&["good.rfraw", "again.rfraw", "-o", "camp"], d);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says(&out.stderr, "rank 0 on gen-node is in both `");
    assert_nothing_written(d, "camp");

    // A folder that holds something already is not written into.
    std::fs::create_dir(d.join("taken")).unwrap();
    std::fs::write(d.join("taken/mine.txt"), "kept").unwrap();
    let out = campaign(&["good.rfraw", "-o", "taken"], d);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says(&out.stderr, "`taken` exists");
    assert_eq!(
        std::fs::read_to_string(d.join("taken/mine.txt")).unwrap(),
        "kept"
    );
}

#[test]
fn a_missing_package_is_one_error_with_the_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nowhere = d.join("venv/bin/python");
    for (python, says) in [
        (nowhere.as_path(), "cannot run"),
        (
            Path::new("/usr/bin/python3"),
            "/usr/bin/python3 has no rocflow package",
        ),
    ] {
        let out = rocflow(
            &["campaign", "x.db", "-o", "camp"],
            d,
            &[("ROCFLOW_PYTHON", python)],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert_says(&out.stderr, says);
        assert_says(&out.stderr, "pip install ./python");
    }
}

/// The Python campaigns run with, found as `rocflow campaign` finds it.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("ROCFLOW_PYTHON") {
        return python.into();
    }
    let data = std::env::var_os("XDG_DATA_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".local/share"),
        PathBuf::from,
    );
    data.join("rocflow/venv/bin/python")
}

#[test]
fn the_python_packages_own_tests_pass() {
    let out = std::process::Command::new(python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(support::repo().join("python"))
        // The rocflow the findings recipe's tests run, as `rocflow campaign` names itself.
        .env("ROCFLOW", support::rocflow_exe())
        .output()
        .expect("the campaigns' Python runs (tests/run-all installs it)");
    assert_success(&out);
}
