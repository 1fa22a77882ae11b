//! rocpd databases as a source: databases built the way rocprofv3 fills them
//! (`support/rocprofv3_db.rs`, on AMD's own schema) read back kind by kind through the
//! library and through `rocflow inspect`, `replay`, `summary` and `diff`; and a run's
//! spool against its own rocpd database, written by rocflow's sink and read back.

#[path = "support/rocprofv3_db.rs"]
mod rocprofv3_db;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rocflow::catalog::Catalog;
use rocflow::record::{ApiArgs, Batch, RecordKind};
use rocflow::sdk::{AgentType, Domain};
use rocflow::source::{Rocpd, Source};
use rocflow::wire::Payload;
use support::{assert_success, csv, rocflow, text};

/// Everything a source gave: the catalog, the batches per kind and the arguments.
#[derive(Default)]
struct Read {
    catalog: Catalog,
    batches: BTreeMap<RecordKind, Vec<(u16, Batch)>>,
    args: Vec<(u16, ApiArgs)>,
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
                    read.batches
                        .entry(batch.kind())
                        .or_default()
                        .push((frame.stream, batch));
                }
                Payload::Args(args) => read.args.push((frame.stream, args)),
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
        assert_eq!(meta.queues.len(), 2);
        assert_eq!(meta.hip_streams[0].name.as_deref(), Some("Default Stream"));
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
    }

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
    let glob = inspect(&["node-a/*.db"], dir.path());
    assert_eq!(glob["records"]["kernel_dispatch"], 8);
    assert_eq!(glob["processes"][0]["pid"], 4242);
}

#[test]
fn every_shipped_template_replays_a_rocprofv3_database() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipelines");
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
    }
    // Without a pipeline: trace-all, said so.
    let out = rocflow(&["replay", "node-a/4242_results.db"], dir.path(), &[]);
    assert_success(&out);
    assert!(
        text(&out.stderr).contains("trace-all"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("replayed 34 records"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn kinds_a_pipeline_collects_that_the_databases_lack_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let out = rocflow(&["replay", ".", "pc-sampling"], dir.path(), &[]);
    assert_success(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("pc_sample"),
        "{stderr}"
    );
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
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("other.db") && stderr.contains("not a rocpd database"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rocpd_kernel_dispatch") && stderr.contains("rocpd_region"),
        "{stderr}"
    );
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
         CREATE TABLE rocpd_info_power{suffix} (id INTEGER PRIMARY KEY, watts REAL);"
    ))
    .unwrap();
    drop(conn);
    let out = rocflow(&["inspect", "--json", "new.db"], dir.path(), &[]);
    assert_success(&out);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("does not know").count(), 1, "{stderr}");
    assert!(
        stderr.contains("rocpd_region.energy") && stderr.contains("rocpd_info_power"),
        "{stderr}"
    );
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
    let out = rocflow(
        &[
            "generate",
            "run.rfraw",
            "--records",
            "5000",
            "--processes",
            "2",
        ],
        d,
        &[],
    );
    assert_success(&out);
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
    let csv_sink =
        |dir: &str| format!("[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"{dir}/{{pid}}\"\n");
    let db_sink = "[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"db/{pid}.db\"\n";
    std::fs::write(
        d.join("write.toml"),
        pipeline(&format!("{}{db_sink}", csv_sink("from-spool"))),
    )
    .unwrap();
    std::fs::write(d.join("read.toml"), pipeline(&csv_sink("from-db"))).unwrap();
    assert_success(&rocflow(&["replay", "run.rfraw", "write.toml"], d, &[]));
    let out = rocflow(&["replay", "db", "read.toml"], d, &[]);
    assert_success(&out);
    assert_eq!(text(&out.stderr), "", "no warning");

    // Columns that are row ids of the database, not the run's; a counter value's
    // coordinates, which rocpd has no column for (its values are told apart by row); and a
    // dispatch's register counts, which rocpd keeps per kernel symbol (the generator
    // varies them per dispatch).
    const IDS: &[&str] = &[
        "vgpr_count",
        "sgpr_count",
        "queue",
        "code_object_id",
        "counter_id",
        "xcc",
        "aid",
        "shader_engine",
        "agent_index",
        "shader_array",
        "wgp",
        "instance",
    ];
    let rows = |root: &str| -> BTreeMap<String, Vec<String>> {
        let mut all = BTreeMap::new();
        for pid in std::fs::read_dir(d.join(root)).unwrap() {
            let pid = pid.unwrap().path();
            for file in std::fs::read_dir(&pid).unwrap() {
                let file = file.unwrap().path();
                let key = format!(
                    "{}/{}",
                    pid.file_name().unwrap().to_string_lossy(),
                    file.file_name().unwrap().to_string_lossy()
                );
                let mut lines: Vec<String> = csv(&file)
                    .into_iter()
                    .map(|row| {
                        (row.into_iter())
                            .filter(|(c, _)| !IDS.contains(&c.as_str()))
                            .map(|(c, v)| format!("{c}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect();
                lines.sort();
                all.insert(key, lines);
            }
        }
        all
    };
    let (spool, db) = (rows("from-spool"), rows("from-db"));
    assert!(!spool.is_empty());
    assert_eq!(
        spool.keys().collect::<Vec<_>>(),
        db.keys().collect::<Vec<_>>()
    );
    for (file, lines) in &spool {
        assert!(!lines.is_empty(), "{file}");
        let other = &db[file];
        assert_eq!(lines.len(), other.len(), "{file}");
        for (a, b) in lines.iter().zip(other) {
            assert_eq!(a, b, "{file}");
        }
    }

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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
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
