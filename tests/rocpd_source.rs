//! rocpd databases as a source: databases built the way rocprofv3 fills them
//! (`support/rocprofv3_db.rs`, on AMD's own schema) read back kind by kind through the
//! library and through `rocflow inspect`, `replay`, `summary` and `diff`; and a run's
//! spool against its own rocpd database, written by rocflow's sink and read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rocflow::catalog::Catalog;
use rocflow::record::{ApiArgs, Batch, RecordKind};
use rocflow::sdk::{AgentType, Domain};
use rocflow::source::{Rocpd, Source};
use rocflow::wire::Payload;
use support::scenario::{expected, scenario_with};
use support::{COORDINATES, assert_says, assert_success, csv, rocflow, rocprofv3_db, text};

/// Everything a source gave: the catalog, the batches per kind and the arguments.
#[derive(Default)]
struct Read {
    catalog: Catalog,
    batches: BTreeMap<RecordKind, Vec<(u16, Batch)>>,
    args: Vec<(u16, ApiArgs)>,
    /// The stream of each records frame, in the order they came.
    order: Vec<u16>,
}

impl Read {
    fn of(paths: &[PathBuf]) -> Read {
        let mut source = Rocpd::open(paths).unwrap();
        assert_eq!(source.note(), None);
        let mut read = Read::default();
        let mut described = std::collections::BTreeSet::new();
        while let Some(frame) = source.next_frame() {
            match frame.payload {
                Payload::Meta(items) => {
                    described.insert(frame.stream);
                    read.catalog.apply(frame.stream, items);
                }
                Payload::Records(batch) => {
                    assert!(described.contains(&frame.stream), "metadata comes first");
                    read.order.push(frame.stream);
                    read.batches
                        .entry(batch.kind())
                        .or_default()
                        .push((frame.stream, batch));
                }
                Payload::Args(args) => read.args.push((frame.stream, args)),
                Payload::Trace(_) => panic!("a rocpd database holds no thread trace"),
            }
        }
        source.finish().unwrap();
        read
    }

