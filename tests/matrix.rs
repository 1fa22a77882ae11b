//! The matrix: every output of a run held against the ground truth its simulated scenario
//! implies (`support::truth`), for the shipped templates alone, pairs of them combined with
//! `extends`, and the features that change what a run holds (multi-pass counters, counter
//! kernel filters, dispatch filters, kernel name forms, collection periods, marker and
//! time windows over a paced run, several processes, device counter reads, a device
//! thread trace), each from
//! three sources: the live
//! run, a replay of its spool and a replay of its rocpd database; into rocpd (and AMD's
//! `rocpd summary` of it) as one database and one per process, Parquet, Perfetto, OTF2, CSV in both flavours, the summary and
//! the report, and every row of its CSV tables too. A feature that changes records
//! joins as a row.
//!
//! CI checks every template and a fixed sample of the pairs; `ROCFLOW_MATRIX=full` checks
//! every pair (see the README).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocflow::diag::{Diagnostic, Severity, SourceFile};
use rocflow::pipeline;
use rocflow::plan::Plan;
use rocflow::sdk::Domain;
use support::peer::Peer;
use support::truth::series::{self, Sampled};
use support::truth::{self, Collects, KernelNames, Part, Scenario, Tally};
use support::{assert_success, entries, programs, repo, rocflow, rocflow_exe, sim_app, sim_sdk};

/// The shipped templates the matrix runs, with what each collects on the MI300X scenario.
fn templates() -> Vec<(&'static str, Collects)> {
    let dispatches = Collects {
        dispatches: true,
        ..Collects::default()
    };
    let sampled = Collects {
        dispatches: true,
        pc_samples: true,
        ..Collects::default()
    };
    let basic = [
        "SQ_WAVES",
        "SQ_INSTS_VALU",
        "SQ_INSTS_SALU",
        "GRBM_GUI_ACTIVE",
    ];
    let counters = |names: &[&'static str]| Collects {
        dispatches: true,
        counters: names.to_vec(),
        ratios: vec![("VALU_PER_WAVE", "SQ_INSTS_VALU", "SQ_WAVES")],
        summed: true,
        ..Collects::default()
    };
    let system = Collects {
        dispatches: true,
        copies: true,
        allocations: true,
        markers: true,
        api: [
            "hip_runtime_api",
            "hsa_core_api",
            "hsa_amd_ext_api",
            "rccl_api",
        ]
        .map(|d| (d, vec![], vec![]))
        .to_vec(),
        ..Collects::default()
    };
    vec![
        ("base", Collects::default()),
        ("kernel-trace", dispatches.clone()),
        ("always-on", dispatches.clone()),
        ("trace-all", system.clone()),
        ("csv", system),
        (
            "api-trace",
            Collects {
                api: [
                    "hip_runtime_api",
                    "hip_compiler_api",
                    "hsa_core_api",
                    "hsa_amd_ext_api",
                ]
                .map(|d| (d, vec![], vec![]))
                .to_vec(),
                ..Collects::default()
            },
        ),
        (
            "memory-trace",
            Collects {
                copies: true,
                allocations: true,
                api: vec![(
                    "hip_runtime_api",
                    vec![
                        "hipMemcpy*",
                        "hipMemset*",
                        "hipMalloc*",
                        "hipExtMalloc*",
                        "hipFree*",
                        "hipHostMalloc",
                        "hipHostAlloc",
                        "hipHostFree",
                        "hipHostRegister",
                        "hipHostUnregister",
                        "hipMemPrefetchAsync",
                        "hipMemAdvise",
                    ],
                    vec![],
                )],
                ..Collects::default()
            },
        ),
        (
            "marker-trace",
            Collects {
                dispatches: true,
                markers: true,
                ..Collects::default()
            },
        ),
        ("counters-basic", counters(&basic)),
        ("kernel-hotspots", counters(&basic)),
        (
            "counters-cdna",
            counters(&[
                "SQ_WAVES",
                "SQ_INSTS_VALU",
                "SQ_INSTS_SALU",
                "SQ_INSTS_VMEM_RD",
                "SQ_INSTS_VMEM_WR",
                "SQ_INSTS_LDS",
                "SQ_INSTS_MFMA",
                "TCC_HIT",
                "TCC_MISS",
                "GRBM_GUI_ACTIVE",
            ]),
        ),
        // It profiles Radeon GPUs only: on the MI300X it traces the dispatches.
        ("counters-rdna", dispatches.clone()),
        ("pc-sampling", sampled.clone()),
        ("pc-sampling-hotspots", sampled),
        (
            "device-counters",
            Collects {
                dispatches: true,
                device_counters: true,
                ..Collects::default()
            },
        ),
        (
            "spm",
            Collects {
                dispatches: true,
                spm: vec!["SQ_WAVES", "GRBM_GUI_ACTIVE"],
                ..Collects::default()
            },
        ),
        (
            "thread-trace",
            Collects {
                dispatches: true,
                thread_trace: true,
                ..Collects::default()
            },
        ),
    ]
}

/// One combination: the pipeline's templates and own lines, the application and its
/// processes, and what it collects.
struct Row {
    name: String,
    extends: Vec<&'static str>,
    extra: &'static str,
    collects: Collects,
    /// `sim-app fork N`: N children beside the parent; else one process.
    forks: u64,
    /// The scenario on one thread: each process dispatches in the same order every time,
    /// so that a later pass's counter values are known from the first pass's dispatches.
    one_thread: bool,
    /// The scenario's iterations paced over real time: how many, over how many ms.
    paced: Option<(u64, u64)>,
    /// How many of the (one-thread) scenario's iterations the run collects, where its
    /// contexts collect in periods.
    collected: Option<u64>,
    /// A window the replays keep, and how many of the (one-thread) scenario's iterations
    /// lie wholly inside it.
    window: Option<(Window, u64)>,
    /// Scenario tables added to the MI300X scenario's.
    scenario: &'static str,
    /// Lines added to the scenario's `[scenario]` table.
    settings: &'static str,
    /// A device thread trace the row's pipeline writes to `{output_dir}/att`: its
    /// shader-engine mask, and how many of the (one-thread) scenario's iterations it
    /// traces.
    device_trace: Option<(u64, u64)>,
    /// How the application runs and is profiled.
    launch: Launch,
    /// The scenario's iterations, where not the MI300X scenario's 100 (nor paced).
    iterations: Option<u64>,
    /// The threads the replays work on (`RAYON_NUM_THREADS`), where not the machine's.
    replay_threads: Option<&'static str>,
}

