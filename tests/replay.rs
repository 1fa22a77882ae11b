//! `rocflow generate`, `inspect` and `replay` as users run them, on whole and damaged spools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::{assert_fails, assert_says, rocflow, run_on, text};

const PIPELINE: &str = concat!(
    support::traced_pipeline!("csv", "t"),
    support::sink!("tables", "csv", "out/{hostname}-{pid}"),
);

fn setup() -> tempfile::TempDir {
    support::generated("csv.toml", PIPELINE, &["--records", "30000"])
}

fn inspect(dir: &Path) -> serde_json::Value {
    support::inspect(dir, "run.rfraw")
}

fn csv_rows(dir: &Path, kind: &str) -> usize {
    let text =
        std::fs::read_to_string(dir.join("out/gen-node-4000").join(format!("{kind}.csv"))).unwrap();
    text.lines().count() - 1
}

#[test]
fn replay_uses_the_recorded_pipeline_and_writes_every_record() {
    let dir = setup();
    let info = inspect(dir.path());
    assert_eq!(info["complete"], true);
    assert_eq!(info["has_pipeline"], true);
    assert_eq!(info["processes"][0]["agents"][1]["name"], "gfx942");
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for kind in ["kernel_dispatch", "api", "memory_copy"] {
        let count = info["records"][kind].as_u64().unwrap();
        assert!(count > 0, "{kind}: {info}");
        assert_eq!(csv_rows(dir.path(), kind) as u64, count, "{kind}");
    }
    // Nothing of the staging directory is left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["gen-node-4000"]);
}

#[test]
fn replay_with_another_pipeline() {
    let dir = setup();
    std::fs::write(
        dir.path().join("long.toml"),
        format!("{PIPELINE}[[transform]]\nname = \"long\"\nkind = \"filter\"\nrecords = [\"kernel_dispatch\"]\npredicate = \"duration_ns > 250000\"\n"),
    )
    .unwrap();
    let out = rocflow(&["replay", "run.rfraw", "long.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all = inspect(dir.path())["records"]["kernel_dispatch"]
        .as_u64()
        .unwrap() as usize;
    let kept = csv_rows(dir.path(), "kernel_dispatch");
    assert!(kept > 0 && kept < all, "{kept} of {all}");
    let csv =
        std::fs::read_to_string(dir.path().join("out/gen-node-4000/kernel_dispatch.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "duration_ns").unwrap();
    for line in csv.lines().skip(1).take(100) {
        let duration: u64 = line.split(',').nth(column).unwrap().parse().unwrap();
        assert!(duration > 250_000, "{line}");
    }
}

#[test]
fn a_truncated_spool_replays_its_valid_prefix_with_a_warning() {
    let dir = setup();
    let path = dir.path().join("run.rfraw");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1000]).unwrap();
    let info = inspect(dir.path());
    assert_eq!(info["complete"], false);
    assert!(
        info["warning"]
            .as_str()
            .unwrap()
            .contains("ends inside a frame")
    );
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_says(&out.stderr, "ends inside a frame");
    let kept = info["records"]["kernel_dispatch"].as_u64().unwrap() as usize;
    assert_eq!(csv_rows(dir.path(), "kernel_dispatch"), kept);
}

#[test]
fn a_corrupt_spool_is_reported_where_it_breaks() {
    let dir = setup();
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
    let dir = setup();
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
    let dir = setup();
    let out = rocflow(
        &[
            "generate",
            "long.rfraw",
            "--records",
            "150000",
            "--pipeline",
            "csv.toml",
        ],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Fails (divides by zero) only on dispatches after the 15000th: windows in.
    let lenient = PIPELINE.replace(
        "[[sink]]",
        "[[transform]]\nname = \"ratio\"\nkind = \"derive\"\nrecords = [\"kernel_dispatch\"]\ncolumn = \"r\"\nexpression = \"duration_ns / min(1, max(0, 15000 - dispatch_id))\"\n[[sink]]",
    );
    std::fs::write(dir.path().join("lenient.toml"), &lenient).unwrap();
    let out = rocflow(&["replay", "long.rfraw", "lenient.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let failed: usize = stderr
        .split("warning: transform `ratio` failed on ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    let dispatches = csv_rows(dir.path(), "kernel_dispatch");
    assert!(
        failed > 0 && failed < dispatches / 2,
        "{failed} of {dispatches}"
    );

    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let strict = lenient.replace("column = \"r\"", "column = \"r\"\nstrict = true");
    std::fs::write(dir.path().join("strict.toml"), strict).unwrap();
    let out = rocflow(&["replay", "long.rfraw", "strict.toml"], dir.path(), &[]);
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
    let mut dirs = vec![dir.path().join("out")];
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

/// The spool `rocflow run` wrote before format version 2 (see its README).
fn version_1_spool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/spool-v1")
}

#[test]
fn a_version_1_spool_replays_with_its_recorded_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        version_1_spool().join("run.rfraw"),
        dir.path().join("run.rfraw"),
    )
    .unwrap();
    let info = inspect(dir.path());
    assert_eq!(info["complete"], true);
    assert_eq!(info["has_pipeline"], true);
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let process = &info["processes"][0];
    let tables = dir.path().join(format!(
        "out/{}-{}",
        process["hostname"].as_str().unwrap(),
        process["pid"]
    ));
    let records = info["records"].as_object().unwrap();
    assert!(!records.is_empty(), "{info}");
    for (kind, count) in records {
        let rows = std::fs::read_to_string(tables.join(format!("{kind}.csv")))
            .unwrap()
            .lines()
            .count();
        assert_eq!(rows as u64 - 1, count.as_u64().unwrap(), "{kind}");
    }
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
    let written = std::fs::read_dir(d.join("out"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let stamp = written.file_name().into_string().unwrap();
    assert!(minutes_from_now(&stamp).abs() < 10, "{stamp}");
    std::fs::remove_dir_all(d.join("out")).unwrap();
    let replay = rocflow(&["replay", "rocflow-out"], d, &[]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    assert!(d.join("out").join(&stamp).is_dir());

    std::fs::copy(version_1_spool().join("run.rfraw"), d.join("old.rfraw")).unwrap();
    let replay = rocflow(&["replay", "old.rfraw", "stamped.toml"], d, &[]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    for entry in std::fs::read_dir(d.join("out")).unwrap() {
        let stamp = entry.unwrap().file_name().into_string().unwrap();
        assert!(minutes_from_now(&stamp).abs() < 10, "{stamp}");
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
    let truth = support::truth::Scenario::of(&scenario);
    let records = truth.records_per_process();
    let count = |kind: &str| records[kind] as i64;
    let iterations = (truth.threads * truth.iterations) as i64;
    // Each dispatch's values: of each collected counter its kernel's GPU has, an instance
    // each.
    let collected = ["SQ_WAVES", "GRBM_GUI_ACTIVE"];
    let counters: Vec<u64> = (truth.kernels.iter())
        .flat_map(|k| &truth.agents[k.agent].counters)
        .filter(|(name, _)| collected.contains(&name.as_str()))
        .map(|(_, dimensions)| dimensions.iter().map(|&(_, size)| size).product())
        .collect();
    let values: u64 = counters.iter().sum();
    let mut tables: BTreeMap<String, i64> = (records.iter())
        .map(|(k, &n)| (k.clone(), n as i64))
        .collect();
    tables.insert("counter_sample".into(), iterations * values as i64);
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
    // A value per dispatch and counter, and the allocated memory at each allocation and free.
    let changes = iterations * counters.len() as i64 + count("memory_allocation");
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