    fn count(&self, kind: RecordKind) -> u64 {
        let batches = self.batches.get(&kind).map_or(&[][..], Vec::as_slice);
        batches.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// The records of a kind, with their streams.
    fn all<T: Clone>(
        &self,
        kind: RecordKind,
        take: impl Fn(&Batch) -> Option<&Vec<T>>,
    ) -> Vec<(u16, T)> {
        let batches = self.batches.get(&kind).map_or(&[][..], Vec::as_slice);
        batches
            .iter()
            .flat_map(|(s, b)| take(b).unwrap().iter().map(move |r| (*s, r.clone())))
            .collect()
    }
}

/// Two processes on two hosts, a database each, as rocprofv3 writes them.
fn two_ranks(dir: &Path) -> (Vec<PathBuf>, Vec<rocprofv3_db::Process>) {
    let mut paths = Vec::new();
    let mut processes = Vec::new();
    for (pid, host, dispatches) in [(4242, "node-a", 8), (5353, "node-b", 5)] {
        let sub = dir.join(host);
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(format!("{pid}_results.db"));
        processes.push(rocprofv3_db::write(&path, pid, host, dispatches));
        paths.push(path);
    }
    (paths, processes)
}

#[test]
fn every_kind_rocprofv3_writes_is_read_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, processes) = two_ranks(dir.path());
    let read = Read::of(&paths);

    // Each database's process is a stream of its own, in the order named.
    let streams: Vec<_> = read.catalog.streams().collect();
    assert_eq!(streams.len(), 2);
    for ((stream, meta), p) in streams.iter().zip(&processes) {
        let process = meta.process.as_ref().unwrap();
        assert_eq!((process.pid, process.hostname.as_str()), (p.pid, p.host));
        assert_eq!(process.command, ["./app", "--size", "1024"]);
        // From the launcher's variable in the environment rocprofv3 keeps.
        assert_eq!(process.rank, Some(p.pid % 100), "stream {stream}");
        assert_eq!(process.start_ns, 1000);
        let tids: Vec<u32> = meta.threads.iter().map(|t| t.tid).collect();
        assert_eq!(tids, [p.pid, rocprofv3_db::worker_tid(p.pid)]);
        assert_eq!(meta.agents.len(), 2);
        let gpu = &meta.agents[1];
        assert_eq!(
            (gpu.index, gpu.agent_type, gpu.name.as_str()),
            (1, AgentType::Gpu, "gfx942")
        );
        assert_eq!(gpu.product_name, "AMD Instinct MI300X");
        assert_eq!(
            (
                gpu.cu_count,
                gpu.simd_count,
                gpu.xcc_count,
                gpu.wave_front_size
            ),
            (304, 1216, 8, 64)
        );
        assert_eq!(
            (
                gpu.max_waves_per_simd,
                gpu.lds_bytes_per_cu,
                gpu.max_engine_clk_mhz
            ),
            (8, 65536, 2100)
        );
        assert_eq!(gpu.handle, 0x7000_0001);
        assert_eq!(meta.agents[0].agent_type, AgentType::Cpu);
        let mut kernels: Vec<_> = meta.kernels.values().collect();
        kernels.sort_by_key(|k| k.kernel_id);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        let mangled: Vec<&str> = rocprofv3_db::KERNELS.iter().map(|k| k.0).collect();
        assert_eq!(names, mangled);
        assert_eq!((kernels[1].lds_bytes, kernels[1].scratch_bytes), (2048, 16));
        assert_eq!(
            (
                kernels[1].arch_vgpr_count,
                kernels[1].sgpr_count,
                kernels[1].kernarg_bytes
            ),
            (40, 24, 32)
        );
        assert_eq!(meta.code_objects[&1].uri, "file:///app#offset=0&size=4096");
        let mut counters: Vec<(u32, &str)> = meta
            .counters
            .values()
            .map(|c| (c.id, c.name.as_str()))
            .collect();
        counters.sort_unstable();
        let names: Vec<&str> = counters.iter().map(|c| c.1).collect();
        assert_eq!(names, p.counters);
        assert!(meta.counters.values().all(|c| c.agent == 1));
        // rocprofv3's rows for the null queue and stream (`Default Queue`, `Default
        // Stream`) describe nothing a run reports; the stream it created does.
        let queues: Vec<u64> = meta.queues.iter().map(|q| q.id).collect();
        assert_eq!(queues, [0x5a00]);
        let streams: Vec<u64> = meta.hip_streams.iter().map(|s| s.id).collect();
        assert_eq!(streams, [1]);
    }

    let total = |f: fn(&rocprofv3_db::Process) -> u64| processes.iter().map(f).sum::<u64>();
    assert_eq!(
        read.count(RecordKind::KernelDispatch),
        total(|p| p.dispatches)
    );
    assert_eq!(read.count(RecordKind::Api), total(|p| p.api_calls));
    assert_eq!(read.count(RecordKind::Marker), total(|p| p.markers));
    assert_eq!(read.count(RecordKind::MemoryCopy), total(|p| p.copies));
    assert_eq!(
        read.count(RecordKind::MemoryAllocation),
        total(|p| p.allocations)
    );
    assert_eq!(read.count(RecordKind::ScratchMemory), total(|p| p.scratch));
    assert_eq!(
        read.count(RecordKind::CounterSample),
        total(|p| p.dispatches * 2)
    );

    let dispatches = read.all(RecordKind::KernelDispatch, |b| match b {
        Batch::KernelDispatch(v) => Some(v),
        _ => None,
    });
    for (stream, d) in &dispatches {
        let pid = processes[usize::from(*stream)].pid;
        let kernel = (d.dispatch_id - 1) % 2 + 1;
        assert_eq!(d.pid, pid);
        assert_eq!(d.kernel_id, kernel);
        assert_eq!(
            (d.grid_x, d.grid_y, d.grid_z),
            (65536 * kernel as u32, 2, 1)
        );
        assert_eq!((d.workgroup_x, d.workgroup_y, d.workgroup_z), (256, 1, 1));
        assert_eq!(d.correlation_id, d.dispatch_id);
        assert_eq!(d.external_id, (d.dispatch_id - 1) / 4);
        assert_eq!((d.queue, d.agent), (0x5a00, 1));
        assert_eq!(
            (d.lds_bytes, d.scratch_bytes),
            (1024 * kernel as u32, 16 * (kernel as u32 - 1))
        );
        assert_eq!(d.vgpr_count, 32 + 8 * (kernel as u32 - 1));
        let worker = (d.dispatch_id - 1) % 3 == 0;
        assert_eq!(
            d.tid,
            if worker {
                rocprofv3_db::worker_tid(pid)
            } else {
                pid
            }
        );
        assert_eq!(d.end_ns - d.start_ns, 2000 * kernel);
        let stream = rocprofv3_db::worker_stream(d.tid, pid) as u64;
        assert_eq!(d.stream_id(), Some(stream));
    }
    let copies = read.all(RecordKind::MemoryCopy, |b| match b {
        Batch::MemoryCopy(v) => Some(v),
        _ => None,
    });
    assert!(copies.iter().all(|(_, c)| c.stream_id() == Some(0)));

    // API calls, in their `_EXT` domain, with their arguments by correlation id.
    let launch = Domain::HipRuntimeApiExt
        .operations()
        .iter()
        .find(|(_, n)| *n == "hipLaunchKernel")
        .unwrap()
        .0;
    let calls = read.all(RecordKind::Api, |b| match b {
        Batch::Api(v) => Some(v),
        _ => None,
    });
    for (stream, call) in &calls {
        assert_eq!(call.domain_id, Domain::HipRuntimeApiExt.sdk_value() as u8);
        assert_eq!(call.operation_id, launch);
        assert_eq!(call.end_ns - call.start_ns, 500);
        let meta = read.catalog.stream(*stream);
        let args = read
            .args
            .iter()
            .filter(|(s, _)| s == stream)
            .find_map(|(_, a)| a.of(call.correlation_id))
            .expect("the call's arguments");
        let args: Vec<(u8, &str, &str, String)> = args
            .iter()
            .map(|a| {
                let value = a.value.text(|s| meta.string(s)).into_owned();
                (
                    a.position,
                    meta.string(a.type_name),
                    meta.string(a.name),
                    value,
                )
            })
            .collect();
        let shared = (64 * (call.correlation_id - 1)).to_string();
        assert_eq!(
            args,
            [
                (
                    0,
                    "void const*",
                    "function_address",
                    "0x7f0000001000".to_owned()
                ),
                (1, "dim3", "numBlocks", "{256, 1, 1}".to_owned()),
                (2, "unsigned long", "sharedMemBytes", shared),
            ]
        );
    }

    // Markers: ranges with their messages, and a mark (an instant).
    let marks = read.all(RecordKind::Marker, |b| match b {
        Batch::Marker(v) => Some(v),
        _ => None,
    });
    let ops = Domain::MarkerCoreRangeApi;
    let mut seen: Vec<(String, &str, u64)> = marks
        .iter()
        .filter(|(s, _)| *s == 0)
        .map(|(s, m)| {
            let message = read.catalog.stream(*s).string(m.message).to_owned();
            (
                message,
                ops.operation_name(m.operation_id).unwrap(),
                m.end_ns - m.start_ns,
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("checkpoint".to_owned(), "roctxMarkA", 0),
            ("step 0".to_owned(), "roctxThreadRangeA", 5000),
            ("step 1".to_owned(), "roctxThreadRangeA", 5000),
        ]
    );

    let copies = read.all(RecordKind::MemoryCopy, |b| match b {
        Batch::MemoryCopy(v) => Some(v),
        _ => None,
    });
    for (_, c) in &copies {
        let op = Domain::MemoryCopy.operation_name(c.operation_id.into());
        assert_eq!(op, Some("HOST_TO_DEVICE"));
        assert_eq!((c.src_agent, c.dst_agent), (0, 1));
        assert_eq!(c.bytes, 4096 * c.correlation_id);
        // rocprofv3 stores the SDK record's addresses: the copy's host side among them.
        assert_eq!(
            (c.dst_address, c.src_address),
            (0x7f00_0000_0000, 0x7e00_0000_0000)
        );
    }
    let allocations = read.all(RecordKind::MemoryAllocation, |b| match b {
        Batch::MemoryAllocation(v) => Some(v),
        _ => None,
    });
    let ops: Vec<(&str, u64)> = (allocations.iter())
        .filter(|(s, _)| *s == 0)
        .map(|(_, a)| {
            let op = Domain::MemoryAllocation.operation_name(a.operation_id.into());
            (op.unwrap(), a.bytes)
        })
        .collect();
    assert_eq!(ops, [("ALLOCATE", 1 << 20), ("FREE", 0)]);
    let scratch = read.all(RecordKind::ScratchMemory, |b| match b {
        Batch::ScratchMemory(v) => Some(v),
        _ => None,
    });
    let op = Domain::ScratchMemory.operation_name(scratch[0].1.operation_id.into());
    assert_eq!((op, scratch[0].1.bytes), (Some("ALLOC"), 1 << 16));

    // Counter values at their dispatch, named by their definitions.
    let samples = read.all(RecordKind::CounterSample, |b| match b {
        Batch::CounterSample(v) => Some(v),
        _ => None,
    });
    for (stream, s) in &samples {
        let meta = read.catalog.stream(*stream);
        let d = (dispatches.iter())
            .find(|(ds, d)| ds == stream && d.dispatch_id == s.dispatch_id)
            .unwrap();
        assert_eq!(
            (s.kernel_id, s.agent, s.timestamp_ns),
            (d.1.kernel_id, 1, d.1.end_ns)
        );
        let factor = match meta.counter_name(s.counter_id) {
            "SQ_WAVES" => 1.5,
            "SQ_INSTS_VALU" => 2.5,
            other => panic!("counter {other}"),
        };
        assert_eq!(s.value, s.dispatch_id as f64 * factor);
    }
}

