//! Bad pipelines: each must be rejected with one precise message at the right line:col.

use std::path::Path;

use rocflow::diag::Diagnostic;
use rocflow::pipeline::{self, Library, Options, Override};

/// Compiles `text` as `p.toml` in a fresh directory and returns its errors.
fn errors_with(text: &str, sets: &[&str]) -> Vec<Diagnostic> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    let options = Options {
        overrides: sets.iter().map(|s| Override::parse(s).unwrap()).collect(),
        library: Library::with_search_path(Vec::new()),
        ..Options::default()
    };
    match pipeline::compile_file(&path, &options) {
        Ok(_) => panic!("pipeline was accepted:\n{text}"),
        Err(diagnostics) => diagnostics
            .into_iter()
            .filter(Diagnostic::is_error)
            .collect(),
    }
}

/// Asserts that the pipeline fails with exactly one error containing `message` at
/// `line:col` of p.toml, and returns it for further checks.
#[track_caller]
fn rejects(text: &str, message: &str, line: usize, col: usize) -> Diagnostic {
    rejects_with(text, &[], message, line, col)
}

#[track_caller]
fn rejects_with(text: &str, sets: &[&str], message: &str, line: usize, col: usize) -> Diagnostic {
    let errors = errors_with(text, sets);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 1, "expected one error, got {shown:#?}");
    let error = errors.into_iter().next().unwrap();
    assert!(
        error.message.contains(message),
        "message {:?} lacks {message:?}",
        error.message
    );
    let position = error.position().expect("the error has a position");
    let file = Path::new(position.rsplitn(3, ':').nth(2).unwrap());
    assert_eq!(file.file_name().unwrap(), "p.toml", "{position}");
    assert!(
        position.ends_with(&format!(":{line}:{col}")),
        "{message}: at {position}, expected {line}:{col}"
    );
    error
}

/// The one error of `rocflow validate` on `text` as p.toml, run as a process of its own
/// with bounded memory and time: for pipelines that could exhaust the stack or memory, so
/// that doing so fails the test instead of killing the test harness.
#[track_caller]
fn validate_rejects(text: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    let out = support::rocflow_bounded(&["validate", "--format", "json", "p.toml"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(2),
        "{:?}, stderr: {}",
        out.status,
        support::text(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<&serde_json::Value> = report["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    errors[0].clone()
}

/// Asserts that `error` (from [`validate_rejects`]) is at `line:col` of p.toml.
#[track_caller]
fn assert_at(error: &serde_json::Value, line: u64, col: u64) {
    assert_eq!(
        (&error["file"], &error["line"], &error["column"]),
        (&"p.toml".into(), &line.into(), &col.into()),
        "{error:#}"
    );
}

fn hint(error: &Diagnostic) -> &str {
    error.hint.as_deref().unwrap_or("")
}

const TRACE: &str = "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n";

#[test]
fn toml_syntax_error() {
    let e = rejects("[[context]]\nname = \"t\nbad", "invalid TOML", 2, 10);
    assert!(e.message.contains("basic string"), "{}", e.message);
}

#[test]
fn unknown_top_level_key() {
    let e = rejects("[contexts]\nname = \"x\"\n", "unknown key `contexts`", 1, 2);
    assert_eq!(hint(&e), "did you mean `context`?");
}

#[test]
fn unknown_context_key() {
    let e = rejects(
        "[[context]]\nname = \"t\"\ntracng = []\n",
        "unknown key `tracng` in `context[0]`",
        3,
        1,
    );
    assert_eq!(hint(&e), "did you mean `tracing`?");
}

#[test]
fn tracing_must_be_an_array() {
    rejects(
        "[[context]]\nname = \"t\"\ntracing = \"kernel_dispatch\"\n",
        "`context[0].tracing` must be an array, not a string",
        3,
        11,
    );
}

#[test]
fn context_needs_a_name() {
    rejects(
        "[[context]]\ntracing = []\n",
        "`context[0]` is missing `name`",
        1,
        1,
    );
}

#[test]
fn unknown_tracing_domain() {
    let e = rejects(
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispach\"]\n",
        "unknown tracing domain `kernel_dispach`",
        3,
        12,
    );
    assert_eq!(hint(&e), "did you mean `kernel_dispatch`?");
}

#[test]
fn arguments_of_calls_the_sdk_gives_none_of() {
    let e = rejects(
        "[[context]]\nname = \"t\"\ntracing = [\"hsa_core_api\", \"marker_core_api\"]\nargs = true\n",
        "context `t` traces no API whose calls the SDK gives arguments of",
        4,
        8,
    );
    assert!(hint(&e).contains("hip_runtime_api"), "{}", hint(&e));
}

#[test]
fn unknown_domain_in_filtered_entry() {
    rejects(
        "[[context]]\nname = \"t\"\ntracing = [{ domain = \"hip_api\", include = [\"hipMemcpy*\"] }]\n",
        "unknown tracing domain `hip_api`",
        3,
        23,
    );
}

#[test]
fn operation_glob_matching_nothing() {
    let e = rejects(
        "[[context]]\nname = \"t\"\ntracing = [{ domain = \"hip_runtime_api\", include = [\"hipMemcpy*\", \"hipMaloc\"] }]\n",
        "`hipMaloc` matches no operation of `hip_runtime_api`",
        3,
        67,
    );
    assert_eq!(hint(&e), "did you mean `hipMalloc`?");
}

#[test]
fn operation_exclude_matching_nothing() {
    rejects(
        "[[context]]\nname = \"t\"\n[[context.tracing]]\ndomain = \"memory_copy\"\nexclude = [\"HOST_TO_GPU\"]\n",
        "`HOST_TO_GPU` matches no operation of `memory_copy`",
        5,
        12,
    );
}

#[test]
fn domain_traced_twice() {
    rejects(
        "[[context]]\nname = \"t\"\ntracing = [\"memory_copy\", \"memory_copy\"]\n",
        "domain `memory_copy` is traced twice",
        3,
        27,
    );
}

#[test]
fn buffer_size_with_unknown_unit() {
    let e = rejects(
        &format!("{TRACE}buffer = {{ size = \"64XB\" }}\n"),
        "unknown unit `XB`",
        4,
        19,
    );
    assert!(e.message.contains("MiB"));
}

#[test]
fn watermark_above_hundred_percent() {
    rejects(
        &format!("{TRACE}[context.buffer]\nwatermark = \"150%\"\n"),
        "out of range",
        5,
        13,
    );
}

#[test]
fn watermark_larger_than_buffer() {
    rejects(
        &format!("{TRACE}[context.buffer]\nsize = \"1MiB\"\nwatermark = \"2MiB\"\n"),
        "watermark is larger than the buffer",
        6,
        13,
    );
}

#[test]
fn unknown_buffer_policy() {
    let e = rejects(
        &format!("{TRACE}buffer.policy = \"losless\"\n"),
        "`losless` is not a valid `context[0].buffer.policy`",
        4,
        17,
    );
    assert_eq!(hint(&e), "did you mean `lossless`?");
}

#[test]
fn pc_sampling_unknown_method() {
    let e = rejects(
        "[[context]]\nname = \"p\"\npc_sampling = { method = \"hosttrap\" }\n",
        "`hosttrap` is not a valid",
        3,
        26,
    );
    assert_eq!(hint(&e), "did you mean `host_trap`?");
}

#[test]
fn pc_sampling_unit_the_method_does_not_use() {
    let e = rejects(
        "[[context]]\nname = \"p\"\npc_sampling = { method = \"host_trap\", unit = \"cycles\" }\n",
        "samples `host_trap` PCs by time, not by cycles",
        3,
        46,
    );
    assert_eq!(hint(&e), "set `unit = \"time\"`");
}

#[test]
fn stochastic_interval_not_a_power_of_two() {
    let e = rejects(
        "[[context]]\nname = \"p\"\npc_sampling = { method = \"stochastic\", interval = 1000 }\n",
        "power-of-two interval, not 1000",
        3,
        51,
    );
    assert_eq!(hint(&e), "try 512 or 1024");
}

#[test]
fn pc_sampling_interval_zero() {
    rejects(
        "[[context]]\nname = \"p\"\npc_sampling = { method = \"host_trap\", interval = 0 }\n",
        "less than the minimum",
        3,
        50,
    );
}

#[test]
fn bad_kernel_regex() {
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nkernels.include = \"gemm(\"\n",
        "invalid kernel regex: unclosed group",
        5,
        19,
    );
}

#[test]
fn iteration_range_backwards() {
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\niterations = \"[1-10],[30-20]\"\n",
        "`[30-20]` ends before it starts",
        5,
        14,
    );
}

#[test]
fn unknown_reduce_dimension() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\n[[context.counters.reduce]]\ndimensions = [\"XCC\"]\nop = \"sum\"\n",
        "unknown counter dimension `XCC`",
        6,
        15,
    );
    assert_eq!(hint(&e), "did you mean `DIMENSION_XCC`?");
}

#[test]
fn unknown_reduce_op() {
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\n[[context.counters.reduce]]\ndimensions = [\"DIMENSION_XCC\"]\nop = \"mean\"\n",
        "`mean` is not a valid",
        7,
        6,
    );
}

#[test]
fn reduce_of_a_counter_not_collected() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\n[[context.counters.reduce]]\ncounters = [\"SQ_WAVE\"]\ndimensions = [\"DIMENSION_XCC\"]\nop = \"sum\"\n",
        "`SQ_WAVE` is not collected by this context",
        6,
        13,
    );
    assert_eq!(hint(&e), "did you mean `SQ_WAVES`?");
}

