//! Thread trace end to end on the simulated device: the tool configures the SDK's
//! dispatch or device thread-trace service, the runner keeps each shader engine's trace
//! and the code objects under rocprofv3's names, and decodes them through the SDK's
//! decoder API with a decoder library in AMD's place; the decoded tables are held against
//! what the scenario says each traced dispatch, or each traced window of the device, runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt8Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use support::{assert_success, rocflow, run_on, sim_decoder_folder, text};

/// Two kernels on a GPU of 4 CUs (4 SIMDs each) and 2 shader engines, dispatched in turn
/// by one thread, 4 times each: `stencil` (24 waves, 6 on each CU) with its own listing,
/// `copy` (4 waves, one a CU) with the default one.
const SCENARIO: &str = r#"
[scenario]
name = "att"
seed = 1
threads = 1
iterations = 4

[[agent]]
name = "gfx942"
product = "AMD Instinct MI300X"
cu_count = 4
shader_engines = 2
lds_kb = 64
max_engine_clk_mhz = 2100

[[kernel]]
name = "_Z7stencilPf"
duration_ns = 1000
grid = [1536, 1, 1]
workgroup = [64, 1, 1]
isa = [
    { text = "v_add_f32 v0, v1, v2", latency = 2 },
    { text = "global_load_dword v3, v[0:1], off", latency = 8, stall = 100 },
    { text = "s_endpgm", latency = 1 },
]

[[kernel]]
name = "_Z4copyPf"
duration_ns = 500
grid = [256, 1, 1]
workgroup = [64, 1, 1]
"#;

/// Where each kernel's code starts in the simulated code object (its index's slot).
const STENCIL_CODE: u64 = 0x1000;
const COPY_CODE: u64 = 0x1100;

fn pipeline(thread_trace: &str) -> String {
    format!(
        "[[post]]\nname = \"report\"\nkind = \"report\"\npath = \"report.html\"\n[[context]]\nname = \"att\"\ntracing = [\"kernel_dispatch\"]\n[context.thread_trace]\npath = \"att\"\n{thread_trace}\n"
    )
}

/// Runs `pipeline` on the scenario in a fresh directory, `/bin/true` as the application.
fn run(pipeline: &str, env: &[(&str, &Path)]) -> (std::process::Output, tempfile::TempDir) {
    run_scenario(SCENARIO, pipeline, env)
}

/// Runs `pipeline` on `scenario` in a fresh directory, `/bin/true` as the application.
fn run_scenario(
    scenario: &str,
    pipeline: &str,
    env: &[(&str, &Path)],
) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("att.toml"), scenario).unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let device = format!("sim:{}", dir.path().join("att.toml").display());
    let output = run_on(&device, "p.toml", &["/bin/true"], dir.path(), env);
    (output, dir)
}

