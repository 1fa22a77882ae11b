//! The shipped template library and the examples, end to end: every pipeline in
//! `pipelines/` and `examples/` validates against rocprofiler-sdk's counter definitions and
//! runs on the simulated device, and the run's spool and outputs hold what the pipeline
//! collects. The folders are listed, so a new template or example is tested as it lands.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use rocflow::pipeline::model::PostStep;
use rocflow::pipeline::{self, Options};
use rocflow::plan::Plan;
use rocflow::record::RecordKind;
use rocflow::sdk::Domain;
use support::{csv, pipelines, repo, rocflow, run_on, text};

/// The tracing domains the simulated SDK replays records in (engine/sim/src/workload.rs);
/// it also delivers counter values and PC samples.
const SIMULATED: &[Domain] = &[
    Domain::HipRuntimeApi,
    // The same calls, with their arguments (`args = true`).
    Domain::HipRuntimeApiExt,
    Domain::KernelDispatch,
    Domain::MemoryCopy,
    Domain::MemoryAllocation,
    Domain::MarkerCoreRangeApi,
];

/// What a sink says when its format is not part of this build (perfetto and parquet, until
/// their branches are merged). Such a sink has nothing to check; every other sink must
/// have written its output.
const NOT_BUILT: &str = "sink is not part of this rocflow build yet";

/// Every pipeline file of the template library and the examples (scenarios excluded).
/// The simulated device's scenarios, the built-in one first.
fn scenarios() -> Vec<PathBuf> {
    let dir = repo().join("examples/sim");
    let mut others: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("mi300x.toml"))
        .collect();
    others.sort();
    std::iter::once(dir.join("mi300x.toml"))
        .chain(others)
        .collect()
}

fn compile(pipeline: &Path) -> Plan {
    let options = Options {
        counters: Some(repo().join("../shared/data/counters/standard-schema.counter_defs.yaml")),
        plugins: rocflow::plugin::Search::from_env(),
        ..Options::default()
    };
    match pipeline::compile_file(pipeline, &options) {
        Ok(compiled) => compiled.plan,
        Err(errors) => panic!(
            "{}: {:#?}",
            pipeline.display(),
            errors.iter().map(ToString::to_string).collect::<Vec<_>>()
        ),
    }
}

/// The record kinds a plan collects that the simulated device can deliver.
fn simulated_kinds(plan: &Plan) -> BTreeSet<RecordKind> {
    let mut kinds = BTreeSet::new();
    for context in &plan.contexts {
        let traced = context.tracing.iter().map(|t| t.domain);
        kinds.extend(
            traced
                .filter(|d| SIMULATED.contains(d))
                .map(Domain::record_kind),
        );
        if context.counters.is_some() {
            kinds.insert(RecordKind::CounterSample);
        }
        if context.pc_sampling.is_some() {
            kinds.insert(RecordKind::PcSample);
        }
    }
    kinds
}

/// One `rocflow run` of a pipeline on a scenario, in a directory of its own.
struct Run {
    dir: tempfile::TempDir,
    output: Output,
}

