//! `rocflow import-rocprofv3`: rocprofv3 input files (tests/data/rocprofv3/) converted by
//! the binary, then compiled by rocflow's own compiler; each option's effect is checked on
//! the compiled Plan. Bad input exits with 2 and a position, and writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use rocflow::pipeline::model::KernelNames;
use rocflow::pipeline::{Options, Override, compile_file};
use rocflow::plan::{ContextPlan, Plan};
use rocflow::plan::{Destination, DomainTables, PostStep, SummaryUnit};
use rocflow::sdk::{PcSamplingMethod, PcSamplingUnit};
use support::truth::Scenario;
use support::{assert_fails, assert_says, assert_says_each, assert_success, rocflow, run_on, text};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/rocprofv3")
        .join(name)
}

/// A fresh directory holding a copy of the input file `name`.
fn with_input(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data(name), dir.path().join(name)).unwrap();
    dir
}

/// `rocflow import-rocprofv3 INPUT ARGS…` in a fresh directory holding the input file.
fn import(input: &str, args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = with_input(input);
    let command = [&["import-rocprofv3", input], args].concat();
    let output = rocflow(&command, dir.path(), &[]);
    (dir, output)
}

fn compile(path: &Path, overrides: &[String]) -> Plan {
    let options = Options {
        overrides: overrides
            .iter()
            .map(|o| Override::parse(o).unwrap())
            .collect(),
        ..Options::default()
    };
    match compile_file(path, &options) {
        Ok(compiled) => compiled.plan,
        Err(errors) => panic!(
            "{} does not compile:\n{}",
            path.display(),
            errors.iter().map(|e| format!("{e}\n")).collect::<String>()
        ),
    }
}

/// Converts `input` with `--split` and compiles every pipeline: file stem → Plan.
fn split(input: &str) -> (BTreeMap<String, Plan>, Output, tempfile::TempDir) {
    let (dir, output) = import(input, &["--split", "-o", "out"]);
    assert_success(&output);
    let mut plans = BTreeMap::new();
    for entry in std::fs::read_dir(dir.path().join("out")).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        plans.insert(stem, compile(&path, &[]));
    }
    (plans, output, dir)
}

/// The one context of a converted pipeline.
fn context(plan: &Plan) -> &ContextPlan {
    assert_eq!(plan.contexts.len(), 1, "{:#?}", plan.contexts);
    &plan.contexts[0]
}

fn domains(plan: &Plan) -> Vec<&'static str> {
    plan.contexts
        .iter()
        .flat_map(|c| &c.tracing)
        .map(|t| t.domain.name())
        .collect()
}

#[test]
fn tracing_options_select_rocprofiler_sdk_domains() {
    const HIP: &[&str] = &["hip_runtime_api", "hip_compiler_api"];
    const HSA: &[&str] = &[
        "hsa_core_api",
        "hsa_amd_ext_api",
        "hsa_image_ext_api",
        "hsa_finalize_ext_api",
    ];
    // With the KFD events and OpenMP that SDK 1.3's rocprofv3 adds to both aggregates.
    const RUNTIME: &[&str] = &[
        "hip_runtime_api",
        "marker_core_range_api",
        "kernel_dispatch",
        "memory_copy",
        "memory_allocation",
        "scratch_memory",
        "rccl_api",
        "rocdecode_api",
        "rocjpeg_api",
        "kfd_event_page_migrate",
        "kfd_page_migrate",
        "kfd_event_page_fault",
        "kfd_event_unmap_from_gpu",
        "kfd_page_fault",
        "kfd_event_queue",
        "kfd_queue",
        "kfd_event_dropped_events",
        "ompt",
    ];
    let sys: Vec<&str> = HIP
        .iter()
        .chain(HSA)
        .chain(&RUNTIME[1..])
        .copied()
        .collect();
    let sys_without_hsa_and_kernels: Vec<&str> = HIP
        .iter()
        .chain(&RUNTIME[1..])
        .copied()
        .filter(|d| *d != "kernel_dispatch")
        .collect();
    let expected: Vec<Vec<&str>> = vec![
        HIP.to_vec(),
        vec!["hip_runtime_api"],
        vec!["hip_compiler_api"],
        HSA.to_vec(),
        vec!["hsa_core_api"],
        vec!["hsa_amd_ext_api"],
        vec!["hsa_image_ext_api"],
        vec!["hsa_finalize_ext_api"],
        vec!["marker_core_range_api"],
        vec!["kernel_dispatch"],
        vec!["memory_copy"],
        vec!["memory_allocation"],
        vec!["scratch_memory"],
        vec!["rccl_api"],
        vec!["rocdecode_api"],
        vec!["rocjpeg_api"],
        RUNTIME.to_vec(),
        sys,
        sys_without_hsa_and_kernels,
        vec!["hip_runtime_api"],
        vec!["marker_core_range_api"],
        vec!["kernel_dispatch", "memory_copy"],
        vec![],
    ];
    let (plans, output, _dir) = split("tracing.yaml");
    assert_eq!(plans.len(), expected.len());
    for (i, want) in expected.iter().enumerate() {
        let plan = &plans[&format!("job-{}", i + 1)];
        let mut got = domains(plan);
        let mut want = want.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "job {}", i + 1);
    }
    assert!(plans["job-23"].contexts.is_empty(), "nothing to collect");
    let stderr = text(&output.stderr);
    assert_says_each(
        &stderr,
        &[
            "`kokkos_trace` is converted as `marker_trace`",
            "tracing.yaml:28:5",
            "this job enables no tracing, counters or PC sampling",
            "tracing.yaml:33:5",
        ],
    );
}

