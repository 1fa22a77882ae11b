//! The Parquet sink as users run it: a run on the simulated device into a dataset, read
//! back by two independent readers: DuckDB (from PyPI, through `support/duckdb_query.py`;
//! `tests/run-all` installs it) with SQL, and the parquet crate's Arrow reader. What the
//! tables hold is held to the run's scenario (`support::truth`): how many rows, and every
//! row's values.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int32Type, Int64Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type,
    UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader, SerializedFileReader};
use rocflow::catalog::Catalog;
use rocflow::plan::Plan;
use rocflow::record::{ApiCall, Batch, HipEventBarrier, KfdEvent, Meta, RecordKind};
use rocflow::sdk::Domain;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::wire::Payload;
use serde_json::Value;
use support::truth::{self, Collects, Part, Rows, Scenario, Tally};
use support::{assert_says, assert_success, duckdb, rocflow, sim_app, text};

/// The scenario every run here replays: the simulated MI300X node's.
fn scenario_file() -> PathBuf {
    support::repo().join("examples/sim/mi300x.toml")
}

/// The counters the runs collect: on both GPUs but one, which only gfx942 has.
const COUNTERS: [&str; 3] = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"];

/// A pipeline tracing every kind of record the scenario makes, with [`COUNTERS`], into a
/// Parquet sink with `options` and a CSV sink, with a derived column and an aggregate
/// table.
fn pipeline(options: &str) -> String {
    format!(
        r#"[pipeline]
name = "dataset"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy", "memory_allocation", "marker_core_range_api"]
counters.collect = {COUNTERS:?}
[[transform]]
name = "us"
kind = "derive"
records = ["kernel_dispatch"]
column = "duration_us"
expression = "duration_ns / 1000.0"
[[transform]]
name = "per_kernel"
kind = "aggregate"
records = ["kernel_dispatch"]
group_by = ["kernel_name"]
metrics = {{ calls = "count()", total_ns = "sum(duration_ns)" }}
[[sink]]
name = "tables"
kind = "parquet"
path = "out/ds"
options = {{ {options} }}
[[sink]]
name = "csv"
kind = "csv"
path = "out/csv"
"#
    )
}

/// What [`pipeline`] collects of the scenario: every API domain it calls.
fn collects() -> Collects {
    Collects::everything(&COUNTERS)
}

/// A run of `pipeline` on the simulated device in a fresh directory, its application
/// forking into `processes` processes; its spool is `run.rfraw`. Returns the directory,
/// the scenario, and the pid of the `rocflow` that ran.
fn profiled(processes: u64, pipeline: &str) -> (tempfile::TempDir, Scenario, u32) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.toml"), pipeline).unwrap();
    let device = format!("sim:{}", scenario_file().display());
    let (app, forks) = (sim_app(), (processes - 1).to_string());
    let args = [
        "run",
        "p.toml",
        "--device",
        &device,
        "--spool",
        "run.rfraw",
        "--",
    ];
    let args = [&args[..], &[app.to_str().unwrap(), "fork", &forks]].concat();
    let child = support::rocflow_command(&args, d, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert_success(&child.wait_with_output().unwrap());
    (dir, Scenario::read(&scenario_file()), pid)
}

/// The spool's metadata.
fn catalog(dir: &Path) -> Catalog {
    let mut catalog = Catalog::default();
    for frame in SpoolReader::open(&dir.join("run.rfraw")).unwrap() {
        let frame = frame.unwrap();
        if let Payload::Meta(items) = frame.payload {
            catalog.apply(frame.stream, items);
        }
    }
    catalog
}

/// The one value of a query's one row.
fn scalar(rows: &[Vec<Value>]) -> &Value {
    assert_eq!(rows.len(), 1, "{rows:?}");
    &rows[0][0]
}

/// The Parquet files under `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => dirs.push(path),
                false => found.push(path),
            }
        }
    }
    found.sort();
    found
}

/// Every row of a table's files, through the parquet crate's Arrow reader.
fn read(table: &Path) -> Vec<RecordBatch> {
    files(table)
        .iter()
        .flat_map(|path| {
            let file = File::open(path).unwrap();
            ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap()
                .map(Result::unwrap)
        })
        .collect()
}

