//! The `json` sink writes the document `rocprofv3 --output-format json` writes, as AMD's
//! own test scripts read it (the `validate.py` files of rocprofiler-sdk's
//! `tests/rocprofv3`: `data["rocprofiler-sdk-tool"]`, records' `kind` and `operation`
//! looked up in `strings.buffer_records`, kernels in `kernel_symbols[kernel_id]`, agents by
//! `id.handle`, counters by `id.handle`), and holding what the simulated device's scenario
//! says the run did.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::truth::{self, Collects, Part, Scenario};
use support::{assert_success, repo, run_on};

/// Everything the default scenario does, traced, with counters.
const PIPELINE: &str = r#"
[pipeline]
name = "rocprofv3-json"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy", "memory_allocation", "marker_core_range_api"]
[[context]]
name = "counters"
counters.collect = ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
[[sink]]
name = "json"
kind = "json"
path = "out/{pid}_results.json"
"#;

/// What the pipeline collects, as the truth's terms say it.
fn collects() -> Collects {
    Collects::everything(&["SQ_WAVES", "GRBM_GUI_ACTIVE"])
}

/// Runs `pipeline` on the simulated MI300X; the directory and the documents written.
fn run(pipeline: &str) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir.path(), &[]);
    assert_success(&output);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    (dir, files)
}

/// The process's entry of a document, as AMD's `collapse_dict_list` gives it to scripts:
/// the document must be one key holding one entry.
fn process(file: &Path) -> Value {
    let document: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let top = document.as_object().unwrap();
    assert_eq!(top.keys().collect::<Vec<_>>(), ["rocprofiler-sdk-tool"]);
    let [process] = top["rocprofiler-sdk-tool"].as_array().unwrap().as_slice() else {
        panic!("one process per document")
    };
    process.clone()
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is no unsigned number"))
}

/// A record's kind by name, as the scripts look it up.
fn kind<'a>(data: &'a Value, record: &Value) -> &'a str {
    data["strings"]["buffer_records"][u(&record["kind"]) as usize]["kind"]
        .as_str()
        .unwrap()
}

fn operation<'a>(data: &'a Value, record: &Value) -> &'a str {
    let kind = &data["strings"]["buffer_records"][u(&record["kind"]) as usize];
    kind["operations"][u(&record["operation"]) as usize]
        .as_str()
        .unwrap()
}