/// `rocflow inspect --json` of `args`, as JSON.
fn inspect(args: &[&str], dir: &Path) -> serde_json::Value {
    let mut all = vec!["inspect", "--json"];
    all.extend_from_slice(args);
    let out = rocflow(&all, dir, &[]);
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn databases_are_named_as_files_directories_or_globs() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let all = inspect(&["."], dir.path());
    assert_eq!(all["records"]["kernel_dispatch"], 13);
    assert_eq!(all["processes"].as_array().unwrap().len(), 2);
    let files = inspect(
        &["node-a/4242_results.db", "node-b/5353_results.db"],
        dir.path(),
    );
    assert_eq!(files["records"], all["records"]);
    // Named twice, read once.
    let twice = inspect(&["node-a", "node-a/4242_results.db", "node-b"], dir.path());
    assert_eq!(twice["records"], all["records"]);
    let glob = inspect(&["node-a/*.db"], dir.path());
    assert_eq!(glob["records"]["kernel_dispatch"], 8);
    assert_eq!(glob["processes"][0]["pid"], 4242);
}

#[test]
fn every_shipped_template_replays_a_rocprofv3_database() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let shipped = support::repo().join("pipelines");
    let mut templates: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    templates.sort();
    assert!(templates.contains(&"trace-all".to_owned()));
    for template in &templates {
        let out_dir = format!("output_dir=out-{template}");
        let out = rocflow(
            &["replay", "node-a", "node-b", template, "--set", &out_dir],
            dir.path(),
            &[],
        );
        assert_success(&out);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("from 2 rocpd databases"),
            "{template}: {stdout}"
        );
        // Post-steps read the databases again, as the sinks did.
        let stderr = support::messages(&out.stderr);
        assert!(!stderr.contains("post-step"), "{template}: {stderr}");
    }
    // Without a pipeline: trace-all, said so.
    let out = rocflow(&["replay", "node-a/4242_results.db"], dir.path(), &[]);
    assert_success(&out);
    assert_says(&out.stderr, "trace-all");
    assert_says(&out.stdout, "replayed 34 records");
}

#[test]
fn kinds_a_pipeline_collects_that_the_databases_lack_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let out = rocflow(&["replay", ".", "pc-sampling"], dir.path(), &[]);
    assert_success(&out);
    assert_says(&out.stderr, "warning");
    assert_says(&out.stderr, "pc_sample");
}

#[test]
fn a_database_that_is_not_rocpd_is_named_with_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE rocpd_string (id INTEGER, string TEXT);")
        .unwrap();
    drop(conn);
    let out = rocflow(&["inspect", "other.db"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says(&out.stderr, "other.db");
    assert_says(&out.stderr, "not a rocpd database");
    assert_says(&out.stderr, "rocpd_kernel_dispatch");
    assert_says(&out.stderr, "rocpd_region");
}

#[test]
fn what_a_newer_schema_adds_is_ignored_with_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    rocprofv3_db::write(&path, 77, "node-n", 4);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let suffix = "_0191a2b3_c4d5_7e6f_8a9b_00000000004d";
    conn.execute_batch(&format!(
        "ALTER TABLE rocpd_region{suffix} ADD COLUMN energy REAL; \
         CREATE TABLE rocpd_info_power{suffix} (id INTEGER PRIMARY KEY, watts REAL); \
         INSERT INTO rocpd_string{suffix} (id, string) VALUES (1000, 'FUTURE_API'), (1001, 'futureCall'); \
         INSERT INTO rocpd_event{suffix} (id, category_id, stack_id) VALUES (1000, 1000, 5000); \
         INSERT INTO rocpd_region{suffix} (nid, pid, tid, start, \"end\", name_id, event_id) \
             VALUES (1, 77, 77, 100, 200, 1001, 1000);"
    ))
    .unwrap();
    drop(conn);
    let out = rocflow(&["inspect", "--json", "new.db"], dir.path(), &[]);
    assert_success(&out);
    let stderr = text(&out.stderr);
    // A host event of a domain this rocflow does not know is left out, and said so.
    assert_says(&out.stderr, "1 of `FUTURE_API`");
    assert_eq!(stderr.matches("does not know").count(), 1, "{stderr}");
    assert_says(&out.stderr, "rocpd_region.energy");
    assert_says(&out.stderr, "rocpd_info_power");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["records"]["kernel_dispatch"], 4);
}

