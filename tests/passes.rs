//! Counters over several passes end to end: `rocflow run` on the simulated device runs the
//! application once per pass and merges the passes into one run, whose values are those
//! the simulated SDK's generator gives each dispatch.

use std::collections::BTreeMap;
use std::path::Path;

use support::{assert_says, assert_success, csv, rocflow, run_on, text};

/// The scenario's seed.
const SEED: u64 = 7;

/// 40 gfx942 counters by block: SQ counts 8 at once, TCC and TCP 4, TA and GRBM 2.
const COUNTERS: &[(&str, &[&str])] = &[
    (
        "SQ",
        &[
            "SQC_DCACHE_ATOMIC",
            "SQC_DCACHE_BUSY_CYCLES",
            "SQC_DCACHE_HITS",
            "SQC_DCACHE_INPUT_VALID_READYB",
            "SQC_DCACHE_MISSES",
            "SQC_DCACHE_MISSES_DUPLICATE",
            "SQC_DCACHE_REQ",
            "SQC_DCACHE_REQ_READ_1",
            "SQC_DCACHE_REQ_READ_16",
            "SQC_DCACHE_REQ_READ_2",
            "SQC_DCACHE_REQ_READ_4",
            "SQC_DCACHE_REQ_READ_8",
            "SQC_ICACHE_BUSY_CYCLES",
            "SQC_ICACHE_HITS",
            "SQC_ICACHE_INPUT_VALID_READYB",
            "SQC_ICACHE_MISSES",
        ],
    ),
    (
        "TCC",
        &[
            "TCC_ALL_TC_OP_INV_EVICT",
            "TCC_ALL_TC_OP_WB_WRITEBACK",
            "TCC_ATOMIC",
            "TCC_BUSY",
            "TCC_CC_REQ",
            "TCC_CYCLE",
            "TCC_EA0_ATOMIC",
            "TCC_EA0_ATOMIC_LEVEL",
        ],
    ),
    (
        "TCP",
        &[
            "TCP_ATOMIC_TAGCONFLICT_STALL_CYCLES",
            "TCP_GATE_EN1",
            "TCP_GATE_EN2",
            "TCP_PENDING_STALL_CYCLES",
            "TCP_READ_TAGCONFLICT_STALL_CYCLES",
            "TCP_TA_TCP_STATE_READ",
        ],
    ),
    (
        "TA",
        &[
            "TA_ADDR_STALLED_BY_TC_CYCLES",
            "TA_ADDR_STALLED_BY_TD_CYCLES",
            "TA_BUFFER_ATOMIC_WAVEFRONTS",
            "TA_BUFFER_COALESCED_READ_CYCLES",
        ],
    ),
    (
        "GRBM",
        &[
            "GRBM_COUNT",
            "GRBM_CPC_BUSY",
            "GRBM_CPF_BUSY",
            "GRBM_CP_BUSY",
            "GRBM_EA_BUSY",
            "GRBM_GUI_ACTIVE",
        ],
    ),
];

fn limit(block: &str) -> usize {
    match block {
        "SQ" => 8,
        "TCC" | "TCP" => 4,
        _ => 2,
    }
}

fn block_of(counter: &str) -> &'static str {
    COUNTERS
        .iter()
        .find(|(_, names)| names.contains(&counter))
        .unwrap()
        .0
}

/// An MI300X with the 40 counters (8 values each, one per XCC), two kernels run by one
/// thread three times.
fn scenario() -> String {
    let mut text = format!(
        "[scenario]\nname = \"passes\"\nseed = {SEED}\nthreads = 1\niterations = 3\n\
         [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = 304\nxcc = 8\n"
    );
    for (block, names) in COUNTERS {
        for name in *names {
            text.push_str(&format!(
                "[[agent.counter]]\nname = \"{name}\"\nblock = \"{block}\"\n\
                 dimensions = [[\"DIMENSION_XCC\", 8]]\n"
            ));
        }
    }
    for kernel in ["gemm", "reduce"] {
        text.push_str(&format!(
            "[[kernel]]\nname = \"{kernel}\"\nduration_ns = 1000\ngrid = [1024, 1, 1]\nworkgroup = [256, 1, 1]\n"
        ));
    }
    text
}