#[test]
fn counters_with_their_kernel_filters_and_groups() {
    let (plans, output, dir) = split("counters.yaml");
    assert_eq!(
        plans.keys().collect::<Vec<_>>(),
        ["job-1", "job-2", "job-3-group-1", "job-3-group-2", "job-4"]
    );
    let counters = |stem: &str| context(&plans[stem]).counters.clone().unwrap();
    let first = counters("job-1");
    assert_eq!(first.collect, ["SQ_WAVES", "GRBM_COUNT", "GRBM_GUI_ACTIVE"]);
    assert_eq!(first.kernel_include.as_deref(), Some("gemm|conv"));
    assert_eq!(first.kernel_exclude.as_deref(), Some("_small$"));
    let iterations = first.iterations.unwrap();
    assert!([1, 10, 20].iter().all(|&i| iterations.contains(i)));
    assert!([11, 19, 21].iter().all(|&i| !iterations.contains(i)));
    let second = counters("job-2").iterations.unwrap();
    assert!(second.contains(1) && second.contains(3) && second.contains(4));
    assert!(!second.contains(2) && !second.contains(5));
    // Each group is a pipeline of its own, writing where rocprofv3 would not collide.
    assert_eq!(counters("job-3-group-1").collect, ["SQ_WAVES"]);
    assert_eq!(counters("job-3-group-2").collect, ["TCC_HIT", "TCC_MISS"]);
    assert_eq!(
        plans["job-3-group-2"].params["output_dir"],
        "pass_3/group_2"
    );
    assert_eq!(plans["job-1"].params["output_dir"], "pass_1");
    // Kernel filters without counters do nothing, as in rocprofv3.
    assert!(context(&plans["job-4"]).counters.is_none());
    let stderr = text(&output.stderr);
    for (position, message) in [
        (
            "counters.yaml:11:5",
            "each of the 2 groups is a pipeline of its own",
        ),
        (
            "counters.yaml:12:5",
            "`pmc_group_interval` is not converted",
        ),
        ("counters.yaml:15:5", "`kernel_include_regex` has no effect"),
    ] {
        assert!(
            stderr.contains(&format!("--> {position}")) && stderr.contains(message),
            "{position} {message}:\n{stderr}"
        );
    }
    // The pipelines say it too.
    let job3 = std::fs::read_to_string(dir.path().join("out/job-3-group-1.toml")).unwrap();
    assert!(job3.contains("#   counters.yaml:12:5: `pmc_group_interval` is not converted"));
}

#[test]
fn pc_sampling_options() {
    let (plans, _, _dir) = split("pc-sampling.yaml");
    let host_trap = context(&plans["job-1"]).pc_sampling.clone().unwrap();
    assert_eq!(host_trap.method, PcSamplingMethod::HostTrap);
    assert_eq!(host_trap.unit, PcSamplingUnit::Time);
    assert_eq!(host_trap.interval, 1000);
    let stochastic = context(&plans["job-2"]).pc_sampling.clone().unwrap();
    assert_eq!(stochastic.method, PcSamplingMethod::Stochastic);
    assert_eq!(stochastic.unit, PcSamplingUnit::Cycles);
    assert_eq!(stochastic.interval, 1 << 20);
}

