//! The shipped template library and the examples, end to end: every pipeline in
//! `pipelines/` and `examples/` validates against rocprofiler-sdk's counter definitions and
//! runs on the simulated device, and the run's spool and every output, read back by a
//! reader of its format, hold the records the scenario implies. The folders are listed, so
//! a new template or example is tested as it lands (and a new output format fails until it
//! has a reader here).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use rocflow::pipeline::{self, Options};
use rocflow::plan::PostStep;
use rocflow::plan::TransformOpPlan;
use rocflow::plan::sink::SinkKind;
use rocflow::plan::{AgentSelector, Plan, SinkPlan, Writer};
use rocflow::record::RecordKind;
use rocflow::sdk::Domain;
use support::truth::{self, Scenario, Tally};
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

/// Records per kind.
type Counts = BTreeMap<RecordKind, u64>;

/// The records of each kind the simulated device delivers to `plan` in one process of
/// `scenario` (see [`Scenario`] for what a process does), a record several contexts trace
/// once: what the plan's domains and their operations let through, and the PC samples of
/// the kernels on GPUs that take them and that a context samples. Counter samples are left
/// out: their number follows the GPU's definitions.
fn implied(scenario: &Scenario, plan: &Plan) -> Counts {
    let repeats = scenario.repeats();
    let tracing = || plan.contexts.iter().flat_map(|c| &c.tracing);
    let traces = |domain: Domain| tracing().any(|t| t.domain.plain() == domain);
    let calls = |domain: Domain, function: &str| {
        let (id, _) = (domain.operations().iter())
            .find(|(_, name)| *name == function)
            .unwrap_or_else(|| panic!("no {function} in {}", domain.name()));
        tracing().any(|t| {
            t.domain.plain() == domain && t.operations.as_ref().is_none_or(|ops| ops.contains(id))
        })
    };
    let mut counts = Counts::new();
    let mut add = |kind: RecordKind, n: u64| *counts.entry(kind).or_default() += repeats * n;
    if traces(Domain::KernelDispatch) {
        add(RecordKind::KernelDispatch, scenario.kernels.len() as u64);
    }
    if traces(Domain::MemoryCopy) {
        add(RecordKind::MemoryCopy, scenario.copies.len() as u64);
    }
    if traces(Domain::MemoryAllocation) {
        add(
            RecordKind::MemoryAllocation,
            2 * scenario.allocations.len() as u64,
        );
    }
    if scenario.marker.is_some() && calls(Domain::MarkerCoreRangeApi, "roctxThreadRangeA") {
        add(RecordKind::Marker, 1);
    }
    for (domain, function, n) in scenario.calls() {
        if calls(Domain::from_name(domain).unwrap(), function) {
            add(RecordKind::Api, n);
        }
    }
    for context in &plan.contexts {
        let Some(pc) = &context.pc_sampling else {
            continue;
        };
        let selectors = context.service_agents(&pc.agents);
        for kernel in &scenario.kernels {
            let agent = &scenario.agents[kernel.agent];
            let selected =
                AgentSelector::any_selects_gpu(selectors, kernel.agent as u32, &agent.name);
            if agent.pc_sampling && selected {
                add(RecordKind::PcSample, kernel.pc_samples);
            }
        }
    }
    counts.retain(|_, n| *n > 0);
    counts
}

/// Whether a transform of this kind may change how many records of its kinds pass: those
/// that only add columns or tables (derive, kernel_name, aggregate) do not.
fn changes_counts(op: &TransformOpPlan) -> bool {
    !matches!(
        op,
        TransformOpPlan::Derive(_) | TransformOpPlan::KernelName(_) | TransformOpPlan::Aggregate(_)
    )
}

/// Holds the records of each kind an output holds (`got`, each kind its reader counts) to
/// what it must hold of those `delivered`: none of a kind not routed to it; all of a kind
/// no transform on its way changes; of a kind a transform changes, no more than came in.
fn compare(
    got: &Counts,
    routed: &[RecordKind],
    changed: &[RecordKind],
    delivered: &Counts,
) -> Result<(), String> {
    for (&kind, &n) in got {
        let came = delivered.get(&kind).copied().unwrap_or(0);
        let (holds, want) = match (routed.contains(&kind), changed.contains(&kind)) {
            (false, _) => (n == 0, "none: not routed here".to_owned()),
            (true, false) => (n == came, came.to_string()),
            (true, true) => (n <= came, format!("at most {came}, through a transform")),
        };
        if !holds {
            return Err(format!("{n} {} records, not {want}", kind.name()));
        }
    }
    Ok(())
}

/// One `rocflow run` of a pipeline on a scenario, in a directory of its own.
struct Run {
    dir: tempfile::TempDir,
    output: Output,
    scenario: Scenario,
    /// The processes the application runs as, each of which replays the scenario.
    processes: u64,
}

impl Run {
    /// A run of `app`, which runs as `processes` processes.
    fn new(pipeline: &Path, scenario: &Path, app: &[&str], processes: u64) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let device = format!("sim:{}", scenario.display());
        let output = run_on(&device, pipeline.to_str().unwrap(), app, dir.path(), &[]);
        let scenario = Scenario::read(scenario);
        Run {
            dir,
            output,
            scenario,
            processes,
        }
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