fn pipeline(extra: &str) -> String {
    let definitions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/counters/standard-schema.counter_defs.yaml");
    let collect: Vec<String> = (COUNTERS.iter())
        .flat_map(|(_, names)| names.iter().map(|n| format!("\"{n}\"")))
        .collect();
    format!(
        "[pipeline]\nname = \"passes\"\n[[context]]\nname = \"counters\"\n\
         tracing = [\"kernel_dispatch\"]\n[context.counters]\ndefinitions = \"{}\"\n\
         collect = [{}]\n{extra}\n[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n",
        definitions.display(),
        collect.join(", ")
    )
}

/// A directory with the scenario and the pipeline.
pub(super) fn setup(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scenario.toml"), scenario()).unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline(extra)).unwrap();
    dir
}

pub(super) fn run(dir: &Path, app: &[&str]) -> std::process::Output {
    run_on("sim:scenario.toml", "p.toml", app, dir, &[])
}

#[test]
fn forty_counters_are_planned_into_passes_within_every_block_limit() {
    let dir = setup("");
    let output = rocflow(&["explain", "p.toml"], dir.path(), &[]);
    assert_success(&output);
    let explained = text(&output.stdout);
    assert_says(&explained, "3 passes");
    let passes: Vec<Vec<&str>> = (explained.lines())
        .filter_map(|l| l.trim().strip_prefix("pass ")?.split_once(": "))
        .map(|(_, counters)| counters.split(", ").collect())
        .collect();
    assert_eq!(passes.len(), 3, "{explained}");
    let mut all: Vec<&str> = passes.concat();
    all.sort_unstable();
    let mut expected: Vec<&str> = COUNTERS
        .iter()
        .flat_map(|(_, n)| n.iter().copied())
        .collect();
    expected.sort_unstable();
    assert_eq!(all, expected, "each counter in one pass");
    for pass in &passes {
        for (block, _) in COUNTERS {
            let n = pass.iter().filter(|c| block_of(c) == *block).count();
            assert!(n <= limit(block), "{n} of {block} in {pass:?}");
        }
    }
}

#[test]
fn the_passes_merge_into_one_run_with_the_generators_values() {
    let dir = setup("");
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    assert_says(&output.stderr, "3 passes, merged into one run");
    assert!(
        !text(&output.stderr).contains("warning"),
        "{}",
        text(&output.stderr)
    );
    let out = dir.path().join("out");
    // The first pass is the run: its 6 dispatches, its process.
    let samples = assert_every_counter_of_every_dispatch(&out);

    // The spool keeps every pass; a replay merges them again.
    std::fs::rename(&out, dir.path().join("first")).unwrap();
    let replay = rocflow(&["replay", "rocflow-out/last.rfraw"], dir.path(), &[]);
    assert_success(&replay);
    assert_eq!(csv(&out.join("counter_sample.csv")), samples);
    let inspect = rocflow(
        &["inspect", "--json", "rocflow-out/last.rfraw"],
        dir.path(),
        &[],
    );
    assert_success(&inspect);
    let inspected: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(
        inspected["processes"].as_array().unwrap().len(),
        3,
        "one per pass"
    );
}

/// Checks the run's CSV in `out`: 6 dispatches of one process, each with the 8 values of
/// all 40 counters, every value the generator's; gives the samples.
pub(super) fn assert_every_counter_of_every_dispatch(out: &Path) -> Vec<BTreeMap<String, String>> {
    let dispatches = csv(&out.join("kernel_dispatch.csv"));
    assert_eq!(dispatches.len(), 6);
    let samples = csv(&out.join("counter_sample.csv"));
    let mut per_dispatch: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for s in &samples {
        assert_eq!(s["pid"], dispatches[0]["pid"]);
        *per_dispatch
            .entry(&s["dispatch_id"])
            .or_default()
            .entry(&s["counter"])
            .or_default() += 1;
        let coordinates = support::COORDINATES.map(|c| s[c].parse::<u16>().unwrap());
        let want = rocflow_sim::counter_value(
            SEED,
            s["dispatch_id"].parse().unwrap(),
            s["counter_id"].parse().unwrap(),
            coordinates,
        );
        assert_eq!(s["value"].parse::<f64>().unwrap(), want, "{s:?}");
    }
    let ids: Vec<&str> = dispatches
        .iter()
        .map(|d| d["dispatch_id"].as_str())
        .collect();
    assert_eq!(per_dispatch.keys().copied().collect::<Vec<_>>(), {
        let mut ids = ids.clone();
        ids.sort_unstable();
        ids
    });
    for (dispatch, counters) in &per_dispatch {
        assert_eq!(counters.len(), 40, "dispatch {dispatch}");
        assert!(
            counters.values().all(|&n| n == 8),
            "dispatch {dispatch}: {counters:?}"
        );
    }
    samples
}