/// The files of the trace folder, by name.
fn kept(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir.join("att"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A table the runner writes in one row group.
fn table(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .with_batch_size(1 << 20)
        .build()
        .unwrap();
    let batch = reader.next().unwrap().unwrap();
    assert!(reader.next().is_none());
    batch
}

fn u64s(batch: &RecordBatch, name: &str) -> Vec<u64> {
    let column = batch.column_by_name(name).unwrap();
    column.as_primitive::<UInt64Type>().values().to_vec()
}

#[test]
fn decoded_tables_hold_the_scenario_s_waves_and_instructions() {
    decoded_tables_hold_the_truth(SCENARIO);
}

/// The SDKs before 1.3.5 call the shader-data callback with separate arguments (1.3.2
/// adds the chunk's flags) rather than the bundle the simulated SDK's own 1.4.1 passes:
/// the tool gives each the form it calls, and the traces decode the same.
#[test]
fn older_sdks_shader_data_callbacks_decode_to_the_same_tables() {
    for sdk in ["1.0.0", "1.3.2"] {
        let scenario = SCENARIO.replace(
            "[scenario]\n",
            &format!("[scenario]\nsdk_version = \"{sdk}\"\n"),
        );
        decoded_tables_hold_the_truth(&scenario);
    }
}

/// Traces the 2nd and 3rd dispatch of each kernel of `scenario` (`SCENARIO`, perhaps on
/// another SDK version) and holds the decoded tables, the report and the rocpd database
/// to what the scenario runs.
fn decoded_tables_hold_the_truth(scenario: &str) {
    let dir = tempfile::tempdir().unwrap();
    let decoder = sim_decoder_folder(dir.path());
    // Both shader engines, SIMDs 0 and 2, the 2nd and 3rd dispatch of each kernel.
    let with_rocpd = format!(
        "[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"run.db\"\n{}",
        pipeline(&format!(
            "shader_engine_mask = 0x3\nsimd_select = 0x5\niterations = \"[2-3]\"\ndecoder_paths = [\"{}\"]",
            decoder.display()
        ))
    );
    let (output, run_dir) = run_scenario(scenario, &with_rocpd, &[]);
    assert_success(&output);
    let said = text(&output.stderr);
    assert!(said.contains("4 dispatches"), "{said}");
    // The report's hot spots over both traced dispatches of each kernel: copy's wait for
    // memory (380 + 1 cycles, 2 waves a dispatch) takes 4 x 381 = 1524 cycles, stencil's
    // load (100 + 8 cycles, 6 waves a dispatch) 12 x 108 = 1296.
    let report = std::fs::read_to_string(run_dir.path().join("report.html")).unwrap();
    let hot = &report[report
        .find("Thread trace hot spots")
        .expect("a hot-spot table")..];
    let rows: Vec<&str> = hot[hot.find("<tbody>").unwrap()..hot.find("</tbody>").unwrap()]
        .split("</tr>")
        .collect();
    for (row, (text, hits, cycles)) in rows.iter().zip([
        ("s_waitcnt vmcnt(0)", 4, 1524),
        ("global_load_dword v3, v[0:1], off", 12, 1296),
    ]) {
        assert!(row.contains(&format!("<code>{text}</code>")), "{row}");
        assert!(
            row.contains(&format!("<td>{hits}</td><td>{cycles}</td>")),
            "{row}"
        );
    }
    // One thread dispatches stencil and copy in turn: dispatches 3 and 5 are stencil's
    // 2nd and 3rd, 4 and 6 copy's.
    let files = kept(run_dir.path());
    let traces: BTreeSet<&str> = (files.iter())
        .filter_map(|f| f.strip_suffix(".att"))
        .filter_map(|f| f.split_once('_').map(|(_, rest)| rest))
        .collect();
    let expected: BTreeSet<String> = (3..=6)
        .flat_map(|d| (0..2).map(move |se| format!("1_shader_engine_{se}_{d}")))
        .collect();
    assert_eq!(traces, expected.iter().map(String::as_str).collect());
    assert_eq!(
        (files.iter())
            .filter(|f| f.ends_with("_code_object_id_1.out"))
            .count(),
        1,
        "{files:?}"
    );

    // Per shader engine, stencil's 6 waves on the target CU round-robin over 4 SIMDs:
    // waves 0, 2 and 4 are on SIMDs 0 and 2. Copy's one wave is on SIMD 0.
    let waves = table(&run_dir.path().join("att/thread_trace_waves.parquet"));
    let dispatch = u64s(&waves, "dispatch_id");
    let per_dispatch = |d: u64| dispatch.iter().filter(|&&x| x == d).count();
    assert_eq!([3, 4, 5, 6].map(per_dispatch), [6, 2, 6, 2]);
    let simds = waves
        .column_by_name("simd")
        .unwrap()
        .as_primitive::<UInt8Type>();
    assert!(simds.values().iter().all(|s| [0, 2].contains(s)));
    let cus = waves
        .column_by_name("cu")
        .unwrap()
        .as_primitive::<UInt8Type>();
    assert!(
        cus.values().iter().all(|&cu| cu == 1),
        "the default target CU"
    );
    let counts = u64s(&waves, "instructions");
    for (d, n) in dispatch.iter().zip(&counts) {
        assert_eq!(*n, if d % 2 == 1 { 3 } else { 8 }, "dispatch {d}");
    }

    // Every traced wave runs each instruction once.
    let rows = table(&run_dir.path().join("att/thread_trace_instructions.parquet"));
    let (dispatch, address) = (u64s(&rows, "dispatch_id"), u64s(&rows, "address"));
    let (hits, latency, stall) = (
        u64s(&rows, "hits"),
        u64s(&rows, "total_latency_cycles"),
        u64s(&rows, "stall_cycles"),
    );
    let mean = rows.column_by_name("mean_latency_cycles").unwrap();
    let mean = mean.as_primitive::<Float64Type>();
    let texts = rows
        .column_by_name("instruction")
        .unwrap()
        .as_string::<i32>();
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let stencil = [
        ("v_add_f32 v0, v1, v2", 2, 0),
        ("global_load_dword v3, v[0:1], off", 8, 100),
        ("s_endpgm", 1, 0),
    ];
    for r in 0..rows.num_rows() {
        *seen.entry(dispatch[r]).or_default() += 1;
        if dispatch[r] % 2 == 1 {
            let n = ((address[r] - STENCIL_CODE) / 4) as usize;
            let (text, cycles, stalled) = stencil[n];
            assert_eq!(texts.value(r), text);
            assert_eq!(hits[r], 6);
            assert_eq!(latency[r], 6 * (cycles + stalled));
            assert_eq!(stall[r], 6 * stalled);
            assert_eq!(mean.value(r), (cycles + stalled) as f64);
        } else {
            assert!(address[r] >= COPY_CODE && address[r] < COPY_CODE + 8 * 4);
            assert_eq!(hits[r], 2);
            assert!(!texts.value(r).is_empty());
        }
    }
    assert_eq!(seen, BTreeMap::from([(3, 3), (4, 8), (5, 3), (6, 8)]));

    // The rocpd database holds the same rows, in rocflow's own tables.
    let db = rusqlite::Connection::open(run_dir.path().join("run.db")).unwrap();
    let per_dispatch: Vec<(i64, i64, i64)> = db
        .prepare("SELECT dispatch_id, count(*), sum(hits) FROM rocflow_thread_trace_instruction GROUP BY dispatch_id ORDER BY dispatch_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        per_dispatch,
        [(3, 3, 18), (4, 8, 16), (5, 3, 18), (6, 8, 16)]
    );
    let waves_in_db: i64 = db
        .query_row("SELECT count(*) FROM rocflow_thread_trace_wave", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(waves_in_db, waves.num_rows() as i64);
    assert!(mean.null_count() == 0);
}

#[test]
fn without_the_decoder_the_raw_files_stay_and_one_note_says_what_to_install() {
    // A folder the user names wins over the simulated decoder, which a run on the
    // simulated device would use otherwise.
    let empty = tempfile::tempdir().unwrap();
    let (output, run_dir) = run(
        &pipeline("iterations = \"[1]\""),
        &[("ROCPROF_ATT_LIBRARY_PATH", empty.path())],
    );
    assert_success(&output);
    let said = text(&output.stderr);
    let notes: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("trace decoder"))
        .collect();
    assert_eq!(notes.len(), 1, "{said}");
    assert!(notes[0].contains("rocprof-trace-decoder"), "{}", notes[0]);
    assert!(
        notes[0].contains("ROCPROF_ATT_LIBRARY_PATH"),
        "{}",
        notes[0]
    );
    let files = kept(run_dir.path());
    assert_eq!(
        files.iter().filter(|f| f.ends_with(".att")).count(),
        2,
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.ends_with(".parquet")), "{files:?}");
}

#[test]
fn the_decoder_is_found_through_rocprofv3_s_variable_and_kernels_are_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let decoder = sim_decoder_folder(dir.path());
    let (output, run_dir) = run(
        &pipeline("kernels = { include = \"copy\" }"),
        &[("ROCPROF_ATT_LIBRARY_PATH", &decoder)],
    );
    assert_success(&output);
    let rows = table(&run_dir.path().join("att/thread_trace_instructions.parquet"));
    let dispatches: BTreeSet<u64> = u64s(&rows, "dispatch_id").into_iter().collect();
    // Copy is every second dispatch; with no iteration range, each of its 4 is traced.
    assert_eq!(dispatches, BTreeSet::from([2, 4, 6, 8]));
    assert!(u64s(&rows, "address").iter().all(|&a| a >= COPY_CODE));
}