    /// Problems with the run: its exit and messages, its spool against what the scenario
    /// implies, and each sink's and post-step's output read back.
    fn check(&self, plan: &Plan) -> Result<(), String> {
        let stderr = text(&self.output.stderr);
        if let Some(line) =
            (stderr.lines()).find(|l| l.starts_with("error:") || l.starts_with("warning:"))
        {
            return Err(format!("the run reports: {line}\n{stderr}"));
        }
        if !self.output.status.success() {
            return Err(format!(
                "exit {:?}\nstdout:\n{}\nstderr:\n{stderr}",
                self.output.status.code(),
                text(&self.output.stdout)
            ));
        }
        let spool = self.spool();
        if spool["complete"] != true {
            return Err(format!("the spool is incomplete: {spool}"));
        }
        for process in spool["processes"].as_array().unwrap() {
            if process["dropped"] != serde_json::json!({}) {
                return Err(format!("records were dropped: {process}"));
            }
        }
        // The spool holds only kinds the pipeline collects, of each what the scenario
        // implies (of counter samples, whose number the GPU's definitions decide, and of
        // device samples, whose number the run's length decides, its own).
        let spooled = records(&spool);
        let mut delivered = implied(&self.scenario, plan);
        delivered.values_mut().for_each(|n| *n *= self.processes);
        for (&kind, &n) in &spooled {
            if !plan.stages.produced.contains(&kind) {
                return Err(format!(
                    "the spool has {} records the pipeline does not collect",
                    kind.name()
                ));
            }
            if matches!(
                kind,
                RecordKind::CounterSample | RecordKind::DeviceCounterSample | RecordKind::SpmSample
            ) {
                delivered.insert(kind, n);
            }
        }
        if spooled != delivered {
            return Err(format!(
                "the spool holds {spooled:?}, the scenario implies {delivered:?}"
            ));
        }
        let changed = |transforms: &[usize]| -> Vec<RecordKind> {
            let transforms = transforms.iter().map(|&i| &plan.stages.transforms[i]);
            transforms
                .filter(|t| changes_counts(&t.op))
                .flat_map(|t| t.kinds.clone())
                .collect()
        };
        for sink in &plan.sinks {
            let route = (plan.stages.routes.iter())
                .find(|r| r.sink == sink.name)
                .unwrap();
            self.read_back(sink)
                .and_then(|got| {
                    compare(&got, &route.kinds, &changed(&route.transforms), &delivered)
                })
                .map_err(|e| format!("sink `{}`: {e}", sink.name))?;
        }
        let every: Vec<usize> = (0..plan.stages.transforms.len()).collect();
        for post in &plan.posts {
            let checked = match &post.step {
                PostStep::Summary { path, .. } => self
                    .summary(path.as_deref().unwrap_or("summary"))
                    .and_then(|got| {
                        compare(&got, &plan.stages.produced, &changed(&every), &delivered)
                    }),
                PostStep::Report { path, .. } => self.report(path, plan, &delivered),
                PostStep::Sql { path, .. } => self.rows(path),
                // Its findings are held against the scenarios in tests/analyze.rs.
                PostStep::Analyze { .. } | PostStep::Command { .. } => continue,
            };
            checked.map_err(|e| format!("post-step `{}`: {e}", post.name))?;
        }
        Ok(())
    }

    /// The one file or directory the run wrote at `template`.
    fn one(&self, template: &str) -> Result<PathBuf, String> {
        let mut found = self.found(template)?;
        match found.len() {
            1 => Ok(found.remove(0)),
            _ => Err(format!("{} outputs at {template}: {found:?}", found.len())),
        }
    }

    /// Records per kind in the spool.
    fn records(&self) -> Counts {
        records(&self.spool())
    }

    /// Every file or directory the run wrote at `template` (run-time placeholders
    /// allowed), at least one.
    fn found(&self, template: &str) -> Result<Vec<PathBuf>, String> {
        if Path::new(template).is_absolute() {
            return Err(format!("{template} is absolute; examples run anywhere"));
        }
        let pattern = placeholder_pattern(template);
        let outputs = self.outputs();
        let found: Vec<PathBuf> = (outputs.iter())
            .filter(|o| pattern.is_match(o))
            .map(|o| self.path(o))
            .collect();
        match found.is_empty() {
            true => Err(format!(
                "nothing written at {template}; the run wrote {outputs:?}"
            )),
            false => Ok(found),
        }
    }

