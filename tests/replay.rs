//! `rocflow inspect` and `replay` as users run them, on whole and damaged spools: spools of
//! runs on the simulated device, whose scenario says what a replay writes
//! (`support::truth`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use support::truth::{self, Collects, Part, Scenario, Tally};
use support::{assert_fails, assert_says, assert_success, rocflow, run_on, sim_app, text};

const PIPELINE: &str = concat!(
    support::traced_pipeline!("csv", "t"),
    support::sink!("tables", "csv", "out/{hostname}-{pid}"),
);

/// What [`PIPELINE`] collects of the scenario.
fn collects() -> Collects {
    Collects {
        dispatches: true,
        api: vec![("hip_runtime_api", vec![], vec![])],
        copies: true,
        ..Collects::default()
    }
}

/// A fresh directory holding `csv.toml` ([`PIPELINE`]) and `run.rfraw`, the spool of a run
/// of it on the simulated device with `settings` in its scenario's `[scenario]` table,
/// without what the run wrote itself; and the scenario.
fn recorded(settings: &[(&str, i64)]) -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, scenario) = support::scenario::scenario_with(d, "scenario.toml", settings);
    std::fs::write(d.join("csv.toml"), PIPELINE).unwrap();
    let app = sim_app();
    let args = ["run", "csv.toml", "--device", "sim:scenario.toml"];
    let args = [
        &args[..],
        &[
            "--spool",
            "run.rfraw",
            "--",
            app.to_str().unwrap(),
            "exit",
            "0",
        ],
    ];
    assert_success(&rocflow(&args.concat(), d, &[]));
    std::fs::remove_dir_all(d.join("out")).unwrap();
    (dir, Scenario::read(&scenario))
}

/// [`recorded`] of the default scenario.
fn setup() -> (tempfile::TempDir, Scenario) {
    recorded(&[])
}

fn inspect(dir: &Path) -> serde_json::Value {
    support::inspect(dir, "run.rfraw")
}

/// The folder of CSV tables a replay wrote under `out` (`{hostname}-{pid}`: one process).
fn tables(dir: &Path) -> PathBuf {
    let written: Vec<PathBuf> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    written[0].clone()
}

/// The rows of the CSV table of `kind` a replay wrote; none if it wrote none.
fn csv_rows(dir: &Path, kind: &str) -> truth::Rows {
    truth::csv_table(&tables(dir), kind)
}

/// Fails naming each difference between the truth and what a replay wrote, in `parts`.
fn assert_agrees(want: &Tally, seen: &Tally, parts: &[Part]) {
    let differences = want.differences(seen, parts, 1e-9);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn replay_uses_the_recorded_pipeline_and_writes_every_record() {
    let (dir, scenario) = setup();
    let d = dir.path();
    let info = inspect(d);
    assert_eq!(info["complete"], true);
    assert_eq!(info["has_pipeline"], true);
    // The scenario's first GPU, after the CPU.
    let gpu = &info["processes"][0]["agents"][1]["name"];
    assert_eq!(gpu, scenario.agents[0].name.as_str());
    assert_success(&rocflow(&["replay", "run.rfraw"], d, &[]));
    let tables = tables(d);
    let name = tables.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("{}-", support::hostname())),
        "{name}"
    );
    let (seen, dispatches) = truth::csv_tables(&tables);
    assert_agrees(
        &scenario.truth(&collects(), 1, &dispatches),
        &seen,
        &Part::ALL,
    );
    scenario.assert_fits(&collects(), |kind| truth::csv_table(&tables, kind));
    // Nothing of the staging directory is left behind: `tables` is all there is.
}