#[test]
fn collection_periods_and_selected_regions() {
    let (plans, output, _dir) = split("period.yaml");
    let start = |stem: &str| context(&plans[stem]).start;
    let seconds = start("job-1");
    assert_eq!(seconds.delay_ns, 1_000_000_000);
    assert_eq!(seconds.duration_ns, Some(2_000_000_000));
    assert_eq!(
        seconds.interval_ns, 1_000_000_000,
        "each period waits again"
    );
    assert_eq!(seconds.repeat, 2, "three periods");
    assert!(!seconds.paused);
    let millis = start("job-2");
    assert_eq!(millis.delay_ns, 500_000_000);
    assert_eq!(millis.duration_ns, Some(1_500_500_000));
    assert_eq!(millis.repeat, 0, "a repeat of 0 is one period");
    assert!(text(&output.stderr).contains("only the first of 2 collection periods is converted"));
    assert!(start("job-3").paused);
}

#[test]
fn kernel_names_as_rocprofv3_shows_them() {
    let (plans, _, _dir) = split("kernel-names.yaml");
    let names = |stem: &str| {
        assert!(plans[stem].stages.transforms.is_empty(), "{stem}");
        plans[stem].stages.kernel_names
    };
    assert_eq!(
        names("job-1"),
        KernelNames::Demangled,
        "demangled by default"
    );
    assert_eq!(names("job-2"), KernelNames::Mangled);
    assert_eq!(names("job-3"), KernelNames::Truncated);
    assert_eq!(
        names("job-4"),
        KernelNames::Truncated,
        "truncating demangles anyway"
    );
    assert_eq!(names("job-5"), KernelNames::Renamed);
}

#[test]
fn outputs_where_rocprofv3_writes_them() {
    let (plans, output, _dir) = split("outputs.yaml");
    let sinks = |stem: &str| -> Vec<(String, String)> {
        plans[stem]
            .sinks
            .iter()
            .map(|s| (s.name.clone(), s.path.clone()))
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        sinks("job-1"),
        [pair("rocpd", "pass_1/{hostname}/{pid}_results.db")]
    );
    assert_eq!(
        sinks("job-2"),
        [
            pair("csv", "out/{hostname}/pass_2/{pid}_run"),
            pair(
                "perfetto",
                "out/{hostname}/pass_2/{pid}_run_results.pftrace"
            ),
            pair("otf2", "out/{hostname}/pass_2/{pid}_run_results"),
            pair("rocpd", "out/{hostname}/pass_2/{pid}_run_results.db"),
            pair("json", "out/{hostname}/pass_2/{pid}_run_results.json"),
        ]
    );
    assert_eq!(
        sinks("job-3"),
        [pair("rocpd", "/tmp/traces/{ppid}-{rank}_results.db")]
    );
    assert!(!plans["job-3"].params.contains_key("output_dir"));
    // Placeholders rocflow has no value for are parameters, named after them.
    assert_eq!(
        sinks("job-4"),
        [pair(
            "rocpd",
            "env_SCRATCH/job/{timestamp}/pass_4/{hostname}/{pid}_results.db"
        )]
    );
    assert_eq!(plans["job-4"].params["job"], "job");
    let summary = |stem: &str| {
        plans[stem].posts.iter().find_map(|p| match &p.step {
            PostStep::Summary {
                path,
                formats,
                domain_tables,
                ..
            } => Some((
                path.clone().unwrap(),
                formats.clone().unwrap(),
                domain_tables.clone(),
            )),
            _ => None,
        })
    };
    assert_eq!(summary("job-1"), None);
    assert_eq!(
        summary("job-5"),
        Some((
            "pass_5/{hostname}/{pid}_stats".to_owned(),
            vec!["csv".to_owned()],
            None
        ))
    );
    // rocprofv3's summary tables, on stderr in nanoseconds unless the job says otherwise.
    let (_, formats, tables) = summary("job-6").unwrap();
    assert_eq!(formats, ["csv"]);
    assert_eq!(
        tables,
        Some(DomainTables {
            all: true,
            per_domain: true,
            groups: Vec::new(),
            units: SummaryUnit::Nsec,
            output: Destination::Stderr,
        })
    );
    // With `summary`, `Stdout` in any case is stdout; else it names a file, beside the
    // others, with rocprofv3's `.txt` after it. One group may be a single regex.
    let tables = |stem: &str| summary(stem).unwrap().2.unwrap();
    assert_eq!(tables("job-7").output, Destination::Stdout);
    assert_eq!(tables("job-7").units, SummaryUnit::Msec);
    assert_eq!(
        tables("job-8").output,
        Destination::File("pass_8/{hostname}/{pid}_Stdout.txt".into())
    );
    assert_eq!(tables("job-8").groups, [".*_API"]);
    assert!(!tables("job-8").all && tables("job-8").per_domain);
    let stderr = text(&output.stderr);
    // Every format converts, `json` to rocprofv3's document.
    assert!(!stderr.contains("not converted"), "{stderr}");
    assert!(stderr.contains("`%env{SCRATCH}%` in `output_directory` has no rocflow equivalent"));
    assert!(stderr.contains("`%job%` in `output_directory` has no rocflow equivalent"));
}