/// Every row of a table through the Arrow reader, each column as text ([`cell`]); no
/// rows where the dataset has no such table.
fn arrow_rows(table: &Path) -> Rows {
    if !table.exists() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for batch in read(table) {
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let cells = (schema.fields().iter().zip(batch.columns()))
                .map(|(field, column)| (field.name().clone(), cell(column.as_ref(), row)));
            rows.push(cells.collect());
        }
    }
    rows
}

/// A cell as text: integers and times in decimal, strings as they are, a null as nothing.
fn cell(array: &dyn Array, row: usize) -> String {
    if array.is_null(row) {
        return String::new();
    }
    match array.data_type() {
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(row).to_string(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(row).to_string(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::Float64 => array.as_primitive::<Float64Type>().value(row).to_string(),
        DataType::Timestamp(TimeUnit::Nanosecond, None) => array
            .as_primitive::<TimestampNanosecondType>()
            .value(row)
            .to_string(),
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_dictionary::<Int32Type>();
            let key = dictionary.keys().value(row) as usize;
            dictionary.values().as_string::<i32>().value(key).to_owned()
        }
        // API calls' arguments, as `name=value` pairs joined by `;`.
        DataType::List(_) => {
            let args = array.as_list::<i32>().value(row);
            let args = args.as_struct();
            let text = |name: &str, i: usize| args[name].as_string::<i32>().value(i).to_owned();
            let pairs: Vec<String> = (0..args.len())
                .map(|i| format!("{}={}", text("name", i), text("value", i)))
                .collect();
            pairs.join(";")
        }
        other => panic!("no text form for {other}"),
    }
}

/// Fails naming each difference between the truth and what an output holds.
fn assert_agrees(want: &Tally, seen: &Tally, output: &str) {
    let differences = want.differences(seen, &Part::ALL, 1e-9);
    assert!(
        differences.is_empty(),
        "{output}:\n{}",
        differences.join("\n")
    );
}

/// A dataset of a run of two processes, read back: a table per record kind with as many
/// rows as the scenario makes, through DuckDB and through Arrow; every row's values the
/// scenario's; typed and dictionary-encoded columns, the CSV sink's; metadata tables that
/// join; key-value metadata; the aggregate, derived and wide counter columns.
#[test]
fn a_dataset_holds_the_scenario_read_back_with_duckdb_and_arrow() {
    let processes = 2;
    let (dir, scenario, _) = profiled(processes, &pipeline("wide_counters = true"));
    let d = dir.path();
    let ds = d.join("out/ds");
    let table = |kind: &str| arrow_rows(&ds.join(kind));
    scenario.assert_fits(&collects(), table);
    let (tally, dispatches) = truth::parquet_tables(&ds);
    let want = scenario.truth(&collects(), processes, &dispatches);
    assert_agrees(&want, &tally, "DuckDB");

    // Rows per table, through both readers. The pipeline traces every domain the
    // scenario calls.
    let mut per_process = scenario.records_per_process();
    let samples = scenario.counter_samples_per_process(&COUNTERS);
    per_process.insert("counter_sample".into(), samples);
    assert_eq!(per_process.len(), 6, "{per_process:?}");
    let counts: Vec<String> = (per_process.keys())
        .map(|kind| format!("SELECT COUNT(*) FROM 'out/ds/{kind}/*.parquet'"))
        .collect();
    let got = duckdb(d, &counts.iter().map(String::as_str).collect::<Vec<_>>());
    for ((kind, n), rows) in per_process.iter().zip(&got) {
        let n = n * processes;
        assert_eq!(scalar(rows), &Value::from(n), "{kind} through DuckDB");
        let rows: usize = (read(&ds.join(kind)).iter())
            .map(RecordBatch::num_rows)
            .sum();
        assert_eq!(rows as u64, n, "{kind} through Arrow");
    }

    // The columns of the CSV sink, in its order; counter samples leave out their kernel's
    // name, a join away.
    for kind in per_process.keys() {
        let csv = std::fs::read_to_string(d.join(format!("out/csv/{kind}.csv"))).unwrap();
        let header = csv.lines().next().unwrap().split(',');
        let kept: Vec<&str> = header
            .filter(|h| kind != "counter_sample" || *h != "kernel_name")
            .collect();
        let batch = &read(&ds.join(kind))[0];
        let names: Vec<&str> = (batch.schema_ref().fields().iter())
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, kept, "{kind}");
    }
    let dispatch_rows = table("kernel_dispatch");
    for row in &dispatch_rows {
        let kernel = scenario.kernel(&row["kernel_name"]).unwrap();
        let us: f64 = row["duration_us"].parse().unwrap();
        assert_eq!(us, kernel.duration_ns as f64 / 1000.0, "{row:?}");
    }
    let dispatches = &read(&ds.join("kernel_dispatch"))[0];
    let schema = dispatches.schema();
    let ty = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    assert_eq!(
        ty("start_ns"),
        DataType::Timestamp(TimeUnit::Nanosecond, None)
    );
    assert_eq!(ty("pid"), DataType::UInt32);
    assert_eq!(ty("dispatch_id"), DataType::UInt64);
    assert_eq!(ty("kernel_name"), text);
    assert_eq!(ty("duration_us"), DataType::Float64);

    // What the files say about themselves: codec, encodings, statistics, provenance (the
    // pipeline's hash as the run recorded it in its spool).
    let catalog = catalog(d);
    let plan = Plan::from_json(catalog.plan.as_deref().unwrap()).unwrap();
    let file =
        SerializedFileReader::new(File::open(files(&ds.join("api"))[0].clone()).unwrap()).unwrap();
    let metadata = file.metadata();
    let kv: BTreeMap<&str, &str> = metadata
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(kv["rocflow.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(kv["rocflow.pipeline"], "dataset");
    assert_eq!(kv["rocflow.pipeline.hash"], plan.pipeline.hash);
    assert_eq!(kv["rocflow.host"], support::hostname());
    let app = format!("{} fork 1", sim_app().display());
    assert_eq!(kv["rocflow.application"], app);
    assert!(kv["rocflow.command"].contains("run p.toml"), "{kv:?}");
    let columns = metadata.row_group(0).columns();
    assert!(columns.iter().all(|c| c.statistics().is_some()));
    let rows = duckdb(
        d,
        &["SELECT path_in_schema, compression, encodings \
           FROM parquet_metadata('out/ds/api/part-0.parquet') \
           WHERE path_in_schema IN ('operation', 'start_ns') ORDER BY 1"],
    );
    let described: Vec<String> = rows[0]
        .iter()
        .map(|r| format!("{} {} {}", r[0], r[1], r[2]))
        .collect();
    assert!(
        described[0].starts_with("\"operation\" \"ZSTD\"")
            && described[0].contains("RLE_DICTIONARY"),
        "{described:?}"
    );
    assert!(
        described[1].starts_with("\"start_ns\" \"ZSTD\""),
        "{described:?}"
    );

    // Metadata tables; dispatches joined with their symbols and counter samples; the
    // aggregate table.
    let got = duckdb(
        d,
        &[
            "SELECT COUNT(*) FROM 'out/ds/processes/*.parquet'",
            "SELECT COUNT(*) FROM 'out/ds/kernel_symbols/*.parquet'",
            "SELECT COUNT(*) FROM 'out/ds/agents/*.parquet' WHERE type = 'gpu'",
            "SELECT s.kernel_name, c.counter, COUNT(DISTINCT (pid, dispatch_id)), SUM(c.value) \
             FROM 'out/ds/kernel_dispatch/*.parquet' d \
             JOIN 'out/ds/kernel_symbols/*.parquet' s USING (pid, kernel_id) \
             JOIN 'out/ds/counter_sample/*.parquet' c USING (pid, dispatch_id) \
             GROUP BY 1, 2",
            "SELECT kernel_name, calls, total_ns FROM 'out/ds/per_kernel/*.parquet'",
        ],
    );
    assert_eq!(scalar(&got[0]), &Value::from(processes));
    let kernels = scenario.kernels.len() as u64;
    assert_eq!(scalar(&got[1]), &Value::from(processes * kernels));
    let gpus = scenario.agents.len() as u64;
    assert_eq!(scalar(&got[2]), &Value::from(processes * gpus));
    let mut joined = Tally::default();
    for r in &got[3] {
        let key = (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into());
        let value = (r[2].as_u64().unwrap(), r[3].as_f64().unwrap());
        joined.counters.insert(key, value);
    }
    assert_agrees(
        &Tally {
            counters: want.counters.clone(),
            ..Tally::default()
        },
        &joined,
        "the join",
    );
    let mut aggregate = Tally::default();
    for r in &got[4] {
        let name = r[0].as_str().unwrap().to_owned();
        aggregate
            .kernels
            .insert(name.clone(), r[1].as_u64().unwrap());
        aggregate
            .kernel_ns
            .insert(name, r[2].as_f64().unwrap() as u64);
    }
    let per_kernel = Tally {
        kernels: want.kernels.clone(),
        kernel_ns: want.kernel_ns.clone(),
        ..Tally::default()
    };
    assert_agrees(&per_kernel, &aggregate, "the aggregate");

    // A row per dispatch with a column per counter, each summed over its instances; a
    // counter the dispatch's GPU lacks is null.
    let wide = table("dispatch_counters");
    assert_eq!(wide.len(), dispatch_rows.len());
    let kernel_of: BTreeMap<(&str, &str), &str> = (dispatch_rows.iter())
        .map(|r| {
            (
                (r["pid"].as_str(), r["dispatch_id"].as_str()),
                r["kernel_name"].as_str(),
            )
        })
        .collect();
    for row in &wide {
        let dispatch = (row["pid"].as_str(), row["dispatch_id"].as_str());
        let kernel = scenario.kernel(kernel_of[&dispatch]).unwrap();
        let id: u64 = row["dispatch_id"].parse().unwrap();
        for counter in COUNTERS {
            let want = scenario.dispatch_counter(kernel.agent, counter, id);
            let got = Some(row[counter].as_str())
                .filter(|v| !v.is_empty())
                .map(|v| v.parse::<f64>().unwrap());
            assert_eq!(got, want, "{counter} of {dispatch:?}");
        }
    }
}

/// PC samples, in a run of their own (the SDK samples no PCs where it counts dispatches):
/// as many as the scenario's kernels take on the GPUs that sample, each inside its
/// dispatch.
#[test]
fn pc_samples_are_those_of_the_scenarios_dispatches() {
    let pipeline = r#"[pipeline]
name = "samples"
[[context]]
name = "pc"
tracing = ["kernel_dispatch"]
pc_sampling = { method = "host_trap", unit = "time", interval = 1000 }
[[sink]]
name = "tables"
kind = "parquet"
path = "out/ds"
"#;
    let (dir, scenario, _) = profiled(1, pipeline);
    let ds = dir.path().join("out/ds");
    let collects = Collects {
        dispatches: true,
        pc_samples: true,
        ..Collects::default()
    };
    scenario.assert_fits(&collects, |kind| arrow_rows(&ds.join(kind)));
    let (tally, dispatches) = truth::parquet_tables(&ds);
    let want = scenario.truth(&collects, 1, &dispatches);
    assert!(want.pc_samples > 0, "the scenario's GPUs sample");
    assert_agrees(&want, &tally, "DuckDB");
}

/// `max_file_size` splits a table into part files of about that size, read as one table.
#[test]
fn large_tables_split_into_part_files() {
    let max = 64 * 1024;
    let (dir, scenario, _) = profiled(
        1,
        &pipeline(&format!(
            "max_file_size = {max}, row_group_rows = 4096, compression = \"snappy\""
        )),
    );
    let d = dir.path();
    let parts = files(&d.join("out/ds/counter_sample"));
    // How many parts the rows take depends on how well they compress: at least three of
    // 64 KiB for the scenario's 30,600 counter values.
    assert!(parts.len() > 2, "{parts:?}");
    for (i, part) in parts.iter().enumerate() {
        assert_eq!(
            part.file_name().unwrap(),
            format!("part-{i}.parquet").as_str()
        );
        let size = std::fs::metadata(part).unwrap().len();
        assert!(size <= max, "{} has {size} bytes", part.display());
    }
    let got = duckdb(
        d,
        &[
            "SELECT COUNT(*) FROM 'out/ds/counter_sample/*.parquet'",
            "SELECT DISTINCT compression FROM parquet_metadata('out/ds/counter_sample/*.parquet')",
        ],
    );
    let samples = scenario.counter_samples_per_process(&COUNTERS);
    assert_eq!(scalar(&got[0]), &Value::from(samples));
    assert_eq!(scalar(&got[1]), "SNAPPY");
}

/// Hive partitions by host and process: a folder per process, the partition columns taken
/// out of the files and read back from the paths as one dataset, metadata tables likewise.
#[test]
fn hive_partitions_read_as_one_dataset() {
    let (dir, scenario, rocflow_pid) = profiled(
        3,
        &pipeline("partition_by = [\"host\", \"process\"], compression = \"lz4\""),
    );
    let d = dir.path();
    let table = d.join("out/ds/kernel_dispatch");
    let host = support::hostname();
    let mut pids = BTreeSet::new();
    for part in files(&table) {
        let path = part.strip_prefix(&table).unwrap().display().to_string();
        let pid = (path.strip_prefix(&format!("host={host}/pid=")))
            .and_then(|rest| rest.strip_suffix("/part-0.parquet"))
            .unwrap_or_else(|| panic!("{path}"));
        pids.insert(pid.parse::<u64>().unwrap());
    }
    assert_eq!(pids.len(), 3, "a folder per process: {pids:?}");
    let schema = read(&table)[0].schema();
    assert!(
        schema.field_with_name("pid").is_err(),
        "pid comes from the path"
    );

    let hive = |table: &str| {
        format!("read_parquet('out/ds/{table}/**/*.parquet', hive_partitioning = true)")
    };
    let got = duckdb(
        d,
        &[
            &format!(
                "SELECT pid, COUNT(*) FROM {} GROUP BY pid ORDER BY pid",
                hive("kernel_dispatch")
            ),
            &format!(
                "SELECT COUNT(*) FROM {} d JOIN {} s USING (host, pid, kernel_id)",
                hive("kernel_dispatch"),
                hive("kernel_symbols")
            ),
            &format!(
                "SELECT host, pid, ppid FROM {} ORDER BY pid",
                hive("processes")
            ),
            "SELECT DISTINCT compression FROM parquet_metadata('out/ds/api/**/*.parquet')",
        ],
    );
    let each = scenario.records_per_process()["kernel_dispatch"];
    let grouped: BTreeMap<u64, u64> = got[0]
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    let want: BTreeMap<u64, u64> = pids.iter().map(|&pid| (pid, each)).collect();
    assert_eq!(grouped, want);
    assert_eq!(scalar(&got[1]), &Value::from(3 * each));
    // The application, started by rocflow, and the two children it forked.
    let processes: Vec<(&str, u64, u64)> = (got[2].iter())
        .map(|r| {
            (
                r[0].as_str().unwrap(),
                r[1].as_u64().unwrap(),
                r[2].as_u64().unwrap(),
            )
        })
        .collect();
    let parent = (processes.iter())
        .find(|p| p.2 == u64::from(rocflow_pid))
        .unwrap_or_else(|| panic!("no child of rocflow ({rocflow_pid}): {processes:?}"));
    let mut want: Vec<(&str, u64, u64)> = (pids.iter())
        .map(|&pid| match pid == parent.1 {
            true => *parent,
            false => (host.as_str(), pid, parent.1),
        })
        .collect();
    want.sort_by_key(|p| p.1);
    assert_eq!(processes, want);
    assert_eq!(scalar(&got[3]), "LZ4_RAW");
}

/// A run that fails after the sink has written part of the dataset leaves nothing behind:
/// neither the dataset nor its staging directory.
#[test]
fn a_failed_run_leaves_no_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Fails (divides by zero) only on dispatches after the 15000th: many windows in.
    let failing = pipeline("").replacen(
        "[[sink]]",
        "[[transform]]\nname = \"ratio\"\nkind = \"derive\"\nstrict = true\n\
         records = [\"kernel_dispatch\"]\ncolumn = \"r\"\n\
         expression = \"duration_ns / min(1, max(0, 15000 - dispatch_id))\"\n[[sink]]",
        1,
    );
    std::fs::write(d.join("p.toml"), failing).unwrap();
    let args = [
        "generate",
        "run.rfraw",
        "--records",
        "150000",
        "--pipeline",
        "p.toml",
    ];
    let out = rocflow(&args, d, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = rocflow(&["replay", "run.rfraw"], d, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&out.stderr, "strict");
    let left: Vec<_> = std::fs::read_dir(d.join("out"))
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A size the sink could not read is an error of the pipeline, shown where it is written.
#[test]
fn a_bad_max_file_size_is_a_pipeline_error() {
    let dir = tempfile::tempdir().unwrap();
    let text_of = pipeline("max_file_size = \"12 XB\"");
    std::fs::write(dir.path().join("p.toml"), &text_of).unwrap();
    let out = rocflow(&["validate", "p.toml"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let line = text_of.lines().position(|l| l.contains("12 XB")).unwrap() + 1;
    let stderr = text(&out.stderr);
    assert_says(&stderr, "unknown unit `XB`");
    assert_says(&stderr, &format!("p.toml:{line}:"));
}

/// Records of every kind get a table with their own columns, those the generator does not
/// make (allocations, scratch memory, KFD events, HIP streams, runtime initialization) too.
#[test]
fn every_record_kind_has_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let process = rocflow::generate::process(77, 1_000);
    let mut frames = Vec::new();
    rocflow::wire::encode_meta(0, &[Meta::Process(process)], &mut frames);
    let call = ApiCall {
        pid: 77,
        domain_id: Domain::HsaCoreApi.sdk_value() as u8,
        ..Default::default()
    };
    let kfd = KfdEvent {
        pid: 77,
        domain_id: Domain::KfdEventPageFault.sdk_value() as u8,
        ..Default::default()
    };
    let barrier = HipEventBarrier {
        pid: 77,
        operation_id: 2,
        ..Default::default()
    };
    let batches = [
        Batch::KernelDispatch(vec![Default::default(); 2]),
        Batch::MemoryCopy(vec![Default::default(); 2]),
        Batch::MemoryAllocation(vec![Default::default(); 2]),
        Batch::ScratchMemory(vec![Default::default(); 2]),
        Batch::Api(vec![call; 2]),
        Batch::Marker(vec![Default::default(); 2]),
        Batch::CounterSample(vec![Default::default(); 2]),
        Batch::PcSample(vec![Default::default(); 2]),
        Batch::KfdEvent(vec![kfd; 2]),
        Batch::HipStream(vec![Default::default(); 2]),
        Batch::RuntimeInitialization(vec![Default::default(); 2]),
        Batch::DeviceCounterSample(vec![Default::default(); 2]),
        Batch::GraphLaunch(vec![Default::default(); 2]),
        Batch::HipEventBarrier(vec![barrier; 2]),
        Batch::SpmSample(vec![Default::default(); 2]),
    ];
    assert_eq!(
        batches.len(),
        RecordKind::ALL.len(),
        "a new kind needs a batch here"
    );
    for batch in &batches {
        rocflow::wire::encode_records(0, batch, &mut frames);
    }
    let mut spool = SpoolWriter::create(&d.join("run.rfraw")).unwrap();
    spool.write(&frames).unwrap();
    spool.finish().unwrap();
    let kinds: Vec<String> = RecordKind::names().map(|n| format!("\"{n}\"")).collect();
    let toml = format!(
        "[pipeline]\nname = \"all\"\n[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n\
         [[sink]]\nname = \"tables\"\nkind = \"parquet\"\npath = \"out/ds\"\nrecords = [{}]\n",
        kinds.join(", ")
    );
    std::fs::write(d.join("p.toml"), toml).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "p.toml"], d, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for kind in RecordKind::names() {
        let batches = read(&d.join("out/ds").join(kind));
        assert_eq!(
            batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
            2,
            "{kind}"
        );
        let schema = batches[0].schema();
        let time = ["start_ns", "timestamp_ns"]
            .iter()
            .find_map(|name| schema.field_with_name(name).ok())
            .unwrap_or_else(|| panic!("{kind} has no time"));
        assert_eq!(
            time.data_type(),
            &DataType::Timestamp(TimeUnit::Nanosecond, None),
            "{kind}"
        );
        assert_eq!(
            schema.field_with_name("pid").unwrap().data_type(),
            &DataType::UInt32
        );
    }
    let domains = |table: &str| {
        let batch = &read(&d.join("out/ds").join(table))[0];
        let column = batch.schema().index_of("domain").unwrap();
        cell(batch.column(column).as_ref(), 0)
    };
    assert_eq!(domains("api"), "hsa_core_api");
    assert_eq!(domains("kfd_event"), "kfd_event_page_fault");
    let barriers = &read(&d.join("out/ds/hip_event_barrier"))[0];
    let operation = barriers.schema().index_of("operation").unwrap();
    assert_eq!(cell(barriers.column(operation).as_ref(), 0), "WAIT");
}
