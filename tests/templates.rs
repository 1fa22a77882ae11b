//! Templates and parameters: merge rules, search order, cycles, errors inside templates,
//! parameter overrides and placeholders.

use std::path::{Path, PathBuf};

use rocflow::diag::{Diagnostic, Severity};
use rocflow::pipeline::{self, Compiled, Library, Options, Override};
use rocflow::plan::AgentSelector;
use rocflow::record::RecordKind;
use rocflow::sdk::AgentType;
use rocflow::sdk::Domain;
use support::assert_says_each;

/// A directory of pipeline files for one test.
struct Files(tempfile::TempDir);

impl Files {
    fn new(files: &[(&str, &str)]) -> Files {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Files(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn compile(
        &self,
        name: &str,
        search: &[&str],
        sets: &[&str],
    ) -> Result<Compiled, Vec<Diagnostic>> {
        let options = Options {
            overrides: sets.iter().map(|s| Override::parse(s).unwrap()).collect(),
            library: Library::with_search_path(search.iter().map(|d| self.path(d)).collect()),
            ..Options::default()
        };
        pipeline::compile_file(&self.path(name), &options)
    }

    fn ok(&self, name: &str, search: &[&str], sets: &[&str]) -> Compiled {
        self.compile(name, search, sets).unwrap_or_else(|errors| {
            panic!(
                "{name} failed: {:#?}",
                errors.iter().map(ToString::to_string).collect::<Vec<_>>()
            )
        })
    }
}

const BASE: &str = r#"
[pipeline]
name = "team-base"
[params]
out = "team-out"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api"]
agents = ["gpu"]
buffer = { size = "8MiB", policy = "discard" }
[[sink]]
name = "trace"
kind = "perfetto"
path = "{out}/trace.pftrace"
[[sink]]
name = "db"
kind = "rocpd"
path = "{out}/run.db"
"#;

#[test]
fn tables_merge_deeply_and_named_arrays_merge_by_name() {
    let files = Files::new(&[
        ("base.toml", BASE),
        (
            "app.toml",
            r#"
[pipeline]
name = "app"
extends = ["base"]
[[context]]
name = "trace"
buffer = { size = "16MiB" }
[[context]]
name = "markers"
tracing = ["marker_core_api"]
"#,
        ),
    ]);
    let plan = files.ok("app.toml", &[], &[]).plan;
    assert_eq!(plan.pipeline.name, "app");
    let names: Vec<&str> = plan.contexts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["trace", "markers"],
        "the override keeps its place, new entries follow"
    );
    let trace = &plan.contexts[0];
    // The overriding entry changed one field of a nested table and kept the rest.
    assert_eq!(trace.buffer.size_bytes, 16 << 20);
    assert_eq!(trace.buffer.policy, rocflow::sdk::BufferPolicy::Discard);
    let domains: Vec<Domain> = trace.tracing.iter().map(|t| t.domain).collect();
    assert_eq!(domains, [Domain::KernelDispatch, Domain::HipRuntimeApi]);
    assert_eq!(trace.agents, [AgentSelector::Type(AgentType::Gpu)]);
    assert_eq!(plan.sinks.len(), 2);
}

#[test]
fn plain_arrays_and_scalars_are_replaced() {
    let files = Files::new(&[
        ("base.toml", BASE),
        (
            "app.toml",
            "[pipeline]\nextends = [\"base\"]\n[[context]]\nname = \"trace\"\ntracing = [\"memory_copy\"]\nagents = [0, 1]\n",
        ),
    ]);
    let trace = &files.ok("app.toml", &[], &[]).plan.contexts[0];
    let domains: Vec<Domain> = trace.tracing.iter().map(|t| t.domain).collect();
    assert_eq!(domains, [Domain::MemoryCopy]);
    assert_eq!(
        trace.agents,
        [AgentSelector::Index(0), AgentSelector::Index(1)]
    );
}

#[test]
fn enabled_false_removes_an_inherited_entry() {
    let files = Files::new(&[
        ("base.toml", BASE),
        (
            "app.toml",
            "[pipeline]\nextends = [\"base\"]\n[[sink]]\nname = \"db\"\nenabled = false\n",
        ),
    ]);
    let plan = files.ok("app.toml", &[], &[]).plan;
    let sinks: Vec<&str> = plan.sinks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(sinks, ["trace"]);
}

#[test]
fn later_templates_override_earlier_ones() {
    let files = Files::new(&[
        ("a.toml", "[params]\nout = \"from-a\"\nlevel = 1\n"),
        ("b.toml", "[params]\nout = \"from-b\"\n"),
        (
            "app.toml",
            "[pipeline]\nextends = [\"a\", \"b\"]\n[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"{out}/{level}.db\"\n",
        ),
    ]);
    let plan = files.ok("app.toml", &[], &[]).plan;
    assert_eq!(plan.sinks[0].path, "from-b/1.db");
    let sources: Vec<&str> = plan
        .pipeline
        .sources
        .iter()
        .map(|s| s.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(sources, ["a.toml", "b.toml", "app.toml"]);
}

#[test]
fn search_order_is_relative_then_path_then_shipped() {
    let files = Files::new(&[
        // `base` exists next to the pipeline, on the search path and in the shipped library.
        ("app/base.toml", "[params]\nwho = \"relative\"\n"),
        ("team/base.toml", "[params]\nwho = \"team\"\n"),
        ("team/only-team.toml", "[params]\nwho = \"team\"\n"),
        (
            "app/app.toml",
            "[pipeline]\nextends = [\"base\"]\n[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"{who}.db\"\n",
        ),
        (
            "other/app.toml",
            "[pipeline]\nextends = [\"base\"]\n[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"{who}.db\"\n",
        ),
        (
            "other/shipped.toml",
            "[pipeline]\nextends = [\"kernel-trace\"]\n",
        ),
    ]);
    assert_eq!(
        files.ok("app/app.toml", &["team"], &[]).plan.sinks[0].path,
        "relative.db"
    );
    assert_eq!(
        files.ok("other/app.toml", &["team"], &[]).plan.sinks[0].path,
        "team.db"
    );
    // Without the team directory, `base` is the shipped template, which has no `who`.
    let errors = files.compile("other/app.toml", &[], &[]).unwrap_err();
    assert!(
        errors[0].message.contains("unknown placeholder `{who}`"),
        "{}",
        errors[0]
    );
    let shipped = files.ok("other/shipped.toml", &["team"], &[]).plan;
    assert_eq!(
        shipped.contexts[0].tracing[0].domain,
        Domain::KernelDispatch
    );
    assert!(
        shipped.pipeline.sources[0].contains("pipelines/base.toml (shipped)"),
        "{:?}",
        shipped.pipeline.sources
    );
}

#[test]
fn a_team_template_hiding_another_is_noted_where_it_is_used() {
    let files = Files::new(&[
        ("team/base.toml", "[params]\nout = \"team\"\n"),
        ("later/base.toml", "[params]\nout = \"later\"\n"),
        ("team/cfd.toml", "[params]\nout = \"cfd\"\n"),
        (
            "app.toml",
            "[pipeline]\nextends = [\"base\", \"cfd\"]\n[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"{out}.db\"\n",
        ),
        ("near/base.toml", "[params]\nout = \"near\"\n"),
        ("near/app.toml", "[pipeline]\nextends = [\"base\"]\n"),
    ]);
    let notes = |compiled: &[Diagnostic]| -> Vec<Diagnostic> {
        compiled
            .iter()
            .filter(|d| d.severity == Severity::Note)
            .cloned()
            .collect()
    };
    let compiled = files.ok("app.toml", &["team", "later"], &[]);
    let notes_of_app = notes(&compiled.warnings);
    assert_eq!(
        notes_of_app.len(),
        1,
        "only `base` hides others: {notes_of_app:?}"
    );
    let note = &notes_of_app[0];
    let team_base = files.path("team/base.toml").canonicalize().unwrap();
    assert_eq!(
        note.message,
        format!(
            "template `base` is {} (on ROCFLOW_PIPELINE_PATH)",
            team_base.display()
        )
    );
    assert!(
        note.position().unwrap().ends_with("app.toml:2:12"),
        "{note}"
    );
    let later_base = files.path("later/base.toml").canonicalize().unwrap();
    assert_eq!(
        note.notes,
        [
            format!("it shadows {}", later_base.display()),
            "and pipelines/base.toml (shipped)".to_owned()
        ]
    );
    // The note also comes with errors, where it may explain them.
    let errors = files
        .compile("app.toml", &["team", "later"], &["out=\"{nope}\""])
        .unwrap_err();
    assert!(errors[0].is_error());
    assert_eq!(notes(&errors).len(), 1, "{errors:?}");
    // A template next to the pipeline is what the pipeline means: nothing to note.
    let near = files.ok("near/app.toml", &["team"], &[]);
    assert!(notes(&near.warnings).is_empty(), "{:?}", near.warnings);
}

#[test]
fn cycles_are_reported_with_their_chain() {
    let files = Files::new(&[
        ("a.toml", "[pipeline]\nextends = [\"b\"]\n"),
        ("b.toml", "[pipeline]\nextends = [\"c\"]\n"),
        ("c.toml", "[pipeline]\nextends = [\"a\"]\n"),
    ]);
    let errors = files.compile("a.toml", &[], &[]).unwrap_err();
    assert_eq!(errors.len(), 1);
    let e = &errors[0];
    assert_eq!(e.message, "template cycle: `a` extends itself");
    assert!(e.position().unwrap().ends_with("c.toml:2:12"), "{e}");
    let chain = e
        .notes
        .iter()
        .find(|n| n.starts_with("cycle: "))
        .expect("the chain is printed");
    let files_in_chain: Vec<&str> = chain
        .trim_start_matches("cycle: ")
        .split(" -> ")
        .map(|p| Path::new(p).file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(files_in_chain, ["a.toml", "b.toml", "c.toml", "a.toml"]);
}

#[test]
fn errors_inside_templates_name_the_chain() {
    let files = Files::new(&[
        (
            "broken.toml",
            "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispach\"]\n",
        ),
        ("middle.toml", "[pipeline]\nextends = [\"broken\"]\n"),
        (
            "app.toml",
            "[pipeline]\nname = \"app\"\nextends = [\"middle\"]\n",
        ),
    ]);
    let errors = files.compile("app.toml", &[], &[]).unwrap_err();
    let errors: Vec<&Diagnostic> = errors.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1);
    let e = errors[0];
    assert!(e.position().unwrap().ends_with("broken.toml:3:12"), "{e}");
    let rendered = e.render(false);
    assert_says_each(
        &rendered,
        &[
            "in template `broken`",
            "middle.toml:2:12",
            "in template `middle`",
            "app.toml:3:12",
        ],
    );
}

#[test]
fn set_overrides_parameters_with_their_types() {
    let files = Files::new(&[(
        "p.toml",
        r#"
[params]
out = "out"
interval = 1000
domains = ["kernel_dispatch"]
paused = false
[[context]]
name = "t"
tracing = "{domains}"
period = { paused = "{paused}" }
pc_sampling = { method = "host_trap", interval = "{interval}" }
[[sink]]
name = "s"
kind = "rocpd"
path = "{out}/run-{interval}.db"
"#,
    )]);
    let defaults = files.ok("p.toml", &[], &[]).plan;
    assert_eq!(defaults.sinks[0].path, "out/run-1000.db");
    assert_eq!(
        defaults.contexts[0].pc_sampling.as_ref().unwrap().interval,
        1000
    );
    let plan = files
        .ok(
            "p.toml",
            &[],
            &[
                "out=/scratch/me",
                "interval=250",
                "domains=[\"memory_copy\", \"kernel_dispatch\"]",
                "paused=true",
            ],
        )
        .plan;
    assert_eq!(plan.sinks[0].path, "/scratch/me/run-250.db");
    let c = &plan.contexts[0];
    assert_eq!(c.pc_sampling.as_ref().unwrap().interval, 250);
    assert!(c.start.paused);
    let domains: Vec<Domain> = c.tracing.iter().map(|t| t.domain).collect();
    assert_eq!(domains, [Domain::MemoryCopy, Domain::KernelDispatch]);
    assert_eq!(plan.params["interval"], serde_json::json!(250));
}

#[test]
fn runtime_placeholders_stay_and_regex_braces_are_left_alone() {
    let files = Files::new(&[(
        "p.toml",
        r#"
[params]
dir = "runs"
[[context]]
name = "c"
tracing = ["kernel_dispatch"]
counters = { collect = ["SQ_WAVES"], kernels = { include = "gemm_\\d{2,3}" } }
[[sink]]
name = "s"
kind = "parquet"
path = "{dir}/{hostname}/{pid}-{ppid}-{rank}-{timestamp}"
"#,
    )]);
    let plan = files.ok("p.toml", &[], &[]).plan;
    assert_eq!(
        plan.sinks[0].path,
        "runs/{hostname}/{pid}-{ppid}-{rank}-{timestamp}"
    );
    assert_eq!(
        plan.contexts[0]
            .counters
            .as_ref()
            .unwrap()
            .kernel_include
            .as_deref(),
        Some("gemm_\\d{2,3}")
    );
}

#[test]
fn operation_filters_compile_to_sdk_ids() {
    let files = Files::new(&[(
        "p.toml",
        "[[context]]\nname = \"t\"\ntracing = [{ domain = \"hip_runtime_api\", include = [\"hipMemcpy*\"], exclude = [\"hipMemcpyAsync\"] }]\n",
    )]);
    let plan = files.ok("p.toml", &[], &[]).plan;
    let ids = plan.contexts[0].tracing[0].operations.clone().unwrap();
    let names: Vec<&str> = ids
        .iter()
        .map(|id| {
            Domain::HipRuntimeApi
                .operations()
                .iter()
                .find(|(i, _)| i == id)
                .unwrap()
                .1
        })
        .collect();
    assert!(
        names.contains(&"hipMemcpy") && names.contains(&"hipMemcpyHtoD"),
        "{names:?}"
    );
    assert!(names.iter().all(|n| n.starts_with("hipMemcpy")));
    assert!(!names.contains(&"hipMemcpyAsync"));
}

/// The SDK gives a record to every context tracing its kind: a service two contexts ask
/// for is traced in one, which covers the other's period, with the operations of both and
/// arguments where either asks; a context left with nothing is dropped.
#[test]
fn a_service_two_contexts_ask_for_is_traced_in_one() {
    let files = Files::new(&[(
        "p.toml",
        r#"
[[context]]
name = "memory"
tracing = [{ domain = "hip_runtime_api", include = ["hipMemcpy"] }, "kernel_dispatch"]
period = { delay = "1s" }
[[context]]
name = "all"
tracing = [{ domain = "hip_runtime_api", include = ["hipMalloc"] }, "kernel_dispatch"]
args = true
[[context]]
name = "counters"
tracing = ["kernel_dispatch"]
counters.collect = ["SQ_WAVES"]
"#,
    )]);
    let plan = files.ok("p.toml", &[], &[]).plan;
    let names: Vec<&str> = plan.contexts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["all", "counters"], "`memory` is left with nothing");
    let all = &plan.contexts[0];
    let traced: Vec<(Domain, &[String])> = (all.tracing.iter())
        .map(|t| (t.domain, &t.also_for[..]))
        .collect();
    let others = ["memory".to_owned(), "counters".to_owned()];
    assert_eq!(
        traced,
        [
            (Domain::HipRuntimeApiExt, &others[..1]),
            (Domain::KernelDispatch, &others[..]),
        ]
    );
    let op = |name: &str| {
        let ops = Domain::HipRuntimeApi.operations();
        ops.iter().find(|(_, n)| *n == name).unwrap().0
    };
    let mut both = [op("hipMemcpy"), op("hipMalloc")];
    both.sort_unstable();
    assert_eq!(all.tracing[0].operations.as_deref(), Some(&both[..]));
    assert!(plan.contexts[1].tracing.is_empty());
    assert!(
        plan.contexts[1].code_objects,
        "counters still name their kernels"
    );
    let explained = rocflow::plan::explain(&plan);
    assert!(
        explained.contains("also for `memory`, `counters`: traced in this context only"),
        "{explained}"
    );
}

#[test]
fn sinks_receive_the_kinds_they_ask_for_through_matching_transforms() {
    let files = Files::new(&[(
        "p.toml",
        r#"
[[context]]
name = "t"
tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy"]
[[transform]]
name = "long-kernels"
kind = "filter"
records = ["kernel_dispatch"]
predicate = "duration_ns > 1000"
[[transform]]
name = "bandwidth"
kind = "derive"
records = ["memory_copy"]
column = "gbps"
expression = "bytes / duration_ns"
[[transform]]
name = "fast-copies"
kind = "filter"
records = ["memory_copy"]
predicate = "gbps > 1.0"
[[sink]]
name = "kernels"
kind = "parquet"
path = "k"
records = ["kernel_dispatch"]
[[sink]]
name = "all"
kind = "rocpd"
path = "all.db"
"#,
    )]);
    let plan = files.ok("p.toml", &[], &[]).plan;
    let stages = &plan.stages;
    assert_eq!(
        stages.produced,
        [
            RecordKind::KernelDispatch,
            RecordKind::MemoryCopy,
            RecordKind::Api
        ]
    );
    assert_eq!(stages.routes[0].kinds, [RecordKind::KernelDispatch]);
    assert_eq!(stages.routes[0].transforms, [0]);
    assert_eq!(stages.routes[1].kinds, stages.produced);
    assert_eq!(stages.routes[1].transforms, [0, 1, 2]);
}

#[test]
fn the_plan_round_trips_through_json() {
    let files = Files::new(&[("p.toml", "[pipeline]\nextends = [\"counters-basic\"]\n")]);
    let plan = files.ok("p.toml", &[], &[]).plan;
    let back = rocflow::plan::Plan::from_json(&plan.to_json()).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn parameters_can_use_other_parameters() {
    let files = Files::new(&[(
        "p.toml",
        "[params]\nproject = \"demo\"\nroot = \"/scratch/{project}\"\nout = \"{root}/{hostname}\"\n[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"{out}/run.db\"\n",
    )]);
    assert_eq!(
        files.ok("p.toml", &[], &[]).plan.sinks[0].path,
        "/scratch/demo/{hostname}/run.db"
    );
    let overridden = files.ok("p.toml", &[], &["project=cfd"]).plan;
    assert_eq!(overridden.sinks[0].path, "/scratch/cfd/{hostname}/run.db");
}

#[test]
fn parameters_that_refer_to_each_other_are_a_cycle() {
    let files = Files::new(&[("p.toml", "[params]\na = \"x{b}\"\nb = \"y{a}\"\n")]);
    let errors = files.compile("p.toml", &[], &[]).unwrap_err();
    assert_eq!(errors.len(), 1, "one cycle, one error: {errors:?}");
    assert_eq!(
        errors[0].message,
        "parameter `a` refers to itself: a -> b -> a"
    );
    assert!(errors[0].position().unwrap().ends_with("p.toml:2:5"));
    assert!(
        errors[0].notes[0].ends_with("p.toml:3:5"),
        "{:?}",
        errors[0].notes
    );
}