/// A generated run of every kind the generator makes, replayed into rocflow's own rocpd
/// sink and a CSV sink: the databases read back give the same rows (ids aside), the same
/// summary, and no difference to `diff`.
#[test]
fn a_spool_and_its_rocpd_databases_give_the_same_rows_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = |sinks: &str| {
        format!(
            r#"
[pipeline]
name = "rt"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"]
pc_sampling.method = "host_trap"
{sinks}"#
        )
    };
    let parquet_sink =
        |dir: &str| format!("[[sink]]\nname = \"tables\"\nkind = \"parquet\"\npath = \"{dir}\"\n");
    let db_sink = "[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"db/{pid}.db\"\n";
    let write = pipeline(&format!("{}{db_sink}", parquet_sink("from-spool")));
    // Enough records that a process's regions (its API calls and markers, with messages)
    // and counter values span more than one of the pieces a table is read in.
    let args = ["--records", "160000", "--processes", "2"];
    support::generate(d, "write.toml", &write, &args);
    std::fs::write(d.join("read.toml"), pipeline(&parquet_sink("from-db"))).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "write.toml"], d, &[]));
    let out = rocflow(&["replay", "db", "read.toml"], d, &[]);
    assert_success(&out);
    assert_eq!(support::messages(&out.stderr), "", "no warning");

    // Ids (of queues, code objects, counters) are the run's, as rows' ids are. Lost are a
    // counter value's coordinates, which rocpd has no column for (its values are told
    // apart by row), and a dispatch's register counts, which rocpd keeps per kernel symbol
    // (the generator varies them per dispatch).
    let lost: &[(&str, &[&str])] = &[
        ("kernel_dispatch", &["vgpr_count", "sgpr_count"]),
        ("counter_sample", &COORDINATES),
    ];
    let kinds: Vec<&str> = ["kernel_dispatch", "api", "memory_copy", "marker"]
        .into_iter()
        .chain(["counter_sample", "pc_sample"])
        .collect();
    same_parquet_rows(d, "from-spool", "from-db", &kinds, lost);

    let summary = |input: &str| {
        let out = rocflow(
            &[
                "summary",
                input,
                "--format",
                "json",
                "--by",
                "process,agent",
            ],
            d,
            &[],
        );
        assert_success(&out);
        text(&out.stdout)
    };
    assert_eq!(summary("run.rfraw"), summary("db"));
    let out = rocflow(
        &[
            "diff",
            "run.rfraw",
            "db",
            "--fail-if",
            "worst_kernel_ratio > 1.000001 || worst_counter_ratio > 1.000001 || api_time_ratio > 1.000001 || api_time_ratio < 0.999999 || kernels_added > 0 || kernels_removed > 0",
        ],
        d,
        &[],
    );
    assert_success(&out);
}

/// The records of every CSV file under `dir`, as (kind, start, end): the oracle of the
/// window tests, from a replay without a window.
fn spans(dir: &Path) -> Vec<(String, u64, u64, String)> {
    let mut spans = Vec::new();
    for pid in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(pid.unwrap().path()).unwrap() {
            let file = file.unwrap().path();
            let kind = file.file_stem().unwrap().to_string_lossy().into_owned();
            for row in csv(&file) {
                let number = |c: &str| row.get(c).map(|v| v.parse::<u64>().unwrap());
                let start = number("start_ns").or(number("timestamp_ns")).unwrap();
                let end = number("end_ns").unwrap_or(start);
                let message = row.get("message").cloned().unwrap_or_default();
                spans.push((kind.clone(), start, end, message));
            }
        }
    }
    spans
}

/// Records per kind that `keep` keeps.
fn counted(
    spans: &[(String, u64, u64, String)],
    keep: impl Fn(u64, u64) -> bool,
) -> serde_json::Value {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for (kind, start, end, _) in spans {
        if keep(*start, *end) {
            *counts.entry(kind).or_default() += 1;
        }
    }
    serde_json::to_value(counts).unwrap()
}

#[test]
fn a_time_window_applies_to_spools_and_databases_alike() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_success(&rocflow(
        &[
            "generate",
            "run.rfraw",
            "--records",
            "4000",
            "--processes",
            "2",
        ],
        d,
        &[],
    ));
    let pipeline = r#"
[pipeline]
name = "all"
[[context]]
name = "all"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]
counters.collect = ["SQ_WAVES"]
pc_sampling.method = "host_trap"
[[sink]]
name = "csv"
kind = "csv"
path = "csv/{pid}"
[[sink]]
name = "db"
kind = "rocpd"
path = "db/{pid}.db"
"#;
    std::fs::write(d.join("all.toml"), pipeline).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "all.toml"], d, &[]));
    let spans = spans(&d.join("csv"));
    let first = spans.iter().map(|s| s.1).min().unwrap();
    let last = spans.iter().map(|s| s.2).max().unwrap();
    let at = |share: f64| first + ((last - first) as f64 * share).round() as u64;
    let (from, to) = (at(0.25), at(0.75));

    let records = |args: &[&str]| inspect(args, d)["records"].clone();
    let inside = counted(&spans, |s, e| s >= from && e <= to);
    let partly = counted(&spans, |s, e| s <= to && e >= from);
    assert_ne!(inside, partly, "some records cross the window's edges");
    for input in ["run.rfraw", "db"] {
        assert_eq!(
            records(&[input, "--start", "25%", "--end", "75%"]),
            inside,
            "{input}"
        );
        let (from, to) = (from.to_string(), to.to_string());
        let ns = records(&[input, "--start", &from, "--end", &to, "--inclusive"]);
        assert_eq!(ns, partly, "{input}");
    }

    // The first range of a marker message bounds the window.
    let (_, start, end, _) = (spans.iter())
        .filter(|s| s.0 == "marker" && s.3 == "step 3" && s.2 > s.1)
        .min_by_key(|s| s.1)
        .unwrap()
        .clone();
    let within = counted(&spans, |s, e| s >= start && e <= end);
    assert_eq!(records(&["db", "--window-marker", "step 3"]), within);
    assert_eq!(records(&["run.rfraw", "--window-marker", "step 3"]), within);

    // Every command takes it: the summaries of a window agree between spool and databases.
    let summary = |input: &str| {
        let out = rocflow(
            &[
                "summary", input, "--format", "json", "--start", "10%", "--end", "60%",
            ],
            d,
            &[],
        );
        assert_success(&out);
        text(&out.stdout)
    };
    assert_eq!(summary("run.rfraw"), summary("db"));
    // A replay's post-steps see the window its sinks saw: the databases' summary of it, as
    // they are before the replay writes its own (windowed) databases over them.
    let printed: serde_json::Value = serde_json::from_str(&summary("db")).unwrap();
    let steps = "[[post]]\nname = \"summary\"\nkind = \"summary\"\npath = \"steps\"\nformats = [\"json\"]\n";
    std::fs::write(d.join("steps.toml"), format!("{pipeline}{steps}")).unwrap();
    let args = [
        "replay",
        "db",
        "steps.toml",
        "--start",
        "10%",
        "--end",
        "60%",
    ];
    assert_success(&rocflow(&args, d, &[]));
    let written = std::fs::read_to_string(d.join("steps/summary.json")).unwrap();
    let written: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(written, printed);
    assert_ne!(summary("run.rfraw"), {
        let out = rocflow(&["summary", "run.rfraw", "--format", "json"], d, &[]);
        text(&out.stdout)
    });
    let out = rocflow(
        &["inspect", "db", "--window-marker", "no such range"],
        d,
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no marker range named `no such range`"));
}

