//! The CSV sink's `rocprofv3` flavour writes rocprofv3's files: their names and where
//! they go (`<output_directory>/<output_file>_<table>.csv`, the path a prefix), their
//! columns in their order, their quoting and value formats, their values against the
//! scenario's truth, and agents named in each `--agent-index` form. The expected headers
//! are facts read from rocprofv3's writer, `projects/rocprofiler-sdk/source/lib/output/
//! generateCSV.cpp` (with `csv.hpp` for the quoting, `statistics.cpp` for the statistics'
//! formats, `output_stream.cpp` for the names, `metadata.cpp` for the agent forms) in
//! ROCm/rocm-systems at commit 1b1610fc; the real files in `../shared/data` check them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use support::truth::{self, Collects, Dispatches, Part, Scenario};
use support::{assert_success, csv, run_on, shared};

/// The columns rocprofv3 writes, by file (`generateCSV.cpp`: the header array each
/// `csv_output_file` is opened with; the statistics files' in `get_stats_output_file`).
const HEADERS: &[(&str, &[&str])] = &[
    (
        "kernel_trace",
        &[
            "Kind",
            "Agent_Id",
            "Queue_Id",
            "Stream_Id",
            "Thread_Id",
            "Dispatch_Id",
            "Kernel_Id",
            "Kernel_Name",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
            "LDS_Block_Size",
            "Scratch_Size",
            "VGPR_Count",
            "Accum_VGPR_Count",
            "SGPR_Count",
            "Workgroup_Size_X",
            "Workgroup_Size_Y",
            "Workgroup_Size_Z",
            "Grid_Size_X",
            "Grid_Size_Y",
            "Grid_Size_Z",
        ],
    ),
    ("hip_api_trace", API),
    ("hsa_api_trace", API),
    ("marker_api_trace", API),
    (
        "memory_copy_trace",
        &[
            "Kind",
            "Direction",
            "Stream_Id",
            "Source_Agent_Id",
            "Destination_Agent_Id",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
        ],
    ),
    (
        "memory_allocation_trace",
        &[
            "Kind",
            "Operation",
            "Agent_Id",
            "Allocation_Size",
            "Address",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
        ],
    ),
    (
        "counter_collection",
        &[
            "Correlation_Id",
            "Dispatch_Id",
            "Agent_Id",
            "Queue_Id",
            "Process_Id",
            "Thread_Id",
            "Grid_Size",
            "Kernel_Id",
            "Kernel_Name",
            "Workgroup_Size",
            "LDS_Block_Size",
            "Scratch_Size",
            "VGPR_Count",
            "Accum_VGPR_Count",
            "SGPR_Count",
            "Counter_Name",
            "Counter_Value",
            "Start_Timestamp",
            "End_Timestamp",
        ],
    ),
    ("kernel_stats", STATS),
    ("hip_api_stats", STATS),
    ("hsa_api_stats", STATS),
    ("marker_api_stats", STATS),
    ("memory_copy_stats", STATS),
    ("memory_allocation_stats", STATS),
    ("domain_stats", STATS),
    ("agent_info", &[]),
];

/// The API and marker traces' columns.
const API: &[&str] = &[
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

const STATS: &[&str] = &[
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

const PIPELINE: &str = r#"
[pipeline]
name = "rocprofv3-csv"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy", "memory_allocation", "marker_core_range_api"]
[[context]]
name = "counters"
counters.collect = ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
[[sink]]
name = "csv"
kind = "csv"
path = "out/{hostname}/{pid}"
options = { flavour = "rocprofv3" }
"#;

/// A field's shape: `"text"` quoted, a whole number, or a number with a fraction.
fn shape(field: &str) -> &'static str {
    if field.starts_with('"') && field.ends_with('"') && field.len() >= 2 {
        "text"
    } else if !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit()) {
        "integer"
    } else if field.parse::<f64>().is_ok() {
        "fraction"
    } else {
        "other"
    }
}

/// Splits a line into its fields as written (quotes kept).
fn fields(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&line[start..]);
    out
}

/// A header line as rocprofv3 writes it: every column name quoted.
fn header_line(columns: &[&str]) -> String {
    let quoted: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    quoted.join(",")
}