    /// The records of each kind sink `sink` wrote, read back by a reader of its format: the
    /// kinds that format keeps as records (Perfetto keeps allocations as a counter track).
    fn read_back(&self, sink: &SinkPlan) -> Result<Counts, String> {
        use RecordKind::*;
        let every = [KernelDispatch, Api, MemoryCopy, MemoryAllocation, Marker];
        let mut counts = Counts::new();
        for path in self.found(&sink.path)? {
            let read = match &sink.writer {
                Writer::Builtin(format) => match format.kind() {
                    SinkKind::Rocpd => {
                        let tally = truth::rocpd(&path);
                        let mut read = counted(&tally, &every);
                        read.insert(PcSample, tally.pc_samples);
                        read
                    }
                    SinkKind::Perfetto => counted(
                        &truth::perfetto(&[path]),
                        &[KernelDispatch, Api, MemoryCopy, Marker],
                    ),
                    SinkKind::Csv if sink.options().get("flavour").is_none() => {
                        counted(&truth::csv_tables(&path).0, &every)
                    }
                    SinkKind::Parquet => counted(&truth::parquet_tables(&path).0, &every),
                    other => {
                        let options = sink.options();
                        return Err(format!(
                            "no reader here for {other:?} outputs ({options:?})"
                        ));
                    }
                },
                Writer::Plugin { plugin, .. } if plugin.name == "openmetrics" => {
                    openmetrics_records(&path)
                }
                Writer::Plugin { plugin, .. } => {
                    return Err(format!("no reader here for the outputs of {plugin}"));
                }
            };
            for (kind, n) in read {
                *counts.entry(kind).or_default() += n;
            }
        }
        Ok(counts)
    }

    /// The calls of each kind in the summary a post-step wrote to `path`, as its JSON
    /// file has them.
    fn summary(&self, path: &str) -> Result<Counts, String> {
        use RecordKind::*;
        let file = self.one(path)?.join("summary.json");
        match file.is_file() {
            true => Ok(counted(
                &truth::summary(&file),
                &[KernelDispatch, Api, MemoryCopy, MemoryAllocation, Marker],
            )),
            false => Err(format!("no {}", file.display())),
        }
    }

    /// The report at `path` names every kernel the run dispatched in its table of kernels,
    /// as `c++filt` names it.
    fn report(&self, path: &str, plan: &Plan, delivered: &Counts) -> Result<(), String> {
        let file = self.one(path)?;
        let page =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        if !delivered.contains_key(&RecordKind::KernelDispatch)
            || plan.stages.kernel_names != Default::default()
        {
            return match page.contains("</html>") {
                true => Ok(()),
                false => Err(format!("{} is no whole page", file.display())),
            };
        }
        for name in self.scenario.kernels.iter().map(|k| &k.name) {
            let escaped = name
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            if !page.contains(&format!("<td>{escaped}</td>")) {
                return Err(format!("{} does not name {name}", file.display()));
            }
        }
        Ok(())
    }

    /// A `sql` step's output at `path` has rows.
    fn rows(&self, path: &str) -> Result<(), String> {
        let file = self.one(path)?;
        let rows = csv(&file);
        match rows.is_empty() {
            true => Err(format!("{} has no rows", file.display())),
            false => Ok(()),
        }
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
}

/// Records per kind in a spool, as `rocflow inspect --json` gives them.
fn records(spool: &serde_json::Value) -> Counts {
    (spool["records"].as_object().unwrap().iter())
        .map(|(k, v)| (RecordKind::from_name(k).unwrap(), v.as_u64().unwrap()))
        .collect()
}

/// The records of each of `kinds` a tally of an output counts.
fn counted(tally: &Tally, kinds: &[RecordKind]) -> Counts {
    let part = |kind: RecordKind| match kind {
        RecordKind::KernelDispatch => &tally.kernels,
        RecordKind::Api => &tally.api,
        RecordKind::MemoryCopy => &tally.copies,
        RecordKind::MemoryAllocation => &tally.allocations,
        RecordKind::Marker => &tally.markers,
        other => panic!("a tally does not count {other:?}"),
    };
    (kinds.iter())
        .map(|&kind| (kind, part(kind).values().sum()))
        .collect()
}

/// The totals of the OpenMetrics file at `path` that count records: dispatches, copies
/// and API calls.
fn openmetrics_records(path: &Path) -> Counts {
    let families = [
        ("rocflow_kernel_dispatches", RecordKind::KernelDispatch),
        ("rocflow_memory_copies", RecordKind::MemoryCopy),
        ("rocflow_api_calls", RecordKind::Api),
    ];
    let mut counts: Counts = families.iter().map(|&(_, kind)| (kind, 0)).collect();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = name.strip_suffix("_total").unwrap_or(name);
        if let Some((_, kind)) = families.iter().find(|(f, _)| *f == family) {
            let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            *counts.get_mut(kind).unwrap() += value as u64;
        }
    }
    counts
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
            let run = Run::new(pipeline, &scenario, &["/bin/sleep", "0.2"], 1);
            if let Err(e) = run.check(plan) {
                let scenario = scenario.file_name().unwrap().to_string_lossy().into_owned();
                failures.push(format!("{name} on {scenario}: {e}"));
                failed = true;
                break;
            }
            let records = run.records();
            let delivered = |k: &&RecordKind| records.get(k).is_some_and(|&n| n > 0);
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
    let run = Run::new(&pipeline, &default_scenario(), &["/bin/sleep", "0.2"], 1);
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
        4,
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