#[test]
fn replay_with_another_pipeline() {
    let (dir, scenario) = setup();
    let d = dir.path();
    let longer_than = 20_000;
    let filter = format!(
        "[[transform]]\nname = \"long\"\nkind = \"filter\"\nrecords = [\"kernel_dispatch\"]\npredicate = \"duration_ns > {longer_than}\"\n"
    );
    std::fs::write(d.join("long.toml"), format!("{PIPELINE}{filter}")).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "long.toml"], d, &[]));
    let tables = tables(d);
    let (seen, dispatches) = truth::csv_tables(&tables);
    let mut want = scenario.truth(&collects(), 1, &dispatches);
    let long = |name: &String| scenario.kernel(name).unwrap().duration_ns > longer_than;
    let kept = want.kernels.keys().filter(|k| long(k)).count();
    assert!(
        kept > 0 && kept < scenario.kernels.len(),
        "the filter keeps some of the scenario's kernels"
    );
    want.kernels.retain(|name, _| long(name));
    want.kernel_ns.retain(|name, _| long(name));
    assert_agrees(&want, &seen, &Part::ALL);
    scenario.assert_fits(&collects(), |kind| truth::csv_table(&tables, kind));
}

/// A spool cut short replays the records before the cut: as many as `inspect` counts in
/// it, the same rows as the whole spool's first.
#[test]
fn a_truncated_spool_replays_its_valid_prefix_with_a_warning() {
    let (dir, scenario) = setup();
    let d = dir.path();
    assert_success(&rocflow(&["replay", "run.rfraw"], d, &[]));
    let kinds = ["kernel_dispatch", "api", "memory_copy"];
    let whole = kinds.map(|kind| csv_rows(d, kind));
    let (seen, dispatches) = truth::csv_tables(&tables(d));
    let want = scenario.truth(&collects(), 1, &dispatches);
    assert_agrees(&want, &seen, &Part::ALL);
    std::fs::remove_dir_all(d.join("out")).unwrap();

    let path = d.join("run.rfraw");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let info = inspect(d);
    assert_eq!(info["complete"], false);
    assert!(
        info["warning"]
            .as_str()
            .unwrap()
            .contains("ends inside a frame")
    );
    let out = rocflow(&["replay", "run.rfraw"], d, &[]);
    assert_success(&out);
    assert_says(&out.stderr, "ends inside a frame");
    let (mut kept_in_all, mut lost) = (0, 0);
    for (kind, whole) in kinds.iter().zip(&whole) {
        let kept = csv_rows(d, kind);
        // `inspect` lists the kinds it counts some records of.
        let counted = info["records"][kind].as_u64().unwrap_or(0);
        assert_eq!(kept.len() as u64, counted, "{kind}");
        assert!(kept.len() <= whole.len(), "{kind}");
        assert_eq!(kept, whole[..kept.len()], "{kind}");
        kept_in_all += kept.len();
        lost += whole.len() - kept.len();
    }
    assert!(
        kept_in_all > 0 && lost > 0,
        "{kept_in_all} kept, {lost} lost"
    );
}

#[test]
fn a_corrupt_spool_is_reported_where_it_breaks() {
    let (dir, _) = setup();
    let path = dir.path().join("run.rfraw");
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert_says(&stderr, "the spool is corrupt at byte");
    assert_says(&stderr, "using the frames before it");
}