#[test]
fn derived_counter_defined_twice() {
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"A\"]\nderived = [{ name = \"A\", expression = \"SQ_WAVES\" }, { name = \"A\", expression = \"SQ_WAVES*2\" }]\n",
        "duplicate derived name `A`",
        5,
        62,
    );
}

#[test]
fn counters_in_two_contexts() {
    let e = rejects(
        "[[context]]\nname = \"a\"\ncounters.collect = [\"SQ_WAVES\"]\n[[context]]\nname = \"b\"\ncounters.collect = [\"SQ_INSTS_VALU\"]\n",
        "context `b` collects counters, and context `a` collects counters: both need rocprofiler-sdk's dispatch counter collection service, which one context only may configure",
        6,
        1,
    );
    assert!(
        e.notes.iter().any(|n| n.contains("p.toml:3:1")),
        "{:?}",
        e.notes
    );
}

#[test]
fn serialization_next_to_counters_in_another_context() {
    // rocprofiler-sdk serializes through dispatch counting: one context may have it. The
    // error says what each context does, and why they cannot both.
    let e = rejects(
        "[[context]]\nname = \"a\"\ncounters.collect = [\"SQ_WAVES\"]\n[[context]]\nname = \"b\"\nserialize = true\n",
        "context `b` serializes kernel dispatches, and context `a` collects counters: both need rocprofiler-sdk's dispatch counter collection service",
        6,
        13,
    );
    assert!(
        hint(&e).contains("a context that collects counters serializes dispatches already"),
        "{}",
        hint(&e)
    );
    assert!(
        e.notes
            .iter()
            .any(|n| n.starts_with("context `a` collects counters at ")
                && n.ends_with("/p.toml:3:1")),
        "{:?}",
        e.notes
    );
    // The other way round: the error is at the counters, and says the same.
    let e = rejects(
        "[[context]]\nname = \"a\"\nserialize = true\n[[context]]\nname = \"b\"\ncounters.collect = [\"SQ_WAVES\"]\n",
        "context `b` collects counters, and context `a` serializes kernel dispatches: both need rocprofiler-sdk's dispatch counter collection service",
        6,
        1,
    );
    assert!(hint(&e).contains("drop `serialize = true`"), "{}", hint(&e));
}