/// The line (1-based) where `key:` is set in `text`.
fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("`{key}` is not set"))
        + 1
}

#[test]
fn options_without_an_equivalent_are_reported_where_they_are_set() {
    const UNSUPPORTED: &[&str] = &[
        "pmc_group_interval",
        "extra_counters",
        "output_config",
        "minimum_output_data",
        "pc_sampling_beta_enabled",
        "perfetto_backend",
        "perfetto_buffer_size",
        "perfetto_buffer_fill_policy",
        "perfetto_shmem_size_hint",
        "list_avail",
        "group_by_queue",
        "log_level",
        "preload",
        "disable_signal_handlers",
        "rocm_root",
        "sdk_soversion",
        "sdk_version",
        "echo",
        "att_gpu_index",
        "att_activity",
    ];
    let (dir, output) = import("unsupported.yaml", &["-o", "p.toml"]);
    assert_success(&output);
    let input = std::fs::read_to_string(data("unsupported.yaml")).unwrap();
    let pipeline = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    let stderr = text(&output.stderr);
    for key in UNSUPPORTED {
        let at = format!("unsupported.yaml:{}:5", line_of(&input, key));
        let message = format!("`{key}` is not converted: ");
        assert!(
            pipeline.contains(&format!("#   {at}: {message}")),
            "{key}:\n{pipeline}"
        );
        assert!(
            stderr.contains(&message) && stderr.contains(&at),
            "{key}:\n{stderr}"
        );
    }
    // Flags set to false ask for nothing.
    for key in ["rccl_trace", "mangled_kernels", "selected_regions"] {
        assert!(!pipeline.contains(&format!("`{key}`")), "{key}");
    }
    // What is supported still converts.
    let plan = compile(&dir.path().join("p.toml"), &[]);
    assert_eq!(domains(&plan), ["kernel_dispatch"]);
    assert_eq!(
        context(&plan).counters.as_ref().unwrap().collect,
        ["SQ_WAVES"]
    );
    assert_eq!(
        plan.params["output_dir"], "pass_1",
        "an empty pmc_groups makes no group"
    );
    // The thread-trace options are the context's thread trace, hexadecimal read as such.
    let trace = context(&plan)
        .thread_trace
        .as_ref()
        .expect("a thread trace");
    assert_eq!(
        (trace.target_cu, trace.simd_select, trace.shader_engine_mask),
        (1, 0xF, 0x1)
    );
    assert_eq!(trace.buffer_bytes, 0x600_0000);
    assert_eq!(trace.perfcounter_period, 2);
    assert_eq!(trace.perfcounters[0].name, "SQ_WAVES");
    assert!(trace.serialize_all);
    assert_eq!(trace.decoder_paths, ["/opt/rocm/lib"]);
}

#[test]
fn json_input_with_the_schemas_own_spellings() {
    let (dir, output) = import("spellings.json", &[]);
    assert_success(&output);
    let stdout = text(&output.stdout);
    assert!(
        stdout
            .starts_with("# Converted by `rocflow import-rocprofv3` from spellings.json (job 1).")
    );
    std::fs::write(dir.path().join("p.toml"), &stdout).unwrap();
    let plan = compile(&dir.path().join("p.toml"), &[]);
    assert_eq!(domains(&plan), ["hsa_finalize_ext_api"]);
    assert_eq!(context(&plan).pc_sampling.as_ref().unwrap().interval, 500);
    for (key, line) in [
        ("list_avail", 5),
        ("minimum_output_data", 6),
        ("disable_signal_handlers", 7),
        ("pc_sampling_beta_enabled", 8),
    ] {
        assert!(
            stdout.contains(&format!(
                "#   spellings.json:{line}:4: `{key}` is not converted"
            )),
            "{key}:\n{stdout}"
        );
    }
}