/// How a row's application runs and is profiled.
#[derive(Clone, Copy)]
enum Launch {
    /// `sim-app` under `rocflow run`.
    Run,
    /// The example session program (`examples/session/window.c`) on the simulated SDK: it
    /// starts the SDK late with a session on the row's pipeline, which profiles iterations
    /// 3 to 5 of the paced scenario (its period is the row's); its outputs are the
    /// session's final phase.
    Session {
        /// The scenario's ROCTx ranges go to the legacy ROCTx library (the stand-in for
        /// roctracer's `libroctx64.so`, preloaded) and reach no SDK: the session gets them
        /// only through the library's tracer callback.
        legacy_roctx: bool,
    },
}

/// A window of a replay.
#[derive(Clone, Copy)]
enum Window {
    /// The first ROCTx range with this message.
    Marker(&'static str),
    /// From one percentage of the run's span to another.
    Span(&'static str, &'static str),
}

/// The sinks every row adds to its templates' own, each holding all of the run's
/// processes, under the row's output directory.
const SINKS: &str = r#"
[[sink]]
name = "m-rocpd"
kind = "rocpd"
path = "{output_dir}/m/run.db"
options = { layout = "single" }

[[sink]]
name = "m-rocpd-each"
kind = "rocpd"
path = "{output_dir}/m/each/{pid}.db"
options = { layout = "per_process" }

[[sink]]
name = "m-csv"
kind = "csv"
path = "{output_dir}/m/csv"

[[sink]]
name = "m-parquet"
kind = "parquet"
path = "{output_dir}/m/parquet"

[[sink]]
name = "m-csv3"
kind = "csv"
path = "{output_dir}/m/csv3-{pid}"
options = { flavour = "rocprofv3" }

[[sink]]
name = "m-json"
kind = "json"
path = "{output_dir}/m/json-{pid}.json"

[[sink]]
name = "m-perfetto"
kind = "perfetto"
path = "{output_dir}/m/{pid}.pftrace"

[[sink]]
name = "m-otf2"
kind = "otf2"
path = "{output_dir}/m/otf2"
"#;

impl Row {
    fn new(extends: &[&'static str], collects: Collects) -> Row {
        Row {
            name: extends.join("+"),
            extends: extends.to_vec(),
            extra: "",
            collects,
            forks: 0,
            one_thread: false,
            paced: None,
            collected: None,
            window: None,
            scenario: "",
            settings: "",
            device_trace: None,
            launch: Launch::Run,
            iterations: None,
            replay_threads: None,
        }
    }

    fn pipeline(&self) -> String {
        let extends: Vec<String> = self.extends.iter().map(|e| format!("{e:?}")).collect();
        format!(
            "[pipeline]\nname = \"matrix\"\nextends = [{}]\n{}\n{SINKS}",
            extends.join(", "),
            self.extra
        )
    }

    /// Runs the application as the row says, into `live` under `dir`; returns where the
    /// live outputs are.
    fn run(&self, dir: &Path) -> PathBuf {
        let Launch::Session { legacy_roctx } = self.launch else {
            let app = sim_app();
            let forks = self.forks.to_string();
            let mut run = vec!["run", "matrix.toml", "--device", "sim:scenario.toml"];
            run.extend(["--set", "output_dir=live", "--", app.to_str().unwrap()]);
            match self.forks {
                0 => run.extend(["exit", "0"]),
                _ => run.extend(["fork", &forks]),
            }
            assert_success(&rocflow(&run, dir, &[]));
            return dir.join("live");
        };
        let (iterations, ms) = self.paced.expect("a session row is paced");
        let period = (ms / iterations).to_string();
        let program = programs::session_window(dir);
        let mut preload = sim_sdk().into_os_string();
        if legacy_roctx {
            preload.push(" ");
            preload.push(programs::legacy_roctx(dir));
        }
        let output = Command::new(program)
            .args(["matrix.toml", "live", &period])
            .current_dir(dir)
            .env("LD_PRELOAD", preload)
            .env("ROCFLOW_SIM_SCENARIO", dir.join("scenario.toml"))
            .env("ROCFLOW_BIN", rocflow_exe())
            .env_remove("ROCP_TOOL_LIBRARIES")
            .env_remove("ROCFLOW_PIPELINE_PATH")
            .output()
            .expect("the session program runs");
        assert_success(&output);
        dir.join("live/final")
    }

    /// The live run's spool, in its outputs' directory.
    fn spool(&self) -> &'static str {
        match self.launch {
            Launch::Run => "last.rfraw",
            Launch::Session { .. } => "session.rfraw",
        }
    }

    /// Runs the row live and replays it from its spool and its database; holds every
    /// output of each against the truth. Returns what went wrong, by source and output.
    fn check(&self) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::write(dir.join("matrix.toml"), self.pipeline()).unwrap();
        let mut text = std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap();
        if self.one_thread {
            text = text.replace("threads = 2", "threads = 1");
        }
        if let Some((iterations, ms)) = self.paced {
            let paced = format!("iterations = {iterations}\nduration_ms = {ms}");
            text = text.replace("iterations = 100", &paced);
        }
        if let Some(iterations) = self.iterations {
            assert!(self.paced.is_none(), "a paced row sets its own iterations");
            text = text.replace("iterations = 100", &format!("iterations = {iterations}"));
        }
        let mut settings = self.settings.to_owned();
        if let Launch::Session { legacy_roctx: true } = self.launch {
            settings.push_str("marker_library = \"legacy\"\n");
        }
        text = text.replacen("[scenario]\n", &format!("[scenario]\n{settings}"), 1);
        text.push_str(self.scenario);
        std::fs::write(dir.join("scenario.toml"), text).unwrap();
        let mut scenario = Scenario::read(&dir.join("scenario.toml"));
        if let Some(iterations) = self.collected {
            scenario.iterations = iterations;
        }
        let live = self.run(dir);
        let (spool, db) = (live.join(self.spool()), live.join("m/run.db"));
        for (input, source) in [(&spool, "spool"), (&db, "db")] {
            let input = input.to_str().unwrap();
            let output_dir = format!("output_dir={source}");
            let mut replay = vec!["replay", input, "matrix.toml", "--set", &output_dir];
            match self.window {
                Some((Window::Marker(message), _)) => {
                    replay.extend(["--window-marker", message]);
                }
                Some((Window::Span(start, end), _)) => {
                    replay.extend(["--start", start, "--end", end]);
                }
                None => {}
            }
            let threads = (self.replay_threads).map(|n| ("RAYON_NUM_THREADS", Path::new(n)));
            assert_success(&rocflow(&replay, dir, threads.as_slice()));
        }