impl Run {
    fn new(pipeline: &Path, scenario: &Path, app: &[&str]) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let device = format!("sim:{}", scenario.display());
        let output = run_on(&device, pipeline.to_str().unwrap(), app, dir.path(), &[]);
        Run { dir, output }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// `rocflow inspect --json` of the run's spool, which the run names.
    fn spool(&self) -> serde_json::Value {
        let report = text(&self.output.stderr);
        let spool = (report.lines())
            .find_map(|l| l.trim().strip_prefix("spool: "))
            .unwrap_or_else(|| panic!("the run names no spool: {report}"));
        let out = rocflow(&["inspect", "--json", spool], self.dir.path(), &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Problems with the run as a whole; the names of the sinks this build lacks.
    fn check(&self, plan: &Plan) -> Result<BTreeSet<String>, String> {
        let stderr = text(&self.output.stderr);
        let mut not_built = BTreeSet::new();
        for line in stderr.lines() {
            let sink = line
                .strip_prefix("error: sink `")
                .and_then(|rest| rest.split_once('`'))
                .filter(|(_, message)| message.ends_with(NOT_BUILT));
            match sink {
                Some((name, _)) => {
                    not_built.insert(name.to_owned());
                }
                None if line.starts_with("error:") || line.starts_with("warning:") => {
                    return Err(format!("the run reports: {line}\n{stderr}"));
                }
                None => {}
            }
        }
        // A run with a sink missing from this build is not healthy: exit 1, not 0.
        let status = self.output.status.code();
        let expected = if not_built.is_empty() { 0 } else { 1 };
        if status != Some(expected) {
            return Err(format!(
                "exit {status:?}, not {expected}\nstdout:\n{}\nstderr:\n{stderr}",
                text(&self.output.stdout)
            ));
        }
        let spool = self.spool();
        if spool["complete"] != true {
            return Err(format!("the spool is incomplete: {spool}"));
        }
        let produced: BTreeSet<&str> = plan.stages.produced.iter().map(|k| k.name()).collect();
        for (kind, _) in spool["records"].as_object().unwrap() {
            if !produced.contains(kind.as_str()) {
                return Err(format!(
                    "the spool has {kind} records the pipeline does not collect"
                ));
            }
        }
        for process in spool["processes"].as_array().unwrap() {
            if process["dropped"] != serde_json::json!({}) {
                return Err(format!("records were dropped: {process}"));
            }
        }
        let outputs = self.outputs();
        for sink in plan.sinks.iter().filter(|s| !not_built.contains(&s.name)) {
            self.written(&outputs, &sink.path)
                .map_err(|e| format!("sink `{}`: {e}", sink.name))?;
        }
        for post in &plan.posts {
            let path = match &post.step {
                PostStep::Summary { path, .. } => path.as_deref().unwrap_or("summary"),
                PostStep::Sql { path, .. } | PostStep::Report { path, .. } => path,
                PostStep::Command { .. } => continue,
            };
            self.written(&outputs, path)
                .map_err(|e| format!("post-step `{}`: {e}", post.name))?;
        }
        Ok(not_built)
    }

    /// Records per kind in the spool.
    fn records(&self) -> BTreeMap<String, u64> {
        let spool = self.spool();
        let records = spool["records"].as_object().unwrap().iter();
        records
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect()
    }

    /// Every file and directory the run wrote, relative to its directory.
    fn outputs(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let relative = path.strip_prefix(root).unwrap();
                out.push(relative.to_string_lossy().replace('\\', "/"));
                if path.is_dir() {
                    walk(root, &path, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut out);
        out
    }

    /// Whether an output with this path (run-time placeholders allowed) was written, and
    /// is not empty.
    fn written(&self, outputs: &[String], template: &str) -> Result<(), String> {
        if Path::new(template).is_absolute() {
            return Err(format!("{template} is absolute; examples run anywhere"));
        }
        let pattern = placeholder_pattern(template);
        let found = outputs.iter().find(|o| pattern.is_match(o));
        let Some(found) = found else {
            return Err(format!(
                "nothing written at {template}; the run wrote {outputs:?}"
            ));
        };
        let path = self.path(found);
        let empty = match path.is_dir() {
            true => std::fs::read_dir(&path).unwrap().next().is_none(),
            false => std::fs::metadata(&path).unwrap().len() == 0,
        };
        match empty {
            true => Err(format!("{found} is empty")),
            false => Ok(()),
        }
    }
}

/// A regex for the paths an output path can become: each run-time placeholder is one
/// path component's worth of text.
fn placeholder_pattern(template: &str) -> regex::Regex {
    let placeholder = regex::Regex::new(r"\{(hostname|pid|ppid|rank|timestamp)\}").unwrap();
    let mut pattern = String::from("^");
    let mut last = 0;
    for m in placeholder.find_iter(template) {
        pattern.push_str(&regex::escape(&template[last..m.start()]));
        pattern.push_str("[^/]+");
        last = m.end();
    }
    pattern.push_str(&regex::escape(&template[last..]));
    pattern.push('$');
    regex::Regex::new(&pattern).unwrap()
}

#[test]
fn every_template_and_example_validates_against_the_real_counter_definitions() {
    let pipelines = pipelines();
    for pipeline in &pipelines {
        compile(pipeline);
    }
    let shipped = rocflow::pipeline::template::builtin_names().count();
    assert!(shipped >= 14, "only {shipped} shipped templates");
    assert!(pipelines.len() >= shipped + 5, "{pipelines:?}");
}

/// Runs each pipeline on the built-in scenario, and on the other scenarios while some
/// kind of record it collects has not been seen (counters of a Radeon GPU need one). A
/// template that collects nothing by itself (`base`: outputs only) runs through those
/// that extend it.
#[test]
fn every_template_and_example_runs_on_the_simulated_device() {
    let pipelines = pipelines();
    let plans: Vec<Plan> = pipelines.iter().map(|p| compile(p)).collect();
    let mut failures = Vec::new();
    for (pipeline, plan) in pipelines.iter().zip(&plans) {
        let name = pipeline.strip_prefix(repo()).unwrap().display().to_string();
        if plan.contexts.is_empty() {
            let source = pipeline.canonicalize().unwrap().display().to_string();
            if !plans
                .iter()
                .any(|p| !p.contexts.is_empty() && p.pipeline.sources.contains(&source))
            {
                failures.push(format!("{name}: collects nothing, and nothing extends it"));
            }
            continue;
        }
        let expected = simulated_kinds(plan);
        if expected.is_empty() {
            failures.push(format!(
                "{name}: collects nothing the simulated device delivers"
            ));
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut failed = false;
        for scenario in scenarios() {
            let run = Run::new(pipeline, &scenario, &["/bin/sleep", "0.2"]);
            if let Err(e) = run.check(plan) {
                let scenario = scenario.file_name().unwrap().to_string_lossy().into_owned();
                failures.push(format!("{name} on {scenario}: {e}"));
                failed = true;
                break;
            }
            let records = run.records();
            let delivered = |k: &&RecordKind| records.get(k.name()).is_some_and(|&n| n > 0);
            seen.extend(expected.iter().filter(delivered));
            if seen == expected {
                break;
            }
        }
        if !failed && seen != expected {
            let missing: Vec<&str> = expected.difference(&seen).map(|k| k.name()).collect();
            failures.push(format!("{name}: no {missing:?} records on any scenario"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn default_scenario() -> PathBuf {
    scenarios().remove(0)
}

/// A run of the repository's pipeline at `path` on the default scenario, checked against
/// its plan.
fn checked_run(path: &str) -> Run {
    let pipeline = repo().join(path);
    let run = Run::new(&pipeline, &default_scenario(), &["/bin/sleep", "0.2"]);
    run.check(&compile(&pipeline)).unwrap();
    run
}

#[test]
fn the_counters_example_keeps_one_value_per_xcc_and_tables_them_per_kernel() {
    let run = checked_run("examples/counters.toml");
    let out = run.outputs();
    let dir = out
        .iter()
        .find(|o| o.starts_with("rocflow-out/counters-"))
        .unwrap();
    let samples = csv(&run.path(dir).join("counter_sample.csv"));
    // Dispatches 3 to 12 of vectorAdd and smooth: six counters over eight XCCs, and the
    // derived VALU_PER_WAVE, one value each.
    assert_eq!(samples.len(), 2 * 10 * (6 * 8 + 1));
    let xccs: BTreeSet<&str> = samples.iter().map(|s| s["xcc"].as_str()).collect();
    assert_eq!(xccs.len(), 8);
    assert!(
        samples
            .iter()
            .all(|s| s["shader_engine"] == "0" && s["instance"] == "0"),
        "shader engines and L2 channels are summed away"
    );
    assert_eq!(valu_per_wave(&samples).len(), 2 * 10);
    let table = csv(&run.path(dir).join("counters.csv"));
    assert_eq!(table.len(), 2 * 7, "a row per kernel and counter");
    for row in &table {
        assert!(
            row["kernel_name"] == "vectorAdd(float const*, float const*, float*, int)"
                || row["kernel_name"]
                    == "void solver::smooth<8>(double const*, double*, int, int, int)",
            "{row:?}"
        );
        let values = if row["counter"] == "VALU_PER_WAVE" {
            "10"
        } else {
            "80"
        };
        assert_eq!(row["values"], values, "ten dispatches, eight XCCs: {row:?}");
    }
}

/// Per dispatch of counter samples (CSV rows), VALU_PER_WAVE as derived, and as computed
/// here: the VALU instructions of all its instances over its waves. Asserts they agree.
fn valu_per_wave(samples: &[BTreeMap<String, String>]) -> BTreeMap<&str, f64> {
    let mut sums: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for s in samples {
        let value: f64 = s["value"].parse().unwrap();
        *sums.entry((&s["dispatch_id"], &s["counter"])).or_default() += value;
    }
    let derived: BTreeMap<&str, f64> = sums
        .iter()
        .filter(|((_, counter), _)| *counter == "VALU_PER_WAVE")
        .map(|(&(dispatch, _), &value)| (dispatch, value))
        .collect();
    for (dispatch, value) in &derived {
        let per_wave = sums[&(*dispatch, "SQ_INSTS_VALU")] / sums[&(*dispatch, "SQ_WAVES")];
        assert!(
            (value - per_wave).abs() <= 1e-12 * per_wave,
            "dispatch {dispatch}: {value} != {per_wave}"
        );
    }
    derived
}

#[test]
fn counters_basic_derives_valu_instructions_per_wave_for_each_dispatch() {
    let run = checked_run("pipelines/counters-basic.toml");
    let out = run.outputs();
    let database = out.iter().find(|o| o.ends_with(".db")).unwrap();
    let db = rusqlite::Connection::open(run.path(database)).unwrap();
    // Every counter is summed over its dimensions: a value per dispatch and counter.
    let mut query = db
        .prepare(
            "SELECT dispatch_id, kernel_name, counter_name, value FROM counters_collection \
             WHERE counter_name IN ('SQ_WAVES', 'SQ_INSTS_VALU', 'VALU_PER_WAVE')",
        )
        .unwrap();
    let rows: Vec<BTreeMap<String, String>> = query
        .query_map([], |r| {
            let field = |name: &str, value: String| (name.to_owned(), value);
            Ok(BTreeMap::from([
                field("dispatch_id", r.get::<_, i64>(0)?.to_string()),
                field("kernel", r.get(1)?),
                field("counter", r.get(2)?),
                field("value", r.get::<_, f64>(3)?.to_string()),
            ]))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let derived = valu_per_wave(&rows);
    // vectorAdd and smooth on the MI300X; the MI210 has no SQ_INSTS_VALU to derive from.
    assert_eq!(derived.len(), 2 * 200);
    let kernels: BTreeSet<&str> = (rows.iter())
        .filter(|r| r["counter"] == "VALU_PER_WAVE")
        .map(|r| r["kernel"].as_str())
        .collect();
    assert_eq!(
        kernels,
        BTreeSet::from([
            "vectorAdd(float const*, float const*, float*, int)",
            "void solver::smooth<8>(double const*, double*, int, int, int)"
        ])
    );
}

#[test]
fn pc_sampling_hotspots_attributes_every_sample_to_its_kernel() {
    let run = checked_run("pipelines/pc-sampling-hotspots.toml");
    // The scenario: two threads, 100 iterations, 8, 3 and 2 samples per dispatch.
    let kernels = csv(&run.path("rocflow-out/pc-kernels.csv"));
    assert_eq!(
        support::columns(&kernels, ["kernel", "samples", "distinct_pcs"]),
        [
            [
                "void solver::smooth<8>(double const*, double*, int, int, int)",
                "1600",
                "8",
            ],
            [
                "reduce_kernel(float const*, float*, unsigned int)",
                "600",
                "3"
            ],
            [
                "vectorAdd(float const*, float const*, float*, int)",
                "400",
                "2"
            ],
        ]
    );
    let hot = csv(&run.path("rocflow-out/pc-hot-spots.csv"));
    assert_eq!(
        hot.len(),
        8 + 3 + 2,
        "every sampled code location, under top_pcs"
    );
    assert!(hot.iter().all(|h| h["samples"] == "200"), "{hot:?}");
}

#[test]
fn the_multi_process_example_puts_every_process_in_one_database() {
    let pipeline = repo().join("examples/multi-process.toml");
    let app = support::sim_app();
    let run = Run::new(
        &pipeline,
        &default_scenario(),
        &[app.to_str().unwrap(), "fork", "3"],
    );
    run.check(&compile(&pipeline)).unwrap();
    let spool = run.spool();
    assert_eq!(spool["processes"].as_array().unwrap().len(), 4);
    assert_eq!(spool["records"]["kernel_dispatch"], 4 * 600);
    let out = run.outputs();
    let databases: Vec<&String> = out.iter().filter(|o| o.ends_with(".db")).collect();
    assert_eq!(databases.len(), 1, "{out:?}");
    let db = rusqlite::Connection::open(run.path(databases[0])).unwrap();
    let (processes, kernels): (i64, i64) = db
        .query_row(
            "SELECT COUNT(DISTINCT pid), COUNT(*) FROM kernels",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((processes, kernels), (4, 4 * 600));
    let summary = csv(&run.path("rocflow-out/summary/kernels.csv"));
    let pids: BTreeSet<&str> = summary.iter().map(|r| r["process"].as_str()).collect();
    assert_eq!(pids.len(), 4, "a row per kernel and process");
}
