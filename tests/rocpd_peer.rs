//! AMD's own rocpd tools on rocflow's databases: every database a real `rocflow run` on
//! the simulated device writes (each shipped template's, counters, PC samples, several
//! processes in a database each or all in one) goes through `rocpd convert` to CSV,
//! Perfetto and OTF2, `rocpd summary` and `rocpd query`, and what they count must be what
//! rocflow counts: records per kind from `rocflow inspect`, calls and durations from
//! `rocflow summary`. Needs AMD's kit (`../shared/rocpd-peer`, `$ROCPD_PYTHON`); fails
//! without it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rocflow::pipeline::{self, Options};
use rocflow::plan::sink::SinkKind;
use rusqlite::{Connection, OpenFlags};
use support::peer::{Peer, Stats};
use support::{assert_success, rocflow, run_on, sim_app, text};

/// One `rocflow run` in a directory of its own.
struct Run {
    dir: tempfile::TempDir,
    /// What the databases were made from, as `rocflow inspect` and `summary` read it: the
    /// run's spool, or the databases a replay read.
    input: String,
    /// Where a replay's input lies, apart from the databases it wrote.
    _input_dir: Option<tempfile::TempDir>,
}

impl Run {
    fn new(pipeline: &Path, device: &str, app: &[&str]) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let output = run_on(device, pipeline.to_str().unwrap(), app, dir.path(), &[]);
        assert_success(&output);
        let report = text(&output.stderr);
        let spool = report
            .lines()
            .find_map(|l| l.trim().strip_prefix("spool: "));
        let input = spool
            .unwrap_or_else(|| panic!("the run names no spool: {report}"))
            .to_owned();
        Run {
            dir,
            input,
            _input_dir: None,
        }
    }

    /// `rocflow replay INPUT PIPELINE`: the databases it writes from another source.
    fn replay(input: tempfile::TempDir, pipeline: &str) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let input_path = input.path().display().to_string();
        let output = rocflow(&["replay", &input_path, pipeline], dir.path(), &[]);
        assert_success(&output);
        Run {
            dir,
            input: input_path,
            _input_dir: Some(input),
        }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Every database the run wrote, in name order.
    fn databases(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                match path.is_dir() {
                    true => walk(&path, out),
                    false if path.extension().is_some_and(|e| e == "db") => out.push(path),
                    false => {}
                }
            }
        }
        let mut dbs = Vec::new();
        walk(self.dir(), &mut dbs);
        dbs.sort();
        dbs
    }

    /// Records per kind, as `rocflow inspect` counts them.
    fn records(&self) -> BTreeMap<String, usize> {
        let out = rocflow(&["inspect", "--json", &self.input], self.dir(), &[]);
        assert_success(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let records = json["records"].as_object().unwrap().iter();
        records
            .map(|(kind, n)| (kind.clone(), n.as_u64().unwrap() as usize))
            .collect()
    }

    /// `rocflow summary` in the tables and names of AMD's `rocpd summary`.
    fn summary(&self) -> Stats {
        let out = rocflow(
            &["summary", &self.input, "--format", "json"],
            self.dir(),
            &[],
        );
        assert_success(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut stats = Stats::new();
        let mut add = |table: &str, name: String, row: &serde_json::Value| {
            let entry = stats.entry(table.to_owned()).or_default();
            let total = entry.entry(name).or_default();
            total.0 += row["calls"].as_u64().unwrap();
            total.1 += row["total_ns"].as_f64().unwrap().round() as u64;
        };
        let rows = |section: &str| json[section].as_array().cloned().unwrap_or_default();
        for row in rows("kernels") {
            add("kernels", row["kernel"].as_str().unwrap().to_owned(), &row);
        }
        for row in rows("api") {
            // AMD's tables are per runtime: `hip` for every HIP domain, `hsa` for HSA's.
            let domain = row["domain"].as_str().unwrap();
            let runtime = domain.split('_').next().unwrap();
            add(runtime, row["function"].as_str().unwrap().to_owned(), &row);
        }
        for row in rows("memory_copies") {
            let name = format!("MEMORY_COPY_{}", row["direction"].as_str().unwrap());
            add("memory_copies", name, &row);
        }
        for row in rows("memory_allocations") {
            // rocpd's allocation types: the SDK's ALLOCATE is ALLOC there.
            let name = match row["operation"].as_str().unwrap() {
                "ALLOCATE" => "ALLOC".to_owned(),
                other => other.to_owned(),
            };
            add("memory_allocations", name, &row);
        }
        for row in rows("scratch_memory") {
            // rocpd keeps scratch memory in its allocation table: AMD's summary counts each
            // event in both tables.
            let name = row["operation"].as_str().unwrap().to_owned();
            add("scratch_memory", name.clone(), &row);
            add("memory_allocations", name, &row);
        }
        for row in rows("markers") {
            add("markers", row["range"].as_str().unwrap().to_owned(), &row);
        }
        stats
    }
}

/// The processes a database holds.
fn processes(db: &Path) -> i64 {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let sql = "SELECT COUNT(*) FROM rocpd_info_process";
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Counter values of dispatches in rocflow's databases (`rocpd_pmc_event`, less the
/// device and SPM samples'): one per dispatch and counter, its dimension instances summed, as
/// AMD's `counter_collection.csv` has them.
fn counter_values(dbs: &[PathBuf]) -> usize {
    dbs.iter()
        .map(|db| {
            let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            let sql = "SELECT COUNT(*) FROM rocpd_pmc_event WHERE event_id NOT IN \
                       (SELECT E.id FROM rocpd_event E JOIN rocpd_string S \
                        ON S.id = E.category_id WHERE S.string IN ('DEVICE_COUNTING', 'SPM'))";
            let n: i64 = conn.query_row(sql, [], |r| r.get(0)).unwrap();
            n as usize
        })
        .sum()
}

/// `rocpd convert`'s CSV rows in rocflow's record kinds: every `*_api_trace` but the
/// markers' is an API call; agents are not records.
fn csv_kinds(rows: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    let mut kinds = BTreeMap::new();
    for (file, &n) in rows {
        let kind = match file.as_str() {
            "agent_info" => continue,
            "kernel_trace" => "kernel_dispatch",
            "memory_copy_trace" => "memory_copy",
            "memory_allocation_trace" => "memory_allocation",
            "scratch_memory_trace" => "scratch_memory",
            "marker_api_trace" => "marker",
            "counter_collection" => "counter_value",
            f if f.ends_with("_api_trace") => "api",
            other => panic!("rocpd convert wrote an unexpected {other}.csv"),
        };
        *kinds.entry(kind.to_owned()).or_default() += n;
    }
    kinds.retain(|_, n| *n > 0);
    kinds
}

/// Runs AMD's tools on `run`'s databases and checks what they count against rocflow.
fn check(run: &Run, what: &str) {
    let peer = Peer::get();
    let dbs = run.databases();
    assert!(!dbs.is_empty(), "{what}: no database");
    let records = run.records();

    // The records each kind of CSV holds; PC samples have none in AMD's converter, and
    // counters are one row per dispatch and counter.
    let mut want = records.clone();
    let samples = want.remove("pc_sample").unwrap_or(0);
    let device_samples = want.remove("device_counter_sample").unwrap_or(0);
    // AMD's converter writes no CSV of SPM samples, as rocprofv3 writes none.
    want.remove("spm_sample");
    if want.remove("counter_sample").is_some() {
        want.insert("counter_value".into(), counter_values(&dbs));
    }
    // rocpd keeps scratch memory events in its allocation table, and AMD's converter lists
    // each in its memory allocation CSV too, beside the scratch memory CSV.
    if let Some(&scratch) = want.get("scratch_memory") {
        *want.entry("memory_allocation".into()).or_insert(0) += scratch;
    }
    want.retain(|_, n| *n > 0);
    // One database at a time: AMD's converter rewrites the marker and agent CSVs for each
    // process it converts and keeps the last one's, so the markers of a database of
    // several processes are checked by the summary and the query below instead.
    if dbs.iter().any(|db| processes(db) > 1) {
        want.remove("marker");
    }
    let mut rows = BTreeMap::new();
    for (i, db) in dbs.iter().enumerate() {
        let one = peer.convert(std::slice::from_ref(db), run.dir(), &format!("convert-{i}"));
        for (file, n) in one {
            *rows.entry(file).or_insert(0) += n;
        }
    }
    let mut got = csv_kinds(&rows);
    if !want.contains_key("marker") {
        got.remove("marker");
    }
    assert_eq!(got, want, "{what}: rocpd convert's CSV rows");
    if dbs.len() > 1 {
        // Merged, the other kinds come out once each: no row is joined twice.
        let merged = csv_kinds(&peer.convert(&dbs, run.dir(), "convert-all"));
        let mut once = want.clone();
        once.remove("marker");
        let merged: BTreeMap<_, _> = merged.into_iter().filter(|(k, _)| k != "marker").collect();
        assert_eq!(
            merged, once,
            "{what}: rocpd convert of the databases merged"
        );
    }

    // `rocpd summary` over every database at once, as users merge a run's.
    let mut amd = peer.summary(&dbs, run.dir());
    let pc = amd.remove("pc").unwrap_or_default();
    let pc_calls: u64 = pc.values().map(|&(calls, _)| calls).sum();
    assert_eq!(
        pc_calls as usize, samples,
        "{what}: PC samples in rocpd summary"
    );
    // Device counter samples: instants of category DEVICE_COUNTING, which AMD's summary
    // tables as `device`, a row per track (GPU).
    let device = amd.remove("device").unwrap_or_default();
    let device_calls: u64 = device.values().map(|&(calls, _)| calls).sum();
    assert_eq!(
        device_calls as usize, device_samples,
        "{what}: device counter samples in rocpd summary"
    );
    // SPM samples have no table there (nor in rocflow's summary); the query below counts
    // them.
    amd.retain(|_, rows| !rows.is_empty());
    let ours = run.summary();
    assert_eq!(amd, ours, "{what}: rocpd summary against rocflow summary");

    // `rocpd query` on AMD's data views.
    let sql = "SELECT (SELECT COUNT(*) FROM kernels) AS kernels, \
               (SELECT IFNULL(SUM(duration), 0) FROM kernels) AS kernel_ns, \
               (SELECT COUNT(*) FROM memory_copies) AS copies, \
               (SELECT COUNT(*) FROM memory_allocations) AS allocations, \
               (SELECT COUNT(*) FROM regions_and_samples) AS regions";
    let answer = &peer.query(&dbs, run.dir(), sql)[0];
    let number = |column: &str| answer[column].parse::<usize>().unwrap();
    let table = |name: &str| ours.get(name).into_iter().flat_map(|t| t.values());
    let calls = |name: &str| table(name).map(|&(calls, _)| calls as usize).sum::<usize>();
    let kernel_ns: u64 = table("kernels").map(|&(_, ns)| ns).sum();
    let count = |kind: &str| records.get(kind).copied().unwrap_or(0);
    let got = [
        number("kernels"),
        number("kernel_ns"),
        number("copies"),
        number("allocations"),
        number("regions"),
    ];
    // API calls and ROCTx ranges are regions; ROCTx marks, PC samples, device counter
    // samples and SPM samples are samples.
    let regions = count("api")
        + count("marker")
        + count("pc_sample")
        + count("device_counter_sample")
        + count("spm_sample");
    let want = [
        calls("kernels"),
        kernel_ns as usize,
        calls("memory_copies"),
        // rocpd's allocation table holds the scratch memory events too.
        count("memory_allocation") + count("scratch_memory"),
        regions,
    ];
    assert_eq!(
        got, want,
        "{what}: rocpd query (kernels, ns, copies, allocations, regions and samples)"
    );
}

/// Whether a pipeline writes rocpd databases.
fn writes_rocpd(pipeline: &Path) -> bool {
    let options = Options {
        counters: Some(
            support::repo().join("../shared/data/counters/standard-schema.counter_defs.yaml"),
        ),
        ..Options::default()
    };
    let compiled = pipeline::compile_file(pipeline, &options)
        .unwrap_or_else(|e| panic!("{}: {}", pipeline.display(), e[0]));
    (compiled.plan.sinks.iter()).any(|s| s.writes(SinkKind::Rocpd))
}

/// The example scenario `name`, written into `dir` with `iterations` iterations: the
/// device argument that runs it.
fn fewer_iterations(name: &str, iterations: u64, dir: &Path) -> String {
    let path = dir.join(name);
    std::fs::write(&path, support::example_scenario(name, iterations)).unwrap();
    format!("sim:{}", path.display())
}

/// Each template runs its scenario for 10 iterations, not the example's 100: AMD's Perfetto
/// writer draws a counter's whole track again for every counter value of every dispatch
/// (cubic in dispatches and counters), so 600 dispatches of 13 counters made it write a
/// 1.3 GB trace for 385 s; what is checked does not depend on the count.
#[test]
fn every_shipped_templates_databases_pass_through_amds_tools() {
    let mut templates: Vec<PathBuf> = std::fs::read_dir(support::repo().join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && writes_rocpd(p))
        .collect();
    templates.sort();
    assert!(templates.len() >= 10, "{templates:?}");
    let scenarios = tempfile::tempdir().unwrap();
    // RDNA's counters are on the W7900; the built-in device is CDNA.
    let cdna = fewer_iterations("mi300x.toml", 10, scenarios.path());
    let rdna = fewer_iterations("w7900.toml", 10, scenarios.path());
    for template in templates {
        let name = template.file_stem().unwrap().to_string_lossy().into_owned();
        let device = if name.contains("rdna") { &rdna } else { &cdna };
        let run = Run::new(&template, device, &["/bin/sleep", "0.1"]);
        check(&run, &name);
    }
}

/// What rocflow writes from a rocpd source passes too: databases in rocprofv3's shape
/// (with scratch memory and ROCTx marks, which the simulated device makes none of), two
/// processes of two nodes, replayed through `trace-all` into rocflow's own databases.
#[test]
fn databases_written_from_rocprofv3_databases_pass_through_amds_tools() {
    let input = tempfile::tempdir().unwrap();
    support::rocprofv3_db::write(&input.path().join("a.db"), 5101, "node-a", 12);
    support::rocprofv3_db::write(&input.path().join("b.db"), 5102, "node-b", 8);
    let run = Run::replay(input, "trace-all");
    assert_eq!(run.databases().len(), 2, "a database per process");
    check(&run, "trace-all from rocprofv3's databases");
}

#[test]
fn a_database_per_process_and_their_merge_count_each_record_once() {
    let app = sim_app();
    let pipeline = support::repo().join("pipelines/trace-all.toml");
    let run = Run::new(&pipeline, "sim", &[app.to_str().unwrap(), "fork", "2"]);
    assert_eq!(run.databases().len(), 3, "the parent and two children");
    check(&run, "trace-all, three processes");
}

#[test]
fn one_database_for_several_processes_passes_too() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("single.toml");
    let trace_all = support::repo().join("pipelines/trace-all.toml");
    let counters = support::repo().join("pipelines/counters-basic.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
[pipeline]
name = "single"
extends = [{trace_all:?}, {counters:?}]

[[sink]]
name = "rocpd"
path = "rocflow-out/run.db"
options = {{ layout = "single" }}
"#
        ),
    )
    .unwrap();
    let app = sim_app();
    let run = Run::new(&pipeline, "sim", &[app.to_str().unwrap(), "fork", "2"]);
    assert_eq!(run.databases().len(), 1);
    check(
        &run,
        "trace-all and counters, three processes in one database",
    );
}