#[test]
fn pc_sampling_in_two_contexts() {
    rejects(
        "[[context]]\nname = \"a\"\npc_sampling.method = \"host_trap\"\n[[context]]\nname = \"b\"\npc_sampling.method = \"host_trap\"\n",
        "context `b` samples PCs, and context `a` samples PCs: both need rocprofiler-sdk's PC sampling service",
        6,
        1,
    );
}

#[test]
fn one_service_in_two_contexts_of_different_periods() {
    // Neither period covers the other: no one context can trace what both ask for once.
    let e = rejects(
        "[[context]]\nname = \"a\"\ntracing = [\"kernel_dispatch\"]\nperiod = { delay = \"1s\" }\n[[context]]\nname = \"b\"\ntracing = [\"kernel_dispatch\"]\nperiod = { delay = \"2s\" }\n",
        "contexts `a` and `b` both trace `kernel_dispatch` in different collection periods",
        7,
        11,
    );
    assert!(
        hint(&e).contains("trace `kernel_dispatch` in one of them"),
        "{}",
        hint(&e)
    );
}

#[test]
fn pc_sampling_beside_counted_dispatches() {
    // The SDK refuses PC sampling in a process whose dispatches it counts (CONTEXT_CONFLICT):
    // a run would sample nothing, so the pipeline is refused, whichever context comes first.
    let e = rejects(
        "[[context]]\nname = \"a\"\ncounters.collect = [\"SQ_WAVES\"]\n[[context]]\nname = \"b\"\npc_sampling.method = \"host_trap\"\n",
        "context `b` samples PCs, and context `a` collects counters: rocprofiler-sdk refuses PC sampling in a process whose dispatches it counts",
        6,
        1,
    );
    assert_eq!(hint(&e), "sample PCs and count dispatches in separate runs");
    assert!(
        e.notes.iter().any(|n| n.ends_with("/p.toml:3:1")),
        "{:?}",
        e.notes
    );
    let both = "[[context]]\nname = \"a\"\npc_sampling.method = \"host_trap\"\nserialize = true\n";
    rejects(
        both,
        "context `a` samples PCs, and context `a` serializes kernel dispatches: rocprofiler-sdk refuses PC sampling",
        3,
        1,
    );
    // Records of both kinds can exist (from two runs, or made up by `rocflow generate`):
    // a plan that only shapes records (a replay's) takes them.
    let (_dir, path) = support::with_file("p.toml", both);
    let records = Options {
        records_only: true,
        ..Options::default()
    };
    assert!(pipeline::compile_file(&path, &records).is_ok());
}

#[test]
fn duplicate_context_names_in_one_file() {
    let e = rejects(
        &format!("{TRACE}{TRACE}"),
        "duplicate context name `t`",
        5,
        8,
    );
    assert!(e.notes.iter().any(|n| n.contains("p.toml:2:8")));
}

#[test]
fn invalid_name() {
    rejects(
        "[[context]]\nname = \"my context\"\n",
        "`my context` is not a valid name",
        2,
        8,
    );
}

#[test]
fn unknown_sink_kind() {
    let e = rejects(
        "[[sink]]\nname = \"s\"\nkind = \"perfeto\"\npath = \"out.pftrace\"\n",
        "`perfeto` is not a valid",
        3,
        8,
    );
    assert_eq!(hint(&e), "did you mean `perfetto`?");
}

#[test]
fn sink_needs_a_path() {
    rejects(
        "[[sink]]\nname = \"s\"\nkind = \"rocpd\"\n",
        "`sink[0]` is missing `path`",
        1,
        1,
    );
}

#[test]
fn unknown_sink_option() {
    let e = rejects(
        "[[sink]]\nname = \"s\"\nkind = \"parquet\"\npath = \"out\"\noptions = { compresion = \"zstd\" }\n",
        "unknown key `compresion` in `sink[0].options`",
        5,
        13,
    );
    assert_eq!(hint(&e), "did you mean `compression`?");
}

#[test]
fn unknown_record_kind() {
    let e = rejects(
        &format!(
            "{TRACE}[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"x.db\"\nrecords = [\"kernel_dispatch\", \"hip_runtime_api\"]\n"
        ),
        "unknown record kind `hip_runtime_api`",
        8,
        31,
    );
    assert_eq!(
        hint(&e),
        "`hip_runtime_api` is a tracing domain; its records are `api`"
    );
}

#[test]
fn two_sinks_on_one_path() {
    let e = rejects(
        &format!(
            "{TRACE}[[sink]]\nname = \"a\"\nkind = \"rocpd\"\npath = \"out/{{pid}}.db\"\n[[sink]]\nname = \"b\"\nkind = \"rocpd\"\npath = \"out/{{pid}}.db\"\n"
        ),
        "sinks `a` and `b` write the same path",
        11,
        8,
    );
    assert!(e.notes.iter().any(|n| n.contains("p.toml:7:8")));
}

#[test]
fn unknown_placeholder_in_path() {
    let e = rejects(
        &format!(
            "{TRACE}[[sink]]\nname = \"a\"\nkind = \"perfetto\"\npath = \"out/{{hostnme}}.pftrace\"\n"
        ),
        "unknown placeholder `{hostnme}`",
        7,
        13,
    );
    assert_eq!(hint(&e), "did you mean `hostname`?");
}

#[test]
fn filter_that_does_not_parse() {
    rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = \"duration_ns >\"\n"
        ),
        "invalid expression",
        7,
        13,
    );
}

#[test]
fn filter_nested_too_deep() {
    let depth = 50_000;
    let error = validate_rejects(&format!(
        "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = \"{}duration_ns > 1{}\"\n",
        "(".repeat(depth),
        ")".repeat(depth)
    ));
    assert_eq!(
        error["message"],
        "invalid expression: parentheses nest more than 32 deep here"
    );
    // The 33rd parenthesis; the string starts at column 14.
    assert_at(&error, 7, 14 + 32);
}