#[test]
fn text_input_each_pmc_line_a_pass() {
    let (plans, output, _dir) = split("passes.txt");
    assert_eq!(plans.keys().collect::<Vec<_>>(), ["pass-1", "pass-2"]);
    let collect = |stem: &str| context(&plans[stem]).counters.clone().unwrap().collect;
    assert_eq!(collect("pass-1"), ["SQ_WAVES", "GRBM_COUNT"]);
    assert_eq!(collect("pass-2"), ["TCC_HIT", "TCC_MISS"]);
    assert_eq!(plans["pass-2"].params["output_dir"], "pmc_2");
    assert!(domains(&plans["pass-1"]).is_empty());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("`gpu:` lines are rocprof's (v1)") && stderr.contains("passes.txt:4:1")
    );
}

/// The arguments of a command line as a POSIX shell splits it (words and '…' quotes).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            ' ' if !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[test]
fn one_pipeline_with_parameters_runs_each_job_as_split_pipelines_do() {
    let (plans, _, dir) = split("jobs.yaml");
    let output = rocflow(
        &[
            "import-rocprofv3",
            "jobs.yaml",
            "--params",
            "-o",
            "shared.toml",
        ],
        dir.path(),
        &[],
    );
    assert_success(&output);
    assert_eq!(text(&output.stdout), "shared.toml\n");
    let shared = dir.path().join("shared.toml");
    let header = std::fs::read_to_string(&shared).unwrap();
    let runs: Vec<Vec<String>> = header
        .lines()
        .filter_map(|l| l.strip_prefix("#   job "))
        .map(|l| shell_words(l.split_once(": ").unwrap().1))
        .collect();
    assert_eq!(runs.len(), 2, "{header}");
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run[..3], ["rocflow", "run", "shared.toml"]);
        assert_eq!(run[run.len() - 2..], ["--", "APP"]);
        let sets: Vec<String> = run[3..run.len() - 2]
            .chunks(2)
            .map(|pair| {
                assert_eq!(pair[0], "--set");
                pair[1].clone()
            })
            .collect();
        let with_params = compile(&shared, &sets);
        let own = &plans[&format!("job-{}", i + 1)];
        assert_eq!(with_params.contexts, own.contexts, "job {}", i + 1);
        assert_eq!(with_params.stages, own.stages, "job {}", i + 1);
        assert_eq!(with_params.sinks, own.sinks, "job {}", i + 1);
        assert_eq!(with_params.posts, own.posts, "job {}", i + 1);
    }
    assert!(
        runs[0].len() == 5,
        "the first job is the default: {:?}",
        runs[0]
    );
}

#[test]
fn jobs_of_different_shapes_cannot_share_a_pipeline() {
    let (dir, output) = import("shapes.yaml", &["--params", "-o", "p.toml"]);
    assert_fails(
        &output,
        2,
        &[
            "job 2 differs from job 1 in `context[0].counters`, which a parameter cannot select",
            "shapes.yaml:4:5",
            "--split",
        ],
    );
    assert!(!dir.path().join("p.toml").exists());
}

#[test]
fn several_jobs_need_split_or_params() {
    let (_dir, output) = import("jobs.yaml", &[]);
    assert_fails(
        &output,
        2,
        &[
            "`jobs.yaml` has 2 jobs: say how to write them",
            "--split -o DIR",
            "--params",
        ],
    );
    assert!(output.stdout.is_empty());
}

/// Converts `content` written to `name`, expecting exit code 2, `position` and `message`
/// in the error, and nothing written.
fn rejected(name: &str, content: &str, position: Option<&str>, message: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), content).unwrap();
    let output = rocflow(&["import-rocprofv3", name, "-o", "p.toml"], dir.path(), &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
    assert!(
        stderr.contains(message),
        "{name}: wanted `{message}`:\n{stderr}"
    );
    if let Some(position) = position {
        assert!(
            stderr.contains(&format!("--> {position}")),
            "{name}: wanted {position}:\n{stderr}"
        );
    }
    assert!(output.stdout.is_empty());
    assert!(
        !dir.path().join("p.toml").exists(),
        "{name}: nothing is written"
    );
    stderr
}

