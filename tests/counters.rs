//! Derived counters and dimension reductions end to end: `rocflow run` on the simulated
//! device, checked against the collected values of the same run, which a replay of its
//! spool through a pipeline without them gives.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use support::{assert_fails, assert_says, assert_success, rocflow, run_on, text};

/// A context collecting waves, VALU instructions and busy cycles, with derived counters
/// and reductions in `EXTRA`. The 1 KiB buffer splits every dispatch's values (72 on the
/// MI300X) over several deliveries.
const PIPELINE: &str = concat!(
    r#"
[pipeline]
name = "counters-test"
[[context]]
name = "counters"
tracing = ["kernel_dispatch"]
buffer = { size = "1KiB" }
[context.counters]
collect = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"]
EXTRA
"#,
    support::sink!("csv", "csv", "out"),
);

const DERIVED: &str = r#"
[[context.counters.derived]]
name = "VALU_PER_WAVE"
expression = "reduce(SQ_INSTS_VALU,sum)/reduce(SQ_WAVES,sum)"
[[context.counters.derived]]
name = "VALU_PER_WAVE_SE"
expression = "SQ_INSTS_VALU/SQ_WAVES"
[[context.counters.reduce]]
counters = ["SQ_WAVES", "VALU_PER_WAVE_SE"]
dimensions = ["DIMENSION_SHADER_ENGINE"]
op = "sum"
"#;

/// A counter's value in a dispatch at a point: (agent, dispatch, counter, xcc, shader
/// engine, every coordinate as written).
type Key = (String, u64, String, u16, u16, String);
type Values = BTreeMap<Key, f64>;

/// The counter samples a CSV sink wrote, by key.
fn samples(dir: &Path) -> Values {
    let content = std::fs::read_to_string(dir.join("counter_sample.csv")).unwrap();
    let mut lines = content.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (agent, dispatch, counter) = (column("agent"), column("dispatch_id"), column("counter"));
    let (xcc, se, value) = (column("xcc"), column("shader_engine"), column("value"));
    let coordinates = column("xcc")..=column("instance");
    let mut values = Values::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let key = (
            f[agent].to_owned(),
            f[dispatch].parse().unwrap(),
            f[counter].to_owned(),
            f[xcc].parse().unwrap(),
            f[se].parse().unwrap(),
            f[coordinates.clone()].join(","),
        );
        let previous = values.insert(key.clone(), f[value].parse().unwrap());
        assert!(previous.is_none(), "two values for {key:?}");
    }
    values
}

fn run(dir: &Path, extra: &str) -> Output {
    std::fs::write(dir.join("p.toml"), PIPELINE.replace("EXTRA", extra)).unwrap();
    run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir, &[])
}

/// The collected values of the run in `dir`: its spool replayed without derived counters
/// or reductions.
fn collected(dir: &Path) -> Values {
    std::fs::write(
        dir.join("raw.toml"),
        PIPELINE.replace("EXTRA", "").replace("\"out\"", "\"raw\""),
    )
    .unwrap();
    let output = rocflow(&["replay", "rocflow-out/last.rfraw", "raw.toml"], dir, &[]);
    assert_success(&output);
    samples(&dir.join("raw"))
}

/// A dispatch's values, by counter and (xcc, shader engine).
type Dispatch = BTreeMap<String, BTreeMap<(u16, u16), f64>>;