#[test]
fn filter_with_a_run_of_negations() {
    let error = validate_rejects(&format!(
        "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = \"{}true\"\n",
        "!".repeat(100_000)
    ));
    assert_eq!(
        error["message"],
        "invalid expression: more than 4 `!` and `-` in a row"
    );
    assert_at(&error, 7, 14 + 4);
}

#[test]
fn derived_column_too_long_to_evaluate() {
    let sum = vec!["duration_ns"; 5000].join(" + ");
    let error = validate_rejects(&format!(
        "{TRACE}[[transform]]\nname = \"d\"\nkind = \"derive\"\ncolumn = \"total\"\nexpression = \"{sum}\"\n"
    ));
    assert_eq!(
        error["message"],
        "invalid expression: the expression has more than 256 operators"
    );
    assert_eq!(
        error["hint"],
        "split it: filters one after another, or columns derived one from another"
    );
    // The 257th `+`; the string starts at column 15.
    assert_at(&error, 8, 15 + 256 * "duration_ns + ".len() as u64 + 12);
}

#[test]
fn filter_on_an_unknown_column() {
    let e = rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = 'duration > 1000'\n"
        ),
        "`duration` is not a column of kernel_dispatch records",
        7,
        14,
    );
    assert_eq!(hint(&e), "did you mean `duration_ns`?");
}

#[test]
fn filter_on_a_column_some_kinds_lack() {
    let e = rejects(
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\", \"hip_runtime_api\"]\n[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = 'kernel_name != \"copy\"'\n",
        "`kernel_name` is not a column of api records",
        7,
        14,
    );
    assert!(
        hint(&e).contains("records = [\"kernel_dispatch\""),
        "{}",
        hint(&e)
    );
}

#[test]
fn derive_over_an_existing_column() {
    rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"d\"\nkind = \"derive\"\ncolumn = \"duration_ns\"\nexpression = \"end_ns - start_ns\"\n"
        ),
        "`duration_ns` is already a column of kernel_dispatch records",
        7,
        10,
    );
}

#[test]
fn derived_column_is_visible_downstream_only() {
    // `gbps` is used before the transform that derives it.
    rejects(
        "[[context]]\nname = \"t\"\ntracing = [\"memory_copy\"]\n[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = 'gbps > 10.0'\n[[transform]]\nname = \"d\"\nkind = \"derive\"\ncolumn = \"gbps\"\nexpression = \"bytes / duration_ns\"\n",
        "`gbps` is not a column of memory_copy records",
        7,
        14,
    );
}

#[test]
fn transform_with_a_key_of_another_kind() {
    let e = rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = \"true\"\ncolumn = \"x\"\n"
        ),
        "unknown key `column` in `transform[0]`",
        8,
        1,
    );
    assert!(hint(&e).contains("predicate"), "{}", hint(&e));
}

#[test]
fn aggregate_with_an_unknown_op() {
    rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"a\"\nkind = \"aggregate\"\ngroup_by = [\"kernel_name\"]\nmetrics = {{ med = \"median(duration_ns)\" }}\n"
        ),
        "unknown aggregate `median`",
        8,
        19,
    );
}

#[test]
fn time_window_that_ends_before_it_starts() {
    rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"w\"\nkind = \"time_window\"\nstart = \"2s\"\nend = \"500ms\"\n"
        ),
        "the time window ends before it starts",
        8,
        7,
    );
}

#[test]
fn reduction_transform_on_non_counter_records() {
    rejects(
        &format!(
            "{TRACE}[[transform]]\nname = \"r\"\nkind = \"reduce_dimensions\"\ndimensions = [\"DIMENSION_XCC\"]\nop = \"sum\"\n"
        ),
        "dimension reductions apply to counter samples only",
        6,
        8,
    );
}

#[test]
fn sql_step_without_a_database() {
    rejects(
        "[[post]]\nname = \"q\"\nkind = \"sql\"\nquery = \"select 1\"\npath = \"q.csv\"\n",
        "sql step `q` has no database to query",
        3,
        8,
    );
}

#[test]
fn sql_step_timeouts() {
    let step = |timeout: &str| {
        format!(
            "{TRACE}[[post]]\nname = \"q\"\nkind = \"sql\"\ndatabase = \"run.db\"\nquery = \"select 1\"\npath = \"q.csv\"\ntimeout = {timeout}\n"
        )
    };
    rejects(&step("\"soon\""), "`soon` is not a duration", 10, 11);
    let e = rejects(
        &step("\"0s\""),
        "a timeout of 0 stops every query before it starts",
        10,
        11,
    );
    assert_eq!(
        hint(&e),
        "give the query time to run, e.g. `timeout = \"30s\"`"
    );
}

#[test]
fn command_given_as_a_shell_string() {
    let e = rejects(
        "[[post]]\nname = \"c\"\nkind = \"command\"\nargv = [\"python3 plot.py\"]\n",
        "commands are not run through a shell",
        4,
        9,
    );
    assert!(hint(&e).contains("argv = [\"python3\", \"script.py\"]"));
}

#[test]
fn command_naming_an_output_that_does_not_exist() {
    let sink = "[[sink]]\nname = \"tables\"\nkind = \"csv\"\npath = \"out\"\n";
    let e = rejects(
        &format!(
            "{TRACE}{sink}[[post]]\nname = \"c\"\nkind = \"command\"\nargv = [\"ls\", \"{{spool}}\", \"{{sink:table}}\"]\n"
        ),
        "no sink named `table`",
        11,
        27,
    );
    assert!(hint(&e).contains("tables"), "{}", hint(&e));
    // A post-step's output exists only once the step ran.
    rejects(
        &format!(
            "{TRACE}{sink}[[post]]\nname = \"c\"\nkind = \"command\"\nargv = [\"ls\", \"{{post:s}}\"]\n[[post]]\nname = \"s\"\nkind = \"summary\"\n"
        ),
        "no earlier post-step named `s`",
        11,
        16,
    );
}