#[test]
fn other_files_are_user_errors() {
    let (dir, _) = setup();
    let out = rocflow(&["replay", "csv.toml"], dir.path(), &[]);
    assert_fails(&out, 2, &["not a rocflow spool"]);
    let missing = rocflow(&["inspect", "nope.rfraw"], dir.path(), &[]);
    assert_eq!(missing.status.code(), Some(2));
    let bare = rocflow(
        &["generate", "bare.rfraw", "--records", "10"],
        dir.path(),
        &[],
    );
    assert!(bare.status.success());
    let out = rocflow(&["replay", "bare.rfraw"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("holds no pipeline to replay"));
}

/// A transform that fails on records at run time: by default the failures are reported
/// and the run goes on; a strict one stops the run and leaves no output behind, though the
/// sink had received the windows before the failure.
#[test]
fn strict_transforms_stop_the_run_at_their_first_failure() {
    // 30,000 dispatches, numbered from 1 as the SDK numbers a process's dispatches.
    let (dir, scenario) = recorded(&[("iterations", 5000)]);
    let d = dir.path();
    let dispatches = scenario.records_per_process()["kernel_dispatch"];
    // Fails (divides by zero) on the dispatches from the middle on: windows in.
    let from = dispatches / 2;
    let lenient = PIPELINE.replace(
        "[[sink]]",
        &format!("[[transform]]\nname = \"ratio\"\nkind = \"derive\"\nrecords = [\"kernel_dispatch\"]\ncolumn = \"r\"\nexpression = \"duration_ns / min(1, max(0, {from} - dispatch_id))\"\n[[sink]]"),
    );
    std::fs::write(d.join("lenient.toml"), &lenient).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "lenient.toml"], d, &[]);
    assert_success(&out);
    let stderr = text(&out.stderr);
    let failed: u64 = stderr
        .split("warning: transform `ratio` failed on ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(failed, dispatches - from + 1, "{stderr}");
    assert_eq!(csv_rows(d, "kernel_dispatch").len() as u64, dispatches);

    std::fs::remove_dir_all(d.join("out")).unwrap();
    let strict = lenient.replace("column = \"r\"", "column = \"r\"\nstrict = true");
    std::fs::write(d.join("strict.toml"), strict).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "strict.toml"], d, &[]);
    assert_fails(
        &out,
        1,
        &[
            "transform `ratio` is strict and failed on a record",
            "kernel_dispatch record #",
        ],
    );
    // No file anywhere under the output directory, not even the staging one.
    let mut left = Vec::new();
    let mut dirs = vec![d.join("out")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.file_type().unwrap().is_dir() {
                true => dirs.push(entry.path()),
                false => left.push(entry.path()),
            }
        }
    }
    assert!(left.is_empty(), "{left:?}");
}