/// A live run's marker records carry no message (the SDK buffers none; the tool takes it
/// from the marker API's callbacks and sends it ahead of them): a window on a ROCTx range
/// finds it in the run's spool as in its database, and holds one iteration of the
/// scenario's one thread, no more, no less.
#[test]
fn a_marker_window_finds_the_ranges_of_a_live_run_in_its_spool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one_thread = [("threads", 1), ("iterations", 20)];
    let (scenario, _) = scenario_with(d, "one-thread.toml", &one_thread);
    let (iteration, _) = scenario_with(d, "once.toml", &[("threads", 1), ("iterations", 1)]);
    let pipeline = concat!(
        support::traced_pipeline!(
            "ranges",
            "trace",
            r#"["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy", "memory_allocation", "marker_core_range_api"]"#
        ),
        support::sink!("db", "rocpd", "db/run.db"),
    );
    std::fs::write(d.join("p.toml"), pipeline).unwrap();
    let args = [
        "run",
        "p.toml",
        "--device",
        "sim:one-thread.toml",
        "--spool",
        "run.rfraw",
    ];
    assert_success(&rocflow(
        &[&args[..], &["--", "/bin/sleep", "0"]].concat(),
        d,
        &[],
    ));
    let name = scenario["scenario"]["marker_message"].as_str().unwrap();
    let within = serde_json::to_value(expected(&iteration)).unwrap();
    assert_eq!(
        inspect(&["run.rfraw"], d)["records"],
        serde_json::to_value(expected(&scenario)).unwrap()
    );
    for input in ["run.rfraw", "db"] {
        let records = inspect(&[input, "--window-marker", name], d)["records"].clone();
        assert_eq!(records, within, "{input}");
    }
    let summary = |input: &str| {
        let args = [
            "summary",
            input,
            "--format",
            "json",
            "--window-marker",
            name,
        ];
        let out = rocflow(&args, d, &[]);
        assert_success(&out);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(summary("run.rfraw"), summary("db"));
}