        let mut problems = Vec::new();
        let processes = self.forks + 1;
        let mut within = Scenario::read(&dir.join("scenario.toml"));
        within.iterations = self.window.map_or(0, |w| w.1);
        for source in ["live", "spool", "db"] {
            let out = if source == "live" {
                live.clone()
            } else {
                dir.join(source)
            };
            let (csv, dispatches) = truth::csv_tables(&out.join("m/csv"));
            let windowed = self.window.is_some() && source != "live";
            let truth_of = if windowed { &within } else { &scenario };
            let want = truth_of.truth(&self.collects, processes, &dispatches);
            // rocprofv3's JSON and CSV files, as rocflow writes them, have no sections of
            // the domains SDKs after 1.0 added, nor of KFD events.
            let mut of_1_0 = self.collects.clone();
            of_1_0.api.retain(|(domain, ..)| {
                Domain::from_name(domain).is_some_and(|d| d.since().is_none())
            });
            of_1_0.kfd = false;
            let want_of_1_0 = truth_of.truth(&of_1_0, processes, &dispatches);
            // Every row of the CSV tables, as well as their counts.
            let rows = truth_of.misfits(&self.collects, |kind| {
                truth::csv_table(&out.join("m/csv"), kind)
            });
            for (table, rows) in rows {
                problems.push(format!(
                    "{} from {source}, csv: {} rows of {table} are not the scenario's, such as {}",
                    self.name,
                    rows.len(),
                    rows[0]
                ));
            }
            let db = out.join("m/run.db");
            let amd = Peer::get().summary(std::slice::from_ref(&db), &out);
            let (parquet, _) = truth::parquet_tables(&out.join("m/parquet"));
            let but_bytes: Vec<Part> = (Part::ALL.into_iter())
                .filter(|&p| p != Part::CopyBytes)
                .collect();
            // The summary and the report have no table of PC samples or KFD events.
            let but_pc_samples: Vec<Part> = (Part::ALL.into_iter())
                .filter(|&p| p != Part::PcSamples && p != Part::Kfd)
                .collect();
            let mut each = Tally::default();
            for db in entries(&out.join("m/each"), |n| n.ends_with(".db")) {
                each.add(truth::rocpd(&db));
            }
            let (json, _) =
                truth::rocprofv3_json(&entries(&out.join("m"), |n| n.starts_with("json-")));
            let outputs: [(&str, Tally, &[Part]); 11] = [
                ("csv", csv, &Part::ALL),
                ("json (rocprofv3)", json, &Part::ALL),
                (
                    "csv (rocprofv3)",
                    truth::rocprofv3_csv(&entries(&out.join("m"), |n| n.starts_with("csv3-"))),
                    &but_bytes,
                ),
                ("parquet", parquet, &Part::ALL),
                ("rocpd", truth::rocpd(&db), &Part::ALL),
                ("rocpd, a database per process", each, &Part::ALL),
                (
                    "AMD's rocpd summary of rocpd",
                    truth::amd_summary(&amd),
                    &[
                        Part::Kernels,
                        Part::KernelTime,
                        Part::Api,
                        Part::Copies,
                        Part::Allocations,
                        Part::Markers,
                        Part::PcSamples,
                        Part::Kfd,
                    ],
                ),
                (
                    "summary",
                    truth::summary(&out.join("summary/summary.json")),
                    &but_pc_samples,
                ),
                (
                    "report",
                    truth::report(&out.join("report.html")),
                    &but_pc_samples,
                ),
                (
                    "perfetto",
                    truth::perfetto(&entries(&out.join("m"), |n| n.ends_with(".pftrace"))),
                    &[
                        Part::Kernels,
                        Part::KernelTime,
                        Part::Api,
                        Part::Copies,
                        Part::Allocations,
                        Part::Markers,
                    ],
                ),
                (
                    "otf2",
                    truth::otf2(&out.join("m/otf2/traces.otf2"), &want),
                    &[
                        Part::Kernels,
                        Part::Api,
                        Part::Copies,
                        Part::Allocations,
                        Part::Markers,
                    ],
                ),
            ];
            for (output, seen, parts) in outputs {
                // rocprofv3's CSV writes counter values to six decimals.
                let within = if output == "csv (rocprofv3)" {
                    1e-6
                } else {
                    1e-9
                };
                let want = match output {
                    "json (rocprofv3)" | "csv (rocprofv3)" => &want_of_1_0,
                    _ => &want,
                };
                for difference in want.differences(&seen, parts, within) {
                    problems.push(format!(
                        "{} from {source}, {output}: {difference}",
                        self.name
                    ));
                }
            }
            if self.collects.device_counters {
                let table = |kind| truth::csv_table(&out.join("m/csv"), kind);
                let samples = truth::device::samples(&table("device_counter_sample"));
                let ends = truth::device::dispatch_ends(&table("kernel_dispatch"));
                // GPU `g` is agent `g + 1`.
                let gpus: std::collections::BTreeSet<u32> = (scenario.kernels.iter())
                    .map(|k| k.agent as u32 + 1)
                    .collect();
                match truth_of.device_reads(&samples, &ends) {
                    Err(wrong) => problems.push(format!(
                        "{} from {source}, device counters: {wrong}",
                        self.name
                    )),
                    Ok(reads)
                        if !reads.keys().copied().eq(gpus.iter().copied())
                            || reads.values().any(|&n| n < 2) =>
                    {
                        problems.push(format!(
                            "{} from {source}: device reads per agent {reads:?}, want two or more on each of {gpus:?}",
                            self.name
                        ));
                    }
                    Ok(_) => {}
                }
                for wrong in sampled_elsewhere(&out, Sampled::Device) {
                    problems.push(format!(
                        "{} from {source}, device counters: {wrong}",
                        self.name
                    ));
                }
            }
            if self.collects.graphs {
                let table = |kind| truth::csv_table(&out.join("m/csv"), kind);
                let (launches, dispatches) = (table("graph_launch"), table("kernel_dispatch"));
                let barriers = table("hip_event_barrier");
                for wrong in truth_of.graph_misfits(processes, &launches, &dispatches, &barriers) {
                    problems.push(format!("{} from {source}, HIP graphs: {wrong}", self.name));
                }
                // The trace shows the table's launches and barriers.
                let int = |row: &truth::Row, column: &str| row[column].parse::<u64>().unwrap();
                let mut listed: Vec<(u64, u64)> = (launches.iter())
                    .map(|l| (int(l, "graph_exec_id"), int(l, "dispatch_count")))
                    .collect();
                listed.sort_unstable();
                let mut operations = std::collections::BTreeMap::new();
                for barrier in &barriers {
                    *operations.entry(barrier["operation"].clone()).or_default() += 1;
                }
                // The summary's table per graph: its launches and their dispatches.
                let mut per_graph = std::collections::BTreeMap::new();
                for (graph, dispatches) in &listed {
                    let entry: &mut (u64, u64) = per_graph.entry(*graph).or_default();
                    *entry = (entry.0 + 1, entry.1 + dispatches);
                }
                let summarized = truth::graphs::summary(&out.join("summary/summary.json"));
                if summarized != per_graph {
                    problems.push(format!(
                        "{} from {source}, summary: graph launches and dispatches {summarized:?}, want the CSV's {per_graph:?}",
                        self.name
                    ));
                }
                let traces = entries(&out.join("m"), |n| n.ends_with(".pftrace"));
                // Every output places the dispatches in their graph nodes as the CSV does,
                // whose nodes the truth above holds.
                let placed = truth::graphs::placed(&dispatches);
                if placed.is_empty() {
                    problems.push(format!(
                        "{} from {source}: no dispatch in a graph",
                        self.name
                    ));
                }
                for (output, shown) in [
                    (
                        "parquet",
                        truth::graphs::placed_in_parquet(&out.join("m/parquet")),
                    ),
                    ("rocpd", truth::graphs::placed_in_rocpd(&db)),
                    ("perfetto", truth::graphs::placed_in_perfetto(&traces)),
                ] {
                    if shown != placed {
                        problems.push(format!(
                            "{} from {source}, {output}: dispatches in graph nodes {shown:?}, want the CSV's {placed:?}",
                            self.name
                        ));
                    }
                }
                let shown = truth::graphs::perfetto(&traces);
                if shown != (listed, operations) {
                    problems.push(format!(
                        "{} from {source}, perfetto: HIP graph launches and event barriers {shown:?} are not the CSV's",
                        self.name
                    ));
                }
            }
            if !self.collects.spm.is_empty() {
                let table = |kind| truth::csv_table(&out.join("m/csv"), kind);
                let streamed = truth::spm::streamed(&table("spm_sample"));
                let dispatches = truth::spm::dispatches(&table("kernel_dispatch"));
                match truth_of.spm_truth(&streamed, &dispatches, &self.collects.spm) {
                    Err(wrong) => {
                        problems.push(format!("{} from {source}, SPM: {wrong}", self.name))
                    }
                    Ok(0) => problems.push(format!("{} from {source}: no SPM sample", self.name)),
                    Ok(_) => {}
                }
                for wrong in sampled_elsewhere(&out, Sampled::Spm) {
                    problems.push(format!("{} from {source}, SPM: {wrong}", self.name));
                }
            }
            if self.collects.thread_trace && source != "db" {
                let traced = traced_dispatches(&out);
                let scenario = dir.join("scenario.toml");
                let misfits = traced_misfits(&scenario, processes, &traced, &dispatches);
                problems
                    .extend((misfits.into_iter()).map(|wrong| {
                        format!("{} from {source}, thread trace: {wrong}", self.name)
                    }));
            }
            // Every dispatch once in each process. (A forked child numbers on from where
            // its parent was, as a copy of the SDK's counters would.)
            let expected = processes * u64::from(self.collects.dispatches);
            if dispatches.len() as u64 != expected {
                problems.push(format!(
                    "{} from {source}: dispatches of {} processes, want {expected}",
                    self.name,
                    dispatches.len()
                ));
            }
            for (pid, list) in &dispatches {
                let mut ids: Vec<u64> = list.iter().map(|d| d.0).collect();
                ids.dedup();
                if ids.len() != list.len() {
                    problems.push(format!(
                        "{} from {source}: process {pid} has {} dispatches of {} ids",
                        self.name,
                        list.len(),
                        ids.len()
                    ));
                }
            }
        }
        if let Some((mask, iterations)) = self.device_trace {
            let dispatches = iterations * processes;
            let truth = truth::thread_trace_hits(&dir.join("scenario.toml"), mask, dispatches);
            // A rocpd database holds no raw trace to decode again.
            for source in ["live", "spool"] {
                let seen = device_trace_hits(&dir.join(source));
                if seen != truth {
                    problems.push(format!(
                        "{} from {source}: the device trace's hits per instruction are {seen:?}, not {truth:?}",
                        self.name
                    ));
                }
            }
        }
        problems
    }
}

