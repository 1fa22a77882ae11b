//! Conformance with AMD's real rocprofiler-sdk (`../shared/realsdk`): every shipped
//! template and example pipeline runs with `--device rocm` against the real SDK, which
//! loads rocflow's tool through `rocprofiler_force_configure` (the kit's `force`) or
//! through rocprofiler-register (a ROCTx program built here), on a node without a GPU and
//! on the kit's fake gfx942. The kit's call logger shows each `rocprofiler_*` call the tool
//! makes with the status the SDK returned: every one must succeed except what the kit
//! cannot do, named here with its status. Without an HSA runtime nothing produces device
//! records, so the outputs must be valid and empty; ROCTx markers are real records.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use rocflow::pipeline::{self, Options};
use rocflow::plan::Plan;
use rocflow_core::contexts::AgentSelector;
use serde_json::{Value, json};
use support::kit::{Call, Kit, Node, Run};
use support::{assert_says, pipelines, repo, with_file};

const SUCCESS: &str = "ROCPROFILER_STATUS_SUCCESS";
const PC_SAMPLING_QUERY: &str = "rocprofiler_query_pc_sampling_agent_configurations";
/// What the kit's SDK answers a PC sampling query with AMD's beta on: it opens the GPU's
/// driver, which the kit has none of.
const NO_DRIVER: &str = "ROCPROFILER_STATUS_ERROR";
/// Device counting: what the kit's SDK answers a start of a context that samples devices,
/// and each read, without an HSA runtime (it would start the counting once one loads).
const HSA_NOT_LOADED: &str = "ROCPROFILER_STATUS_ERROR_HSA_NOT_LOADED";
/// What the SDK answers a call made while or after it finalizes.
const FINALIZED: &str = "ROCPROFILER_STATUS_ERROR_FINALIZED";
const SAMPLE: &str = "rocprofiler_sample_device_counting_service";
/// The tool's word for it.
const NO_DRIVER_MESSAGE: &str = "PC sampling on gfx942 needs the GPU driver's /dev/kfd, which this process cannot open: No such file or directory (os error 2)";

/// Every shipped template and every example pipeline.
fn compile(pipeline: &Path) -> Plan {
    let options = Options {
        counters: Some(Kit::get().metrics().join("counter_defs.yaml")),
        plugins: rocflow::plugin::Search::from_env(),
        ..Options::default()
    };
    match pipeline::compile_file(pipeline, &options) {
        Ok(compiled) => compiled.plan,
        Err(errors) => panic!("{}: {errors:?}", pipeline.display()),
    }
}

/// The fake gfx942 as the kit's topology describes it (`share/fake-gpu/mktopo.sh`), in
/// the terms of `rocflow inspect --json`.
fn fake_gfx942() -> Value {
    let script = std::fs::read_to_string(Kit::get().root.join("share/fake-gpu/mktopo.sh")).unwrap();
    let node = script
        .split("cat > $T/1/properties <<P\n")
        .nth(1)
        .and_then(|rest| rest.split("\nP\n").next())
        .expect("mktopo.sh describes node 1");
    let properties: BTreeMap<&str, u32> = node
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let p = |key: &str| properties[key];
    json!({
        "index": 1, "type": "gpu", "name": "gfx942", "node_id": 1,
        "cu_count": p("simd_count") / p("simd_per_cu"), "simd_count": p("simd_count"),
        "xcc_count": p("num_xcc"), "wave_front_size": p("wave_front_size"),
        "max_waves_per_simd": p("max_waves_per_simd"),
        "lds_bytes_per_cu": p("lds_size_in_kb") * 1024,
        "max_engine_clk_mhz": p("max_engine_clk_fcompute"),
    })
}

/// The counters the SDK's definitions give gfx942.
fn gfx942_counters() -> &'static BTreeSet<String> {
    static COUNTERS: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    COUNTERS.get_or_init(|| {
        let metrics = Kit::get().metrics().join("counter_defs.yaml");
        let metrics = metrics.to_str().unwrap();
        let args = [
            "counters",
            "list",
            "--arch",
            "gfx942",
            "--counters",
            metrics,
        ];
        let out = support::rocflow(&args, Path::new("."), &[]);
        support::assert_success(&out);
        let listed = support::text(&out.stdout);
        listed
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    })
}

/// Why a context's counters are counted on no GPU of `node`, in the tool's words.
fn none_selected(node: Node) -> &'static str {
    match node {
        Node::NoGpu => "the SDK reports no GPU on this node",
        Node::FakeGfx942 => "no GPU of this node (gfx942) is among its counters' agents",
    }
}

/// What a run of `plan` must show on `node`: the SDK's calls that do not succeed, the
/// contexts registered and started, the tool's messages, and per context that collects
/// counters on the GPU, the counters the SDK must resolve.
#[derive(Debug, Default)]
struct Expected {
    refused: Vec<(String, String)>,
    registered: usize,
    started: usize,
    messages: BTreeSet<String>,
    counters: BTreeSet<String>,
    /// Some context samples the GPU's counters.
    samples: bool,
}