/// Runs `pipeline` on the simulated MI300X; the output directory, the process's pid and
/// its files by table, which must be all there is under `out/`: `out/<host>/<pid>_<table>.csv`,
/// as rocprofv3's default `%hostname%/%pid%` names them, and nothing left from staging.
fn run(pipeline: &str) -> (tempfile::TempDir, u32, BTreeMap<String, PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir.path(), &[]);
    assert_success(&output);
    let hosts = support::entries(&dir.path().join("out"), |_| true);
    let [host] = &hosts[..] else {
        panic!("not one host directory: {hosts:?}")
    };
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(host.ends_with(hostname.trim()), "{host:?}");
    let mut files = BTreeMap::new();
    let mut pids = BTreeSet::new();
    for path in support::entries(host, |_| true) {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let (pid, table) = name.split_once('_').unwrap();
        let table = table
            .strip_suffix(".csv")
            .unwrap_or_else(|| panic!("{name}"));
        pids.insert(pid.parse::<u32>().unwrap_or_else(|_| panic!("{name}")));
        files.insert(table.to_owned(), path);
    }
    let [pid] = pids.into_iter().collect::<Vec<_>>()[..] else {
        panic!("not one process's files: {files:?}")
    };
    (dir, pid, files)
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[test]
fn the_flavour_writes_rocprofv3s_files_columns_and_formats() {
    let (_dir, _, files) = run(PIPELINE);
    let written: Vec<&str> = files.keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = HEADERS.iter().map(|(table, _)| *table).collect();
    assert_eq!(written, expected.into_iter().collect::<Vec<_>>());
    for (table, columns) in HEADERS.iter().filter(|(_, c)| !c.is_empty()) {
        let path = files
            .get(*table)
            .unwrap_or_else(|| panic!("no PREFIX_{table}.csv among {:?}", files.keys()));
        let lines = lines(path);
        assert_eq!(lines[0], header_line(columns), "{table}");
        assert!(lines.len() > 1, "{table} has no rows");
        for line in &lines[1..] {
            assert_eq!(fields(line).len(), columns.len(), "{table}: {line}");
        }
    }
    let first = |table: &str| lines(&files[table])[1].clone();

    // A dispatch: text quoted, numbers bare, the agent as `Agent N`, LDS in 512-byte blocks.
    let kernel = first("kernel_trace");
    let kernel = fields(&kernel);
    assert_eq!(kernel[0], "\"KERNEL_DISPATCH\"");
    assert!(
        kernel[1].starts_with("\"Agent ") && kernel[1].ends_with('"'),
        "{kernel:?}"
    );
    let shapes: Vec<&str> = kernel.iter().map(|f| shape(f)).collect();
    let mut expected = vec!["integer"; 22];
    for text in [0, 1, 7] {
        expected[text] = "text";
    }
    assert_eq!(shapes, expected, "{kernel:?}");
    assert_eq!(kernel[11].parse::<u64>().unwrap() % 512, 0);

    let copy = first("memory_copy_trace");
    let copy = fields(&copy);
    assert_eq!(copy[0], "\"MEMORY_COPY\"");
    assert!(copy[1].starts_with("\"MEMORY_COPY_"), "{copy:?}");

    let allocation = first("memory_allocation_trace");
    let allocation = fields(&allocation);
    assert!(
        allocation[1].starts_with("\"MEMORY_ALLOCATION_"),
        "{allocation:?}"
    );
    let address = allocation[4].trim_matches('"');
    assert!(
        address.starts_with("0x") && address.len() == 18,
        "{address}"
    );

    // A counter per dispatch and counter, its instances summed: six decimals from 1 up.
    let counter = first("counter_collection");
    let counter = fields(&counter);
    assert!(["\"SQ_WAVES\"", "\"GRBM_GUI_ACTIVE\""].contains(&counter[15]));
    let value = counter[16];
    assert!(
        value.split_once('.').is_some_and(|(_, f)| f.len() == 6) || value.contains("e"),
        "{value}"
    );

    // Statistics: the longest total first, percentages of the file's total.
    let stats: Vec<Vec<String>> = lines(&files["kernel_stats"])[1..]
        .iter()
        .map(|l| fields(l).into_iter().map(str::to_owned).collect())
        .collect();
    let totals: Vec<u64> = stats.iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{totals:?}");
    let percent: f64 = stats.iter().map(|r| r[4].parse::<f64>().unwrap()).sum();
    assert!((percent - 100.0).abs() < 0.1, "{percent}");
    let shapes: Vec<&str> = stats[0].iter().map(|f| shape(f)).collect();
    assert_eq!(
        shapes,
        [
            "text", "integer", "integer", "fraction", "fraction", "integer", "integer", "fraction"
        ]
    );
    let domains: Vec<String> = lines(&files["domain_stats"])[1..]
        .iter()
        .map(|l| fields(l)[0].to_owned())
        .collect();
    for domain in ["\"KERNEL_DISPATCH\"", "\"HIP_API\"", "\"MEMORY_COPY\""] {
        assert!(
            domains.iter().any(|d| d == domain),
            "{domain} not in {domains:?}"
        );
    }
}