/// Per code object and address, the hits of a device thread trace's decoded instruction
/// table in `out`, read back through DuckDB.
fn device_trace_hits(out: &Path) -> BTreeMap<(u64, u64), u64> {
    let query = "SELECT code_object_id, address, sum(hits)::BIGINT FROM read_parquet('att/thread_trace_instructions.parquet') WHERE dispatch_id IS NULL AND device_window IS NOT NULL GROUP BY ALL";
    hits(&support::duckdb(out, &[query])[0])
}

/// Rows of code object, address and hits, as a map.
fn hits(rows: &[Vec<serde_json::Value>]) -> BTreeMap<(u64, u64), u64> {
    (rows.iter())
        .map(|row| {
            let n = |i: usize| row[i].as_u64().unwrap_or_else(|| panic!("{row:?}"));
            ((n(0), n(1)), n(2))
        })
        .collect()
}

/// What the thread-trace template kept in `out` (its live run's or a replay's outputs):
/// the decoded instruction table's hits per code object and address, from Parquet and
/// from the row's rocpd databases; the dispatches each traced (per process, from the
/// Parquet table); and the raw trace files, per process and dispatch.
struct Traced {
    parquet: BTreeMap<(u64, u64), u64>,
    rocpd: BTreeMap<(u64, u64), u64>,
    rocpd_each: BTreeMap<(u64, u64), u64>,
    dispatches: BTreeMap<u64, Vec<u64>>,
    files: BTreeMap<(u64, u64), u64>,
}