/// A spool with records of every kind, their metadata and API arguments, as the runner
/// would write it.
fn every_kind_spool(path: &Path) {
    use rocflow::record::{
        Agent, ApiCall, Arg, ArgValue, CodeObject, CounterInfo, CounterSample, DeviceCounterSample,
        GraphLaunch, HipEventBarrier, HipStream, KernelDispatch, KernelSymbol, KfdEvent, Marker,
        MemoryAllocation, MemoryCopy, Meta, PcSample, Process, RuntimeInitialization,
        ScratchMemory, SpmSample, Sym, Thread,
    };
    let (pid, tid) = (900, 901);
    let agent = |index, agent_type, name: &str| Agent {
        index,
        handle: 0x100 + u64::from(index),
        agent_type,
        node_id: index,
        logical_node_id: index,
        name: name.into(),
        product_name: format!("{name} product"),
        cu_count: 8,
        simd_count: 32,
        xcc_count: 1,
        wave_front_size: 64,
        max_waves_per_simd: 8,
        lds_bytes_per_cu: 65536,
        max_engine_clk_mhz: 2000,
    };
    let meta = vec![
        Meta::Strings {
            first: 0,
            values: [
                "",
                "phase one",
                "size",
                "size_t",
                "stream",
                "hipStream_t*",
                "a mark",
            ]
            .map(str::to_owned)
            .to_vec(),
        },
        Meta::Process(Process {
            pid,
            ppid: 1,
            hostname: "host-x".into(),
            command: vec!["./every".into(), "--kind".into()],
            start_ns: 1_000,
            rank: Some(3),
            world_size: None,
            rank_variable: None,
            start_unix_ns: None,
            kernel_start: None,
        }),
        Meta::Agent(agent(0, AgentType::Cpu, "cpu")),
        Meta::Agent(agent(1, AgentType::Gpu, "gfx90a")),
        Meta::Thread(Thread {
            pid,
            tid,
            name: Some("worker".into()),
        }),
        Meta::CodeObject(CodeObject {
            id: 5,
            agent: 1,
            uri: "file:///every.hsaco".into(),
            load_base: 0x1000,
            load_size: 0x2000,
        }),
        Meta::KernelSymbol(KernelSymbol {
            kernel_id: 9,
            code_object_id: 5,
            name: "_Z5saxpyfPfS_".into(),
            lds_bytes: 512,
            scratch_bytes: 64,
            arch_vgpr_count: 12,
            sgpr_count: 20,
            kernarg_bytes: 24,
        }),
        Meta::Counter(CounterInfo {
            id: 3,
            agent: 1,
            name: "SQ_WAVES".into(),
            description: "waves".into(),
            dimensions: vec![],
        }),
    ];
    let op = |domain: Domain, name: &str| {
        domain
            .operations()
            .iter()
            .find(|(_, n)| *n == name)
            .unwrap()
            .0
    };
    let base = |n: u64| 10_000 + 1_000 * n;
    let mut args = ApiArgs::default();
    args.begin(11);
    args.push(Arg {
        position: 0,
        name: Sym(4),
        type_name: Sym(5),
        value: ArgValue::Address(0x7f00),
    });
    args.push(Arg {
        position: 1,
        name: Sym(2),
        type_name: Sym(3),
        value: ArgValue::Int(4096),
    });
    let batches = vec![
        Batch::KernelDispatch(vec![KernelDispatch {
            pid,
            tid,
            agent: 1,
            queue: 0,
            dispatch_id: 1,
            kernel_id: 9,
            start_ns: base(1),
            end_ns: base(2),
            correlation_id: 11,
            external_id: 2,
            grid_x: 1024,
            grid_y: 4,
            grid_z: 1,
            workgroup_x: 64,
            workgroup_y: 2,
            workgroup_z: 1,
            lds_bytes: 512,
            scratch_bytes: 64,
            vgpr_count: 12,
            sgpr_count: 20,
            graph_exec_id: 3,
            graph_node_id: 1,
            // The process's second stream: rocpd_info_stream keeps its SDK id.
            hip_stream: rocflow_core::record::hip_stream::stored(Some(2)),
        }]),
        Batch::MemoryCopy(vec![MemoryCopy {
            pid,
            tid,
            src_agent: 1,
            dst_agent: 0,
            start_ns: base(2),
            end_ns: base(3),
            correlation_id: 12,
            external_id: 0,
            bytes: 1 << 20,
            operation_id: op(Domain::MemoryCopy, "DEVICE_TO_HOST") as u8,
            graph_exec_id: 3,
            graph_node_id: 2,
            dst_address: 0x7e00_0040_0000,
            src_address: 0x7f00_0010_0000,
            hip_stream: rocflow_core::record::hip_stream::stored(Some(0)),
        }]),
        Batch::MemoryAllocation(vec![
            MemoryAllocation {
                pid,
                tid,
                agent: 1,
                start_ns: base(3),
                end_ns: base(3) + 50,
                correlation_id: 13,
                external_id: 0,
                address: 0xbeef000,
                bytes: 4096,
                operation_id: op(Domain::MemoryAllocation, "ALLOCATE") as u8,
            },
            MemoryAllocation {
                pid,
                tid,
                agent: 1,
                start_ns: base(4),
                end_ns: base(4) + 50,
                correlation_id: 14,
                external_id: 0,
                address: 0xbeef000,
                bytes: 0,
                operation_id: op(Domain::MemoryAllocation, "FREE") as u8,
            },
        ]),
        Batch::ScratchMemory(vec![ScratchMemory {
            pid,
            tid,
            agent: 1,
            queue: 0,
            start_ns: base(5),
            end_ns: base(5) + 70,
            correlation_id: 15,
            external_id: 0,
            bytes: 1 << 16,
            flags: 1,
            operation_id: op(Domain::ScratchMemory, "ALLOC") as u8,
        }]),
        Batch::Api(vec![ApiCall {
            pid,
            tid,
            start_ns: base(0),
            end_ns: base(1),
            correlation_id: 11,
            external_id: 2,
            domain_id: Domain::HipRuntimeApiExt.sdk_value() as u8,
            operation_id: op(Domain::HipRuntimeApiExt, "hipMalloc"),
        }]),
        Batch::Marker(vec![
            Marker {
                pid,
                tid,
                start_ns: base(0),
                end_ns: base(6),
                correlation_id: 16,
                external_id: 0,
                domain_id: Domain::MarkerCoreApi.sdk_value() as u8,
                operation_id: op(Domain::MarkerCoreApi, "roctxRangePushA"),
                message: Sym(1),
            },
            Marker {
                pid,
                tid,
                start_ns: base(6),
                end_ns: base(6),
                correlation_id: 17,
                external_id: 0,
                domain_id: Domain::MarkerCoreApi.sdk_value() as u8,
                operation_id: op(Domain::MarkerCoreApi, "roctxMarkA"),
                message: Sym(6),
            },
        ]),
        Batch::CounterSample(vec![CounterSample {
            pid,
            agent: 1,
            dispatch_id: 1,
            kernel_id: 9,
            timestamp_ns: base(2),
            counter_id: 3,
            value: 640.0,
            ..Default::default()
        }]),
        Batch::DeviceCounterSample(vec![DeviceCounterSample {
            pid,
            agent: 1,
            timestamp_ns: base(3),
            counter_id: 3,
            xcc: 1,
            shader_engine: 2,
            value: 1234.5,
            ..Default::default()
        }]),
        Batch::PcSample(vec![PcSample {
            pid,
            agent: 1,
            timestamp_ns: base(1) + 10,
            dispatch_id: 1,
            correlation_id: 11,
            pc: 0x1040,
            code_object_id: 5,
            code_object_offset: 0x40,
            exec_mask: 0xffff,
            wave_id: 3,
            hw_id: 77,
            chiplet: 0,
            method: 2,
            instruction_type: 0,
            stall_reason: 0,
        }]),
        Batch::KfdEvent(vec![KfdEvent {
            pid,
            agent: 1,
            timestamp_ns: base(7),
            address: 0xdead000,
            domain_id: Domain::KfdEventPageFault.sdk_value() as u8,
            operation_id: 0,
        }]),
        Batch::HipStream(vec![HipStream {
            pid,
            tid,
            start_ns: base(7),
            end_ns: base(7) + 20,
            correlation_id: 18,
            external_id: 0,
            stream: 0x5000,
            operation_id: op(Domain::HipStream, "CREATE") as u8,
        }]),
        Batch::RuntimeInitialization(vec![RuntimeInitialization {
            pid,
            tid,
            start_ns: base(8),
            end_ns: base(8) + 30,
            correlation_id: 19,
            external_id: 0,
            version: 60400,
            operation_id: op(Domain::RuntimeInitialization, "HIP") as u8,
        }]),
        Batch::GraphLaunch(vec![GraphLaunch {
            pid,
            tid,
            agent: 1,
            queue: 0,
            start_ns: base(9),
            end_ns: base(9) + 40,
            correlation_id: 20,
            external_id: 0,
            graph_exec_id: 3,
            dispatch_count: 2,
        }]),
        Batch::HipEventBarrier(vec![HipEventBarrier {
            pid,
            tid,
            agent: 1,
            queue: 0x5a00,
            source_queue: 0x5a08,
            start_ns: base(9) + 50,
            end_ns: base(9) + 60,
            correlation_id: 21,
            external_id: 0,
            event: 0xe001,
            operation_id: op(Domain::HipEvent, "WAIT"),
        }]),
        Batch::SpmSample(vec![SpmSample {
            pid,
            agent: 1,
            dispatch_id: 1,
            kernel_id: 9,
            correlation_id: 11,
            timestamp_ns: base(1) + 20,
            counter_id: 3,
            xcc: 1,
            shader_engine: 2,
            instance: 3,
            value: 77.0,
        }]),
    ];
    assert_eq!(batches.len(), RecordKind::ALL.len());
    let mut frames = Vec::new();
    rocflow::wire::encode_meta(0, &meta, &mut frames);
    for batch in &batches {
        if batch.kind() == RecordKind::Api {
            rocflow::wire::encode_args(0, &args, &mut frames);
        }
        rocflow::wire::encode_records(0, batch, &mut frames);
    }
    let mut spool = rocflow::spool::SpoolWriter::create(path).unwrap();
    spool.write(&frames).unwrap();
    spool.finish().unwrap();
}