#[test]
fn bad_input_is_one_clear_error_with_its_position() {
    let stderr = rejected(
        "typo.yaml",
        "jobs:\n  - kernel_trace: true\n    hip_trac: true\n",
        Some("typo.yaml:3:5"),
        "unknown key `hip_trac` in `jobs[0]`",
    );
    assert_says(&stderr, "did you mean `hip_trace`?");
    let stderr = rejected(
        "top.json",
        "{\n  \"job\": []\n}\n",
        Some("top.json:2:3"),
        "unknown key `job`",
    );
    assert_says(&stderr, "did you mean `jobs`?");
    rejected(
        "type.yaml",
        "jobs:\n  - kernel_trace: sometimes\n",
        Some("type.yaml:2:19"),
        "`jobs[0].kernel_trace`: expected a boolean, found the string \"sometimes\"",
    );
    rejected(
        "list.json",
        "{\"jobs\": [{\"pmc\": \"SQ_WAVES\"}]}",
        Some("list.json:1:19"),
        "`jobs[0].pmc`: expected a list, found the string \"SQ_WAVES\"",
    );
    rejected(
        "twice.yaml",
        "jobs:\n  - kernel_trace: true\n    kernel_trace: false\n",
        Some("twice.yaml:3:5"),
        "`kernel_trace` is set twice in `jobs[0]`",
    );
    let stderr = rejected(
        "format.yaml",
        "jobs:\n  - output_format: [csv, pftrase]\n",
        Some("format.yaml:2:26"),
        "`jobs[0].output_format[1]`: `pftrase` is not a valid value",
    );
    assert_says(&stderr, "did you mean `pftrace`?");
    rejected(
        "syntax.yaml",
        "jobs:\n  - kernel_trace: true\n   pmc: [SQ_WAVES]\n",
        Some("syntax.yaml:3:4"),
        "invalid YAML",
    );
    rejected(
        "syntax.json",
        "{\"jobs\": [{\"kernel_trace\": true,}]}",
        Some("syntax.json:1:33"),
        "invalid JSON: key must be a string",
    );
    rejected(
        "empty.yaml",
        "jobs: []\n",
        Some("empty.yaml:1:1"),
        "`jobs` is empty",
    );
    rejected("none.yaml", "# nothing\n", None, "`jobs` is missing");
    let stderr = rejected(
        "ompt.yaml",
        "jobs:\n  - ompt_trace: [parallel, locks]\n",
        Some("ompt.yaml:2:5"),
        "`locks` is not a category of OpenMP events",
    );
    assert_says(
        &stderr,
        "the categories are all, thread, parallel, task, sync, mutex, target, device, error",
    );
    rejected(
        "line.txt",
        "pmc: SQ_WAVES\npmc SQ_WAVES\n",
        Some("line.txt:2:1"),
        "expected `pmc: COUNTER …`",
    );
    let stderr = rejected(
        "input.cfg",
        "pmc: SQ_WAVES\n",
        None,
        "cannot tell the format",
    );
    assert_says(&stderr, ".yaml, .yml, .json");
}

#[test]
fn values_rocflow_cannot_honour_are_errors_at_their_place() {
    let stderr = rejected(
        "regex.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_include_regex: \"gemm(?!_small)\"\n",
        Some("regex.yaml:3:5"),
        "`kernel_include_regex` is not a regex rocflow reads",
    );
    assert_says(&stderr, "no look-around");
    rejected(
        "range.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_iteration_range: \"[10-2]\"\n",
        Some("range.yaml:3:5"),
        "ends before it starts",
    );
    rejected(
        "unit.yaml",
        "jobs:\n  - pc_sampling_method: host_trap\n    pc_sampling_unit: cycles\n    pc_sampling_interval: 10\n",
        Some("unit.yaml:3:5"),
        "rocprofiler-sdk samples `host_trap` PCs by time, not by cycles",
    );
    rejected(
        "partial.yaml",
        "jobs:\n  - pc_sampling_method: host_trap\n",
        Some("partial.yaml:2:5"),
        "PC sampling also needs `pc_sampling_unit` and `pc_sampling_interval`",
    );
    rejected(
        "stochastic.yaml",
        "jobs:\n  - pc_sampling_method: stochastic\n    pc_sampling_unit: cycles\n    pc_sampling_interval: 1000\n",
        Some("stochastic.yaml:4:5"),
        "stochastic sampling needs a power-of-two interval, not 1000",
    );
    rejected(
        "huge.json",
        r#"{"jobs":[{"pc_sampling_method":"host_trap","pc_sampling_unit":"time","pc_sampling_interval":18446744073709551615}]}"#,
        Some("huge.json:1:70"),
        "the PC sampling interval must be at most 9223372036854775807",
    );
    rejected(
        "both.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    pmc_groups: [[TCC_HIT]]\n",
        Some("both.yaml:3:5"),
        "`pmc` and `pmc_groups` cannot both be set",
    );
    rejected(
        "period.yaml",
        "jobs:\n  - kernel_trace: true\n    collection_period: [\"1:2\"]\n",
        Some("period.yaml:3:5"),
        "`1:2` is not a collection period",
    );
}