/// The thread-trace template's outputs in `out`.
fn traced_dispatches(out: &Path) -> Traced {
    let table = "read_parquet('thread-trace/thread_trace_instructions.parquet')";
    let queries = [
        format!(
            "SELECT code_object_id, address, sum(hits)::BIGINT FROM {table} WHERE dispatch_id IS NOT NULL GROUP BY ALL"
        ),
        format!("SELECT DISTINCT pid, dispatch_id FROM {table} ORDER BY ALL"),
    ];
    let rows = support::duckdb(out, &[&queries[0], &queries[1]]);
    let mut dispatches: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for row in &rows[1] {
        let n = |i: usize| row[i].as_u64().unwrap_or_else(|| panic!("{row:?}"));
        dispatches.entry(n(0)).or_default().push(n(1));
    }
    let query = "SELECT code_object_id, address, sum(hits) FROM rocflow_thread_trace_instruction WHERE dispatch_id IS NOT NULL GROUP BY code_object_id, address";
    let rocpd_hits = |dbs: &[std::path::PathBuf]| {
        let mut sums: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for db in dbs {
            let db = rusqlite::Connection::open(db).unwrap();
            let rows: Vec<(i64, i64, i64)> =
                support::sqlite_rows(&db, query, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
            for (code_object, address, hits) in rows {
                *sums
                    .entry((code_object as u64, address as u64))
                    .or_default() += hits as u64;
            }
        }
        sums
    };
    // rocprofv3's names: `{pid}_shader_engine_{se}_{dispatch}.att`.
    let mut files: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for file in entries(&out.join("thread-trace"), |n| n.ends_with(".att")) {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let parts: Vec<&str> = name.split('_').collect();
        let n = |i: usize| parts[i].parse::<u64>().unwrap_or_else(|_| panic!("{name}"));
        *files.entry((n(0), n(parts.len() - 1))).or_default() += 1;
    }
    Traced {
        parquet: hits(&rows[0]),
        rocpd: rocpd_hits(&[out.join("m/run.db")]),
        rocpd_each: rocpd_hits(&entries(&out.join("m/each"), |n| n.ends_with(".db"))),
        dispatches,
        files,
    }
}

/// What is wrong with what the thread-trace template kept, given the run's scenario, its
/// processes and their `dispatches` (from the CSV table): each process traced one dispatch
/// of each of its kernels, into one raw file (shader engine 0 only), and every decoded
/// table holds what the traced waves of those dispatches ran.
fn traced_misfits(
    scenario: &Path,
    processes: u64,
    traced: &Traced,
    dispatches: &truth::Dispatches,
) -> Vec<String> {
    use rocflow_core::thread_trace::DEFAULT_SHADER_ENGINE_MASK;
    let mut wrong = Vec::new();
    let truth = truth::thread_trace_hits(scenario, DEFAULT_SHADER_ENGINE_MASK, processes);
    for (table, seen) in [
        ("parquet", &traced.parquet),
        ("rocpd", &traced.rocpd),
        ("rocpd, a database per process", &traced.rocpd_each),
    ] {
        if *seen != truth {
            wrong.push(format!(
                "{table}: hits per instruction {seen:?}, not {truth:?}"
            ));
        }
    }
    for (pid, list) in dispatches {
        let mut kernels: Vec<&str> = list.iter().map(|d| d.1.as_str()).collect();
        kernels.sort_unstable();
        kernels.dedup();
        let ids = traced.dispatches.get(pid).map_or(&[][..], Vec::as_slice);
        let mut of: Vec<&str> = (ids.iter())
            .filter_map(|id| list.iter().find(|d| d.0 == *id))
            .map(|d| d.1.as_str())
            .collect();
        of.sort_unstable();
        if of != kernels || ids.len() != kernels.len() {
            wrong.push(format!(
                "process {pid} traced dispatches {ids:?} of {of:?}, not one of each of {kernels:?}"
            ));
        }
        for id in ids {
            let files = traced.files.get(&(*pid, *id)).copied().unwrap_or(0);
            if files != 1 {
                wrong.push(format!(
                    "process {pid}, dispatch {id}: {files} raw traces, want one (shader engine 0)"
                ));
            }
        }
    }
    let kept: u64 = traced.files.values().sum();
    let listed: usize = traced.dispatches.values().map(Vec::len).sum();
    if kept != listed as u64 {
        wrong.push(format!("{kept} raw traces for {listed} traced dispatches"));
    }
    wrong
}

/// Where an output other than the CSV tables (held to the truth) shows sampled counters
/// of `kind` differently from them, in the outputs under `out`: Parquet, Perfetto, rocpd
/// (one database and one per process) and, for device reads, the report's charts.
fn sampled_elsewhere(out: &Path, kind: Sampled) -> Vec<String> {
    let want = series::csv(&truth::csv_table(&out.join("m/csv"), kind.table()));
    let mut outputs = vec![
        ("parquet", series::parquet(&out.join("m/parquet"), kind)),
        (
            "perfetto",
            series::perfetto(&entries(&out.join("m"), |n| n.ends_with(".pftrace")), kind),
        ),
        ("rocpd", series::rocpd(&[out.join("m/run.db")], kind)),
        (
            "rocpd, a database per process",
            series::rocpd(&entries(&out.join("m/each"), |n| n.ends_with(".db")), kind),
        ),
    ];
    if kind == Sampled::Device {
        outputs.push(("report", series::report(&out.join("report.html"))));
    }
    (outputs.into_iter())
        .filter_map(|(output, seen)| {
            series::differences(&want, &seen).map(|wrong| format!("{output}: {wrong}"))
        })
        .collect()
}

/// Checks every row, failing with every problem found.
fn check(rows: &[Row]) {
    let problems: Vec<String> = rows.iter().flat_map(Row::check).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What the compiler refuses to put in one pipeline (`engine/src/pipeline/compile`), each
/// a combination rocprofiler-sdk refuses or that would record something twice.
const REFUSALS: [&str; 5] = [
    // Two contexts counting dispatches, or sampling PCs.
    "which one context only may configure",
    "rocprofiler-sdk refuses PC sampling in a process whose dispatches it counts",
    "kernel replay runs each dispatch once per pass",
    "traces threads, and so does context",
    // One domain traced in two contexts whose periods neither covers.
    "in different collection periods",
];

/// Compiles the matrix's pipeline of `templates` (with the sinks every row adds), as
/// `rocflow run` would before it runs: its plan, or every diagnostic.
fn compile(templates: &[&'static str]) -> Result<Plan, Vec<Diagnostic>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("matrix.toml");
    let text = Row::new(templates, Collects::default()).pipeline();
    let file = SourceFile::new(path.display().to_string(), text);
    pipeline::compile_text(&path, file, &pipeline::Options::default()).map(|c| c.plan)
}

/// Whether two templates can run together, as the compiler says: the matrix's pipeline
/// extending both compiles, or is refused, each error one of the [`REFUSALS`] (any other fails the
/// test: a shipped pair the compiler cannot read is a fault of its own).
fn combinable(a: &'static str, b: &'static str) -> bool {
    let Err(diagnostics) = compile(&[a, b]) else {
        return true;
    };
    let errors: Vec<&Diagnostic> = (diagnostics.iter())
        .filter(|d| d.severity == Severity::Error)
        .collect();
    for error in &errors {
        assert!(
            REFUSALS.iter().any(|r| error.message.contains(r)),
            "{a} with {b}: {error}"
        );
    }
    assert!(!errors.is_empty(), "{a} with {b}: {diagnostics:?}");
    false
}

/// Whether a template configures dispatch counting (on whichever GPUs it picks).
fn counts_dispatches(template: &'static str) -> bool {
    let plan = compile(&[template]).unwrap_or_else(|d| panic!("{template}: {d:?}"));
    plan.contexts.iter().any(|c| c.counters.is_some())
}

/// The pairs of templates, every one with `ROCFLOW_MATRIX=full`, else a fixed sample.
fn pairs() -> Vec<Row> {
    let templates = templates();
    let mut pairs = Vec::new();
    for (i, &(a, ref ca)) in templates.iter().enumerate() {
        for &(b, ref cb) in &templates[i + 1..] {
            if combinable(a, b) {
                let mut collects = ca.clone().and(cb);
                // Templates that count dispatches all configure context `counters` (the
                // compiler refuses two contexts that count): together they configure it
                // once, the later one's parameters (counters, GPUs) winning.
                if counts_dispatches(a) && counts_dispatches(b) {
                    collects.counters = cb.counters.clone();
                    collects.ratios = cb.ratios.clone();
                }
                pairs.push(Row::new(&[a, b], collects));
            }
        }
    }
    if std::env::var_os("ROCFLOW_MATRIX").is_some_and(|v| v == "full") {
        return pairs;
    }
    // A fixed sample, the same in every run: every seventh pair, from the third, and for
    // each template none of those has, its first pair with another than `base`.
    let (mut sample, mut rest): (Vec<_>, Vec<_>) =
        (pairs.into_iter().enumerate()).partition(|(n, _)| *n >= 2 && (n - 2) % 7 == 0);
    for (name, _) in &templates {
        let has = |row: &(usize, Row)| row.1.extends.contains(name);
        if !sample.iter().any(has) {
            let other = |row: &(usize, Row)| has(row) && !row.1.extends.contains(&"base");
            if let Some(first) = rest.iter().position(other) {
                sample.push(rest.remove(first));
            }
        }
    }
    sample.into_iter().map(|(_, row)| row).collect()
}

/// The matrix runs every shipped template: one shipped without a row in [`templates`]
/// fails here.
#[test]
fn the_matrix_runs_every_shipped_template() {
    let listed: std::collections::BTreeSet<&str> = templates().iter().map(|t| t.0).collect();
    let shipped = pipeline::template::builtin_names().collect();
    assert_eq!(listed, shipped);
}

/// Every pair of shipped templates compiles, or is refused for one of the [`REFUSALS`]:
/// two templates that give one parameter two meanings (spm's and counters-basic's
/// `counters`) fail here, where their run would fail or collect the wrong counters.
#[test]
fn pairs_of_templates_compile_but_where_the_sdk_refuses() {
    let templates = templates();
    let mut refused = Vec::new();
    for (i, &(a, _)) in templates.iter().enumerate() {
        for &(b, _) in &templates[i + 1..] {
            if !combinable(a, b) {
                refused.push(format!("{a} with {b}"));
            }
        }
    }
    // Counted dispatches and sampled PCs, which the SDK refuses in one process.
    assert!(
        refused.contains(&"counters-basic with pc-sampling".to_owned()),
        "{refused:?}"
    );
}

#[test]
fn every_template_alone_agrees_with_the_truth() {
    let rows: Vec<Row> = (templates().into_iter())
        .map(|(name, collects)| Row::new(&[name], collects))
        .collect();
    check(&rows);
}

#[test]
fn pairs_of_templates_agree_with_the_truth() {
    check(&pairs());
}

/// The combinations named in issue 48: a system trace with counters (each dispatch once,
/// though two contexts trace dispatches), and counters over several passes (each
/// dispatch once, though every pass dispatches it).
#[test]
fn dispatches_traced_by_two_contexts_or_several_passes_count_once() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut passes = Row::new(&["counters-basic"], of("counters-basic"));
    passes.name = "counters-basic in 2 passes".into();
    passes.extra = "[[context]]\nname = \"counters\"\n[context.counters]\nper_pass = 2\n";
    passes.one_thread = true;
    check(&[
        Row::new(
            &["trace-all", "counters-basic"],
            of("trace-all").and(&of("counters-basic")),
        ),
        passes,
    ]);
}

/// Counters of several passes by kernel replay: one run of the application, each
/// dispatch run once per pass, its values of every pass those of the generator, and each
/// dispatch once in every output, however many passes ran it.
#[test]
fn counters_replayed_per_kernel_in_one_run_agree_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut replayed = Row::new(&["counters-basic"], of("counters-basic"));
    replayed.name = "counters-basic in 2 passes by kernel replay".into();
    replayed.extra =
        "[[context]]\nname = \"counters\"\n[context.counters]\nper_pass = 2\nreplay = \"kernel\"\n";
    check(&[replayed]);
}

#[test]
fn features_that_change_records_agree_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut filtered = Row::new(&["counters-basic"], of("counters-basic"));
    filtered.name = "counters of kernels matching /smooth|vector/".into();
    filtered.extra = "[params]\nkernel_regex = \"smooth|vector\"\n";
    filtered.collects.counted_kernels = Some("smooth|vector");
    let mut mangled = Row::new(&["trace-all"], of("trace-all"));
    mangled.name = "mangled kernel names".into();
    mangled.extra = "kernel_names = \"mangled\"\n";
    mangled.collects.names = KernelNames::Mangled;
    let mut truncated = Row::new(&["trace-all"], of("trace-all"));
    truncated.name = "truncated kernel names".into();
    truncated.extra = "kernel_names = \"truncated\"\n";
    truncated.collects.names = KernelNames::Truncated;
    let mut long = Row::new(&["trace-all"], of("trace-all"));
    long.name = "dispatches of 20 us or more".into();
    long.extra = "[[transform]]\nname = \"long\"\nkind = \"filter\"\nrecords = [\"kernel_dispatch\"]\npredicate = \"duration_ns >= 20000\"\n";
    long.collects.min_kernel_ns = 20_000;
    let mut window = Row::new(
        &["trace-all", "counters-basic"],
        of("trace-all").and(&of("counters-basic")),
    );
    window.name = "replays within the first `solve` range".into();
    window.one_thread = true;
    window.window = Some((Window::Marker("solve"), 1));
    // Ten iterations 10 ms apart, each done within 1 ms: the run spans 90 to 91 ms, so
    // from 25% to 75% of it (22.5 ms at the latest to 67.5 ms at the earliest) holds the
    // iterations that start at 30, 40, 50 and 60 ms, wholly.
    let mut span = Row::new(
        &["trace-all", "counters-basic"],
        of("trace-all").and(&of("counters-basic")),
    );
    span.name = "replays from 25% to 75% of a paced run".into();
    span.one_thread = true;
    span.paced = Some((10, 100));
    span.window = Some((Window::Span("25%", "75%"), 4));
    let mut repeated = Row::new(&["counters-basic"], of("counters-basic"));
    repeated.name = "counters-basic with counters listed twice".into();
    repeated.extra = "[params]\ncounters = [\"SQ_WAVES\", \"SQ_INSTS_VALU\", \"SQ_WAVES\", \"SQ_INSTS_SALU\", \"GRBM_GUI_ACTIVE\", \"SQ_INSTS_VALU\"]\n";
    let mut processes = Row::new(&["trace-all"], of("trace-all"));
    processes.name = "four processes".into();
    processes.forks = 3;
    // Ten iterations 50 ms apart, each done within 1 ms, collected from 0 to 175 ms and
    // from 325 to 500 ms: the iterations that start at 0, 50, 100, 150, 350, 400 and 450
    // ms, with 25 ms to spare at every edge for a loaded machine's timers.
    let mut periods = Row::new(&["always-on"], of("always-on"));
    periods.name = "always-on in two periods of a paced run".into();
    periods.extra = "[params]\ncollect_for = \"175ms\"\npause_for = \"150ms\"\nperiods = 1\n";
    periods.one_thread = true;
    periods.paced = Some((10, 500));
    periods.collected = Some(7);
    // On eight threads the OTF2 sink writes its busiest locations (the host threads' API
    // calls) while the replay goes on, each by a thread of its own; 2,000 iterations give
    // each of those a few MiB of events, past the point where a location's writer starts.
    let mut live_otf2 = Row::new(&["trace-all"], of("trace-all"));
    live_otf2.name =
        "trace-all replayed on eight threads, OTF2's busiest locations written live".into();
    live_otf2.iterations = Some(2_000);
    live_otf2.replay_threads = Some("8");
    check(&[
        filtered, mangled, truncated, long, window, span, periods, repeated, processes, live_otf2,
    ]);
}