/// A spool whose runner was killed between two frames (the OOM killer, a scheduler's
/// limit) holds every frame before, and no recorded end: `inspect` does not call it
/// complete, and a replay reads it with a warning, into a summary, a report, a rocpd
/// database (its `rocpd_metadata`) and Parquet files (their key-value metadata) that say
/// they are partial. The same spool with its end replays without a word of it.
#[test]
fn a_spool_whose_runner_was_killed_replays_into_outputs_that_say_partial() {
    let (dir, _) = setup();
    let d = dir.path();
    let posts = concat!(
        "[[post]]\nname = \"stats\"\nkind = \"summary\"\npath = \"out/summary\"\n",
        "[[post]]\nname = \"page\"\nkind = \"report\"\npath = \"out/report.html\"\n",
    );
    let db = concat!(
        support::sink!("db", "rocpd", "out/run.db"),
        support::sink!("dataset", "parquet", "out/dataset"),
    );
    std::fs::write(d.join("posts.toml"), format!("{PIPELINE}{db}{posts}")).unwrap();
    let replay = |d: &Path| {
        let out = rocflow(&["replay", "run.rfraw", "posts.toml"], d, &[]);
        assert_success(&out);
        let summary = std::fs::read_to_string(d.join("out/summary/summary.json")).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
        let report = std::fs::read_to_string(d.join("out/report.html")).unwrap();
        let db = rusqlite::Connection::open(d.join("out/run.db")).unwrap();
        let sql = "SELECT value FROM rocpd_metadata WHERE tag = 'partial'";
        let mut partial: Vec<Option<String>> = support::sqlite_rows(&db, sql, |r| r.get(0));
        drop(db);
        // Each Parquet file's own word, one per file.
        let tables = support::entries(&d.join("out/dataset"), |_| true);
        let files: Vec<PathBuf> = (tables.iter())
            .flat_map(|table| support::entries(table, |name| name.ends_with(".parquet")))
            .collect();
        assert!(!files.is_empty(), "{tables:?}");
        for file in files {
            partial.push(support::parquet_key_values(&file).remove("rocflow.partial"));
        }
        std::fs::remove_dir_all(d.join("out")).unwrap();
        (text(&out.stderr), summary, (report, partial))
    };
    assert_eq!(inspect(d)["complete"], true);
    let (stderr, summary, (report, db)) = replay(d);
    assert!(!stderr.contains("not recorded"), "{stderr}");
    assert!(summary.get("partial").is_none(), "{summary}");
    assert!(!report.contains("Partial"));
    assert!(db.iter().all(Option::is_none), "{db:?}");
    let whole = summary["kernels"].clone();

    // The end is the spool's last 20 bytes: a frame header and its offset.
    let path = d.join("run.rfraw");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();
    let info = inspect(d);
    assert_eq!(info["complete"], false, "{info}");
    let warning = info["warning"].as_str().unwrap();
    assert!(warning.contains("end is not recorded"), "{warning}");
    assert!(warning.contains("cut short"), "{warning}");
    let (stderr, summary, (report, db)) = replay(d);
    assert_says(&stderr, "warning: the spool's end is not recorded");
    assert_says(&stderr, "post-step `stats` holds part of the run's records");
    assert_says(&stderr, "post-step `page` holds part of the run's records");
    assert_eq!(summary["partial"].as_str(), Some(warning), "{summary}");
    // Every frame before the cut is read: the same statistics.
    assert_eq!(summary["kernels"], whole);
    assert!(report.contains("<strong>Partial:</strong>"), "{report}");
    // The database's row, then each Parquet file's.
    assert!(db.len() > 2, "{db:?}");
    assert!(
        db.iter().all(|said| said.as_deref() == Some(warning)),
        "{db:?}"
    );
    // `rocflow summary` of the cut spool says so too, printed and written.
    let printed = rocflow(&["summary", "run.rfraw", "--format", "json"], d, &[]);
    assert_success(&printed);
    let printed: serde_json::Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(printed["partial"].as_str(), Some(warning), "{printed}");
    assert_eq!(printed["kernels"], whole);
    let args = ["summary", "run.rfraw", "--format", "md", "--output", "md"];
    assert_success(&rocflow(&args, d, &[]));
    let markdown = std::fs::read_to_string(d.join("md/summary.md")).unwrap();
    assert!(
        markdown.contains(&format!("> **Partial:** {warning}")),
        "{markdown}"
    );
}

/// A replay into the directory of a run or replay killed by SIGKILL removes the hidden
/// database that one left staged (`.run.db.rocflow-PID`, of a pid no process has now),
/// and leaves a live process's, and what is named otherwise, as they are.
#[test]
fn a_replay_removes_what_a_killed_one_left_staged() {
    let (dir, _) = setup();
    let d = dir.path();
    let pipeline = format!("{PIPELINE}{}", support::sink!("db", "rocpd", "out/run.db"));
    std::fs::write(d.join("db.toml"), pipeline).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let mut live = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let abandoned = out.join(format!(".run.db.rocflow-{}", gone.id()));
    let staging = out.join(format!(".run.db.rocflow-{}", live.id()));
    let other = out.join(format!(".run.db.rocflow-{}.keep", gone.id()));
    for path in [&abandoned, &staging, &other] {
        std::fs::write(path, vec![0; 1 << 20]).unwrap();
    }
    assert_success(&rocflow(&["replay", "run.rfraw", "db.toml"], d, &[]));
    live.kill().unwrap();
    live.wait().unwrap();
    assert!(out.join("run.db").is_file());
    assert!(!abandoned.exists(), "the killed run's staging is left");
    assert!(staging.exists() && other.exists());
}

/// The spool `rocflow run` wrote before format version 2 (see its README).
fn version_1_spool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/spool-v1")
}

