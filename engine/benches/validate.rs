//! `rocflow validate` and `rocflow explain` on a 200-context pipeline.
//!
//! Prints, for the library path (compile = parse + merge + schema + checks + plan, then
//! explain) and for the installed binary end to end (process start included), the median
//! and best of repeated runs, and the compile time as a multiple of parsing the TOML alone,
//! measured in the same run. Run with `cargo bench -p rocflow --bench validate`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rocflow::pipeline::{self, Options};

const CONTEXTS: usize = 200;
const ROUNDS: usize = 30;

/// A large but realistic pipeline: many tracing contexts with operation filters and
/// buffers, one counter context, one PC-sampling context, transforms and sinks.
fn pipeline_text() -> String {
    let mut text = String::from(
        "[pipeline]\nname = \"bench\"\nextends = [\"base\"]\n\n[params]\nmin_ns = 1000\n",
    );
    let domains = [
        "kernel_dispatch",
        "memory_copy",
        "memory_allocation",
        "scratch_memory",
        "marker_core_api",
    ];
    for i in 0..CONTEXTS {
        let _ = write!(
            text,
            "\n[[context]]\nname = \"ctx-{i}\"\ntracing = [\"{}\", {{ domain = \"hip_runtime_api\", include = [\"hipMemcpy*\", \"hipMalloc*\"], exclude = [\"hipMemcpyAsync\"] }}, {{ domain = \"hsa_core_api\", include = [\"hsa_queue_*\"] }}]\nbuffer = {{ size = \"{}MiB\", watermark = \"75%\", policy = \"lossless\" }}\nagents = [{}, \"gpu\"]\n",
            domains[i % domains.len()],
            8 + i % 4,
            i % 8
        );
        if i == 0 {
            text.push_str("counters = { collect = [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"], iterations = \"[1-10],[20]\", kernels = { include = \"gemm|conv\" }, derived = [{ name = \"W\", expression = \"SQ_WAVES / GRBM_GUI_ACTIVE\" }], reduce = [{ dimensions = [\"DIMENSION_XCC\"], op = \"sum\" }] }\n");
        }
        if i == 1 {
            text.push_str("pc_sampling = { method = \"host_trap\", interval = 500 }\n");
        }
    }
    text.push_str("\n[[transform]]\nname = \"long\"\nkind = \"filter\"\nrecords = [\"kernel_dispatch\"]\npredicate = \"duration_ns > {min_ns}\"\n");
    text.push_str("\n[[transform]]\nname = \"bw\"\nkind = \"derive\"\nrecords = [\"memory_copy\"]\ncolumn = \"gbps\"\nexpression = \"bytes / duration_ns\"\n");
    text.push_str("\n[[sink]]\nname = \"tables\"\nkind = \"parquet\"\npath = \"out/{pid}\"\n");
    text
}

fn measure(mut f: impl FnMut()) -> (Duration, Duration) {
    f(); // warm caches and lazily built state (the schema validator) once
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[ROUNDS / 2], times[0])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.toml");
    let text = pipeline_text();
    std::fs::write(&path, &text).unwrap();
    let options = Options::default();
    let compiled = pipeline::compile_file(&path, &options).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(compiled.plan.contexts.len(), CONTEXTS);

    let (parse, parse_best) = measure(|| {
        toml::from_str::<toml::Table>(&text).unwrap();
    });
    let (compile, compile_best) = measure(|| {
        pipeline::compile_file(&path, &options).unwrap();
    });
    let (explain, explain_best) = measure(|| {
        let compiled = pipeline::compile_file(&path, &options).unwrap();
        std::hint::black_box(rocflow::plan::explain(&compiled.plan));
    });
    let run = |args: &[&str]| {
        let status = Command::new(env!("CARGO_BIN_EXE_rocflow"))
            .args(args)
            .arg(Path::new(&path))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    let (cli_validate, cli_validate_best) = measure(|| run(&["validate"]));
    let (cli_explain, cli_explain_best) = measure(|| run(&["explain"]));

    println!(
        "pipeline: {CONTEXTS} contexts, {} lines of TOML, {ROUNDS} rounds (median / best)",
        text.lines().count()
    );
    println!(
        "  toml parse only            {:>10} / {:>10}",
        ms(parse),
        ms(parse_best)
    );
    println!(
        "  compile (validate)         {:>10} / {:>10}   {:.1}x toml parse",
        ms(compile),
        ms(compile_best),
        compile.as_secs_f64() / parse.as_secs_f64()
    );
    println!(
        "  compile + explain          {:>10} / {:>10}",
        ms(explain),
        ms(explain_best)
    );
    println!(
        "  `rocflow validate` process {:>10} / {:>10}",
        ms(cli_validate),
        ms(cli_validate_best)
    );
    println!(
        "  `rocflow explain` process  {:>10} / {:>10}",
        ms(cli_explain),
        ms(cli_explain_best)
    );
}
