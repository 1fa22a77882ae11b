//! The Parquet sink as users run it: `rocflow replay` of a generated run into a dataset, read
//! back by two independent readers: DuckDB (from PyPI, through `support/duckdb_query.py`;
//! `tests/run-all` installs it) with SQL, and the parquet crate's Arrow reader. Row counts come
//! from `rocflow inspect`, values from a CSV sink of the same replay, metadata from the spool.

use std::collections::BTreeMap;
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
use rocflow::record::{ApiCall, Batch, KfdEvent, Meta, RecordKind};
use rocflow::sdk::Domain;
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::wire::Payload;
use serde_json::Value;
use support::{assert_says, duckdb, rocflow, text};

/// A pipeline tracing what the generator makes into a Parquet sink with `options` and a CSV
/// sink, with a derived column and an aggregate table.
fn pipeline(options: &str) -> String {
    const GENERATED: &str = support::generated_pipeline!("tables", "all");
    format!(
        r#"{GENERATED}pc_sampling.method = "host_trap"
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

/// A generated run of `processes` processes, replayed with `pipeline`, in a fresh directory.
fn replayed(processes: u16, pipeline: &str) -> tempfile::TempDir {
    let processes = processes.to_string();
    let dir = support::generated(
        "p.toml",
        pipeline,
        &["--records", "40000", "--processes", &processes],
    );
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

/// Records per kind, as `rocflow inspect` counts them.
fn inspected(dir: &Path) -> BTreeMap<String, u64> {
    let out = rocflow(&["inspect", "run.rfraw", "--json"], dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let records = json["records"].as_object().unwrap();
    records
        .iter()
        .map(|(kind, n)| (kind.clone(), n.as_u64().unwrap()))
        .collect()
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

/// A cell as the CSV sink writes it (integers and times in decimal, strings as they are).
fn cell(array: &dyn Array, row: usize) -> String {
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
        DataType::List(_) if array.is_null(row) => String::new(),
        DataType::List(_) => {
            let args = array.as_list::<i32>().value(row);
            let args = args.as_struct();
            let text = |name: &str, i: usize| args[name].as_string::<i32>().value(i).to_owned();
            let pairs: Vec<String> = (0..args.len())
                .map(|i| format!("{}={}", text("name", i), text("value", i)))
                .collect();
            pairs.join(";")
        }
        other => panic!("no CSV form for {other}"),
    }
}

/// The first `rows` rows of a table match the CSV sink's, field by field: the same columns
/// in the same order (counter samples leave out their kernel's name, a join away), and the
/// same values (numbers compared as numbers, since CSV prints whole floats as integers, and
/// u64 values beyond i64 as expressions see them, wrapped to negative numbers).
fn matches_csv(dir: &Path, table: &str, rows: usize) {
    let path = dir.join(format!("out/csv/{table}.csv"));
    let csv = std::fs::read_to_string(&path).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let batch = &read(&dir.join("out/ds").join(table))[0];
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let left_out: &[&str] = match table {
        "counter_sample" => &["kernel_name"],
        _ => &[],
    };
    let kept: Vec<&str> = header
        .iter()
        .copied()
        .filter(|h| !left_out.contains(h))
        .collect();
    assert_eq!(names, kept, "{table}");
    let expected = support::csv(&path);
    assert!(!expected.is_empty(), "{table} has no rows to compare");
    for (row, fields) in expected.iter().take(rows).enumerate() {
        for (c, name) in names.iter().enumerate() {
            let want = fields[*name].as_str();
            let got = cell(batch.column(c).as_ref(), row);
            let wrapped = want.parse::<i64>().map(|w| (w as u64).to_string());
            let same = got == want
                || wrapped.is_ok_and(|w| w == got)
                || got
                    .parse::<f64>()
                    .ok()
                    .zip(want.parse::<f64>().ok())
                    .is_some_and(|(g, w)| (g - w).abs() <= 1e-9 * w.abs());
            assert!(same, "{table} row {row} {name}: {got} vs {want}");
        }
    }
}

/// The whole dataset, read back: a table per record kind with the spool's record counts,
/// typed and dictionary-encoded columns matching the CSV sink's values, metadata tables that
/// join, key-value metadata, the aggregate and derived columns.
#[test]
fn a_dataset_reads_back_with_duckdb_and_arrow() {
    let dir = replayed(2, &pipeline("wide_counters = true"));
    let d = dir.path();
    let want = inspected(d);
    assert_eq!(want.len(), 6, "{want:?}");
    let counts: Vec<String> = want
        .keys()
        .map(|kind| format!("SELECT COUNT(*) FROM 'out/ds/{kind}/*.parquet'"))
        .collect();
    let got = duckdb(d, &counts.iter().map(String::as_str).collect::<Vec<_>>());
    for ((kind, n), rows) in want.iter().zip(&got) {
        assert_eq!(scalar(rows), &Value::from(*n), "{kind} through DuckDB");
        let rows: usize = read(&d.join("out/ds").join(kind))
            .iter()
            .map(RecordBatch::num_rows)
            .sum();
        assert_eq!(rows as u64, *n, "{kind} through arrow");
    }

    for table in [
        "kernel_dispatch",
        "api",
        "counter_sample",
        "memory_copy",
        "marker",
        "pc_sample",
    ] {
        matches_csv(d, table, 200);
    }
    let dispatches = &read(&d.join("out/ds/kernel_dispatch"))[0];
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

    // What the files say about themselves: codec, encodings, statistics, provenance.
    let catalog = catalog(d);
    let plan = Plan::from_json(catalog.plan.as_deref().unwrap()).unwrap();
    let file =
        SerializedFileReader::new(File::open(files(&d.join("out/ds/api"))[0].clone()).unwrap())
            .unwrap();
    let metadata = file.metadata();
    let kv: BTreeMap<&str, &str> = metadata
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(kv["rocflow.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(kv["rocflow.pipeline"], plan.pipeline.name);
    assert_eq!(kv["rocflow.pipeline.hash"], plan.pipeline.hash);
    assert_eq!(kv["rocflow.host"], "gen-node");
    assert_eq!(kv["rocflow.application"], "./app --steps 100");
    assert!(kv["rocflow.command"].contains("replay run.rfraw"), "{kv:?}");
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

    // Metadata tables, and a join of dispatches with their symbols and counter samples.
    let mut per_kernel: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for frame in SpoolReader::open(&d.join("run.rfraw")).unwrap() {
        let frame = frame.unwrap();
        if let Payload::Records(Batch::CounterSample(samples)) = frame.payload {
            for s in samples {
                let name = catalog
                    .stream(frame.stream)
                    .kernel_name(s.kernel_id)
                    .to_owned();
                let entry = per_kernel.entry(name).or_default();
                entry.0 += 1;
                entry.1 += s.value;
            }
        }
    }
    let got = duckdb(
        d,
        &[
            "SELECT COUNT(*) FROM 'out/ds/processes/*.parquet'",
            "SELECT COUNT(*) FROM 'out/ds/kernel_symbols/*.parquet'",
            "SELECT COUNT(*) FROM 'out/ds/agents/*.parquet' WHERE type = 'gpu'",
            "SELECT s.kernel_name, COUNT(*), SUM(c.value) \
             FROM 'out/ds/kernel_dispatch/*.parquet' d \
             JOIN 'out/ds/kernel_symbols/*.parquet' s USING (pid, kernel_id) \
             JOIN 'out/ds/counter_sample/*.parquet' c USING (pid, dispatch_id) \
             GROUP BY 1 ORDER BY 1",
            "SELECT COUNT(*) FROM 'out/ds/per_kernel/*.parquet'",
            "SELECT COUNT(*), SUM(SQ_WAVES) FROM 'out/ds/dispatch_counters/*.parquet'",
            "SELECT COUNT(DISTINCT (pid, dispatch_id)), SUM(value) \
             FROM 'out/ds/counter_sample/*.parquet' WHERE counter = 'SQ_WAVES'",
        ],
    );
    assert_eq!(scalar(&got[0]), &Value::from(2));
    assert_eq!(scalar(&got[1]), &Value::from(40));
    assert_eq!(scalar(&got[2]), &Value::from(4));
    let joined: BTreeMap<String, (u64, f64)> = got[3]
        .iter()
        .map(|r| {
            let name = r[0].as_str().unwrap().to_owned();
            (name, (r[1].as_u64().unwrap(), r[2].as_f64().unwrap()))
        })
        .collect();
    assert!(!per_kernel.is_empty(), "the run has counter samples");
    assert_eq!(
        joined.keys().collect::<Vec<_>>(),
        per_kernel.keys().collect::<Vec<_>>()
    );
    for (name, (n, sum)) in &per_kernel {
        assert_eq!(joined[name].0, *n, "{name}");
        assert!((joined[name].1 - sum).abs() <= 1e-9 * sum, "{name}");
    }
    let csv_aggregate = std::fs::read_to_string(d.join("out/csv/per_kernel.csv")).unwrap();
    assert_eq!(
        scalar(&got[4]),
        &Value::from(csv_aggregate.lines().count() - 1)
    );
    assert_eq!(
        got[5][0][0], got[6][0][0],
        "a row per dispatch with counters"
    );
    assert_eq!(
        got[5][0][1], got[6][0][1],
        "SQ_WAVES summed over dimensions"
    );
}

/// `max_file_size` splits a table into part files of about that size, read as one table.
#[test]
fn large_tables_split_into_part_files() {
    let max = 64 * 1024;
    let dir = replayed(
        1,
        &pipeline(&format!(
            "max_file_size = {max}, row_group_rows = 4096, compression = \"snappy\""
        )),
    );
    let d = dir.path();
    let parts = files(&d.join("out/ds/counter_sample"));
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
    assert_eq!(
        scalar(&got[0]),
        &Value::from(inspected(d)["counter_sample"])
    );
    assert_eq!(scalar(&got[1]), "SNAPPY");
}

/// Hive partitions by host and process: a folder per process, the partition columns taken
/// out of the files and read back from the paths as one dataset, metadata tables likewise.
#[test]
fn hive_partitions_read_as_one_dataset() {
    let dir = replayed(
        3,
        &pipeline("partition_by = [\"host\", \"process\"], compression = \"lz4\""),
    );
    let d = dir.path();
    let table = d.join("out/ds/kernel_dispatch");
    let parts: Vec<String> = files(&table)
        .iter()
        .map(|p| p.strip_prefix(&table).unwrap().display().to_string())
        .collect();
    assert_eq!(
        parts,
        [
            "host=gen-node/pid=4000/part-0.parquet",
            "host=gen-node/pid=4001/part-0.parquet",
            "host=gen-node/pid=4002/part-0.parquet"
        ]
    );
    let schema = read(&table)[0].schema();
    assert!(
        schema.field_with_name("pid").is_err(),
        "pid comes from the path"
    );

    let mut per_pid: BTreeMap<u64, u64> = BTreeMap::new();
    for frame in SpoolReader::open(&d.join("run.rfraw")).unwrap() {
        if let Payload::Records(Batch::KernelDispatch(records)) = frame.unwrap().payload {
            for r in records {
                *per_pid.entry(u64::from(r.pid)).or_default() += 1;
            }
        }
    }
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
    let grouped: BTreeMap<u64, u64> = got[0]
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    assert_eq!(grouped, per_pid);
    assert_eq!(scalar(&got[1]), &Value::from(per_pid.values().sum::<u64>()));
    assert_eq!(got[2].len(), 3);
    assert_eq!(
        got[2][0],
        [Value::from("gen-node"), Value::from(4000), Value::from(1)]
    );
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
}
