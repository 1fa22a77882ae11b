//! What a run keeps whatever happens to it: each run its own spool, nothing touched by a
//! run that cannot start, the records of an application that ends without finalizing,
//! the whole spool after a second Ctrl-C, and a prompt, complete end on SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{Spawned, assert_says, assert_success, inspect, sim_app, text, wait_until};

/// Kernel dispatches as CSV, flushed every 100 ms; a command post-step when `post` says.
fn pipeline(dir: &Path, post: &str) {
    let text = format!(
        r#"
[pipeline]
name = "reliable"
spool_dir = "{{output_dir}}"

[params]
output_dir = "out"

[[context]]
name = "kernels"
tracing = ["kernel_dispatch"]
buffer = {{ flush_interval = "100ms" }}

[[sink]]
name = "tables"
kind = "csv"
path = "{{output_dir}}/tables-{{pid}}"
{post}
"#
    );
    std::fs::write(dir.join("p.toml"), text).unwrap();
}

/// `rocflow run p.toml --device sim -- APP…` in `dir`, started, not waited for. Its
/// output goes to files, not pipes: an application left running keeps those open.
fn start(dir: &Path, app: &[&str]) -> Run {
    let files = tempfile::tempdir().unwrap();
    let file = |name: &str| std::fs::File::create(files.path().join(name)).unwrap();
    let rocflow = Spawned::start(
        Command::new(env!("CARGO_BIN_EXE_rocflow"))
            .args(["run", "p.toml", "--device", "sim", "--"])
            .args(app)
            .current_dir(dir)
            .stdout(file("stdout"))
            .stderr(file("stderr")),
    );
    Run { rocflow, files }
}

struct Run {
    rocflow: Spawned,
    files: tempfile::TempDir,
}

impl Run {
    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.files.path().join(name)).unwrap()
    }

    /// What rocflow has written to stderr so far.
    fn stderr(&self) -> String {
        text(&self.read("stderr"))
    }

    /// Waits for rocflow to end (see [`wait_until`]).
    fn wait(mut self) -> Output {
        let child = &mut self.rocflow.0;
        let mut status = None;
        wait_until("rocflow ends", || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        Output {
            status: status.unwrap(),
            stdout: self.read("stdout"),
            stderr: self.read("stderr"),
        }
    }

    /// Sends rocflow `signal`, and waits until it has taken it: a second one sent before
    /// would be one signal with the first.
    fn signal(&self, signal: i32) {
        let pid = self.rocflow.0.id();
        // SAFETY: signalling a child of this test.
        assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
        wait_until("rocflow takes the signal", || !pending(pid, signal));
    }
}

/// Whether `signal` waits to be delivered to process `pid`.
fn pending(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = (status.lines())
        .find_map(|line| line.strip_prefix("ShdPnd:"))
        .unwrap_or_else(|| panic!("{status}"));
    u64::from_str_radix(mask.trim(), 16).unwrap() & (1 << (signal - 1)) != 0
}

fn run(dir: &Path, app: &[&str]) -> Output {
    start(dir, app).wait()
}

/// The spools of a directory, sorted.
fn spools(dir: &Path) -> Vec<PathBuf> {
    let mut spools: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with("run-") && name.ends_with(".rfraw")
        })
        .collect();
    spools.sort();
    spools
}

fn kernel_records(spool: &serde_json::Value) -> u64 {
    spool["records"]["kernel_dispatch"].as_u64().unwrap_or(0)
}

/// The pid in "… (pid N) was left running".
fn left_running(stderr: &str) -> i32 {
    let after = stderr
        .split("(pid ")
        .nth(1)
        .unwrap_or_else(|| panic!("no pid named: {stderr}"));
    after[..after.find(')').unwrap()].parse().unwrap()
}

#[test]
fn every_run_keeps_a_spool_of_its_own_with_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let app = sim_app();
    let app = app.to_str().unwrap();
    for _ in 0..2 {
        assert_success(&run(dir.path(), &[app, "exit", "0"]));
    }
    // Two at once in the same directory.
    let both = [
        start(dir.path(), &[app, "exit", "0"]),
        start(dir.path(), &[app, "exit", "0"]),
    ];
    for run in both {
        assert_success(&run.wait());
    }
    let out = dir.path().join("out");
    let spools = spools(&out);
    assert_eq!(spools.len(), 4, "{spools:?}");
    for spool in &spools {
        let read = inspect(dir.path(), spool.to_str().unwrap());
        assert_eq!(read["complete"], true, "{read}");
        assert!(kernel_records(&read) > 0, "{read}");
    }
    // The directory, and its `last.rfraw`, name the newest run.
    let last = std::fs::canonicalize(out.join("last.rfraw")).unwrap();
    assert!(spools.contains(&last), "{last:?}");
    assert_eq!(
        inspect(dir.path(), "out"),
        inspect(dir.path(), "out/last.rfraw")
    );
    assert!(!dir.path().join("rocflow-out").exists());
}