#[test]
fn the_document_is_rocprofv3s_and_holds_the_runs_records() {
    let (_dir, files) = run(PIPELINE);
    let [file] = files.as_slice() else {
        panic!("{files:?}")
    };
    let name = file.file_name().unwrap().to_str().unwrap();
    let pid: u64 = name.strip_suffix("_results.json").unwrap().parse().unwrap();
    let data = process(file);
    let scenario = Scenario::read(&repo().join("examples/sim/mi300x.toml"));

    let metadata = &data["metadata"];
    assert_eq!(u(&metadata["pid"]), pid);
    assert!(u(&metadata["init_time"]) <= u(&metadata["fini_time"]));
    assert!(metadata["command"][0].as_str().unwrap().ends_with("sleep"));
    assert!(!metadata["node"]["hostname"].as_str().unwrap().is_empty());

    // Agents: the SDK's struct, a CPU and the scenario's GPUs.
    let agents = data["agents"].as_array().unwrap();
    let gpus: Vec<&Value> = agents.iter().filter(|a| a["type"] == 2).collect();
    assert_eq!(gpus.len(), scenario.agents.len());
    for (gpu, agent) in gpus.iter().zip(&scenario.agents) {
        assert_eq!(gpu["name"], agent.name.as_str());
        assert!(u(&gpu["simd_count"]) > 0 && u(&gpu["max_waves_per_simd"]) > 0);
        assert!(u(&gpu["id"]["handle"]) > 0);
    }
    let agent = |id: &Value| {
        (agents.iter())
            .find(|a| a["id"]["handle"] == id["handle"])
            .unwrap_or_else(|| panic!("no agent {id}"))
    };

    // Kernel dispatches (`tracing/validate.py`'s `test_kernel_trace_json`): one per
    // kernel, thread and iteration, named through `kernel_symbols`.
    let dispatches = data["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap();
    assert_eq!(
        dispatches.len() as u64,
        scenario.repeats() * scenario.kernels.len() as u64
    );
    let mut ids = BTreeSet::new();
    for dispatch in dispatches {
        assert_eq!(kind(&data, dispatch), "KERNEL_DISPATCH");
        assert_eq!(operation(&data, dispatch), "KERNEL_DISPATCH_COMPLETE");
        assert!(u(&dispatch["correlation_id"]["internal"]) > 0);
        assert!(u(&dispatch["end_timestamp"]) >= u(&dispatch["start_timestamp"]));
        let info = &dispatch["dispatch_info"];
        assert_eq!(agent(&info["agent_id"])["type"], 2);
        assert!(u(&info["queue_id"]["handle"]) > 0);
        let symbol = &data["kernel_symbols"][u(&info["kernel_id"]) as usize];
        assert_eq!(symbol["kernel_id"], info["kernel_id"]);
        let name = symbol["formatted_kernel_name"].as_str().unwrap();
        let kernel = scenario.kernel(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(symbol["kernel_name"], kernel.mangled.as_str());
        let size = |d: &Value| [u(&d["x"]), u(&d["y"]), u(&d["z"])];
        assert_eq!(size(&info["grid_size"]), kernel.grid);
        assert_eq!(size(&info["workgroup_size"]), kernel.workgroup);
        assert_eq!(dispatch["stream_id"]["handle"], 0);
        assert!(
            ids.insert(u(&info["dispatch_id"])),
            "dispatch ids are unique"
        );
    }
    // rocprofv3 adds kernel 0, named "0".
    assert_eq!(data["kernel_symbols"][0]["formatted_kernel_name"], "0");

    // API calls (`test_hsa_api_trace_json`): named through `strings`, one correlation id
    // each.
    for (key, kinds) in [
        ("hsa_api", &["HSA_CORE_API"][..]),
        ("hip_api", &["HIP_RUNTIME_API", "HIP_RUNTIME_API_EXT"][..]),
    ] {
        let calls = data["buffer_records"][key].as_array().unwrap();
        assert!(!calls.is_empty(), "{key}");
        let mut correlations = BTreeSet::new();
        for call in calls {
            assert!(kinds.contains(&kind(&data, call)), "{call}");
            assert!(u(&call["end_timestamp"]) >= u(&call["start_timestamp"]));
            assert!(correlations.insert(u(&call["correlation_id"]["internal"])));
        }
    }

    // Copies (`test_memory_copy_json_trace`): between agents of the direction's types.
    let copies = data["buffer_records"]["memory_copy"].as_array().unwrap();
    assert!(!copies.is_empty());
    for copy in copies {
        assert_eq!(kind(&data, copy), "MEMORY_COPY");
        let types = (
            &agent(&copy["src_agent_id"])["type"],
            &agent(&copy["dst_agent_id"])["type"],
        );
        match operation(&data, copy) {
            "MEMORY_COPY_HOST_TO_DEVICE" => assert_eq!(types, (&1.into(), &2.into())),
            "MEMORY_COPY_DEVICE_TO_HOST" => assert_eq!(types, (&2.into(), &1.into())),
            _ => {}
        }
    }
    let allocations = data["buffer_records"]["memory_allocation"]
        .as_array()
        .unwrap();
    for allocation in allocations {
        let address = allocation["address"].as_str().unwrap();
        assert!(
            address.starts_with("0x") && address.len() == 18,
            "{address}"
        );
    }

    // Markers (`test_marker_api_trace_json`), their messages by correlation id.
    let messages: BTreeMap<u64, &str> = (data["strings"]["marker_api"].as_array().unwrap())
        .iter()
        .map(|e| (u(&e["key"]), e["value"].as_str().unwrap()))
        .collect();
    let markers = data["buffer_records"]["marker_api"].as_array().unwrap();
    assert_eq!(markers.len() as u64, scenario.repeats());
    for marker in markers {
        assert_eq!(kind(&data, marker), "MARKER_CORE_RANGE_API");
        let message = messages[&u(&marker["correlation_id"]["internal"])];
        assert_eq!(Some(message), scenario.marker.as_deref());
    }

    // Counters (`counter-collection/input1/validate.py`): each entry's values name a
    // counter of `counters`, its dispatch is the traced one
    // (`tracing-plus-counter-collection`'s checks).
    let counters = data["counters"].as_array().unwrap();
    let by_dispatch: BTreeMap<u64, &Value> = (dispatches.iter())
        .map(|d| (u(&d["dispatch_info"]["dispatch_id"]), d))
        .collect();
    let entries = data["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), dispatches.len());
    for entry in entries {
        let dispatch_data = &entry["dispatch_data"];
        let id = u(&dispatch_data["dispatch_info"]["dispatch_id"]);
        let traced = by_dispatch[&id];
        assert_eq!(dispatch_data["dispatch_info"], traced["dispatch_info"]);
        for key in ["correlation_id", "start_timestamp", "end_timestamp"] {
            assert_eq!(dispatch_data[key], traced[key], "{key}");
        }
        assert_eq!(entry["thread_id"], traced["thread_id"]);
        for record in entry["records"].as_array().unwrap() {
            let counter = (counters.iter())
                .find(|c| c["id"]["handle"] == record["counter_id"]["handle"])
                .unwrap_or_else(|| panic!("{record}"));
            let name = counter["name"].as_str().unwrap();
            assert!(["SQ_WAVES", "GRBM_GUI_ACTIVE"].contains(&name), "{name}");
        }
    }

    // Every count and sum the scenario says, through the documents alone.
    let (seen, dispatches) = truth::rocprofv3_json(&files);
    let want = scenario.truth(&collects(), 1, &dispatches);
    let differences = want.differences(&seen, &Part::ALL, 1e-9);
    assert!(differences.is_empty(), "{differences:#?}");

    // The summary: each domain's calls, as many as its records.
    let summary = data["summary"].as_array().unwrap();
    let domain = |name: &str| summary.iter().find(|d| d["domain"] == name).unwrap();
    assert_eq!(
        u(&domain("KERNEL_DISPATCH")["stats"]["count"]),
        dispatches.values().flatten().count() as u64
    );
    assert_eq!(
        u(&domain("MARKER_API")["stats"]["count"]),
        scenario.repeats()
    );
}

/// The document reads with Python's `json` (which keeps the order of keys: rocprofv3's),
/// and AMD's way of reading it works: the one process's entry, kernel names through
/// `kernel_symbols`.
#[test]
fn python_reads_the_document_as_amds_scripts_do() {
    let (_dir, files) = run(PIPELINE);
    let script = r#"
import json, sys
data = json.load(open(sys.argv[1]))
assert list(data.keys()) == ["rocprofiler-sdk-tool"] and len(data["rocprofiler-sdk-tool"]) == 1
data = data["rocprofiler-sdk-tool"][0]
# The sections rocprofv3 writes, in its order.
assert list(data.keys()) == ["metadata", "agents", "counters", "strings", "code_objects",
    "kernel_symbols", "host_functions", "summary", "callback_records", "buffer_records"], list(data.keys())
assert list(data["buffer_records"].keys()) == ["kernel_dispatch", "hip_api", "hsa_api",
    "marker_api", "rccl_api", "memory_copy", "memory_allocation", "scratch_memory",
    "rocdecode_api", "rocjpeg_api", "pc_sample_host_trap", "pc_sample_stochastic"]
names = set()
for dispatch in data["buffer_records"]["kernel_dispatch"]:
    assert data["strings"]["buffer_records"][dispatch["kind"]]["kind"] == "KERNEL_DISPATCH"
    names.add(data["kernel_symbols"][dispatch["dispatch_info"]["kernel_id"]]["formatted_kernel_name"])
print(len(data["buffer_records"]["kernel_dispatch"]), len(names))
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&files[0])
        .output()
        .expect("python3 runs");
    assert_success(&output);
    let scenario = Scenario::read(&repo().join("examples/sim/mi300x.toml"));
    let kernels = scenario.kernels.len() as u64;
    assert_eq!(
        String::from_utf8(output.stdout).unwrap().trim(),
        format!("{} {kernels}", scenario.repeats() * kernels)
    );
}

/// Processes at one path share one document, an entry each, as rocprofv3's array has
/// room for.
#[test]
fn processes_at_one_path_are_entries_of_one_document() {
    let pipeline = PIPELINE.replace("out/{pid}_results.json", "out/results.json");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let app = support::sim_app();
    let output = run_on(
        "sim",
        "p.toml",
        &[app.to_str().unwrap(), "fork", "1"],
        dir.path(),
        &[],
    );
    assert_success(&output);
    let path = dir.path().join("out/results.json");
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let entries = document["rocprofiler-sdk-tool"].as_array().unwrap();
    let pids: BTreeSet<u64> = entries.iter().map(|e| u(&e["metadata"]["pid"])).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let scenario = Scenario::read(&repo().join("examples/sim/mi300x.toml"));
    for entry in entries {
        let dispatches = entry["buffer_records"]["kernel_dispatch"]
            .as_array()
            .unwrap();
        assert_eq!(
            dispatches.len() as u64,
            scenario.repeats() * scenario.kernels.len() as u64
        );
    }
    // Nothing but the document is left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(left.len(), 1);
}

/// Asks AMD's real rocprofiler-sdk (the kit in `../shared/realsdk`) for its names of
/// tracing kinds and operations, laid out as `strings` lays them out.
const SDK_NAMES: &str = r#"
import ctypes, json, os
sdk = ctypes.CDLL("librocprofiler-sdk.so.1", mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
KIND = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
OPERATION = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
def names(tracing):
    kinds = []
    def query(what, *args):
        name = ctypes.c_char_p()
        call = getattr(sdk, f"rocprofiler_query_{tracing}_tracing_{what}_name")
        return name.value.decode() if call(*args, ctypes.byref(name), None) == 0 and name.value else ""
    def operation(kind, op, _):
        ops = kinds[kind]["operations"]
        ops.extend([""] * (op + 1 - len(ops)))
        ops[op] = query("kind_operation", kind, op)
        return 0
    on_operation = OPERATION(operation)
    def kind(k, _):
        kinds.extend({"kind": "", "operations": []} for _ in range(k + 1 - len(kinds)))
        kinds[k]["kind"] = query("kind", k)
        getattr(sdk, f"rocprofiler_iterate_{tracing}_tracing_kind_operations")(k, on_operation, None)
        return 0
    on_kind = KIND(kind)
    assert getattr(sdk, f"rocprofiler_iterate_{tracing}_tracing_kinds")(on_kind, None) == 0
    return kinds
print(json.dumps({"callback_records": names("callback"), "buffer_records": names("buffer")}))
"#;

/// `strings.buffer_records` and `strings.callback_records` are what the real SDK answers
/// rocprofv3 when it asks for them, kind by kind and operation by operation.
#[test]
fn strings_are_the_names_the_real_sdk_gives() {
    let kit = support::kit::Kit::get();
    let mut path = kit.links.clone().into_os_string();
    path.push(":");
    path.push(kit.root.join("lib"));
    let output = std::process::Command::new("python3")
        .args(["-c", SDK_NAMES])
        .env("LD_LIBRARY_PATH", path)
        .output()
        .expect("python3 runs");
    assert_success(&output);
    let sdk: Value = serde_json::from_slice(&output.stdout).unwrap();
    let (_dir, files) = run(PIPELINE);
    let data = process(&files[0]);
    for key in ["buffer_records", "callback_records"] {
        let ours = data["strings"][key].as_array().unwrap();
        let theirs = sdk[key].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{key}");
        for (value, (ours, theirs)) in ours.iter().zip(theirs).enumerate() {
            assert_eq!(ours["kind"], theirs["kind"], "{key}[{value}]");
            let operations = |entry: &Value| entry["operations"].as_array().unwrap().clone();
            let (ours, theirs) = (operations(ours), operations(theirs));
            let differ = (ours.iter().zip(&theirs)).position(|(a, b)| a != b);
            assert_eq!(differ, None, "{key}[{value}]: {ours:?} / {theirs:?}");
            assert_eq!(ours.len(), theirs.len(), "{key}[{value}]");
        }
    }
}