/// Every kind through rocflow's rocpd sink and back: the same rows but for what rocpd has
/// no column for, each named here with why.
#[test]
fn every_kind_survives_the_rocpd_sink_and_source_but_what_rocpd_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    every_kind_spool(&d.join("run.rfraw"));
    let kinds: Vec<String> = RecordKind::names().map(|n| format!("\"{n}\"")).collect();
    let pipeline = |sinks: &str| {
        format!(
            "[pipeline]\nname = \"every\"\n[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n{sinks}"
        )
    };
    let parquet_sink = |dir: &str| {
        format!(
            "[[sink]]\nname = \"tables\"\nkind = \"parquet\"\npath = \"{dir}\"\nrecords = [{}]\n",
            kinds.join(", ")
        )
    };
    let db_sink = format!(
        "[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"db/run.db\"\nrecords = [{}]\n",
        kinds.join(", ")
    );
    std::fs::write(
        d.join("write.toml"),
        pipeline(&format!("{}{db_sink}", parquet_sink("a"))),
    )
    .unwrap();
    std::fs::write(d.join("read.toml"), pipeline(&parquet_sink("b"))).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "write.toml"], d, &[]));
    assert_success(&rocflow(&["replay", "db/run.db", "read.toml"], d, &[]));

    // What rocpd has no place for: the writer's row ids; an instant's operation (a sample
    // names only its track's category); a free's agent; a KFD event's agent and address;
    // a HIP stream's handle; a runtime's version.
    let lost: &[(&str, &[&str])] = &[
        ("kernel_dispatch", &["queue"]),
        ("pc_sample", &["code_object_id"]),
        ("counter_sample", &["counter_id"]),
        ("device_counter_sample", &["counter_id"]),
        ("marker", &[]),
        ("memory_allocation", &["agent"]),
        ("scratch_memory", &["queue"]),
        (
            "kfd_event",
            &["agent", "address", "operation_id", "operation"],
        ),
        ("hip_stream", &["stream"]),
        ("runtime_initialization", &["version"]),
        ("hip_event_barrier", &["queue", "source_queue"]),
    ];
    let kinds: Vec<&str> = RecordKind::names().collect();
    same_parquet_rows(d, "a", "b", &kinds, lost);
    let summary =
        |input: &str| text(&rocflow(&["summary", input, "--format", "json"], d, &[]).stdout);
    assert_eq!(summary("run.rfraw"), summary("db/run.db"));
}

/// A database is untrusted: a "table" that is a view of the file's own making is not
/// read through (its SQL would run), so the database lacks that table.
#[test]
fn a_table_that_is_a_view_is_not_read_through() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trick.db");
    rocprofv3_db::write(&path, 61, "node-t", 2);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let table = "rocpd_kernel_dispatch_0191a2b3_c4d5_7e6f_8a9b_00000000003d";
    conn.execute_batch(&format!(
        "DROP TABLE {table}; CREATE VIEW {table} AS \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i AS id FROM n;"
    ))
    .unwrap();
    drop(conn);
    let out = support::rocflow_bounded(&["inspect", "trick.db"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_says(&out.stderr, "rocpd_kernel_dispatch");
}

/// More databases than reader threads, each read whole into its own streams, numbered in
/// the order they were named, whatever order their readers finish in.
#[test]
fn many_databases_are_streams_in_the_order_named() {
    let dir = tempfile::tempdir().unwrap();
    let ranks: Vec<(u32, u64)> = (0..24)
        .map(|r| (1000 + r, 1 + u64::from(r % 5) * 3))
        .collect();
    let paths: Vec<PathBuf> = ranks
        .iter()
        .map(|&(pid, dispatches)| {
            let path = dir.path().join(format!("rank-{pid}.db"));
            rocprofv3_db::write(&path, pid, "node-m", dispatches);
            path
        })
        .collect();
    let read = Read::of(&paths);
    let pids: Vec<u32> = (read.catalog.streams())
        .map(|(_, m)| m.process.as_ref().unwrap().pid)
        .collect();
    assert_eq!(pids, ranks.iter().map(|r| r.0).collect::<Vec<_>>());
    let dispatches = read.all(RecordKind::KernelDispatch, |b| match b {
        Batch::KernelDispatch(v) => Some(v),
        _ => None,
    });
    for (stream, &(pid, count)) in ranks.iter().enumerate() {
        let mine: Vec<_> = dispatches
            .iter()
            .filter(|(s, _)| usize::from(*s) == stream)
            .collect();
        assert_eq!(mine.len() as u64, count, "rank {pid}");
        assert!(mine.iter().all(|(_, d)| d.pid == pid));
    }
    // Databases are read at once, their streams interleaving, the same way every time.
    assert_eq!(Read::of(&paths).order, read.order);
}

/// rocprofv3 names tables with the database's UUID only when it has one; plain names
/// read the same.
#[test]
fn tables_without_a_suffix_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.db");
    rocprofv3_db::write(&path, 88, "node-p", 6);
    let before = inspect(&["plain.db"], dir.path());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let names = |kind: &str| -> Vec<String> {
        let sql = format!("SELECT name FROM sqlite_master WHERE type = '{kind}'");
        let mut statement = conn.prepare(&sql).unwrap();
        statement
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    for view in names("view") {
        conn.execute_batch(&format!("DROP VIEW \"{view}\""))
            .unwrap();
    }
    let suffix = "_0191a2b3_c4d5_7e6f_8a9b_000000000058";
    for table in names("table").into_iter().filter(|t| t.ends_with(suffix)) {
        let plain = table.trim_end_matches(suffix);
        conn.execute_batch(&format!("ALTER TABLE \"{table}\" RENAME TO \"{plain}\""))
            .unwrap();
    }
    drop(conn);
    let after = inspect(&["plain.db"], dir.path());
    assert_eq!(after["records"], before["records"]);
    assert_eq!(after["records"]["kernel_dispatch"], 6);
    assert_eq!(after["processes"], before["processes"]);
}

/// Asserts that the Parquet datasets `a` and `b` under `dir` hold the same rows of each of
/// `kinds` (in any order), but for the columns `lost` names per kind; read by DuckDB.
fn same_parquet_rows(dir: &Path, a: &str, b: &str, kinds: &[&str], lost: &[(&str, &[&str])]) {
    let query = |root: &str, kind: &str| {
        let skip = lost
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(&[][..], |l| l.1);
        let exclude = match skip {
            [] => String::new(),
            columns => format!(" EXCLUDE ({})", columns.join(", ")),
        };
        // As text: DuckDB's Python client gives timestamps to the microsecond only.
        format!("SELECT COLUMNS(*{exclude})::VARCHAR FROM '{root}/{kind}/*.parquet' ORDER BY ALL")
    };
    let queries: Vec<String> = (kinds.iter())
        .flat_map(|kind| [query(a, kind), query(b, kind)])
        .collect();
    let results = support::duckdb(dir, &queries.iter().map(String::as_str).collect::<Vec<_>>());
    for (kind, pair) in kinds.iter().zip(results.chunks(2)) {
        assert!(!pair[0].is_empty(), "{kind} has rows");
        assert_eq!(pair[0].len(), pair[1].len(), "{kind}");
        for (x, y) in pair[0].iter().zip(&pair[1]) {
            assert_eq!(x, y, "{kind}");
        }
    }
}

/// Cells of other types than their columns declare (SQLite keeps what it is given), out
/// of range or malformed read as the nearest value; the database still reads whole.
#[test]
fn cells_of_the_wrong_type_read_leniently() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.db");
    rocprofv3_db::write(&path, 99, "node-o", 4);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let s = "_0191a2b3_c4d5_7e6f_8a9b_000000000063";
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF; \
         UPDATE rocpd_kernel_dispatch{s} SET grid_size_x = 'many', workgroup_size_y = -7, \
             agent_id = X'00ff', start = 1.5e3 WHERE id = 1; \
         UPDATE rocpd_event{s} SET extdata = '{{\"message\": [1, 2' \
             WHERE id IN (SELECT event_id FROM rocpd_region{s}); \
         UPDATE rocpd_info_agent{s} SET extdata = '[]', name = NULL; \
         UPDATE rocpd_arg{s} SET position = 99999, value = NULL;"
    ))
    .unwrap();
    drop(conn);
    let read = Read::of(&[path]);
    assert_eq!(read.count(RecordKind::KernelDispatch), 4);
    assert_eq!(read.count(RecordKind::Api), 1);
    let dispatches = read.all(RecordKind::KernelDispatch, |b| match b {
        Batch::KernelDispatch(v) => Some(v),
        _ => None,
    });
    let first = &dispatches
        .iter()
        .find(|(_, d)| d.dispatch_id == 1)
        .unwrap()
        .1;
    assert_eq!(
        (first.grid_x, first.workgroup_y, first.start_ns),
        (0, 0, 1500)
    );
    // A marker whose message is not JSON has none.
    let markers = read.all(RecordKind::Marker, |b| match b {
        Batch::Marker(v) => Some(v),
        _ => None,
    });
    let meta = read.catalog.stream(0);
    assert!(
        markers
            .iter()
            .any(|(_, m)| meta.string(m.message).is_empty())
    );
    assert_eq!(meta.agents.len(), 2);
}