/// A session the application opens on the simulated SDK after it started (the SDK started
/// late, by `rocprofiler_force_configure`) holds the records of its window, iterations 3
/// to 5 of eight paced 200 ms apart, and no others: ROCTx ranges included, whether the
/// application's ROCTx is the SDK's or the legacy library's, which reaches the session
/// only through its tracer callback.
#[test]
fn a_late_started_sessions_window_agrees_with_the_truth() {
    let templates = templates();
    let trace_all = &templates.iter().find(|t| t.0 == "trace-all").unwrap().1;
    let rows = [false, true].map(|legacy_roctx| {
        let mut row = Row::new(&["trace-all"], trace_all.clone());
        row.name = format!("a session's window, ROCTx of the legacy library: {legacy_roctx}");
        row.paced = Some((8, 1600));
        row.collected = Some(3);
        row.launch = Launch::Session { legacy_roctx };
        row
    });
    check(&rows);
}

/// The device-counters template on a paced run: each GPU's reads, live and replayed from
/// the spool and the database, are reads of the scenario's dispatches, beside the outputs
/// of the dispatches the template traces.
#[test]
fn device_counter_reads_agree_with_the_truth() {
    let collects = Collects {
        dispatches: true,
        device_counters: true,
        ..Collects::default()
    };
    let mut row = Row::new(&["device-counters"], collects);
    // The counters only: AMD-SMI's metrics have no truth in the scenario's dispatches.
    row.extra = "[params]\nmetrics = []\n";
    row.paced = Some((10, 200));
    check(&[row]);
}