impl Expected {
    fn of(plan: &Plan, node: Node) -> Expected {
        // The tool's control context comes first.
        let mut e = Expected {
            registered: plan.contexts.len() + 1,
            started: plan.contexts.len() + 1,
            ..Expected::default()
        };
        for ctx in &plan.contexts {
            // A service's own agents, else its context's, else every GPU.
            let on_gfx942 = |own: &[AgentSelector]| {
                let agents = if own.is_empty() { &ctx.agents } else { own };
                node == Node::FakeGfx942
                    && (agents.is_empty() || agents.iter().any(|s| s.selects_gpu(0, "gfx942")))
            };
            if let Some(counters) = &ctx.counters {
                if on_gfx942(&counters.agents) {
                    for name in counters.counted() {
                        if gfx942_counters().contains(name) {
                            e.counters.insert(name.clone());
                        } else {
                            e.messages.insert(format!(
                                // The CPU is agent 0, as `inspect` numbers them.
                                "counter `{name}` is not available on gfx942 (agent 1)"
                            ));
                        }
                    }
                } else {
                    e.messages.insert(format!(
                        "context `{}`: {}; no counters are collected",
                        ctx.name,
                        none_selected(node)
                    ));
                }
            }
            if let Some(device) = &ctx.device_counting {
                if on_gfx942(&device.counters.agents) {
                    e.samples = true;
                    for name in device.counters.counted() {
                        e.counters.insert(name.clone());
                    }
                } else {
                    e.messages.insert(format!(
                        "context `{}`: {}; no device counters are sampled",
                        ctx.name,
                        none_selected(node)
                    ));
                }
            }
            if let Some(pc) = &ctx.pc_sampling {
                if on_gfx942(&pc.agents) {
                    // rocflow turns AMD's beta on; the SDK then needs the GPU's
                    // driver, and the context is left out without it.
                    e.refused.push((PC_SAMPLING_QUERY.into(), NO_DRIVER.into()));
                    e.started -= 1;
                    e.messages.insert(format!(
                        "context `{}`: {NO_DRIVER_MESSAGE}; it collects nothing",
                        ctx.name
                    ));
                }
            }
        }
        // Starts come after every context is set up.
        if e.samples {
            e.refused
                .push(("rocprofiler_start_context".into(), HSA_NOT_LOADED.into()));
        }
        e
    }
}

/// Runs `items` on `workers` threads; the results in order.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = f(item);
                    results.lock().unwrap().push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The calls of a run as a compact table: per function, how many returned each status.