#[test]
fn agent_selector_that_selects_nothing() {
    rejects(
        &format!("{TRACE}agents = [\"tpu\"]\n"),
        "`tpu` does not select an agent",
        4,
        11,
    );
}

#[test]
fn repeated_period_without_duration() {
    rejects(
        &format!("{TRACE}period = {{ delay = \"1s\", repeat = 3 }}\n"),
        "a repeated period needs a `duration`",
        4,
        35,
    );
}

#[test]
fn unknown_parameter_in_set() {
    let errors = errors_with("[params]\ntop = 10\n", &["topp=5"]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].message, "unknown parameter `topp`");
    assert_eq!(errors[0].position().unwrap(), "command line:1:7");
    assert_eq!(hint(&errors[0]), "did you mean `top`?");
}

#[test]
fn parameter_of_the_wrong_type_in_set() {
    let errors = errors_with("[params]\ntop = 10\n", &["top=true"]);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].message,
        "parameter `top` is an integer, but --set gives a boolean"
    );
    assert_eq!(errors[0].position().unwrap(), "command line:1:11");
    assert!(
        errors[0].notes[0].ends_with("p.toml:2:7"),
        "{:?}",
        errors[0].notes
    );
}

#[test]
fn parameter_that_makes_a_value_invalid() {
    // The error points at the value the parameter was given, on the command line, where
    // it is fixed; a note says where the pipeline uses it.
    let errors = errors_with(
        "[params]\nsize = \"64MiB\"\n[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\nbuffer.size = \"{size}\"\n",
        &["size=lots"],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].message.contains("`lots` is not a size"),
        "{}",
        errors[0]
    );
    assert_eq!(errors[0].position().unwrap(), "command line:1:12");
    let rendered = errors[0].render(false);
    assert!(rendered.contains("1 | --set size=lots"), "{rendered}");
    assert!(
        rendered.contains("note: used as `{size}` at "),
        "{rendered}"
    );
    assert!(rendered.contains("p.toml:6:15"), "{rendered}");
}

/// `rocflow validate --format json` on `text` as p.toml with `args` after it: its errors.
fn validate_json(text: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    let mut command = vec!["validate", "--format", "json", "p.toml"];
    command.extend_from_slice(args);
    let out = support::rocflow(&command, dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diagnostics = report["files"][0]["diagnostics"].as_array().unwrap();
    (diagnostics.iter())
        .filter(|d| d["severity"] == "error")
        .cloned()
        .collect()
}

/// Where `needle` starts in the shipped template `name`, as a diagnostic names it.
fn in_template(name: &str, needle: &str) -> String {
    let path = format!("pipelines/{name}.toml");
    let text = std::fs::read_to_string(support::repo().join(&path)).unwrap();
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} in {path}"));
    let line = text[..at].lines().count() + usize::from(text[..at].ends_with('\n'));
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("{path}:{line}:{column}")
}

/// A bad value in the user's `[params]`, for a template that uses it, is the user's line
/// to fix: the error points there, and a note says where the template uses it.
#[test]
fn bad_parameter_value_for_a_template_points_at_the_users_line() {
    let errors = validate_json(
        "[pipeline]\nname = \"mine\"\nextends = [\"kernel-trace\"]\n\n[params]\ntop = \"ten\"\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0]["message"],
        "`post[0].top` must be an integer, not a string"
    );
    assert_at(&errors[0], 6, 7);
    assert_eq!(errors[0]["snippet"], "\"ten\"");
    let used = in_template("base", "\"{top}\"");
    assert_eq!(
        errors[0]["notes"],
        serde_json::json!([format!("used as `{{top}}` at {used}")])
    );
}

/// `--set` for a template's parameter: the error names the option as written, and where
/// the template uses the parameter.
#[test]
fn bad_parameter_value_set_for_a_template_points_at_the_option() {
    let errors = validate_json(
        "[pipeline]\nname = \"mine\"\nextends = [\"trace-all\"]\n",
        &["--set", "buffer_size=64"],
    );
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let error = &errors[0];
    assert!(
        error["message"].as_str().unwrap().contains("in `64`"),
        "{error:#}"
    );
    assert_eq!(
        (&error["file"], &error["line"], &error["column"]),
        (&"command line".into(), &1.into(), &19.into()),
        "{error:#}"
    );
    assert_eq!(error["snippet"], "64");
    let used = in_template("trace-all", "\"{buffer_size}\"");
    assert_eq!(
        error["notes"][0],
        format!("used as `{{buffer_size}}` at {used}")
    );
}

/// A parameter inside a template's longer string: the string is the template's, so the
/// error points there, and a note says where the parameter was given. Where the template
/// uses it whole, the error points at the user's line.
#[test]
fn bad_parameter_inside_a_template_string_names_where_it_was_given() {
    let errors = validate_json(
        "[pipeline]\nname = \"mine\"\nextends = [\"kernel-trace\"]\n\n[params]\noutput_dir = \"out/{pidd}\"\n",
        &[],
    );
    let (whole, inside): (Vec<_>, Vec<_>) = errors.iter().partition(|e| e["file"] == "p.toml");
    assert_eq!(whole.len(), 1, "{errors:#?}");
    // At the placeholder itself, inside the value.
    assert_at(whole[0], 6, 19);
    let used = in_template("base", "\"{output_dir}\"");
    assert_eq!(
        whole[0]["notes"][0],
        format!("used as `{{output_dir}}` at {used}")
    );
    // The perfetto and rocpd paths, the summary's and the report's.
    assert_eq!(inside.len(), 4, "{errors:#?}");
    for error in &errors {
        assert_eq!(
            error["message"], "unknown placeholder `{pidd}`",
            "{error:#}"
        );
    }
    for error in inside {
        assert_eq!(error["file"], "pipelines/base.toml", "{error:#}");
        assert_eq!(error["notes"][0], "`{output_dir}` is given at p.toml:6:14");
    }
}