/// The values per dispatch (agent, dispatch id).
fn dispatches(values: &Values) -> BTreeMap<(String, u64), Dispatch> {
    let mut dispatches: BTreeMap<(String, u64), Dispatch> = BTreeMap::new();
    for ((agent, dispatch, counter, xcc, se, _), value) in values {
        let of_dispatch = dispatches.entry((agent.clone(), *dispatch)).or_default();
        let of_counter = of_dispatch.entry(counter.clone()).or_default();
        of_counter.insert((*xcc, *se), *value);
    }
    dispatches
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn derived_and_reduced_counters_follow_from_the_collected_values() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), DERIVED);
    assert_success(&output);
    assert!(
        !text(&output.stderr).contains("warning"),
        "{}",
        text(&output.stderr)
    );
    let out = samples(&dir.path().join("out"));
    let raw = dispatches(&collected(dir.path()));
    assert_eq!(raw.len(), 600, "every kernel dispatch is counted");

    let key = |(agent, dispatch): &(String, u64), counter: &str, (xcc, se): (u16, u16)| {
        let coordinates = format!("{xcc},0,{se},0,0,0,0");
        let counter = counter.to_owned();
        (agent.clone(), *dispatch, counter, xcc, se, coordinates)
    };
    let mut expected = Values::new();
    for (id, dispatch) in &raw {
        // Collected as they are, but for the waves, summed over shader engines.
        for counter in ["SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"] {
            for (&point, &v) in dispatch.get(counter).into_iter().flatten() {
                expected.insert(key(id, counter, point), v);
            }
        }
        let waves = &dispatch["SQ_WAVES"];
        for (&(xcc, _), &v) in waves {
            *expected.entry(key(id, "SQ_WAVES", (xcc, 0))).or_default() += v;
        }
        // The MI210 (gfx90a) has no SQ_INSTS_VALU: no derived counters there.
        let Some(valu) = dispatch.get("SQ_INSTS_VALU") else {
            continue;
        };
        let total = |t: &BTreeMap<(u16, u16), f64>| t.values().sum::<f64>();
        let per_wave = total(valu) / total(waves);
        expected.insert(key(id, "VALU_PER_WAVE", (0, 0)), per_wave);
        for (&(xcc, se), &w) in waves {
            // A division by zero gives zero, as in rocprofiler-sdk.
            let ratio = if w == 0.0 { 0.0 } else { valu[&(xcc, se)] / w };
            *expected
                .entry(key(id, "VALU_PER_WAVE_SE", (xcc, 0)))
                .or_default() += ratio;
        }
    }
    assert_eq!(
        out.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "one value per dispatch, counter and remaining coordinate"
    );
    for (key, want) in &expected {
        assert!(close(out[key], *want), "{key:?}: {} != {want}", out[key]);
    }
    // On the MI300X: 8 XCCs of waves, VALU per wave per XCC, 32 of VALU, 8 of GRBM, 1.
    let mi300x = out.keys().find(|k| k.0 == "1").unwrap().1;
    let per_dispatch = out
        .keys()
        .filter(|(a, d, ..)| a == "1" && *d == mi300x)
        .count();
    assert_eq!(per_dispatch, 8 + 8 + 32 + 8 + 1);

    // Replaying the spool with the pipeline it was recorded with gives the same.
    std::fs::rename(dir.path().join("out"), dir.path().join("first")).unwrap();
    let replay = rocflow(&["replay", "rocflow-out/last.rfraw"], dir.path(), &[]);
    assert_success(&replay);
    assert_eq!(samples(&dir.path().join("out")), out);
}

#[test]
fn a_derived_counter_that_cannot_be_computed_is_reported_per_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let extra =
        "derived = [{ name = \"WAVES_PER_CYCLE\", expression = \"SQ_WAVES/GRBM_GUI_ACTIVE\" }]";
    let output = run(dir.path(), extra);
    assert_success(&output);
    // On the MI300X, 32 waves and 8 busy-cycle values do not pair up; on the MI210, its 8
    // shader engines' waves are each divided by its one busy-cycle value, as the SDK does.
    let stderr = text(&output.stderr);
    let raw = dispatches(&collected(dir.path()));
    // The failed records: every collected value of the MI300X's 400 dispatches.
    let mi300x: Vec<_> = (raw.values())
        .filter(|counters| counters["SQ_WAVES"].len() == 32)
        .collect();
    assert_eq!(mi300x.len(), 400);
    let values: usize = mi300x
        .iter()
        .flat_map(|c| c.values())
        .map(|v| v.len())
        .sum();
    assert!(
        stderr.contains(&format!(
            "warning: transform `counters/dispatches` failed on {values} records; first: dispatch "
        )),
        "{values}: {stderr}"
    );
    assert_says(
        &stderr,
        "cannot compute `WAVES_PER_CYCLE`: `/` of 32 and 8 instances: the counts must be equal or one of them 1",
    );
    let out = samples(&dir.path().join("out"));
    let derived: Vec<(&Key, &f64)> = (out.iter())
        .filter(|(k, _)| k.2 == "WAVES_PER_CYCLE")
        .collect();
    assert_eq!(derived.len(), 200 * 8, "the MI210's dispatches");
    for ((agent, dispatch, _, xcc, se, _), value) in derived {
        let collected = &raw[&(agent.clone(), *dispatch)];
        let cycles = collected["GRBM_GUI_ACTIVE"][&(0, 0)];
        let waves = collected["SQ_WAVES"][&(*xcc, *se)];
        assert!(
            close(*value, waves / cycles),
            "{value} != {waves} / {cycles}"
        );
    }
}

#[test]
fn a_derived_counter_reading_what_is_not_collected_stops_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "derived = [{ name = \"SALU_PER_WAVE\", expression = \"SQ_INSTS_SALU/SQ_WAVES\" }]";
    let output = run(dir.path(), extra);
    assert_fails(
        &output,
        2,
        &["`SQ_INSTS_SALU` is not collected by this context"],
    );
    assert!(!dir.path().join("rocflow-out").exists());
}

#[test]
fn a_derived_counter_hides_the_counter_of_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "derived = [{ name = \"GRBM_GUI_ACTIVE\", expression = \"reduce(SQ_WAVES,sum)\" }]";
    let output = run(dir.path(), extra);
    assert_success(&output);
    let out = dispatches(&samples(&dir.path().join("out")));
    assert_eq!(out.len(), 600);
    for (id, dispatch) in &out {
        // Only the derived one: the GPU does not count GRBM_GUI_ACTIVE.
        let derived = &dispatch["GRBM_GUI_ACTIVE"];
        assert_eq!(derived.keys().collect::<Vec<_>>(), [&(0, 0)], "{id:?}");
        let waves: f64 = dispatch["SQ_WAVES"].values().sum();
        assert!(close(derived[&(0, 0)], waves), "{id:?}");
    }
}
