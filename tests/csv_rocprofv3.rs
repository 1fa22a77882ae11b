//! The CSV sink's `rocprofv3` flavour writes rocprofv3's files: their names, their columns
//! in their order, their quoting and value formats. The expected headers are facts read
//! from rocprofv3's writer, `projects/rocprofiler-sdk/source/lib/output/generateCSV.cpp`
//! (with `csv.hpp` for the quoting, `statistics.cpp` for the statistics' formats) in
//! ROCm/rocm-systems at commit 1b1610fc; the real files in `../shared/data` check them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use support::{assert_success, run_on, shared};

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
path = "out"
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

/// Runs `pipeline` on the simulated MI300X; the output directory and the pid's files.
fn run(pipeline: &str) -> (tempfile::TempDir, BTreeMap<String, PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let output = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir.path(), &[]);
    assert_success(&output);
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir.path().join("out")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let (pid, table) = name.split_once('_').unwrap();
        assert!(
            pid.parse::<u32>().is_ok(),
            "{name} does not start with a pid"
        );
        files.insert(table.to_owned(), path);
    }
    (dir, files)
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[test]
fn the_flavour_writes_rocprofv3s_files_columns_and_formats() {
    let (_dir, files) = run(PIPELINE);
    for (table, columns) in HEADERS {
        let path = files
            .get(*table)
            .unwrap_or_else(|| panic!("no <pid>_{table}.csv among {:?}", files.keys()));
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
    let (_dir, files) = run(PIPELINE);
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
    let (_dir, files) = run(&pipeline);
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
    assert!(dir.path().join("out/kernel_dispatch.csv").is_file());
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
    let [process] = &std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("summary"))
        .collect::<Vec<_>>()[..]
    else {
        panic!("not one process directory")
    };
    let pid = process.to_str().unwrap().rsplit('-').next().unwrap();
    let kernels = lines(&process.join(format!("{pid}_kernel_stats.csv")));
    assert!(
        kernels
            .iter()
            .any(|l| l.starts_with("\"void solver::smooth<8>(")),
        "{kernels:?}"
    );
}