/// The header and a row of AMD's real files: the agent table rocprofv3 wrote on an MI300A
/// node, and a HIP API trace AMD's converter wrote (which puts a `Guid` column first).
#[test]
fn headers_and_row_formats_match_real_rocprofv3_files() {
    let (_dir, _, files) = run(PIPELINE);
    let data = shared().join("data");

    let real = lines(&data.join("rocprofv3/mi300a_agent_info.csv"));
    let ours = lines(&files["agent_info"]);
    assert_eq!(ours[0], real[0]);
    let real_gpu = real.iter().find(|l| l.contains(",\"GPU\",")).unwrap();
    let our_gpu = ours.iter().find(|l| l.contains(",\"GPU\",")).unwrap();
    let shapes = |line: &str| fields(line).into_iter().map(shape).collect::<Vec<_>>();
    assert_eq!(shapes(our_gpu), shapes(real_gpu), "{our_gpu}\n{real_gpu}");
    let real_cpu = real.iter().find(|l| l.contains(",\"CPU\",")).unwrap();
    let our_cpu = ours.iter().find(|l| l.contains(",\"CPU\",")).unwrap();
    assert_eq!(shapes(our_cpu), shapes(real_cpu), "{our_cpu}\n{real_cpu}");
    let gpu = fields(our_gpu);
    assert_eq!(gpu[49], "\"gfx942\"");
    assert_eq!(gpu[20], "90402", "Gfx_Target_Version");

    let real = lines(&data.join("rocpd/rocpd-to-csv.csv"));
    let without_guid = |line: &str| fields(line)[1..].join(",");
    let ours = lines(&files["hip_api_trace"]);
    assert_eq!(ours[0], without_guid(&real[0]));
    assert_eq!(shapes(&ours[1]), shapes(&without_guid(&real[1])));
    // HIP calls are named by their `_EXT` domain, as in the real file.
    assert_eq!(fields(&ours[1])[0], "\"HIP_RUNTIME_API_EXT\"");
}

/// PC samples (a context of their own: the SDK samples no dispatch it counts).
#[test]
fn pc_samples_are_written_as_rocprofv3_writes_them() {
    let pipeline = PIPELINE.replace(
        "counters.collect = [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]",
        "pc_sampling = { method = \"host_trap\", unit = \"time\", interval = 1000 }",
    );
    let (_dir, _, files) = run(&pipeline);
    let lines = lines(&files["pc_sampling_host_trap"]);
    // `generateCSV.cpp`: the host-trap samples' columns.
    let columns = [
        "Sample_Timestamp",
        "Exec_Mask",
        "Dispatch_Id",
        "Instruction",
        "Instruction_Comment",
        "Correlation_Id",
    ];
    assert_eq!(lines[0], header_line(&columns));
    let sample = fields(&lines[1]);
    let shapes: Vec<&str> = sample.iter().map(|f| shape(f)).collect();
    assert_eq!(
        shapes,
        ["integer", "integer", "integer", "text", "text", "integer"]
    );
    assert!(!files.contains_key("counter_collection"));
}