#[test]
fn a_run_that_cannot_start_touches_no_file() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let app = sim_app();
    assert_success(&run(dir.path(), &[app.to_str().unwrap(), "exit", "0"]));
    let out = dir.path().join("out");
    let listing = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = (std::fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = listing(&out);
    let typo = run(dir.path(), &["./no-such-app"]);
    assert_eq!(typo.status.code(), Some(2), "{}", text(&typo.stderr));
    assert!(text(&typo.stderr).contains("no-such-app"));
    assert_eq!(
        listing(&out),
        before,
        "the earlier run's files are untouched"
    );
}

#[test]
fn an_application_that_ends_with_exit_keeps_what_was_flushed() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let app = sim_app();
    let output = run(dir.path(), &[app.to_str().unwrap(), "_exit", "800"]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    let spool = inspect(dir.path(), "out");
    let pid = spool["processes"][0]["pid"].as_u64().unwrap();
    assert!(kernel_records(&spool) > 0, "{spool}\n{stderr}");
    assert_says(
        &stderr,
        &format!("process {pid} ended without finalizing; records after "),
    );
}

#[test]
fn a_shell_that_exits_without_finalizing_is_named() {
    // dash ends with `_exit`: no atexit handler, so no finalize, runs in the shell.
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let output = run(dir.path(), &["/bin/sh", "-c", "/bin/sleep 0.5; true"]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    let spool = inspect(dir.path(), "out");
    let shell = (spool["processes"].as_array().unwrap().iter())
        .find(|p| p["command"].as_str().unwrap().starts_with("/bin/sh "))
        .unwrap_or_else(|| panic!("{spool}"));
    assert_says(
        &stderr,
        &format!("process {} ended without finalizing", shell["pid"]),
    );
}

/// Runs an application that ignores SIGINT and SIGTERM, sends rocflow `signals` once it
/// has received records, and ends the application rocflow leaves running: rocflow's
/// output and its directory. rocflow must end while the application still runs (it would
/// for ten minutes): it does not wait for it.
fn stop_lingering(signals: &[i32]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), "");
    let app = sim_app();
    let run = start(dir.path(), &[app.to_str().unwrap(), "linger", "600"]);
    // What rocflow says every 10 s while the application runs.
    let received =
        regex::Regex::new(r"(?m)^progress: received [1-9][0-9]* records so far").unwrap();
    wait_until("rocflow receives records", || {
        received.is_match(&run.stderr())
    });
    for &signal in signals {
        run.signal(signal);
    }
    let output = run.wait();
    let app = left_running(&text(&output.stderr));
    // SAFETY: asking after, then ending, the application the test left running.
    unsafe {
        assert_eq!(libc::kill(app, 0), 0, "the application had ended");
        libc::kill(app, libc::SIGKILL);
    }
    let spool = inspect(dir.path(), "out");
    assert_eq!(spool["complete"], true, "{spool}");
    assert!(kernel_records(&spool) > 0, "{spool}");
    (output, dir)
}

#[test]
fn a_second_interrupt_keeps_the_whole_spool() {
    let (output, dir) = stop_lingering(&[libc::SIGINT, libc::SIGINT]);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    // The sinks and the spool hold the same records.
    let (sunk, spool) = (text(&output.stderr), inspect(dir.path(), "out"));
    assert!(
        sunk.contains(&format!("tables: {} records", kernel_records(&spool))),
        "{sunk}\n{spool}"
    );
}

#[test]
fn sigterm_ends_a_run_whose_application_ignores_it() {
    let (output, _dir) = stop_lingering(&[libc::SIGTERM]);
    assert_eq!(output.status.code(), Some(143), "{}", text(&output.stderr));
}

/// SIGTERM while the post-step `slow` of `post` runs (`started` says whether it has
/// begun): rocflow ends, with the sinks' outputs and the spool complete and the step named
/// as not finished. Each step would run a minute or longer if nothing stopped it.
fn sigterm_during(post: &str, started: impl Fn(&Path, &Run) -> bool) {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), post);
    let app = sim_app();
    let run = start(dir.path(), &[app.to_str().unwrap(), "exit", "0"]);
    wait_until("the post-step starts", || started(dir.path(), &run));
    run.signal(libc::SIGTERM);
    let output = run.wait();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert_says(
        &stderr,
        "post-step `slow`: not finished: rocflow was asked to stop",
    );
    // The sinks finished before the signal, the spool long before.
    assert_says(&output.stderr, "tables: ");
    assert_eq!(inspect(dir.path(), "out")["complete"], true);
}

#[test]
fn sigterm_during_a_command_ends_the_run_promptly() {
    let post = r#"
[[post]]
name = "slow"
kind = "command"
argv = ["/bin/sh", "-c", "touch started; exec sleep 600"]
"#;
    sigterm_during(post, |dir, _| dir.join("started").exists());
}

#[test]
fn sigterm_during_a_query_ends_the_run_promptly() {
    let post = r#"
[[sink]]
name = "db"
kind = "rocpd"
path = "{output_dir}/run.db"

[[post]]
name = "slow"
kind = "sql"
query = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
path = "{output_dir}/count.csv"
"#;
    // A query leaves no trace of starting, but rocflow says every 10 s that it runs (and
    // stops it at its time limit, a minute, with another message).
    sigterm_during(post, |_, run| {
        run.stderr()
            .contains("progress: post-step `slow` running for ")
    });
}