/// Runs a device trace of both shader engines on the scenario, with `settings` added to
/// its `[scenario]` table and `context` to the tracing context's.
fn run_device(settings: &str, context: &str) -> (std::process::Output, tempfile::TempDir) {
    let scenario = SCENARIO.replace("iterations = 4\n", &format!("iterations = 4\n{settings}"));
    let pipeline = format!(
        "[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"run.db\"\n[[context]]\nname = \"att\"\n{context}[context.thread_trace]\nmode = \"device\"\npath = \"att\"\nshader_engine_mask = 0x3\n"
    );
    // No decoder folder is named: the simulated device's traces find the simulated decoder.
    run_scenario(&scenario, &pipeline, &[])
}

/// Per device window, each instruction's address and hits, from the decoded table.
fn hits_per_window(run_dir: &Path) -> BTreeMap<u64, Vec<(u64, u64)>> {
    let rows = table(&run_dir.join("att/thread_trace_instructions.parquet"));
    let dispatch = rows.column_by_name("dispatch_id").unwrap();
    assert_eq!(dispatch.null_count(), rows.num_rows());
    let window = rows.column_by_name("device_window").unwrap();
    let window = window.as_primitive::<UInt64Type>();
    let (address, hits) = (u64s(&rows, "address"), u64s(&rows, "hits"));
    let mut found: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for r in 0..rows.num_rows() {
        (found.entry(window.value(r)).or_default()).push((address[r], hits[r]));
    }
    found
}