/// Row ids are the database's to choose: spread over the whole 64-bit range, the rows are
/// read all the same, and the range is not cut into a piece per 32 Ki ids.
#[test]
fn row_ids_spread_over_the_whole_range_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.db");
    rocprofv3_db::write(&path, 98, "node-s", 4);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let s = "_0191a2b3_c4d5_7e6f_8a9b_000000000062";
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF; \
         UPDATE rocpd_kernel_dispatch{s} SET id = -9223372036854775808 WHERE id = 1; \
         UPDATE rocpd_kernel_dispatch{s} SET id = 9223372036854775807 WHERE id = 2;"
    ))
    .unwrap();
    drop(conn);
    let read = Read::of(&[path]);
    assert_eq!(read.count(RecordKind::KernelDispatch), 4);
}

/// Ranks of two nodes may share a pid: merged, each node keeps its own rows, and
/// `--by node,process` tells them apart where `--by process` alone adds them up.
#[test]
fn databases_of_two_nodes_merge_with_each_node_apart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    rocprofv3_db::write(&d.join("a.db"), 4242, "node-a", 8);
    rocprofv3_db::write(&d.join("b.db"), 4242, "node-b", 4);
    let kernels = |by: &str| {
        let out = rocflow(
            &["summary", "a.db", "b.db", "--format", "json", "--by", by],
            d,
            &[],
        );
        assert_success(&out);
        let tables: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
        let mut calls: BTreeMap<String, u64> = BTreeMap::new();
        let rows = tables["kernels"].as_array();
        for row in rows.unwrap_or_else(|| panic!("{tables:#}")) {
            let key = match by {
                "node,process" => format!("{}/{}", row["node"].as_str().unwrap(), row["process"]),
                _ => row["process"].to_string(),
            };
            *calls.entry(key).or_default() += row["calls"].as_u64().unwrap();
        }
        calls
    };
    assert_eq!(
        kernels("node,process"),
        BTreeMap::from([
            ("node-a/\"4242\"".to_owned(), 8),
            ("node-b/\"4242\"".to_owned(), 4)
        ])
    );
    assert_eq!(
        kernels("process"),
        BTreeMap::from([("\"4242\"".to_owned(), 12)])
    );
}

/// The databases of two nodes replay into one hive-partitioned Parquet dataset
/// (`host=…/pid=…`) that DuckDB reads as one table, each node's rows under its host.
#[test]
fn databases_of_two_nodes_make_one_partitioned_parquet_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    rocprofv3_db::write(&d.join("a.db"), 4242, "node-a", 8);
    rocprofv3_db::write(&d.join("b.db"), 4242, "node-b", 4);
    std::fs::write(
        d.join("tables.toml"),
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n\n[[sink]]\nname = \"tables\"\nkind = \"parquet\"\npath = \"tables\"\noptions = { partition_by = [\"host\", \"process\"] }\n",
    )
    .unwrap();
    assert_success(&rocflow(&["replay", "a.db", "b.db", "tables.toml"], d, &[]));
    let rows = support::duckdb(
        d,
        &[
            "select host, pid, count(*) from read_parquet('tables/kernel_dispatch/**/*.parquet', hive_partitioning = true) group by all order by host",
        ],
    );
    assert_eq!(
        rows[0],
        [
            vec![
                serde_json::json!("node-a"),
                serde_json::json!(4242),
                serde_json::json!(8)
            ],
            vec![
                serde_json::json!("node-b"),
                serde_json::json!(4242),
                serde_json::json!(4)
            ],
        ]
    );
}