/// A device thread trace beside the traced dispatches, from a roctxProfilerResume to a
/// roctxProfilerPause (which stops the dispatches' context too): the records agree with
/// the truth as without it, and the decoded trace, live and replayed from the spool,
/// holds every instruction each traced wave of every dispatch in between ran.
#[test]
fn a_device_thread_trace_agrees_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut row = Row::new(&["kernel-trace"], of("kernel-trace"));
    row.name = "device thread trace".into();
    row.extra = "[[context]]\nname = \"att\"\nperiod = { paused = true }\n[context.thread_trace]\nmode = \"device\"\npath = \"{output_dir}/att\"\nshader_engine_mask = 0x2\n";
    row.one_thread = true;
    row.settings = "resume_at = 10\npause_at = 60\n";
    row.collected = Some(60);
    row.device_trace = Some((0x2, 50));
    check(&[row]);
}

/// The spm template: each dispatch's streamed samples, live and replayed from the spool
/// and the database, add up to the scenario's counter values, beside the outputs of the
/// dispatches the template traces.
#[test]
fn spm_samples_agree_with_the_truth() {
    let collects = Collects {
        dispatches: true,
        spm: vec!["SQ_WAVES", "GRBM_GUI_ACTIVE"],
        ..Collects::default()
    };
    check(&[Row::new(&["spm"], collects)]);
}