fn table(calls: &[Call]) -> String {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for c in calls {
        *counts.entry((&c.function, &c.status)).or_default() += 1;
    }
    counts
        .iter()
        .map(|((f, s), n)| {
            let f = f.trim_start_matches("rocprofiler_");
            let s = s.trim_start_matches("ROCPROFILER_STATUS_");
            format!("{f} x{n} {s}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks one run of `pipeline` with `force` as the application; the problems found.
fn conforms(node: Node, pipeline: &Path) -> Result<String, String> {
    let name = pipeline.strip_prefix(repo()).unwrap().display().to_string();
    let plan = compile(pipeline);
    let expected = Expected::of(&plan, node);
    let force = Kit::get().bin("force");
    let run = Kit::get().run(node, pipeline.to_str().unwrap(), &[force.as_os_str()], &[]);
    // What the kit's SDK lacks (SPM is 1.3.0's) is refused before anything runs.
    let kit_sdk = rocflow::sdk::SdkVersion(1, 0, 0);
    if let Some(missing) = rocflow_core::availability::unavailable(&plan.contexts, kit_sdk) {
        let refused = run.output.status.code() == Some(2)
            && run.stderr().contains(&missing.to_string())
            && run.calls().is_empty();
        return match refused {
            true => Ok(format!("{name}: refused before it ran: {missing}")),
            false => Err(format!(
                "{name}: not refused for {missing}: {}",
                run.printed()
            )),
        };
    }
    let mut problems = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    // `force` runs no kernel and calls no API: a pipeline that asks for records gets none.
    let ended = match plan.stages.produced.is_empty() {
        true => run.output.status.success(),
        false => run.collected_nothing(),
    };
    check(
        ended,
        format!(
            "exit status {}, or an error besides collecting nothing",
            run.output.status
        ),
    );
    let registered = (expected.registered, expected.started);
    check(
        run.registrations() == [registered],
        format!(
            "the SDK registered {:?}, not once {registered:?}",
            run.registrations()
        ),
    );
    let calls = run.calls();
    // Reads of the GPU come at the sampler's pace, as many as the process lives for: each
    // is refused as the SDK refuses it without an HSA runtime, and the tool waits. The
    // last may race the SDK's finalization (on a loaded machine it did) and be refused as
    // finalized: no read follows it.
    let (reads, refused): (Vec<&Call>, Vec<&Call>) = (calls.iter())
        .filter(|c| c.status != SUCCESS)
        .partition(|c| c.function == SAMPLE);
    let statuses: Vec<&str> = (calls.iter())
        .filter(|c| c.function == SAMPLE)
        .map(|c| c.status.as_str())
        .collect();
    let before_finalizing = statuses.strip_suffix(&[FINALIZED]).unwrap_or(&statuses);
    check(
        (before_finalizing.iter()).all(|s| *s == HSA_NOT_LOADED || *s == SUCCESS)
            && (expected.samples || reads.is_empty()),
        format!("reads of the GPU: {reads:?}"),
    );
    let refused: Vec<(String, String)> = (refused.into_iter())
        .map(|c| (c.function.clone(), c.status.clone()))
        .collect();
    check(
        refused == expected.refused,
        format!(
            "calls that did not succeed: {refused:?}, expected {:?}",
            expected.refused
        ),
    );
    let messages: BTreeSet<String> = run.tool_messages().into_iter().collect();
    check(
        messages == expected.messages,
        format!(
            "the tool said {messages:?}, expected {:?}",
            expected.messages
        ),
    );
    if let Err(e) = spool_conforms(&run, node, &expected, &calls) {
        problems.push(e);
    }
    if let Err(e) = outputs_hold(run.dir.path(), &BTreeMap::new()) {
        problems.push(e);
    }
    let row = format!("{node:?} {name}: {}", table(&calls));
    if problems.is_empty() {
        Ok(row)
    } else {
        Err(format!(
            "{row}\n  {}\n{}",
            problems.join("\n  "),
            run.printed()
        ))
    }
}

/// The spool: one complete process with no records, the agents of the node, and the
/// counters the SDK resolved for the GPU, each once, with the real dimensions.
fn spool_conforms(
    run: &Run,
    node: Node,
    expected: &Expected,
    calls: &[Call],
) -> Result<(), String> {
    let inspect = run.inspect();
    let process = &inspect["processes"][0];
    if inspect["complete"] != true || inspect["processes"].as_array().map(Vec::len) != Some(1) {
        return Err(format!("not one complete process: {inspect:#}"));
    }
    if inspect["total_records"] != 0 {
        return Err(format!(
            "records without an HSA runtime: {}",
            inspect["records"]
        ));
    }
    let agents = process["agents"].as_array().unwrap();
    match node {
        Node::NoGpu if !agents.is_empty() => {
            return Err(format!("agents without a GPU: {agents:?}"));
        }
        Node::FakeGfx942 => {
            let gpu = agents
                .iter()
                .find(|a| a["type"] == "gpu")
                .ok_or("no GPU agent")?;
            let mut seen = gpu.clone();
            seen.as_object_mut().unwrap().remove("product");
            if seen != fake_gfx942() {
                return Err(format!(
                    "the GPU is {seen}, the topology says {}",
                    fake_gfx942()
                ));
            }
        }
        Node::NoGpu => {}
    }
    let resolved: BTreeSet<String> = process["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    if resolved != expected.counters {
        return Err(format!(
            "counters resolved: {resolved:?}, expected {:?}",
            expected.counters
        ));
    }
    for counter in process["counters"].as_array().unwrap() {
        // Every gfx942 counter is counted per XCC, as many as the topology has.
        let xcc = counter["dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "DIMENSION_XCC");
        if xcc.map(|d| &d["size"]) != Some(&fake_gfx942()["xcc_count"]) {
            return Err(format!("{counter}: not per XCC of the topology"));
        }
    }
    let configs: Vec<&str> = calls
        .iter()
        .filter(|c| c.function == "rocprofiler_create_counter_config")
        .map(|c| c.args.as_str())
        .collect();
    let want = if expected.counters.is_empty() {
        vec![]
    } else {
        vec![format!("n={}", expected.counters.len())]
    };
    let configured: Vec<&str> = configs.iter().filter_map(|a| a.split(' ').nth(1)).collect();
    if configured != want {
        return Err(format!(
            "counter configurations {configs:?}, expected {want:?}"
        ));
    }
    Ok(())
}

/// Reads back every output in `dir` as its format's readers would: records per kind of
/// those named in `records`, none of the others.
fn outputs_hold(dir: &Path, records: &BTreeMap<&str, usize>) -> Result<(), String> {
    let total: usize = records.values().sum();
    let mut traces = Vec::new();
    let mut files = vec![dir.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let ext = path.extension().and_then(OsStr::to_str).unwrap_or("");
        let file = path.strip_prefix(dir).unwrap().display().to_string();
        let wrong = |what: String| format!("{file}: {what}");
        match ext {
            "rfraw" => {}
            "pftrace" => traces.push(path.clone()),
            "db" => {
                let db = rusqlite::Connection::open(&path).map_err(|e| e.to_string())?;
                let count = |view: &str| -> usize {
                    let sql = format!("SELECT count(*) FROM {view}");
                    db.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as usize
                };
                let regions = count("regions") + count("kernels") + count("memory_copies");
                if regions != total {
                    return Err(wrong(format!(
                        "{regions} regions, kernels and copies, not {total}"
                    )));
                }
            }
            "csv" => {
                let rows = support::csv(&path).len();
                let kind = path.file_stem().unwrap().to_str().unwrap();
                let want = records.get(kind).copied().unwrap_or(0);
                if path.parent() != Some(dir.join("summary").as_path()) && rows != want {
                    return Err(wrong(format!("{rows} rows, not {want}")));
                }
            }
            "json" => {
                serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
                    .map_err(|e| wrong(e.to_string()))?;
            }
            "otf2" => {
                let entered = support::otf2_print(&[], &path)
                    .lines()
                    .filter(|l| l.starts_with("ENTER "))
                    .count();
                if entered != total {
                    return Err(wrong(format!("{entered} regions entered, not {total}")));
                }
            }
            // The archive's parts, read through its anchor file.
            "def" | "evt" => {}
            "html" | "md" | "prom" => {
                let text = std::fs::read_to_string(&path).map_err(|e| wrong(e.to_string()))?;
                if text.trim().is_empty() {
                    return Err(wrong("empty".into()));
                }
            }
            "parquet" => {
                use parquet::file::reader::{FileReader, SerializedFileReader};
                let file = std::fs::File::open(&path).unwrap();
                let reader = SerializedFileReader::new(file).map_err(|e| wrong(e.to_string()))?;
                let rows = reader.metadata().file_metadata().num_rows() as usize;
                let table = path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap();
                let want = records.get(table).copied();
                if want.is_some_and(|want| rows != want) {
                    return Err(wrong(format!("{rows} rows, not {want:?}")));
                }
            }
            _ => return Err(wrong("no reader for this output".into())),
        }
    }
    let slices: usize = support::decode_perfetto(&traces)
        .iter()
        .flat_map(|t| t["events"].as_array().unwrap())
        .filter(|e| e["type"] == "B")
        .count();
    if slices != total * traces.len() {
        return Err(format!("{slices} slices in {traces:?}, not {total} each"));
    }
    Ok(())
}

/// Every template and example, on `node`; fails with every case that does not conform.
fn every_pipeline_conforms(node: Node) {
    let started = std::time::Instant::now();
    let results = in_parallel(&pipelines(), 2, |p| conforms(node, p));
    let (ok, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    eprintln!(
        "{node:?}: {} runs in {:.1} s",
        ok.len() + failed.len(),
        started.elapsed().as_secs_f64()
    );
    for row in ok.iter().flatten() {
        eprintln!("{row}");
    }
    let failed: Vec<String> = failed.into_iter().filter_map(Result::err).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn every_template_and_example_on_a_node_without_a_gpu() {
    every_pipeline_conforms(Node::NoGpu);
}

#[test]
fn every_template_and_example_on_the_fake_gfx942() {
    every_pipeline_conforms(Node::FakeGfx942);
}

#[test]
fn roctx_markers_reach_every_sink_through_rocprofiler_register() {
    let kit = Kit::get();
    let run = support::RoctxMarkers::build(kit).run(kit, &[]);
    assert!(run.output.status.success(), "{}", run.printed());
    assert_eq!(run.registrations(), [(2, 2)], "{}", run.printed());
    let refused: Vec<Call> = run
        .calls()
        .into_iter()
        .filter(|c| c.status != SUCCESS)
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(run.inspect()["records"], json!({ "marker": 6 }));
    let dir = run.dir.path();
    outputs_hold(dir, &BTreeMap::from([("marker", 6)])).unwrap();
    // Each call's message, from the marker API's callbacks, in every sink.
    let messages = ["setup done", "step", "step", "step", "io", "io"];
    for (sink, found) in support::marker_messages(dir) {
        assert_eq!(found, support::tally(messages), "{sink}");
    }
    let rows = support::csv(&support::only(dir, "csv/marker.csv"));
    let calls = rows
        .iter()
        .map(|r| format!("{} {}", r["operation"], r["message"]));
    let want = ["roctxMarkA setup done"]
        .into_iter()
        .chain(["roctxThreadRangeA step"; 3])
        .chain(["roctxProcessRangeA io"; 2]);
    assert_eq!(support::tally(calls), support::tally(want));
    // The summary's ranges go by their messages; a mark counts, as rocprofv3 counts it,
    // as a call that takes no time.
    let summary = support::csv(&dir.join("summary/markers.csv"));
    let ranges = support::columns(&summary, ["range", "calls", "total_ns"]);
    assert_eq!(ranges.len(), 3, "{ranges:?}");
    assert_eq!(
        ranges[..2].iter().map(|r| [r[0], r[1]]).collect::<Vec<_>>(),
        [["step", "3"], ["io", "2"]]
    );
    assert_eq!(ranges[2][..2], ["setup done", "1"]);
    assert_eq!(ranges[2][2].parse::<f64>().unwrap(), 0.0);
}

#[test]
fn force_configure_configures_the_tool_once() {
    // rocflow names its tool in ROCP_TOOL_LIBRARIES too: the SDK finds it there and as
    // the forced entry point, and must configure and initialize it once.
    let kit = Kit::get();
    let force = kit.bin("force");
    let run = kit.run(Node::NoGpu, "kernel-trace", &[force.as_os_str()], &[]);
    let log = run.stderr();
    assert!(run.collected_nothing(), "{}", run.printed());
    assert_says(&log, "force: rocprofiler_force_configure -> 0 (Success)");
    assert_says(&log, "[ROCP_TOOL_LIBRARIES] searching");
    assert_eq!(
        log.matches("invoking configure function").count(),
        1,
        "{log}"
    );
    assert_eq!(run.registrations(), [(2, 2)], "{log}");
    assert_eq!(run.inspect()["processes"].as_array().unwrap().len(), 1);
}

/// `pipeline` run with the kit's `force` on the fake gfx942.
fn forced(pipeline: &Path) -> Run {
    let kit = Kit::get();
    let force = kit.bin("force");
    let pipeline = pipeline.to_str().unwrap();
    kit.run(Node::FakeGfx942, pipeline, &[force.as_os_str()], &[])
}

#[test]
fn a_counter_the_gpu_lacks_is_named_and_left_out() {
    // GL2C_HIT is an RDNA counter: the SDK's definitions have it, gfx942 does not.
    let (_dir, pipeline) = with_file(
        "rdna-counter.toml",
        "[pipeline]\nname = \"rdna-counter\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\ncounters.collect = [\"SQ_WAVES\", \"GL2C_HIT\"]\n",
    );
    let run = forced(&pipeline);
    assert!(run.collected_nothing(), "{}", run.printed());
    assert_eq!(
        run.tool_messages(),
        ["counter `GL2C_HIT` is not available on gfx942 (agent 1)"],
        "{}",
        run.printed()
    );
    let configs: Vec<Call> = run
        .calls()
        .into_iter()
        .filter(|c| c.function == "rocprofiler_create_counter_config")
        .collect();
    assert_eq!(configs.len(), 1, "{configs:?}");
    assert!(
        configs[0].args.ends_with(" n=1") && configs[0].status == SUCCESS,
        "{configs:?}"
    );
    let counters = &run.inspect()["processes"][0]["counters"];
    assert_eq!(counters.as_array().unwrap().len(), 1, "{counters}");
    assert_eq!(counters[0]["name"], "SQ_WAVES");
    // A name no definition has is the pipeline's error, before anything runs.
    std::fs::write(
        &pipeline,
        std::fs::read_to_string(&pipeline)
            .unwrap()
            .replace("GL2C_HIT", "SQ_WAVS"),
    )
    .unwrap();
    let run = forced(&pipeline);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.printed());
    assert!(run.stderr().contains("SQ_WAVS"), "{}", run.printed());
    assert!(run.calls().is_empty(), "nothing ran: {}", run.printed());
}

#[test]
fn pc_sampling_with_amds_beta_turned_off_is_refused_as_the_sdk_refuses_it() {
    // The user's own value of the beta variable wins over rocflow's.
    let kit = Kit::get();
    let force = kit.bin("force");
    let off = [(rocflow::sdk::PC_SAMPLING_BETA, "off")];
    let run = kit.run(Node::FakeGfx942, "pc-sampling", &[force.as_os_str()], &off);
    assert!(run.collected_nothing(), "{}", run.printed());
    let query: Vec<String> = (run.calls().into_iter())
        .filter(|c| c.function == PC_SAMPLING_QUERY)
        .map(|c| c.status)
        .collect();
    assert_eq!(query, ["ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED"]);
    assert_eq!(
        run.tool_messages(),
        [
            "context `pc-sampling`: PC sampling on gfx942 is a beta of rocprofiler-sdk, off with ROCPROFILER_PC_SAMPLING_BETA_ENABLED=off (`rocflow run` turns it on unless it is set); it collects nothing"
        ],
        "{}",
        run.printed()
    );
}

#[test]
fn a_domain_newer_than_the_sdk_is_refused_naming_the_release_that_has_it() {
    let (_dir, pipeline) = with_file(
        "hip-events.toml",
        "[pipeline]\nname = \"hip-events\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"events\"\ntracing = [\"kernel_dispatch\", \"hip_event\"]\n",
    );
    let missing = "context `events` traces `hip_event`, which rocprofiler-sdk 1.4.1 (ROCm 10.1) added; the rocprofiler-sdk in use is 1.0.0";
    // The installed library's name says its version: nothing runs.
    let run = forced(&pipeline);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.printed());
    assert_says(run.stderr(), missing);
    assert!(run.calls().is_empty(), "nothing ran: {}", run.printed());
    // A library whose name does not say it: the tool reads the version the SDK configures
    // it with, stays out of the process, and the run fails.
    let kit = Kit::get();
    let unnamed = tempfile::tempdir().unwrap();
    let library = unnamed.path().join("librocprofiler-sdk.so");
    std::fs::copy(kit.root.join("lib/librocprofiler-sdk.so.1.0.0"), &library).unwrap();
    let force = kit.bin("force");
    let register = [("ROCPROFILER_REGISTER_LIBRARY", library.to_str().unwrap())];
    let pipeline = pipeline.to_str().unwrap();
    let run = kit.run(Node::FakeGfx942, pipeline, &[force.as_os_str()], &register);
    assert_eq!(
        run.tool_messages(),
        [format!("{missing}; profiling is off")],
        "{}",
        run.printed()
    );
    assert_eq!(run.output.status.code(), Some(1), "{}", run.printed());
    assert_says(run.stderr(), "could not reach rocflow");
    let contexts = (run.calls().into_iter()).filter(|c| c.function == "rocprofiler_create_context");
    assert_eq!(contexts.count(), 0, "{}", run.printed());
}

#[test]
fn the_simulated_mi300x_is_the_real_gfx942() {
    // Every counter the simulated gfx942 has, collected on both: the same agent
    // properties and, counter by counter, the same dimensions in the same order.
    let scenario: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("examples/sim/mi300x.toml")).unwrap())
            .unwrap();
    let gfx942 = &scenario["agent"][0];
    assert_eq!(gfx942["name"].as_str(), Some("gfx942"));
    let names: Vec<String> = gfx942["counter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{:?}", c["name"].as_str().unwrap()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("all.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[pipeline]\nname = \"all\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\ncounters = {{ collect = [{}], agents = [\"gfx942\"] }}\n",
            names.join(", ")
        ),
    )
    .unwrap();
    let force = Kit::get().bin("force");
    let pipeline = pipeline.to_str().unwrap();
    let real = Kit::get().run(Node::FakeGfx942, pipeline, &[force.as_os_str()], &[]);
    assert!(real.collected_nothing(), "{}", real.printed());
    let out = support::run_on("sim", pipeline, &["/bin/true"], dir.path(), &[]);
    support::assert_success(&out);
    let out = support::rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpu = |inspect: &Value| -> (Value, Vec<(String, Value)>) {
        let process = &inspect["processes"][0];
        let mut agent = process["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "gfx942")
            .unwrap()
            .clone();
        let index = agent["index"].clone();
        agent.as_object_mut().unwrap().remove("product");
        let counters = process["counters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["agent"] == index)
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["dimensions"].clone(),
                )
            })
            .collect();
        (agent, counters)
    };
    let (real, sim) = (gpu(&real.inspect()), gpu(&sim));
    assert_eq!(sim.0, real.0, "agent properties");
    assert_eq!(sim.1.len(), names.len(), "{:?}", sim.1);
    assert_eq!(sim.1, real.1, "counter dimensions");
}

#[test]
fn a_gpu_run_says_which_sdk_and_why_nothing_connected() {
    // The kit's SDK is on the loader path, as a ROCm install may be; /bin/true loads no
    // ROCm runtime, so it never loads the SDK.
    let kit = Kit::get();
    let run = kit.run(Node::NoGpu, "kernel-trace", &[OsStr::new("/bin/true")], &[]);
    // A run that profiled nothing fails, and leaves no empty outputs behind.
    assert_eq!(run.output.status.code(), Some(1), "{}", run.printed());
    let written: Vec<_> = std::fs::read_dir(run.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(written, ["run.rfraw"], "{}", run.printed());
    let sdk = kit.root.join("lib/librocprofiler-sdk.so.1.0.0");
    let said = format!(
        "note: rocprofiler-sdk 1.0.0 at {} (found through LD_LIBRARY_PATH)",
        sdk.display()
    );
    assert!(run.stderr().contains(&said), "{}", run.printed());
    assert!(
        run.stderr().contains(
            "error: no process connected, nothing was profiled and no outputs were written: `/bin/true` did not load rocprofiler-sdk"
        ),
        "{}",
        run.printed()
    );
}

#[test]
fn collection_periods_start_and_stop_until_the_sdk_finalizes() {
    // always-on's periods, short, in an application that lives a second: each start and
    // stop succeeds; those that come as the SDK finalizes (the process is exiting) may be
    // refused, a start with CONFIGURATION_LOCKED and a stop with CONTEXT_NOT_FOUND (the
    // SDK has destroyed the context), at the end only, and are no failure to report.
    let kit = Kit::get();
    let force = kit.bin("force");
    let app = [force.as_os_str(), OsStr::new("1")];
    let set = ["--set", "collect_for=100ms", "--set", "pause_for=100ms"];
    let run = kit.run_with(Node::FakeGfx942, "always-on", &set, &app, &[]);
    assert!(run.collected_nothing(), "{}", run.printed());
    assert_eq!(
        run.tool_messages(),
        Vec::<String>::new(),
        "{}",
        run.printed()
    );
    let toggles: Vec<Call> = run
        .calls()
        .into_iter()
        .filter(|c| c.function.ends_with("_context") && c.function != "rocprofiler_create_context")
        .collect();
    let succeeded = toggles.iter().take_while(|c| c.status == SUCCESS).count();
    assert!(succeeded >= 4, "periods of 100 ms in a second: {toggles:?}");
    let finalizing = |c: &Call| match c.function.as_str() {
        "rocprofiler_start_context" => c.status == "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED",
        "rocprofiler_stop_context" => c.status == "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND",
        _ => false,
    };
    let late = &toggles[succeeded..];
    assert!(late.iter().all(finalizing), "{toggles:?}");
}

#[test]
fn device_counting_is_configured_and_read_as_the_sdk_says() {
    // A process that lives a second: the sampler reads every 10 ms. Without an HSA
    // runtime the SDK accepts the service, starts the context saying HSA is not loaded,
    // and answers each read so; the tool waits for the runtime and says nothing.
    let kit = Kit::get();
    let force = kit.bin("force");
    let app = [force.as_os_str(), OsStr::new("1")];
    let run = kit.run_with(Node::FakeGfx942, "device-counters", &[], &app, &[]);
    assert!(run.collected_nothing(), "{}", run.printed());
    assert_eq!(
        run.tool_messages(),
        Vec::<String>::new(),
        "{}",
        run.printed()
    );
    let calls = run.calls();
    let statuses = |function: &str| -> Vec<String> {
        (calls.iter())
            .filter(|c| c.function == function)
            .map(|c| c.status.clone())
            .collect()
    };
    assert_eq!(
        statuses("rocprofiler_configure_device_counting_service"),
        [SUCCESS],
        "{}",
        run.printed()
    );
    let starts = statuses("rocprofiler_start_context");
    assert_eq!(
        starts.iter().filter(|s| *s == HSA_NOT_LOADED).count(),
        1,
        "{starts:?}"
    );
    let reads = statuses(SAMPLE);
    assert!(reads.len() >= 5, "a second of 10 ms reads: {reads:?}");
    // A read the sampling thread makes while the SDK finalizes gets FINALIZED: the last one
    // may; every read before it gets the fake node's answer.
    let before_finalizing = reads
        .strip_suffix(&[FINALIZED.to_owned()])
        .unwrap_or(&reads);
    assert!(
        before_finalizing.iter().all(|s| s == HSA_NOT_LOADED),
        "{reads:?}"
    );
}

/// The hardware counters of `block` on gfx942, as the kit's definitions give them.
fn gfx942_block(block: &str) -> Vec<String> {
    let defs = rocflow_counters::Definitions::load(&Kit::get().metrics().join("counter_defs.yaml"))
        .unwrap();
    let of_block = |c: &&rocflow_counters::Counter| {
        matches!(
            &c.definition_for("gfx942").map(|d| &d.kind),
            Some(rocflow_counters::DefinitionKind::Hardware { block: b, .. }) if b == block
        )
    };
    (defs.counters().iter())
        .filter(of_block)
        .map(|c| c.name.clone())
        .collect()
}

/// What the tool says creating a configuration of `counters` (of `block`) on the real
/// gfx942 and on the simulated one, each run in a directory of its own. rocflow is given
/// definitions that put each counter in a block of its own, so that it plans one pass and
/// the SDKs judge the configuration.
fn configured(block: &str, counters: &[String]) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut defs = String::from("schema-version: 1\n");
    let mut scenario = String::from(
        "[scenario]\nname = \"limits\"\nseed = 1\nthreads = 1\niterations = 1\n\
         [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = 304\n",
    );
    for (i, name) in counters.iter().enumerate() {
        defs.push_str(&format!(
            "{name}:\n  architectures:\n    gfx942:\n      block: UNPLANNED{i}\n      event: {i}\n  description: x\n"
        ));
        scenario.push_str(&format!(
            "[[agent.counter]]\nname = \"{name}\"\nblock = \"{block}\"\n"
        ));
    }
    let collect: Vec<String> = counters.iter().map(|c| format!("\"{c}\"")).collect();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(dir.path().join("defs.yaml"), defs).unwrap();
    std::fs::write(dir.path().join("scenario.toml"), scenario).unwrap();
    std::fs::write(
        &pipeline,
        format!(
            "[pipeline]\nname = \"limits\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"c\"\n\
             tracing = [\"kernel_dispatch\"]\n[context.counters]\ndefinitions = \"defs.yaml\"\n\
             collect = [{}]\n",
            collect.join(", ")
        ),
    )
    .unwrap();
    let real = forced(&pipeline);
    assert!(real.collected_nothing(), "{}", real.printed());
    let configs: Vec<Call> = (real.calls().into_iter())
        .filter(|c| c.function == "rocprofiler_create_counter_config")
        .collect();
    assert_eq!(configs.len(), 1, "{}", real.printed());
    let sim = support::run_on(
        "sim:scenario.toml",
        "p.toml",
        &["/bin/true"],
        dir.path(),
        &[],
    );
    // The scenario has no kernel: the run collects nothing, and only its messages count.
    assert!(
        support::collected_nothing(&sim),
        "{}",
        support::text(&sim.stderr)
    );
    let sim = (support::text(&sim.stderr).lines())
        .filter_map(|l| l.strip_prefix("rocflow: "))
        .map(str::to_owned)
        .collect();
    (real.tool_messages(), sim)
}

#[test]
fn each_block_of_the_gfx942_counts_what_the_simulated_one_counts() {
    // Every block gfx942's hardware counters use, at its limit and one beyond (where it
    // has that many counters).
    let blocks = [
        "CPC", "CPF", "GRBM", "SPI", "SQ", "TA", "TCA", "TCC", "TCP", "TD",
    ];
    let cases: Vec<(&str, Vec<String>)> = blocks
        .iter()
        .flat_map(|&block| {
            let counters = gfx942_block(block);
            assert!(!counters.is_empty(), "no {block} counters");
            let limit = rocflow_core::sdk::limits::block_counters(block).unwrap() as usize;
            [limit, limit + 1]
                .into_iter()
                .filter(|&n| n <= counters.len())
                .map(|n| (block, counters[..n].to_vec()))
                .collect::<Vec<_>>()
        })
        .collect();
    let answers = in_parallel(&cases, 4, |(block, counters)| configured(block, counters));
    for ((block, counters), (real, sim)) in cases.iter().zip(answers) {
        let limit = rocflow_core::sdk::limits::block_counters(block).unwrap() as usize;
        let refused = "context `c`: creating the counter configuration for gfx942: Request exceeds the capabilities of the hardware to collect (status 38); it collects nothing";
        let want: &[&str] = if counters.len() > limit {
            &[refused]
        } else {
            &[]
        };
        assert_eq!(
            real,
            want,
            "{} {block} counters on the real SDK",
            counters.len()
        );
        assert_eq!(
            sim,
            real,
            "{} {block} counters on the simulated SDK",
            counters.len()
        );
    }
}

/// `rocflow agents --device rocm` asks AMD's SDK itself: on the fake gfx942 it lists the
/// CPU and the GPU as the kit's topology describes them, with the counters its definitions
/// give gfx942, each with its dimensions.
#[test]
fn agents_lists_the_fake_gfx942_and_its_counters_as_the_sdk_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["agents", "--device", "rocm", "--counters", "--json"];
    let output = Kit::get()
        .rocflow(Node::FakeGfx942, dir.path())
        .args(args)
        .output()
        .unwrap();
    support::assert_success(&output);
    let agents: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let types: Vec<&str> = agents.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["cpu", "gpu"]);
    let (gpu, fake) = (&agents[1], fake_gfx942());
    assert_eq!(gpu["name"], fake["name"]);
    assert_eq!(gpu["compute_units"], fake["cu_count"]);
    assert_eq!(gpu["simds"], fake["simd_count"]);
    assert_eq!(gpu["xccs"], fake["xcc_count"]);
    assert_eq!(gpu["wave_front_size"], fake["wave_front_size"]);
    assert_eq!(gpu["max_clock_mhz"], fake["max_engine_clk_mhz"]);
    assert_eq!(
        gpu["lds_kib"].as_u64().unwrap() * 1024,
        fake["lds_bytes_per_cu"].as_u64().unwrap()
    );
    let counters = gpu["counters"].as_array().unwrap();
    let names: BTreeSet<String> = (counters.iter())
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    // The definitions' counters, and the agent's properties as constants.
    assert!(names.is_superset(gfx942_counters()));
    for extra in counters
        .iter()
        .filter(|c| !gfx942_counters().contains(c["name"].as_str().unwrap()))
    {
        assert_eq!(extra["kind"], "constant", "{extra}");
    }
    let derived = counters.iter().find(|c| c["name"] == "GPU_UTIL").unwrap();
    assert_eq!(derived["kind"], "derived");
    let waves = counters.iter().find(|c| c["name"] == "SQ_WAVES").unwrap();
    let dimensions: Vec<&str> = (waves["dimensions"].as_array().unwrap().iter())
        .map(|d| d[0].as_str().unwrap())
        .collect();
    assert!(dimensions.contains(&"DIMENSION_XCC"), "{dimensions:?}");
}