#[test]
fn parameters_that_use_each_other_are_a_cycle() {
    // Each expansion round would multiply the strings by 20: the cycle is found before.
    let error = validate_rejects(&format!(
        "[params]\nroot = \"/x\"\na = \"{}\"\nb = \"{{root}}{}\"\n",
        "{b}".repeat(20),
        "{a}".repeat(20)
    ));
    assert_eq!(
        error["message"],
        "parameter `a` refers to itself: a -> b -> a"
    );
    assert_at(&error, 3, 5);
    assert_eq!(error["notes"], serde_json::json!(["`b` is at p.toml:4:5"]));
}

#[test]
fn parameter_that_uses_itself() {
    let error = validate_rejects("[params]\nout = \"/scratch\"\ndir = \"{out}/{dir}\"\n");
    assert_eq!(
        error["message"],
        "parameter `dir` refers to itself: dir -> dir"
    );
    assert_at(&error, 3, 7);
}

/// `p1 = "{p0}{p0}"`, `p2 = "{p1}{p1}"`, … up to `p{last}`, in the order given.
fn doubling_parameters(order: impl Iterator<Item = usize>) -> String {
    let mut text = "[params]\n".to_owned();
    for i in order {
        match i {
            0 => text.push_str("p0 = \"x\"\n"),
            i => text.push_str(&format!("p{i} = \"{{p{0}}}{{p{0}}}\"\n", i - 1)),
        }
    }
    text
}

#[test]
fn parameter_that_doubles_at_every_step_stops_at_the_size_limit() {
    // p40 would be 2^40 bytes; p21, at 2 MiB, is the first past the 1 MiB limit.
    let error = validate_rejects(&doubling_parameters(0..=40));
    assert_eq!(
        error["message"],
        "parameter `p21` would expand to 2097152 bytes, more than the 1 MiB a value may hold"
    );
    assert_at(&error, 23, 7);
}

#[test]
fn parameters_that_refer_too_deep() {
    // Declared from the top, p40 needs 40 parameters resolved below it first.
    let error = validate_rejects(&doubling_parameters((0..=40).rev()));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("parameter `p40` uses parameters more than 32 deep: p40 -> p39"),
        "{message}"
    );
    assert_at(&error, 2, 7);
}

#[test]
fn many_uses_of_a_large_parameter_stop_at_the_total_limit() {
    // 1000 copies of a value of half a MiB: each is allowed, together they are not.
    let uses = vec!["\"{big}\""; 1000].join(", ");
    let error = validate_rejects(&format!(
        "[params]\nbig = \"{}\"\n[[sink]]\nname = \"s\"\nkind = \"csv\"\npath = \"out\"\nrecords = [{uses}]\n",
        "x".repeat(512 << 10)
    ));
    assert_eq!(
        error["message"],
        "this value would take the pipeline past 64 MiB of expanded parameters"
    );
    // The 129th use, at column 12 + 9 * 128.
    assert_at(&error, 7, 1164);
}

#[test]
fn unknown_template() {
    let e = rejects(
        "[pipeline]\nname = \"x\"\nextends = [\"kernel-trce\"]\n",
        "template `kernel-trce` not found",
        3,
        12,
    );
    assert_eq!(hint(&e), "did you mean `kernel-trace`?");
    assert!(e.notes[0].starts_with("looked in: "), "{:?}", e.notes);
}

#[test]
fn every_error_is_reported_in_one_round() {
    let errors = errors_with(
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispach\", \"memory_cpy\"]\nbuffer.size = \"1XB\"\n",
        &[],
    );
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(errors.len(), 3, "{messages:?}");
}

/// The real standardized counter definitions of rocprofiler-sdk.
fn definitions() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/counters/standard-schema.counter_defs.yaml"
    );
    std::fs::canonicalize(path).unwrap().display().to_string()
}

fn counters(body: &str) -> String {
    format!(
        "[[context]]\nname = \"c\"\n[context.counters]\ndefinitions = '{}'\n{body}",
        definitions()
    )
}

#[test]
fn derived_counter_expression_error_points_at_its_column() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"X\"]\nderived = [{ name = \"X\", expression = \"SQ_WAVES + * 2\" }]\n",
        "invalid counter expression",
        5,
        51,
    );
    assert_eq!(e.span.unwrap().snippet(), "*");
}

#[test]
fn unknown_counter_with_definitions() {
    let e = rejects(
        &counters("collect = [\"SQ_WAVE\"]\n"),
        "unknown counter `SQ_WAVE`",
        5,
        12,
    );
    assert_eq!(hint(&e), "did you mean `SQ_WAVES`?");
}

#[test]
fn an_unknown_counter_listed_again_is_reported_once() {
    rejects(
        &counters("collect = [\"SQ_WAVE\", \"SQ_WAVES\", \"SQ_WAVE\"]\n"),
        "unknown counter `SQ_WAVE`",
        5,
        12,
    );
}

#[test]
fn counter_not_defined_for_the_selected_agent() {
    let e = rejects(
        &counters("collect = [\"SQ_WAVES\", \"TCC_EA0_RDREQ_sum\"]\nagents = [\"gfx908\"]\n"),
        "`TCC_EA0_RDREQ_sum` is not defined for gfx908",
        5,
        24,
    );
    assert!(
        hint(&e).contains("rocflow counters list --arch gfx908"),
        "{}",
        hint(&e)
    );
}

#[test]
fn inline_derived_counter_with_an_unknown_input() {
    let e = rejects(
        &counters(
            "collect = [\"MINE\", \"SQ_WAVE\", \"GRBM_GUI_ACTIVE\"]\nagents = [\"gfx942\"]\nderived = [{ name = \"MINE\", expression = \"SQ_WAVE / GRBM_GUI_ACTIVE\" }]\n",
        ),
        "unknown counter `SQ_WAVE`",
        5,
        20,
    );
    assert_eq!(hint(&e), "did you mean `SQ_WAVES`?");
}