/// The domains SDKs after 1.0 added, traced beside dispatches: HIP graph launches, HIP
/// events' barriers, rocSHMEM and hipFile calls, each from the scenario's calls.
#[test]
fn the_newer_sdks_domains_agree_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut row = Row::new(&["kernel-trace"], of("kernel-trace"));
    row.name = "HIP graphs and events, rocSHMEM and hipFile".into();
    row.extra = "[[context]]\nname = \"newer\"\ntracing = [\"hip_graph\", \"hip_event\", \"rocshmem_api\", \"hipfile_api\"]\n";
    row.scenario = r#"
[[call]]
domain = "hip_graph"
function = "EXEC_LAUNCH"
count = 2
duration_ns = 9000

[[call]]
domain = "hip_event"
function = "RECORD"

[[call]]
domain = "hip_event"
function = "WAIT"
duration_ns = 2500

[[call]]
domain = "rocshmem_api"
function = "rocshmem_putmem_on_stream"
duration_ns = 6000

[[call]]
domain = "hipfile_api"
function = "hipFileRead"
count = 3
duration_ns = 12000
"#;
    row.collects.api = ["hip_graph", "hip_event", "rocshmem_api", "hipfile_api"]
        .map(|d| (d, vec![], vec![]))
        .to_vec();
    check(&[row]);
}

/// The KFD domains, traced beside dispatches: each kind of event the driver reports and
/// each record the SDK pairs them into, from the scenario's `[[kfd]]` tables.
#[test]
fn kfd_events_agree_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut row = Row::new(&["kernel-trace"], of("kernel-trace"));
    row.name = "KFD events".into();
    row.extra = r#"[[context]]
name = "kfd"
tracing = ["kfd_event_page_migrate", "kfd_event_page_fault", "kfd_event_queue", "kfd_event_unmap_from_gpu", "kfd_event_dropped_events", "kfd_page_migrate", "kfd_page_fault", "kfd_queue"]
"#;
    row.scenario = r#"
[[kfd]]
domain = "kfd_event_page_migrate"
operation = "PREFETCH"
count = 2

[[kfd]]
domain = "kfd_event_page_fault"
operation = "START_WRITE_FAULT"

[[kfd]]
domain = "kfd_event_queue"
operation = "EVICT_SVM"

[[kfd]]
domain = "kfd_event_unmap_from_gpu"
operation = "MMU_NOTIFY"
count = 3

[[kfd]]
domain = "kfd_event_dropped_events"
operation = "DROPPED_EVENTS"

[[kfd]]
domain = "kfd_page_migrate"
operation = "PAGEFAULT_GPU"

[[kfd]]
domain = "kfd_page_fault"
operation = "WRITE_FAULT_MIGRATED"
count = 2

[[kfd]]
domain = "kfd_queue"
operation = "EVICT_TTM"
"#;
    row.collects.kfd = true;
    check(&[row]);
}

/// HIP graphs and HIP events as SDK 1.4.1 traces them: each graph launch with its
/// executable graph and the dispatches it enqueued, each of those dispatches sharing the
/// launch's correlation id and named as its graph node in every output, and the barriers of `hipEventRecord` and `hipStreamWaitEvent`
/// on their queues, from the live run, the spool and the rocpd database.
#[test]
fn hip_graphs_and_events_agree_with_the_truth() {
    let templates = templates();
    let of = |name: &str| templates.iter().find(|t| t.0 == name).unwrap().1.clone();
    let mut row = Row::new(&["kernel-trace"], of("kernel-trace"));
    row.name = "HIP graph launches and HIP event barriers".into();
    row.extra = "[[context]]\nname = \"graphs\"\ntracing = [\"hip_graph\", \"hip_event\"]\n";
    row.scenario = r#"
[[kernel]]
name = "_Z10graph_stepPf"
duration_ns = 4000
grid = [65536, 1, 1]
workgroup = [256, 1, 1]
graph = 1

[[kernel]]
name = "_Z12graph_updatePfS_"
duration_ns = 6000
grid = [65536, 1, 1]
workgroup = [256, 1, 1]
graph = 1

[[kernel]]
name = "_Z11graph_scalePd"
agent = 1
duration_ns = 5000
grid = [32768, 1, 1]
workgroup = [128, 1, 1]
graph = 2

[[call]]
domain = "hip_graph"
function = "EXEC_LAUNCH"

[[call]]
domain = "hip_event"
function = "RECORD"
count = 2

[[call]]
domain = "hip_event"
function = "WAIT"
duration_ns = 2500
"#;
    row.collects.api = ["hip_graph", "hip_event"]
        .map(|d| (d, vec![], vec![]))
        .to_vec();
    row.collects.graphs = true;
    check(&[row]);
}