/// With the kit's own counter definitions, the simulated MI300X offers what AMD's SDK
/// offers on the fake gfx942 (its agent properties aside, which the SDK lists as constant
/// counters): every counter, of the same kind and with the same dimensions in the same
/// order.
#[test]
fn the_simulated_mi300x_offers_every_counter_of_the_real_gfx942() {
    let dir = tempfile::tempdir().unwrap();
    let listed = |output: Output| -> BTreeMap<String, (String, Value)> {
        support::assert_success(&output);
        let agents: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
        let gpu = agents.iter().find(|a| a["name"] == "gfx942").unwrap();
        (gpu["counters"].as_array().unwrap().iter())
            .filter(|c| c["kind"] != "constant")
            .map(|c| {
                let name = c["name"].as_str().unwrap().to_owned();
                (name, (c["kind"].to_string(), c["dimensions"].clone()))
            })
            .collect()
    };
    let args = ["agents", "--device", "rocm", "--counters", "--json"];
    let real = listed(
        Kit::get()
            .rocflow(Node::FakeGfx942, dir.path())
            .args(args)
            .output()
            .unwrap(),
    );
    // The kit's topology has 32 shader arrays, one per shader engine.
    let fake = fake_gfx942();
    let scenario = format!(
        "[scenario]\nname = \"fake-gfx942\"\nthreads = 1\niterations = 1\ncounter_definitions = {:?}\n\
         [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = {}\nxcc = {}\nshader_engines = 32\n",
        Kit::get().metrics().join("counter_defs.yaml").display(),
        fake["cu_count"],
        fake["xcc_count"],
    );
    std::fs::write(dir.path().join("scenario.toml"), scenario).unwrap();
    let args = [
        "agents",
        "--device",
        "sim:scenario.toml",
        "--counters",
        "--json",
    ];
    let sim = listed(support::rocflow(&args, dir.path(), &[]));
    assert_eq!(real.len(), gfx942_counters().len());
    let differ: Vec<String> = (real.keys().chain(sim.keys()))
        .filter(|name| real.get(*name) != sim.get(*name))
        .map(|name| {
            format!(
                "{name}: real {:?}, simulated {:?}",
                real.get(name),
                sim.get(name)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn thread_trace_is_configured_on_the_gfx942_as_the_sdk_takes_it() {
    let (_dir, pipeline) = with_file(
        "att.toml",
        "[pipeline]\nname = \"att\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"att\"\ntracing = [\"kernel_dispatch\"]\n[context.thread_trace]\npath = \"att\"\nshader_engine_mask = 0x3\nsimd_select = 0x5\nperfcounters = [{ name = \"SQ_WAVES\", simd_mask = 0x3 }]\nperfcounter_period = 4\nserialize_all = true\n",
    );
    let run = forced(&pipeline);
    assert!(run.collected_nothing(), "{}", run.printed());
    assert!(run.tool_messages().is_empty(), "{}", run.printed());
    let configured: Vec<Call> = (run.calls().into_iter())
        .filter(|c| c.function == "rocprofiler_configure_dispatch_thread_trace_service")
        .collect();
    // One GPU: the five settings, the perfcounter period and SQ_WAVES.
    assert_eq!(configured.len(), 1, "{}", run.printed());
    assert!(configured[0].args.ends_with(" nparams=7"), "{configured:?}");
    assert_eq!(configured[0].status, SUCCESS, "{configured:?}");
    assert!(
        run.stderr().contains("0 traces of 0 dispatches"),
        "{}",
        run.printed()
    );
}

/// The device service takes the dispatch service's parameters, `serialize_all` off, and
/// no dispatch callback: AMD's SDK accepts rocflow's call on the gfx942.
#[test]
fn a_device_thread_trace_is_configured_on_the_gfx942_as_the_sdk_takes_it() {
    let (_dir, pipeline) = with_file(
        "att.toml",
        "[pipeline]\nname = \"att\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"att\"\ntracing = [\"kernel_dispatch\"]\n[context.thread_trace]\nmode = \"device\"\npath = \"att\"\nshader_engine_mask = 0x3\nperfcounters = [\"SQ_WAVES\"]\nperfcounter_period = 4\n",
    );
    let run = forced(&pipeline);
    assert!(run.collected_nothing(), "{}", run.printed());
    assert!(run.tool_messages().is_empty(), "{}", run.printed());
    let calls = run.calls();
    let configured: Vec<&Call> = (calls.iter())
        .filter(|c| c.function == "rocprofiler_configure_device_thread_trace_service")
        .collect();
    assert_eq!(configured.len(), 1, "{}", run.printed());
    assert!(configured[0].args.ends_with(" nparams=7"), "{configured:?}");
    assert_eq!(configured[0].status, SUCCESS, "{configured:?}");
    assert!(
        !(calls.iter())
            .any(|c| c.function == "rocprofiler_configure_dispatch_thread_trace_service"),
        "{}",
        run.printed()
    );
}

/// The decoder API answers as the real SDK does: it loads a decoder library from a folder
/// (the simulated one, under AMD's name, is taken), says NOT_AVAILABLE where the folder has
/// none and INCOMPATIBLE_ABI where the library lacks the decoder's functions.
#[test]
fn the_simulated_decoder_api_answers_as_amds() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("decoder_create");
    let cc = std::process::Command::new("cc")
        .arg("-o")
        .arg(&program)
        .arg(repo().join("tests/apps/decoder_create.c"))
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let decoder = support::sim_decoder_folder(dir.path());
    let (empty, foreign) = (dir.path().join("empty"), dir.path().join("foreign"));
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::create_dir_all(&foreign).unwrap();
    let kit = Kit::get();
    // A library without the decoder's functions: one of the kit's.
    let other = kit.root.join("lib/libamd_comgr_shim.so");
    std::fs::copy(other, foreign.join(rocflow::thread_trace::DECODER_LIBRARY)).unwrap();
    let statuses = |sdk: &Path| {
        let run = std::process::Command::new(&program)
            .arg(sdk)
            .args([&decoder, &empty, &foreign])
            .env("LD_LIBRARY_PATH", kit.library_path())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        String::from_utf8(run.stdout).unwrap()
    };
    let real = statuses(&kit.links.join("librocprofiler-sdk.so.1"));
    // SUCCESS, NOT_AVAILABLE, INCOMPATIBLE_ABI.
    assert_eq!(real, "0\n37\n18\n");
    assert_eq!(statuses(&support::sim_sdk()), real);
}

#[test]
fn kernel_replay_is_refused_by_the_real_1_0_sdk_which_lists_no_such_kind() {
    let (_dir, pipeline) = with_file(
        "kernel-replay.toml",
        "[pipeline]\nname = \"kernel-replay\"\n[params]\noutput_dir = \"out\"\n[[context]]\nname = \"trace\"\ntracing = [\"kernel_dispatch\"]\n[[context]]\nname = \"counters\"\n[context.counters]\ncollect = [\"SQ_WAVES\", \"GRBM_COUNT\"]\nper_pass = 1\nreplay = \"kernel\"\n",
    );
    // The installed library's name says its version: nothing runs.
    let run = forced(&pipeline);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.printed());
    assert_says(
        run.stderr(),
        "context `counters` replays each dispatch for its counter passes, which rocprofiler-sdk 1.4.1 (ROCm 10.1) added; the rocprofiler-sdk in use is 1.0.0",
    );
    assert!(run.calls().is_empty(), "nothing ran: {}", run.printed());
    // A library whose name does not say it: the tool looks the kind up by its name among
    // those the SDK lists, finds none, and the context that replays collects nothing;
    // the other context still collects.
    let kit = Kit::get();
    let unnamed = tempfile::tempdir().unwrap();
    let library = unnamed.path().join("librocprofiler-sdk.so");
    std::fs::copy(kit.root.join("lib/librocprofiler-sdk.so.1.0.0"), &library).unwrap();
    let force = kit.bin("force");
    let register = [("ROCPROFILER_REGISTER_LIBRARY", library.to_str().unwrap())];
    let pipeline = pipeline.to_str().unwrap();
    let run = kit.run(Node::FakeGfx942, pipeline, &[force.as_os_str()], &register);
    assert_eq!(
        run.tool_messages(),
        [
            "context `counters`: the rocprofiler-sdk in this process has no kernel replay (it lists no callback tracing kind `KERNEL_REPLAY`); rocprofiler-sdk 1.4.1 (ROCm 10.1) added it; it collects nothing"
        ],
        "{}",
        run.printed()
    );
    let traced = (run.calls().into_iter()).filter(|c| {
        c.function == "rocprofiler_configure_buffer_tracing_service" && c.status == SUCCESS
    });
    assert_eq!(traced.count(), 1, "{}", run.printed());
    assert!(
        !run.calls()
            .iter()
            .any(|c| c.function.contains("dispatch_counting")),
        "the replaying context counts nothing: {}",
        run.printed()
    );
    // The control context and `trace` run; `counters` was made, and never started.
    assert_eq!(run.registrations(), [(3, 2)], "{}", run.printed());
}