/// The version 1 spool replays to what its scenario (beside it) makes with its pipeline:
/// its kernels, HIP calls, copies and two counters. Its format records no end, which
/// `inspect` says: whether it is whole cannot be told.
#[test]
fn a_version_1_spool_replays_with_its_recorded_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v1 = version_1_spool();
    std::fs::copy(v1.join("run.rfraw"), d.join("run.rfraw")).unwrap();
    let info = inspect(d);
    assert_eq!(info["complete"], false);
    let warning = info["warning"].as_str().unwrap();
    assert!(warning.contains("end is not recorded"), "{warning}");
    assert_eq!(info["has_pipeline"], true);
    assert_success(&rocflow(&["replay", "run.rfraw"], d, &[]));
    let scenario = Scenario::read(&v1.join("scenario.toml"));
    let tables = tables(d);
    let (seen, mut dispatches) = truth::csv_tables(&tables);
    for list in dispatches.values_mut() {
        list.dedup();
    }
    let collects = Collects {
        counters: vec!["SQ_WAVES", "GRBM_GUI_ACTIVE"],
        ..collects()
    };
    let mut want = scenario.truth(&collects, 1, &dispatches);
    // Recorded before a dispatch that two contexts trace was one record (issue 48): the
    // spool holds each twice, once per context.
    for n in want.kernels.values_mut().chain(want.kernel_ns.values_mut()) {
        *n *= 2;
    }
    assert_agrees(&want, &seen, &Part::ALL);
    scenario.assert_fits(&collects, |kind| truth::csv_table(&tables, kind));
}

/// Minutes between now and a `{timestamp}` (`YYYYMMDD-HHMMSS`, UTC), as `date` counts.
fn minutes_from_now(timestamp: &str) -> i64 {
    let (day, time) = timestamp.split_once('-').unwrap();
    let date = format!("{day} {}:{}:{}", &time[..2], &time[2..4], &time[4..]);
    let seconds = |args: &[&str]| -> i64 {
        let out = std::process::Command::new("date")
            .args(args)
            .output()
            .unwrap();
        text(&out.stdout).trim().parse().unwrap()
    };
    (seconds(&["-u", "-d", &date, "+%s"]) - seconds(&["-u", "+%s"])) / 60
}