#[test]
fn a_spool_that_cannot_be_created_is_named_with_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    // The spool directory would be inside a file.
    pipeline(dir.path(), "");
    let toml = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    let blocked = toml.replace(
        "spool_dir = \"{output_dir}\"",
        "spool_dir = \"p.toml/runs\"",
    );
    std::fs::write(dir.path().join("p.toml"), blocked).unwrap();
    let app = sim_app();
    let output = run(dir.path(), &[app.to_str().unwrap(), "exit", "0"]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert_says(&stderr, "cannot create the spool in p.toml/runs");
    assert_says(&stderr, "--spool FILE or [pipeline] spool_dir");
}

/// A run whose spool's disk fills part-way: the sinks still get every record, and so do
/// the summary and the report, whose statistics are collected beside the sinks: only the
/// spool is incomplete, and rocflow says so. A file size limit on rocflow stands in for
/// the full disk (writes past it fail, as on a full disk), below the spool's size and
/// above every other file's.
#[test]
fn a_spool_whose_disk_filled_leaves_every_other_output_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    support::launches_scenario(d, 2000);
    let pipeline = concat!(
        support::traced_pipeline!("full", "t", r#"["kernel_dispatch", "hip_runtime_api"]"#),
        support::sink!("tables", "parquet", "out/tables"),
        "[[post]]\nname = \"stats\"\nkind = \"summary\"\npath = \"out/summary\"\n",
        "[[post]]\nname = \"page\"\nkind = \"report\"\npath = \"out/report.html\"\n",
    );
    std::fs::write(d.join("full.toml"), pipeline).unwrap();
    let app = sim_app();
    let run = |limit: Option<u64>| {
        let args = [
            "run",
            "full.toml",
            "--device",
            "sim:launches.toml",
            "--spool",
            "run.rfraw",
            "--spool-compression",
            "none",
            "--",
            app.to_str().unwrap(),
            "exit",
            "0",
        ];
        let mut command = support::rocflow_command(&args, d, &[]);
        if let Some(limit) = limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec, only async-signal-safe calls on owned values.
            unsafe {
                command.pre_exec(move || {
                    let rlimit = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    match libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) {
                        0 => Ok(()),
                        _ => Err(std::io::Error::last_os_error()),
                    }
                });
            }
        }
        let output = command.output().unwrap();
        let kernel_calls = |summary: &serde_json::Value| -> u64 {
            // A table without rows is left out.
            let rows = summary["kernels"].as_array().map_or(&[][..], Vec::as_slice);
            let calls = rows
                .iter()
                .map(|r| r["calls"].as_f64().unwrap())
                .sum::<f64>();
            calls as u64
        };
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join("out/summary/summary.json")).unwrap())
                .unwrap();
        let report = std::fs::read_to_string(d.join("out/report.html")).unwrap();
        (output, kernel_calls(&summary), summary, report)
    };
    let (whole, calls, summary, report) = run(None);
    assert_success(&whole);
    // Two threads launch eight kernels 2,000 times each.
    assert_eq!(calls, 16 * 2000, "{summary}");
    assert!(summary.get("partial").is_none(), "{summary}");
    assert!(!report.contains("Partial"));
    let spool = std::fs::metadata(d.join("run.rfraw")).unwrap().len();
    let limit = spool / 2;
    let largest_output = support::entries(&d.join("out"), |_| true)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .max()
        .unwrap();
    assert!(
        largest_output < limit,
        "{largest_output} bytes of output, spool {spool}"
    );
    let sunk = format!("tables: {} records", 32 * 2000);
    assert_says(&whole.stderr, &sunk);
    std::fs::remove_dir_all(d.join("out")).unwrap();

    let (full, calls, summary, report) = run(Some(limit));
    let stderr = text(&full.stderr);
    assert!(!full.status.success(), "{stderr}");
    assert_says(&full.stderr, "the spool run.rfraw is incomplete");
    // The sinks had every record, and so had the statistics.
    assert_says(&full.stderr, &sunk);
    assert_eq!(calls, 16 * 2000, "{summary}");
    assert!(summary.get("partial").is_none(), "{summary}");
    let markdown = std::fs::read_to_string(d.join("out/summary/summary.md")).unwrap();
    assert!(!markdown.contains("Partial"), "{markdown}");
    assert!(!report.contains("Partial"), "{report}");
    // The sink's files hold every record, and say nothing of the spool.
    for table in support::entries(&d.join("out/tables"), |_| true) {
        for file in support::entries(&table, |name| name.ends_with(".parquet")) {
            let kv = support::parquet_key_values(&file);
            assert!(!kv.contains_key("rocflow.partial"), "{kv:?}");
        }
    }
    for step in ["stats", "page"] {
        let partial = format!("post-step `{step}` holds part of the run's records");
        assert!(!stderr.contains(&partial), "{stderr}");
    }
}