#[test]
fn agents_and_kernel_symbols_carry_what_rocprofv3_writes() {
    let run = Run::new(
        &support::repo().join("pipelines/kernel-trace.toml"),
        "sim",
        &["/bin/sleep", "0.1"],
    );
    let dbs = run.databases();
    let peer = Peer::get();
    let agents = peer.query(
        &dbs,
        run.dir(),
        "SELECT type, name, json_extract(extdata, '$.gpu_index') AS gpu_index, \
         json_extract(extdata, '$.cu_count') AS cu_count, \
         json_extract(extdata, '$.gfx_target_version') AS gfx FROM rocpd_info_agent ORDER BY absolute_index",
    );
    let described: Vec<[&str; 5]> = agents
        .iter()
        .map(|a| {
            let field = |c: &str| a[c].as_str();
            [
                field("type"),
                field("name"),
                field("gpu_index"),
                field("cu_count"),
                field("gfx"),
            ]
        })
        .collect();
    assert_eq!(
        described,
        [
            ["CPU", "Simulated host CPU", "-1", "2", "0"],
            ["GPU", "gfx942", "0", "304", "90402"],
            ["GPU", "gfx90a", "1", "104", "90010"],
        ]
    );
    let kernels = peer.query(
        &dbs,
        run.dir(),
        "SELECT kernel_name, demangled_kernel_name, truncated_kernel_name FROM kernel_symbols \
         WHERE kernel_name = '_Z13reduce_kernelPKfPfj'",
    );
    assert_eq!(
        kernels[0]["demangled_kernel_name"],
        "reduce_kernel(float const*, float*, unsigned int)"
    );
    assert_eq!(kernels[0]["truncated_kernel_name"], "reduce_kernel");
    // Processes and threads are named by their OS ids, as rocprofv3 names them.
    let ids = peer.query(
        &dbs,
        run.dir(),
        "SELECT (SELECT COUNT(*) FROM rocpd_info_process WHERE id = pid) AS processes, \
         (SELECT COUNT(*) FROM rocpd_info_thread WHERE id = tid) AS threads, \
         (SELECT COUNT(*) FROM rocpd_info_thread) AS all_threads",
    );
    assert_eq!(ids[0]["processes"], "1");
    assert_eq!(ids[0]["threads"], ids[0]["all_threads"]);
}