/// `{timestamp}` is when the run started by the wall clock: a replay of the run fills in
/// the same, and a spool too old to say fills in the time of the replay, never 1970.
#[test]
fn timestamps_are_the_wall_clock_time_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = PIPELINE.replace("out/{hostname}-{pid}", "out/{timestamp}");
    std::fs::write(d.join("stamped.toml"), pipeline).unwrap();
    let run = run_on("sim", "stamped.toml", &["/bin/true"], d, &[]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let written = support::entries(&d.join("out"), |_| true).remove(0);
    let stamp = written.file_name().unwrap().to_str().unwrap();
    assert!(minutes_from_now(stamp).abs() < 10, "{stamp}");
    std::fs::remove_dir_all(d.join("out")).unwrap();
    let replay = rocflow(&["replay", "rocflow-out"], d, &[]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    assert!(d.join("out").join(stamp).is_dir());

    std::fs::copy(version_1_spool().join("run.rfraw"), d.join("old.rfraw")).unwrap();
    let replay = rocflow(&["replay", "old.rfraw", "stamped.toml"], d, &[]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let written = support::entries(&d.join("out"), |_| true);
    assert!(!written.is_empty(), "the replay wrote nothing under out/");
    for path in written {
        let stamp = path.file_name().unwrap().to_str().unwrap();
        assert!(minutes_from_now(stamp).abs() < 10, "{stamp}");
    }
}

/// The records of a run on the simulated device: host calls, dispatches with two counters,
/// copies, allocations and ROCTx ranges, into a rocpd database, Parquet and Perfetto
/// under `OUT`.
const EVERY_SOURCE: &str = concat!(
    support::traced_pipeline!(
        "sources",
        "trace",
        r#"["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy", "memory_allocation", "marker_core_range_api"]"#
    ),
    "counters.collect = [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]\n",
    support::sink!("db", "rocpd", "OUT/run.db"),
    support::sink!("tables", "parquet", "OUT/tables"),
    support::sink!("trace", "perfetto", "OUT/run.pftrace"),
);

/// Rows per table of a Parquet dataset (a folder per table).
fn parquet_rows(dataset: &Path) -> BTreeMap<String, i64> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut rows = BTreeMap::new();
    for table in std::fs::read_dir(dataset).unwrap() {
        let table = table.unwrap().path();
        let name = table.file_name().unwrap().to_string_lossy().into_owned();
        let mut n = 0;
        for file in std::fs::read_dir(&table).unwrap() {
            let file = std::fs::File::open(file.unwrap().path()).unwrap();
            n += SerializedFileReader::new(file)
                .unwrap()
                .metadata()
                .file_metadata()
                .num_rows();
        }
        rows.insert(name, n);
    }
    rows
}

/// Track events of a Perfetto trace per type (`B`, `E`, `C`, `I`).
fn perfetto_events(trace: &Path) -> BTreeMap<String, i64> {
    let decoded = support::decode_perfetto(&[trace.to_owned()]);
    let mut events = BTreeMap::new();
    for event in decoded[0]["events"].as_array().unwrap() {
        *events
            .entry(event["type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    events
}

/// One run on the simulated device, as it wrote its outputs and as `replay` writes them
/// again from its spool and from its rocpd database: every Parquet table has as many rows
/// and every Perfetto trace as many events of each type, each the number the scenario
/// makes. Two threads dispatch at once, so the SDK delivers their dispatches' counter
/// values interleaved: each dispatch is still one value per counter.
#[test]
fn a_run_replays_alike_from_its_spool_and_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (scenario, _) = support::scenario::scenario_with(d, "s.toml", &[("iterations", 1000)]);
    let pipeline = |out: &str| EVERY_SOURCE.replace("OUT", out);
    std::fs::write(d.join("live.toml"), pipeline("live")).unwrap();
    std::fs::write(d.join("spool.toml"), pipeline("spool")).unwrap();
    std::fs::write(d.join("db.toml"), pipeline("db")).unwrap();
    let run = [
        "run",
        "live.toml",
        "--device",
        "sim:s.toml",
        "--spool",
        "run.rfraw",
    ];
    support::assert_success(&rocflow(
        &[&run[..], &["--", "/bin/sleep", "0"]].concat(),
        d,
        &[],
    ));
    support::assert_success(&rocflow(&["replay", "run.rfraw", "spool.toml"], d, &[]));
    support::assert_success(&rocflow(&["replay", "live/run.db", "db.toml"], d, &[]));

    // What the scenario makes, per table and per type of trace event.
    let truth = Scenario::of(&scenario);
    let records = truth.records_per_process();
    let count = |kind: &str| records[kind] as i64;
    let iterations = truth.repeats() as i64;
    // Of each collected counter, a value per instance, of the dispatches on a GPU that has
    // it.
    let collected = ["SQ_WAVES", "GRBM_GUI_ACTIVE"];
    let samples = truth.counter_samples_per_process(&collected);
    let mut tables: BTreeMap<String, i64> = (records.iter())
        .map(|(k, &n)| (k.clone(), n as i64))
        .collect();
    tables.insert("counter_sample".into(), samples as i64);
    for (table, n) in [
        ("processes", 1),
        ("threads", truth.threads as i64),
        // The GPUs and the host's CPU.
        ("agents", truth.agents.len() as i64 + 1),
        ("kernel_symbols", truth.kernels.len() as i64),
        // The application creates no HIP stream; its work goes to the null stream.
        ("hip_streams", 0),
        ("dropped", 0),
    ] {
        tables.insert(table.into(), n);
    }
    let slices = count("api") + count("kernel_dispatch") + count("memory_copy") + count("marker");
    // A value per dispatch and counter its GPU has, and the allocated memory at each
    // allocation and free.
    let counted = (truth.kernels.iter())
        .flat_map(|k| {
            collected
                .iter()
                .filter(|c| truth.counter_handle(k.agent, c).is_some())
        })
        .count() as i64;
    let changes = iterations * counted + count("memory_allocation");
    let events = BTreeMap::from([
        ("B".into(), slices),
        ("E".into(), slices),
        ("C".into(), changes),
    ]);

    let live = parquet_rows(&d.join("live/tables"));
    for out in ["live", "spool", "db"] {
        let rows = parquet_rows(&d.join(out).join("tables"));
        for (table, n) in &tables {
            assert_eq!(rows.get(table), Some(n), "{out}: {table}");
        }
        // The tables the scenario says nothing of (queues, code objects, counters) alike.
        assert_eq!(rows, live, "{out}");
        assert_eq!(
            perfetto_events(&d.join(out).join("run.pftrace")),
            events,
            "{out}"
        );
    }
}

#[test]
fn outputs_per_process_of_more_processes_than_descriptors() {
    // 300 processes' traces and databases under a limit of 256 descriptors: they take
    // turns at them, and each holds its process's records. The databases are written on
    // a few threads, not a thread each (a job of 40,000 processes would not start them).
    let pipeline = concat!(
        support::generated_pipeline!("per-process", "t"),
        support::sink!("traces", "perfetto", "out/{pid}.pftrace"),
        support::sink!("databases", "rocpd", "out/{pid}.db"),
    );
    let args = ["--records", "30000", "--processes", "300", "--seed", "5"];
    let dir = support::generated("pipeline.toml", pipeline, &args);
    let args = ["replay", "run.rfraw", "pipeline.toml"];
    let mut command = support::rocflow_command(&args, dir.path(), &[]);
    let (out, threads) =
        support::output_and_most_threads(support::with_descriptors(&mut command, 256), &["rocpd"]);
    let threads = threads[0];
    assert_success(&out);
    assert!(
        (1..=16).contains(&threads),
        "{threads} threads wrote the databases at once"
    );
    let spool = support::inspect(dir.path(), "run.rfraw");
    let pids: Vec<u64> = (spool["processes"].as_array().unwrap().iter())
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 300);
    let of_each = |extension: &str| -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = (pids.iter())
            .map(|pid| dir.path().join(format!("out/{pid}.{extension}")))
            .collect();
        paths.sort();
        paths
    };
    let (traces, databases) = (of_each("pftrace"), of_each("db"));
    let written = support::entries(&dir.path().join("out"), |_| true);
    let mut want = [traces.clone(), databases.clone()].concat();
    want.sort();
    assert_eq!(written, want);
    // Every record of the spool is in one trace and one database; each database holds
    // only its process.
    let mut in_databases = Tally::default();
    for (db, pid) in databases.iter().zip(&pids) {
        let one = truth::rocpd(db);
        assert!(!one.kernels.is_empty(), "{}", db.display());
        let conn = rusqlite::Connection::open(db).unwrap();
        let held: Vec<i64> =
            support::sqlite_rows(&conn, "SELECT pid FROM rocpd_info_process", |r| r.get(0));
        assert_eq!(held, [*pid as i64], "{}", db.display());
        for (name, n) in one.kernels {
            *in_databases.kernels.entry(name).or_default() += n;
        }
        for (name, n) in one.copies {
            *in_databases.copies.entry(name).or_default() += n;
        }
    }
    let in_traces = truth::perfetto(&traces);
    let sum = |counts: &BTreeMap<String, u64>| counts.values().sum::<u64>();
    let records = &spool["records"];
    for (output, tally) in [("perfetto", &in_traces), ("rocpd", &in_databases)] {
        for (kind, seen) in [
            ("kernel_dispatch", sum(&tally.kernels)),
            ("memory_copy", sum(&tally.copies)),
        ] {
            assert_eq!(
                Some(seen),
                records[kind].as_u64(),
                "{output} {kind}: {records}"
            );
        }
    }
}