#[test]
fn inline_derived_counter_reads_more_than_is_collected() {
    let e = rejects(
        &counters(
            "collect = [\"SQ_WAVES\"]\nderived = [{ name = \"MINE\", expression = \"SQ_WAVES / GRBM_GUI_ACTIVE\" }]\n",
        ),
        "`GRBM_GUI_ACTIVE` is not collected by this context",
        6,
        54,
    );
    assert_eq!(hint(&e), "add `GRBM_GUI_ACTIVE` to `collect`");
    assert_eq!(e.span.unwrap().snippet(), "GRBM_GUI_ACTIVE");
}

#[test]
fn a_derived_counter_is_never_told_to_read_a_misspelt_collected_counter() {
    // `SQ_INSTS_VALUU` is collected, and is no counter: the derived counter's hint must
    // not offer it as the fix for `SQ_INSTS_VALU`, which is the counter meant.
    let errors = errors_with(
        &counters(
            "collect = [\"SQ_INSTS_VALUU\", \"SQ_WAVES\"]\nderived = [{ name = \"V\", expression = \"SQ_INSTS_VALU / SQ_WAVES\" }]\n",
        ),
        &[],
    );
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{shown:#?}");
    let derived = errors
        .iter()
        .find(|e| e.message == "`SQ_INSTS_VALU` is not collected by this context")
        .expect("the derived counter's error");
    assert_eq!(hint(derived), "add `SQ_INSTS_VALU` to `collect`");
    let collected = errors
        .iter()
        .find(|e| e.message == "unknown counter `SQ_INSTS_VALUU`")
        .expect("the collected counter's error");
    assert_eq!(hint(collected), "did you mean `SQ_INSTS_VALU`?");
}

#[test]
fn inline_derived_counter_reads_an_agent_property_rocflow_lacks() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nderived = [{ name = \"PER_BANK\", expression = \"SQ_WAVES / mem_banks_count\" }]\n",
        "rocflow does not know the agent property `mem_banks_count`",
        5,
        58,
    );
    assert!(hint(&e).contains("simd_count"), "{}", hint(&e));
}

#[test]
fn inline_derived_counter_divides_by_zero() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nderived = [{ name = \"NONE\", expression = \"reduce(SQ_WAVES,sum) / (2 - 2)\" }]\n",
        "`reduce(SQ_WAVES,sum)/(2-2)` divides by zero",
        5,
        42,
    );
    assert!(
        hint(&e).contains("makes a division by zero 0"),
        "{}",
        hint(&e)
    );
}

#[test]
fn inline_derived_counter_cannot_accumulate() {
    let e = rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nderived = [{ name = \"ACC\", expression = \"accumulate(SQ_WAVES, HIGH_RES)\" }]\n",
        "a pipeline's derived counter cannot accumulate `SQ_WAVES`",
        5,
        53,
    );
    assert!(
        hint(&e).contains("counter definitions file"),
        "{}",
        hint(&e)
    );
}

#[test]
fn a_derived_counter_that_does_not_parse_is_reported_once() {
    // `C` reads `B`: that is not a second error, whatever `B` says.
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nderived = [{ name = \"B\", expression = \"SQ_WAVES +\" }, { name = \"C\", expression = \"B * 2\" }]\n",
        "invalid counter expression",
        5,
        50,
    );
}

/// A context deriving `D` from `expression`, and the column of its first character.
fn derived_counter(expression: &str) -> (String, u64) {
    let head = "derived = [{ name = \"D\", expression = \"";
    let text = format!(
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\n{head}{expression}\" }}]\n"
    );
    (text, head.len() as u64 + 1)
}

#[test]
fn derived_counter_too_long_to_evaluate() {
    // A sum of 50 000 terms is a tree 50 000 deep: it is refused at its 257th node.
    let (text, column) = derived_counter(&vec!["SQ_WAVES"; 50_000].join("+"));
    let error = validate_rejects(&text);
    assert_eq!(
        error["message"],
        "invalid counter expression: the expression is too long: it has more than 256 numbers, names, operators and functions"
    );
    assert_at(&error, 5, column + 9 * 128);
    assert_eq!(error["snippet"], "SQ_WAVES");
}

#[test]
fn derived_counter_nested_too_deep() {
    let depth = 10_000;
    let (text, column) = derived_counter(&format!(
        "{}SQ_WAVES{}",
        "(".repeat(depth),
        ")".repeat(depth)
    ));
    let error = validate_rejects(&text);
    assert_eq!(
        error["message"],
        "invalid counter expression: parentheses and functions nest more than 32 deep here"
    );
    assert_at(&error, 5, column + 32);
}

#[test]
fn inline_derived_counters_in_a_cycle() {
    let e = rejects(
        &counters(
            "collect = [\"A\"]\nderived = [{ name = \"A\", expression = \"B + 1\" }, { name = \"B\", expression = \"A * 2\" }]\n",
        ),
        "derived counters form a cycle: A -> B -> A",
        6,
        40,
    );
    assert_eq!(e.span.unwrap().snippet(), "B");
}

#[test]
fn reductions_of_derived_counters() {
    let text = "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nderived = [{ name = \"D\", expression = \"SQ_WAVES * 2\" }]\nreduce = [{ counters = [\"D\", \"E\"], dimensions = [\"DIMENSION_XCC\"], op = \"sum\" }]\n";
    let e = rejects(text, "`E` is not collected by this context", 6, 30);
    assert_eq!(hint(&e), "add it to `collect` of context `c`");
}

#[test]
fn missing_definitions_file() {
    rejects(
        "[[context]]\nname = \"c\"\n[context.counters]\ndefinitions = \"nope.yaml\"\ncollect = [\"SQ_WAVES\"]\n",
        "cannot load counter definitions",
        4,
        15,
    );
}

const TRACED: &str = "[[context]]\nname = \"t\"\n[context.thread_trace]\npath = \"att\"\n";

#[test]
fn thread_trace_target_cu_beyond_the_sdk_s_16() {
    rejects(
        &format!("{TRACED}target_cu = 16\n"),
        "CU 16 is above 15, the most rocprofiler-sdk takes",
        5,
        13,
    );
}

#[test]
fn thread_trace_buffer_below_a_mebibyte() {
    let e = rejects(
        &format!("{TRACED}buffer_size = \"64KiB\"\n"),
        "below rocprofiler-sdk's 1 MiB",
        5,
        15,
    );
    assert_eq!(hint(&e), "try \"256MiB\", rocprofv3's default");
}

#[test]
fn thread_trace_perfcounters_need_their_period() {
    let e = rejects(
        &format!("{TRACED}perfcounters = [\"SQ_WAVES\"]\n"),
        "need a `perfcounter_period`",
        5,
        16,
    );
    assert!(hint(&e).contains("--att-perfcounter-ctrl"), "{}", hint(&e));
    rejects(
        &format!("{TRACED}perfcounters = [\"SQ_WAVES\"]\nperfcounter_period = 33\n"),
        "a perfcounter period of 33 is outside 1..=32",
        6,
        22,
    );
    rejects(
        &format!(
            "{TRACED}perfcounters = [{{ name = \"SQ_WAVES\", simd_mask = 0 }}]\nperfcounter_period = 4\n"
        ),
        "SIMD mask 0x0 of `SQ_WAVES`",
        5,
        50,
    );
}

#[test]
fn a_device_thread_trace_refuses_the_options_that_pick_or_serialize_dispatches() {
    let device = format!("{TRACED}mode = \"device\"\n");
    let e = rejects(
        &format!("{device}kernels = {{ include = \"gemm\" }}\n"),
        "`kernels` picks dispatches; a device-mode thread trace traces all the agent runs",
        6,
        11,
    );
    assert!(hint(&e).contains("mode = \"dispatch\""), "{}", hint(&e));
    rejects(
        &format!("{device}iterations = \"[1-2]\"\n"),
        "`iterations` picks dispatches",
        6,
        14,
    );
    rejects(
        &format!("{device}serialize_all = true\n"),
        "which rocprofiler-sdk's device service refuses",
        6,
        17,
    );
    // The same options are the dispatch mode's, written or by default.
    for mode in ["", "mode = \"dispatch\"\n"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        let text = format!(
            "{TRACED}{mode}kernels = {{ include = \"gemm\" }}\niterations = \"[1]\"\nserialize_all = true\n"
        );
        std::fs::write(&path, &text).unwrap();
        let options = Options {
            library: Library::with_search_path(Vec::new()),
            ..Options::default()
        };
        let Ok(compiled) = pipeline::compile_file(&path, &options) else {
            panic!("refused:\n{text}");
        };
        let trace = compiled.plan.contexts[0].thread_trace.as_ref().unwrap();
        assert_eq!(trace.mode, rocflow_core::contexts::TraceMode::Dispatch);
    }
    rejects(
        &format!("{TRACED}mode = \"wave\"\n"),
        "`wave` is not a valid `context[0].thread_trace.mode`",
        5,
        8,
    );
}

#[test]
fn thread_trace_kernel_filters_are_checked_as_the_counters_are() {
    rejects(
        &format!("{TRACED}kernels = {{ include = \"(\" }}\n"),
        "invalid kernel regex",
        5,
        23,
    );
    rejects(
        &format!("{TRACED}iterations = \"[0-3]\"\n"),
        "iterations count from 1",
        5,
        14,
    );
}

#[test]
fn thread_trace_shader_engine_mask_of_nothing() {
    rejects(
        &format!("{TRACED}shader_engine_mask = 0\n"),
        "shader-engine mask of 0 traces nothing",
        5,
        22,
    );
}

#[test]
fn thread_trace_in_two_contexts() {
    let e = rejects(
        &format!("{TRACED}[[context]]\nname = \"u\"\n[context.thread_trace]\npath = \"att2\"\n"),
        "context `u` traces threads, and so does context `t`",
        7,
        1,
    );
    assert_eq!(
        hint(&e),
        "move these settings to context `t`, or trace in separate runs"
    );
}

/// Counters of context `a` replayed per kernel (line 5), then `rest`.
const REPLAYED: &str = "[[context]]\nname = \"a\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nreplay = \"kernel\"\n";

#[test]
fn kernel_replay_beside_thread_trace() {
    let e = rejects(
        &format!("{REPLAYED}{TRACED}"),
        "context `a` replays kernels, and context `t` traces threads: kernel replay runs each dispatch once per pass, which thread_trace cannot share",
        5,
        10,
    );
    assert!(
        e.notes.iter().any(|n| n.ends_with("/p.toml:8:1")),
        "{:?}",
        e.notes
    );
    assert!(
        hint(&e).starts_with("drop `replay = \"kernel\"`"),
        "{}",
        hint(&e)
    );
    // In the same context too.
    rejects(
        &format!("{REPLAYED}[context.thread_trace]\npath = \"att\"\n"),
        "context `a` replays kernels, and context `a` traces threads",
        5,
        10,
    );
}

#[test]
fn kernel_replay_beside_spm() {
    let e = rejects(
        &format!("{REPLAYED}[[context]]\nname = \"s\"\n[context.spm]\ncollect = [\"SQ_WAVES\"]\n"),
        "context `a` replays kernels, and context `s` streams counters with SPM: kernel replay runs each dispatch once per pass, which spm cannot share",
        5,
        10,
    );
    assert!(
        e.notes.iter().any(|n| n.ends_with("/p.toml:8:1")),
        "{:?}",
        e.notes
    );
}

#[test]
fn kernel_replay_beside_pc_sampling() {
    rejects(
        &format!("{REPLAYED}[[context]]\nname = \"p\"\npc_sampling.method = \"host_trap\"\n"),
        "context `p` samples PCs, and context `a` collects counters",
        8,
        1,
    );
}

#[test]
fn kernel_replay_unknown_mode() {
    rejects(
        "[[context]]\nname = \"a\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\nreplay = \"kernels\"\n",
        "kernels",
        5,
        10,
    );
}