#[test]
fn a_single_pipeline_goes_to_stdout_and_compiles() {
    let (dir, output) = import("sim.yaml", &[]);
    assert_success(&output);
    let pipeline = text(&output.stdout);
    assert!(
        pipeline.starts_with(
            "# Converted by `rocflow import-rocprofv3` from sim.yaml (job 1).\n\n[pipeline]"
        ),
        "{pipeline}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the input"
    );
    std::fs::write(dir.path().join("p.toml"), &pipeline).unwrap();
    let validate = rocflow(&["validate", "p.toml"], dir.path(), &[]);
    assert_eq!(text(&validate.stdout), "p.toml: ok\n");
}

/// Every key of rocprofiler-sdk's `rocprofv3_input_schema.json` is set in one of the
/// input files above (whose tests check what each does).
#[test]
fn every_key_of_the_rocprofv3_input_schema_is_exercised() {
    const SCHEMA_KEYS: &[&str] = &[
        "pmc",
        "pmc_groups",
        "pmc_group_interval",
        "kernel_include_regex",
        "kernel_exclude_regex",
        "kernel_iteration_range",
        "hip_trace",
        "hip_runtime_trace",
        "hip_compiler_trace",
        "marker_trace",
        "kernel_trace",
        "memory_copy_trace",
        "memory_allocation_trace",
        "rocdecode_trace",
        "rocjpeg_trace",
        "scratch_memory_trace",
        "stats",
        "hsa_trace",
        "hsa_core_trace",
        "hsa_amd_trace",
        "hsa_finalize_trace",
        "hsa_image_trace",
        "runtime_trace",
        "sys_trace",
        "mangled_kernels",
        "truncate_kernels",
        "output_file",
        "output_directory",
        "output_format",
        "list_metrics",
        "log_level",
        "preload",
        "minimum-output-data",
        "disable-signal-handlers",
        "pc_sampling_unit",
        "pc_sampling_method",
        "pc_sampling_interval",
        "pc-sampling-beta-enabled",
    ];
    let inputs: String = std::fs::read_dir(data(""))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for key in SCHEMA_KEYS {
        let set = inputs.contains(&format!("\"{key}\":"))
            || inputs.lines().any(|l| {
                l.trim_start()
                    .trim_start_matches("- ")
                    .starts_with(&format!("{key}:"))
            });
        assert!(set, "no input file sets `{key}`");
    }
}

#[test]
fn a_converted_job_runs_on_the_simulated_device() {
    let (dir, imported) = import("sim.yaml", &["-o", "p.toml"]);
    assert_success(&imported);
    let run = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], dir.path(), &[]);
    assert_success(&run);
    // rocprofv3's layout and files: out/pass_1/<host>/<pid>_<table>.csv, `output_format:
    // [csv]` being rocprofv3's CSV files and `stats` their statistics; the run's spool is
    // kept with them.
    let pass = dir.path().join("out/pass_1");
    assert!(pass.join("last.rfraw").is_file());
    let hosts: Vec<PathBuf> = support::entries(&pass, |_| true)
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    let files = support::entries(&hosts[0], |n| n.ends_with(".csv"));
    let trace = (files.iter())
        .find_map(|p| p.to_str()?.strip_suffix("_kernel_trace.csv"))
        .unwrap_or_else(|| panic!("no kernel trace in {files:?}"));
    let pid = Path::new(trace).file_name().unwrap().to_str().unwrap();
    assert!(pid.parse::<u32>().is_ok(), "{pid}");
    let tables: Vec<String> = (files.iter())
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .map(|n| n.strip_prefix(&format!("{pid}_")).unwrap().to_owned())
        .collect();
    assert_eq!(
        tables,
        [
            "agent_info.csv",
            "counter_collection.csv",
            "domain_stats.csv",
            "kernel_stats.csv",
            "kernel_trace.csv"
        ]
    );
    let rows = |table: &str| {
        let path = hosts[0].join(format!("{pid}_{table}.csv"));
        support::csv(&path)
    };
    // Every dispatch, and a row per counter of ten of vectorAdd's and reduce's dispatches
    // each (rocprofv3 sums a counter's instances).
    let scenario = Scenario::of(&support::scenario::default_scenario());
    let dispatches = scenario.records_per_process()["kernel_dispatch"];
    assert_eq!(rows("kernel_trace").len() as u64, dispatches);
    let counted = regex::Regex::new("vectorAdd|reduce").unwrap();
    let counters: usize = (scenario.kernels.iter())
        .filter(|k| counted.is_match(&k.name))
        .flat_map(|k| ["SQ_WAVES", "GRBM_GUI_ACTIVE"].map(|c| scenario.instances(k.agent, c)))
        .filter(|instances| !instances.is_empty())
        .count();
    assert!(counters > 0);
    assert_eq!(rows("counter_collection").len(), 10 * counters);
}