/// rocflow's own CSV stays the default: a file per record kind.
#[test]
fn rocflows_own_csv_stays_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PIPELINE.replace("options = { flavour = \"rocprofv3\" }", "");
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on("sim", "p.toml", &["/bin/sleep", "0"], dir.path(), &[]);
    assert_success(&output);
    let [host] = &support::entries(&dir.path().join("out"), |_| true)[..] else {
        panic!("not one host directory")
    };
    let [process] = &support::entries(host, |_| true)[..] else {
        panic!("not one process directory")
    };
    assert!(process.join("kernel_dispatch.csv").is_file());
}

/// The shipped `csv` template takes the flavour as a parameter; its kernel names are
/// demangled, as rocprofv3's are by default.
#[test]
fn the_csv_template_writes_rocprofv3s_files_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "csv",
        "--set",
        "flavour=rocprofv3",
        "--set",
        "output_dir=out",
        "--device",
        "sim",
        "--",
        "/bin/sleep",
        "0",
    ];
    assert_success(&support::rocflow(&args, dir.path(), &[]));
    // The template's path, `{output_dir}/{hostname}-{pid}`, is the files' prefix.
    let stats = support::entries(&dir.path().join("out"), |n| {
        n.ends_with("_kernel_stats.csv")
    });
    let [stats] = &stats[..] else {
        panic!("not one process's statistics: {stats:?}")
    };
    let name = stats.file_name().unwrap().to_str().unwrap();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let pid = name
        .strip_prefix(&format!("{}-", hostname.trim()))
        .and_then(|n| n.strip_suffix("_kernel_stats.csv"))
        .unwrap_or_else(|| panic!("{name}"));
    assert!(pid.parse::<u32>().is_ok(), "{name}");
    let kernels = lines(stats);
    assert!(
        kernels
            .iter()
            .any(|l| l.starts_with("\"void solver::smooth<8>(")),
        "{kernels:?}"
    );
}

/// What the files hold is what the scenario makes: every dispatch, API call, copy,
/// allocation and ROCTx range, and each counted dispatch's counters, summed over their
/// instances as rocprofv3 sums them.
#[test]
fn the_files_hold_the_scenarios_records() {
    let (_dir, pid, files) = run(PIPELINE);
    let collects = Collects {
        dispatches: true,
        copies: true,
        allocations: true,
        markers: true,
        api: ["hip_runtime_api", "hsa_core_api"]
            .map(|d| (d, vec![], vec![]))
            .to_vec(),
        counters: vec!["SQ_WAVES", "GRBM_GUI_ACTIVE"],
        ..Collects::default()
    };
    let kernels = csv(&files["kernel_trace"]);
    let mut dispatches = Dispatches::new();
    let ran =
        (kernels.iter()).map(|r| (r["Dispatch_Id"].parse().unwrap(), r["Kernel_Name"].clone()));
    dispatches.insert(pid.into(), ran.collect());
    dispatches.values_mut().for_each(|list| list.sort());
    let scenario = Scenario::of(&support::scenario::default_scenario());
    let want = scenario.truth(&collects, 1, &dispatches);
    let files: Vec<PathBuf> = files.values().cloned().collect();
    let seen = truth::rocprofv3_csv(&files);
    // rocprofv3's copy trace has no bytes.
    let parts: Vec<Part> = (Part::ALL.into_iter())
        .filter(|&p| p != Part::CopyBytes)
        .collect();
    let differences = want.differences(&seen, &parts, 1e-6);
    assert!(differences.is_empty(), "{differences:#?}");
    assert!(!seen.kernels.is_empty() && !seen.counters.is_empty());
}