/// What a window holds in which each kernel ran `dispatches` times: every instruction,
/// hit by the traced waves of each dispatch on both shader engines (stencil's 6, copy's 1).
fn window_truth(dispatches: u64) -> Vec<(u64, u64)> {
    (0..3)
        .map(|n| (STENCIL_CODE + 4 * n, dispatches * 6 * 2))
        .chain((0..8).map(|n| (COPY_CODE + 4 * n, dispatches * 2)))
        .collect()
}

#[test]
fn a_device_trace_holds_what_ran_between_roctx_resume_and_pause_and_decodes_by_itself() {
    // The context waits for roctxProfilerResume, which thread 0 calls before its 2nd
    // iteration, and stops at the roctxProfilerPause before its 4th: the one window
    // holds iterations 2 and 3 (dispatches 3 to 6).
    let (output, run_dir) = run_device(
        "resume_at = 1\npause_at = 3\n",
        "period = { paused = true }\n",
    );
    assert_success(&output);
    let said = text(&output.stderr);
    assert!(said.contains("2 traces of 1 device windows"), "{said}");
    assert!(said.contains("decoded: 28 waves"), "{said}");
    assert!(!said.contains("HSA runtime"), "{said}");
    let explained = rocflow(&["explain", "p.toml"], run_dir.path(), &[]);
    assert_success(&explained);
    let explained = text(&explained.stdout);
    assert!(
        explained
            .contains("device thread trace (all each agent runs while the context is started)"),
        "{explained}"
    );
    assert!(
        explained.contains("kept per agent, shader engine and start of the context"),
        "{explained}"
    );

    let files = kept(run_dir.path());
    let traces: BTreeSet<&str> = (files.iter())
        .filter_map(|f| f.strip_suffix(".att"))
        .filter_map(|f| f.split_once('_').map(|(_, rest)| rest))
        .collect();
    let expected = ["1_shader_engine_0_device_0", "1_shader_engine_1_device_0"];
    assert_eq!(traces, BTreeSet::from(expected));

    // Per shader engine, stencil's 6 waves on the target CU and copy's one, twice.
    let waves = table(&run_dir.path().join("att/thread_trace_waves.parquet"));
    assert_eq!(
        waves.column_by_name("dispatch_id").unwrap().null_count(),
        waves.num_rows()
    );
    let counts = u64s(&waves, "instructions");
    let begins = waves.column_by_name("begin_cycle").unwrap();
    let begins = begins.as_primitive::<arrow_array::types::Int64Type>();
    let mut per_kernel: BTreeMap<u64, usize> = BTreeMap::new();
    for n in &counts {
        *per_kernel.entry(*n).or_default() += 1;
    }
    assert_eq!(per_kernel, BTreeMap::from([(3, 24), (8, 4)]));
    // The window's first dispatch starts it: its first wave at cycle 0.
    assert_eq!(begins.iter().flatten().min(), Some(0));

    assert_eq!(
        hits_per_window(run_dir.path()),
        BTreeMap::from([(0, window_truth(2))])
    );
    let db = rusqlite::Connection::open(run_dir.path().join("run.db")).unwrap();
    let per_window: Vec<(i64, i64, i64)> = db
        .prepare("SELECT device_window, count(*), sum(hits) FROM rocflow_thread_trace_instruction WHERE dispatch_id IS NULL GROUP BY device_window")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(per_window, [(0, 11, 3 * 24 + 8 * 4)]);
}

/// As SDK 1.0: a device trace started as the tool initializes, before the HSA runtime
/// loads, does not start; the context traces from its next start on, and the pipeline
/// is warned of it.
#[test]
fn a_device_trace_started_before_the_runtime_loads_traces_from_the_next_start() {
    // Started at once, paused before thread 0's 2nd iteration, resumed before its 4th:
    // only the 4th iteration's dispatches are traced, in the run's one window.
    let (output, run_dir) = run_device("pause_at = 1\nresume_at = 3\n", "");
    assert_success(&output);
    let said = text(&output.stderr);
    let warned: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("before the HSA runtime loads"))
        .collect();
    assert_eq!(warned.len(), 1, "{said}");
    assert!(said.contains("2 traces of 1 device windows"), "{said}");
    assert_eq!(
        hits_per_window(run_dir.path()),
        BTreeMap::from([(0, window_truth(1))])
    );
}