/// rocprofv3's `agent_index` names the agents in the CSV files; each of AMD's three
/// `agent-index` test inputs converts with its form.
#[test]
fn agent_index_names_the_agents_of_rocprofv3s_csv_files() {
    use rocflow::plan::sink::csv::{AgentIndex, Flavour, Rocprofv3};
    use rocflow::plan::sink::{Format, Writer};
    for (written, form) in [
        ("absolute", AgentIndex::Absolute),
        ("relative", AgentIndex::Relative),
        ("type-relative", AgentIndex::TypeRelative),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let input = format!(
            "jobs:\n  - output_file: \"out\"\n    output_format: [csv, json]\n    \
             sys_trace: True\n    agent_index: {written}\n"
        );
        std::fs::write(dir.path().join("in.yaml"), input).unwrap();
        let output = rocflow(
            &["import-rocprofv3", "in.yaml", "-o", "p.toml"],
            dir.path(),
            &[],
        );
        assert_success(&output);
        assert!(!text(&output.stderr).contains("agent_index"), "{written}");
        let plan = compile(&dir.path().join("p.toml"), &[]);
        let [sink, json] = &plan.sinks[..] else {
            panic!("{:?}", plan.sinks)
        };
        assert_eq!(json.name, "json");
        let Writer::Builtin(Format::Csv(options)) = &sink.writer else {
            panic!("{sink:?}")
        };
        let rocprofv3 = Rocprofv3 {
            agent_index: form,
            stats: false,
        };
        assert_eq!(options.flavour, Flavour::Rocprofv3(rocprofv3), "{written}");
        // rocprofv3's `out_kernel_trace.csv`, … in the current directory.
        assert_eq!(sink.path, "./out");
    }
}

#[test]
fn counter_names_are_checked_against_definitions() {
    let definitions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/counters/standard-schema.counter_defs.yaml")
        .canonicalize()
        .unwrap();
    let definitions = definitions.to_str().unwrap();
    let (dir, known) = import("passes.txt", &["--params", "--counters", definitions]);
    assert_success(&known);
    std::fs::write(dir.path().join("typo.txt"), "pmc: SQ_WAVE\n").unwrap();
    let typo = rocflow(
        &[
            "import-rocprofv3",
            "typo.txt",
            "-o",
            "p.toml",
            "--counters",
            definitions,
        ],
        dir.path(),
        &[],
    );
    // The error is in the converted pipeline, which is shown, and says where it came from.
    assert_fails(
        &typo,
        2,
        &[
            "unknown counter `SQ_WAVE`",
            "did you mean `SQ_WAVES`?",
            "--> p.toml:",
            "in the pipeline converted from typo.txt (pass 1)",
        ],
    );
    assert!(!dir.path().join("p.toml").exists());
}

#[test]
fn a_counter_listed_many_times_is_collected_once() {
    let definitions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/counters/standard-schema.counter_defs.yaml")
        .canonicalize()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Planning passes once per listed name grew with its fourth power: 120 took a minute.
    let repeated = vec!["TCC_HIT"; 120].join(",");
    std::fs::write(
        dir.path().join("dup.txt"),
        format!("pmc: {repeated},SQ_WAVES\n"),
    )
    .unwrap();
    let converted = rocflow(
        &[
            "import-rocprofv3",
            "dup.txt",
            "-o",
            "p.toml",
            "--counters",
            definitions.to_str().unwrap(),
        ],
        dir.path(),
        &[],
    );
    assert_success(&converted);
    let stderr = text(&converted.stderr);
    assert_eq!(
        stderr
            .matches("`TCC_HIT` is listed again; it is collected once")
            .count(),
        1,
        "{stderr}"
    );
    let options = Options {
        counters: Some(definitions),
        ..Options::default()
    };
    let plan = match compile_file(&dir.path().join("p.toml"), &options) {
        Ok(compiled) => compiled.plan,
        Err(errors) => panic!("{errors:?}"),
    };
    let counters = context(&plan).counters.clone().unwrap();
    assert_eq!(counters.collect, ["TCC_HIT", "SQ_WAVES"]);
    assert_eq!(counters.passes, [["TCC_HIT", "SQ_WAVES"]]);
}