/// `agent_index` names the agents of every agent column as rocprofv3's `--agent-index`
/// does (`tests/rocprofv3/agent-index/validate.py` holds the names to `agent_info`): the
/// node id, the logical node id, or the agent's type and its index among the agents of
/// that type; host-to-device copies go from `CPU 0` to a GPU. The agents' own file is the
/// same in each form. Without `stats`, no statistics file is written.
#[test]
fn agents_are_named_as_agent_index_says() {
    let mut pipeline = PIPELINE.replace(
        "path = \"out/{hostname}/{pid}\"\n",
        "path = \"out/{hostname}/{pid}/absolute\"\n",
    );
    pipeline = pipeline.replace(
        "options = { flavour = \"rocprofv3\" }",
        "options = { flavour = \"rocprofv3\", agent_index = \"absolute\" }",
    );
    for (name, options) in [
        (
            "relative",
            "flavour = \"rocprofv3\", agent_index = \"relative\"",
        ),
        (
            "type-relative",
            "flavour = \"rocprofv3\", agent_index = \"type-relative\", stats = false",
        ),
    ] {
        pipeline.push_str(&format!(
            "[[sink]]\nname = \"{name}\"\nkind = \"csv\"\npath = \"out/{{hostname}}/{{pid}}/{name}\"\noptions = {{ {options} }}\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir.path(), &[]);
    assert_success(&output);
    let [host] = &support::entries(&dir.path().join("out"), |_| true)[..] else {
        panic!("not one host directory")
    };
    let [process] = &support::entries(host, |_| true)[..] else {
        panic!("not one process directory")
    };
    let file = |form: &str, table: &str| process.join(format!("{form}_{table}.csv"));
    let agents = csv(&file("absolute", "agent_info"));
    let gpus: Vec<&BTreeMap<String, String>> =
        agents.iter().filter(|a| a["Agent_Type"] == "GPU").collect();
    let cpu = agents.iter().find(|a| a["Agent_Type"] == "CPU").unwrap();
    assert_eq!(gpus.len(), 2, "{agents:?}");
    for form in ["absolute", "relative", "type-relative"] {
        let name_of = |agent: &BTreeMap<String, String>, type_index: usize| match form {
            "absolute" => format!("Agent {}", agent["Node_Id"]),
            "relative" => format!("Agent {}", agent["Logical_Node_Id"]),
            _ => format!("{} {type_index}", agent["Agent_Type"]),
        };
        let gpu_names: BTreeSet<String> = (gpus.iter().enumerate())
            .map(|(i, a)| name_of(a, i))
            .collect();
        let kernels = csv(&file(form, "kernel_trace"));
        let named: BTreeSet<String> = kernels.iter().map(|r| r["Agent_Id"].clone()).collect();
        assert!(
            !named.is_empty() && named.is_subset(&gpu_names),
            "{form}: {named:?} {gpu_names:?}"
        );
        for row in csv(&file(form, "memory_copy_trace")) {
            let (source, destination) = (&row["Source_Agent_Id"], &row["Destination_Agent_Id"]);
            let (host, device) = match row["Direction"].as_str() {
                "MEMORY_COPY_HOST_TO_DEVICE" => (source, destination),
                "MEMORY_COPY_DEVICE_TO_HOST" => (destination, source),
                other => panic!("{other}"),
            };
            assert_eq!(*host, name_of(cpu, 0), "{form}: {row:?}");
            assert!(gpu_names.contains(device), "{form}: {row:?}");
        }
        for row in csv(&file(form, "memory_allocation_trace")) {
            let agent = &row["Agent_Id"];
            let freed = row["Operation"] == "MEMORY_ALLOCATION_FREE";
            assert!(
                freed && agent.is_empty() || gpu_names.contains(agent),
                "{form}: {row:?}"
            );
        }
        let counters = csv(&file(form, "counter_collection"));
        assert!(
            counters.iter().all(|r| gpu_names.contains(&r["Agent_Id"])),
            "{form}"
        );
        assert_eq!(
            std::fs::read(file(form, "agent_info")).unwrap(),
            std::fs::read(file("absolute", "agent_info")).unwrap()
        );
    }
    assert_eq!(
        agents_named(&csv(&file("type-relative", "kernel_trace"))),
        ["GPU 0", "GPU 1"]
    );
    let stats = support::entries(process, |n| {
        n.starts_with("type-relative_") && n.contains("stats")
    });
    assert!(stats.is_empty(), "{stats:?}");
    assert!(file("relative", "domain_stats").is_file());
}

/// The agents a kernel trace names, each once.
fn agents_named(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let names: BTreeSet<String> = rows.iter().map(|r| r["Agent_Id"].clone()).collect();
    names.into_iter().collect()
}