/// A run's kernel dispatches with counters, in a database and in rocflow's CSV tables.
const IDS: &str = concat!(
    support::traced_pipeline!("ids", "trace", r#"["kernel_dispatch"]"#),
    "counters.collect = [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]\n",
    support::sink!("db", "rocpd", "db/run.db"),
    support::sink!("csv", "csv", "csv"),
);

/// The same dispatches in rocprofv3's CSV files.
const ROCPROFV3_CSV: &str = concat!(
    support::traced_pipeline!("v3", "trace", r#"["kernel_dispatch"]"#),
    support::sink!("csv", "csv", "v3/out"),
    "options = { flavour = \"rocprofv3\" }\n",
);

/// The `columns` of each row of a CSV file.
fn rows_of<const N: usize>(path: &Path, columns: [&str; N]) -> BTreeSet<[String; N]> {
    let rows = support::csv(path);
    support::columns(&rows, columns)
        .into_iter()
        .map(|row| row.map(str::to_owned))
        .collect()
}

/// Rows have the ids the SDK gave their things, as in rocprofv3's databases: a kernel
/// symbol's id is its kernel id (the one its own `extdata` says), a queue's its handle, a
/// counter's the SDK's counter id. So AMD's converter prints each dispatch with the kernel
/// and queue the run recorded, and rocflow reading the database back prints the same.
#[test]
fn rows_have_the_ids_the_sdk_gave_their_things() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ids.toml"), IDS).unwrap();
    assert_success(&run_on("sim", "ids.toml", &["/bin/sleep", "0"], d, &[]));
    let db = vec![d.join("db/run.db")];
    let peer = Peer::get();

    // The simulated SDK registers the scenario's kernels in its order, from id 1.
    let scenario = support::scenario::default_scenario();
    let declared: Vec<[String; 2]> = (scenario["kernel"].as_array().unwrap().iter())
        .enumerate()
        .map(|(i, k)| [(i + 1).to_string(), k["name"].as_str().unwrap().to_owned()])
        .collect();
    let sql = "SELECT id, kernel_name, json_extract(extdata, '$.kernel_id') AS own \
               FROM rocpd_info_kernel_symbol ORDER BY id";
    let symbols = peer.query(&db, d, sql);
    let named: Vec<[String; 2]> = (symbols.iter())
        .map(|s| [s["id"].clone(), s["kernel_name"].clone()])
        .collect();
    assert_eq!(named, declared);
    for symbol in &symbols {
        assert_eq!(symbol["own"], symbol["id"], "{symbol:?}");
    }

    // Each dispatch as AMD's converter prints it, as the run recorded it, and as rocflow
    // reads it back from the database.
    peer.run(&["convert", "-f", "csv", "-d", "amd"], &db, d);
    let amd = rows_of(
        &d.join("amd/out_kernel_trace.csv"),
        ["Dispatch_Id", "Kernel_Id", "Queue_Id"],
    );
    let recorded = rows_of(
        &d.join("csv/kernel_dispatch.csv"),
        ["dispatch_id", "kernel_id", "queue"],
    );
    assert_eq!(
        amd.len() as u64,
        support::scenario::expected(&scenario)["kernel_dispatch"]
    );
    assert_eq!(amd, recorded);
    std::fs::write(d.join("v3.toml"), ROCPROFV3_CSV).unwrap();
    assert_success(&rocflow(&["replay", "db/run.db", "v3.toml"], d, &[]));
    let replayed = rows_of(
        &d.join("v3/out_kernel_trace.csv"),
        ["Dispatch_Id", "Kernel_Id", "Queue_Id"],
    );
    assert_eq!(replayed, amd);

    // Counters are the SDK's, by id and name.
    let pmc = peer.query(&db, d, "SELECT id, name FROM rocpd_info_pmc");
    let pmc: BTreeSet<[String; 2]> = (pmc.iter())
        .map(|c| [c["id"].clone(), c["name"].clone()])
        .collect();
    let counted = rows_of(&d.join("csv/counter_sample.csv"), ["counter_id", "counter"]);
    assert_eq!(pmc, counted);
}