#[test]
fn a_pipelines_derived_counter_reads_values_of_several_passes() {
    // GRBM_COUNT and GRBM_GUI_ACTIVE are in different passes (GRBM counts two at once).
    let derived = "derived = [{ name = \"ACTIVE_SHARE\", expression = \"reduce(GRBM_GUI_ACTIVE,sum)/reduce(GRBM_COUNT,sum)\" }]";
    let dir = setup(derived);
    let explained = text(&rocflow(&["explain", "p.toml"], dir.path(), &[]).stdout);
    let pass_of = |counter: &str| {
        (explained.lines())
            .find(|l| l.trim().starts_with("pass ") && l.contains(counter))
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_ne!(
        pass_of("GRBM_COUNT"),
        pass_of("GRBM_GUI_ACTIVE"),
        "{explained}"
    );
    let output = run(dir.path(), &["/bin/sleep", "0.1"]);
    assert_success(&output);
    let samples = csv(&dir.path().join("out/counter_sample.csv"));
    let sum = |dispatch: &str, counter: &str| -> f64 {
        (samples.iter())
            .filter(|s| s["dispatch_id"] == dispatch && s["counter"] == counter)
            .map(|s| s["value"].parse::<f64>().unwrap())
            .sum()
    };
    let shares: Vec<&BTreeMap<String, String>> = samples
        .iter()
        .filter(|s| s["counter"] == "ACTIVE_SHARE")
        .collect();
    assert_eq!(shares.len(), 6, "one per dispatch");
    for share in shares {
        let dispatch = share["dispatch_id"].as_str();
        let want = sum(dispatch, "GRBM_GUI_ACTIVE") / sum(dispatch, "GRBM_COUNT");
        let got: f64 = share["value"].parse().unwrap();
        assert!((got - want).abs() <= 1e-12 * want.abs(), "{got} != {want}");
    }
}

#[test]
fn passes_that_disagree_are_reported() {
    // The second and third runs start a child process the first did not.
    let dir = setup("");
    let app = "if [ -e ran ]; then /bin/true; fi; touch ran";
    let output = run(dir.path(), &["/bin/sh", "-c", app]);
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(
        stderr
            .contains("warning: the counter passes disagree: pass 2 had 3 processes, pass 1 had 2"),
        "{stderr}"
    );
}

#[test]
fn a_failing_pass_stops_the_run_with_its_number() {
    let dir = setup("");
    let output = run(
        dir.path(),
        &["/bin/sh", "-c", "[ ! -e ran ] || exit 3; touch ran"],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert_says(
        &output.stderr,
        "warning: pass 2 of 3 failed; the run stops there",
    );
}

#[test]
fn a_counter_no_pass_can_count_is_an_error_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut defs = String::from("schema-version: 1\n");
    for (event, name) in ["GRBM_COUNT", "GRBM_CP_BUSY", "GRBM_GUI_ACTIVE"]
        .iter()
        .enumerate()
    {
        defs.push_str(&format!(
            "{name}:\n  architectures:\n    gfx942:\n      block: GRBM\n      event: {event}\n  description: x\n"
        ));
    }
    defs.push_str(
        "BUSY3:\n  architectures:\n    gfx942:\n      expression: GRBM_COUNT+GRBM_CP_BUSY+GRBM_GUI_ACTIVE\n  description: x\n",
    );
    std::fs::write(dir.path().join("defs.yaml"), defs).unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "[pipeline]\nname = \"busy\"\n[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n\
         [context.counters]\ndefinitions = \"defs.yaml\"\ncollect = [\"BUSY3\"]\n",
    )
    .unwrap();
    let output = rocflow(&["validate", "p.toml"], dir.path(), &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_says(
        &output.stderr,
        "`BUSY3` needs 3 counters of block GRBM on gfx942, which counts 2 at once",
    );
    assert_says(&output.stderr, "p.toml:");
}
