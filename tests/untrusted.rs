//! A spool may come from someone else: `replay`, `summary`, `diff` and `inspect` read it
//! as data. Real spools (`rocflow generate`) are changed as a malicious or damaged one
//! would be, and written back frame by frame with the real encoder.

use std::path::Path;
use std::process::Output;
use std::sync::mpsc;
use std::time::Duration;

use rocflow::record::{Batch, CounterInfo, MemoryAllocation, Meta};
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::wire::{Frame, Payload};
use support::{assert_fails, assert_says, assert_success, csv, rocflow, rocflow_command, text};

const TRACE: &str = concat!(
    support::traced_pipeline!("untrusted", "t"),
    support::sink!("tables", "csv", "out/tables"),
);

/// The size of every generated run.
const RECORDS: &[&str] = &["--records", "3000"];

/// `run.rfraw` in `dir`, generated with `pipeline` recorded in it.
fn generate(dir: &Path, pipeline: &str) {
    support::generate(dir, "p.toml", pipeline, RECORDS);
}

/// [`generate`] in a fresh directory.
fn generated(pipeline: &str) -> tempfile::TempDir {
    support::generated("p.toml", pipeline, RECORDS)
}

/// Rewrites the spool at `path` with `change` applied to its frames, whole: its end
/// recorded.
fn rewrite(path: &Path, change: impl FnOnce(&mut Vec<Frame>)) {
    let mut frames: Vec<Frame> = SpoolReader::open(path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    change(&mut frames);
    let mut bytes = Vec::new();
    frames.iter().for_each(|frame| frame.encode(&mut bytes));
    let mut spool = SpoolWriter::create(path).unwrap();
    spool.write(&bytes).unwrap();
    spool.finish().unwrap();
}

/// Rewrites the pipeline recorded in the spool at `path` with `change`.
fn rewrite_plan(path: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    rewrite(path, |frames| {
        let plan = (frames.iter_mut())
            .filter_map(|frame| match &mut frame.payload {
                Payload::Meta(items) => Some(items),
                _ => None,
            })
            .flatten()
            .find_map(|item| match item {
                Meta::Plan { json } => Some(json),
                _ => None,
            })
            .expect("a recorded pipeline");
        let mut value: serde_json::Value = serde_json::from_str(plan).unwrap();
        change(&mut value);
        *plan = value.to_string();
    });
}

/// Runs `rocflow args…` in `dir`; one still running after a minute is killed and fails the
/// test, so a hang does not stall the suite.
fn rocflow_in_time(args: &[&str], dir: &Path) -> Output {
    let child = rocflow_command(args, dir, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            // SAFETY: a process this test started, by its id.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("`rocflow {}` did not finish in a minute", args.join(" "));
        }
    }
}

/// The names in a directory.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_replay_runs_no_code_from_the_spool_unless_trusted() {
    let dir = generated(&format!(
        r#"{TRACE}
[[transform]]
name = "families"
kind = "plugin"
plugin = "kernel_family"
records = ["kernel_dispatch"]
[[sink]]
name = "metrics"
kind = "plugin"
plugin = "openmetrics"
path = "out/metrics.prom"
[[post]]
name = "notify"
kind = "command"
argv = ["touch", "ran"]
"#
    ));
    let d = dir.path();
    let out = rocflow(&["replay", "run.rfraw"], d, &[]);
    assert_success(&out);
    assert!(!d.join("ran").exists(), "the command ran");
    assert_eq!(names(&d.join("out")), ["tables"], "the plugin sink wrote");
    let kernels = csv(&d.join("out/tables/kernel_dispatch.csv"));
    assert!(!kernels.is_empty());
    assert!(!kernels[0].contains_key("kernel_family"), "the plugin ran");
    let stderr = text(&out.stderr);
    for skipped in [
        "command post-step `notify`",
        "plugin sink `metrics`",
        "plugin transform `families`",
        "--trust-plan",
    ] {
        assert!(stderr.contains(skipped), "{skipped}: {stderr}");
    }

    std::fs::remove_dir_all(d.join("out")).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "--trust-plan"], d, &[]);
    assert_success(&out);
    assert!(d.join("ran").exists());
    assert!(d.join("out/metrics.prom").exists());
    let kernels = csv(&d.join("out/tables/kernel_dispatch.csv"));
    assert!(kernels.iter().all(|r| !r["kernel_family"].is_empty()));
    assert!(!text(&out.stderr).contains("--trust-plan"));
}

/// A recorded plugin transform that keeps every other dispatch: `summary` and `diff` of
/// the spool count every dispatch, as a spool recorded without it does.
#[test]
fn summary_and_diff_load_no_plugin_from_the_spool() {
    let dir = generated(&format!(
        "{TRACE}\n[[transform]]\nname = \"halve\"\nkind = \"plugin\"\nplugin = \"probe\"\n\
             records = [\"kernel_dispatch\"]\noptions = {{ keep_every = 2 }}\n"
    ));
    let d = dir.path();
    let args = ["generate", "plain.rfraw", "--records", "3000"];
    assert_success(&rocflow(&args, d, &[]));

    let calls = |spool: &str| {
        let out = rocflow(&["summary", spool, "--format", "json"], d, &[]);
        assert_success(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let kernels = json["kernels"].as_array().unwrap();
        let calls: u64 = kernels.iter().map(|k| k["calls"].as_u64().unwrap()).sum();
        (calls, text(&out.stderr))
    };
    let (recorded, stderr) = calls("run.rfraw");
    assert_eq!(recorded, calls("plain.rfraw").0);
    assert_says(&stderr, "plugin transform `halve`");

    let diff = ["diff", "plain.rfraw", "run.rfraw", "--fail-if"];
    let out = rocflow(&[&diff[..], &["kernel_time_ratio < 0.9"]].concat(), d, &[]);
    assert_success(&out);
    assert!(text(&out.stderr).contains("plugin transform `halve`"));
}

/// A metadata item whose count or size is far beyond what a spool holds ends the valid
/// prefix, as damage does: the frames before it are replayed, with a warning.
#[test]
fn sizes_in_metadata_are_checked_before_anything_is_allocated() {
    let counters = r#"
[context.counters]
collect = ["SQ_WAVES", "SQ_INSTS_VALU"]
[[context.counters.derived]]
name = "VALU_PER_WAVE"
expression = "reduce(SQ_INSTS_VALU,sum)/reduce(SQ_WAVES,sum)"
"#;
    let huge = [
        Meta::Strings {
            first: 4_000_000_000,
            values: vec!["x".into()],
        },
        Meta::Counter(CounterInfo {
            id: 0,
            agent: 1,
            name: "SQ_WAVES".into(),
            description: String::new(),
            dimensions: vec![
                ("DIMENSION_XCC".into(), u32::MAX),
                ("DIMENSION_SHADER_ENGINE".into(), u32::MAX),
            ],
        }),
    ];
    for item in huge {
        let pipeline = TRACE.replace("\"memory_copy\"]", &format!("\"memory_copy\"]{counters}"));
        let dir = generated(&pipeline);
        let d = dir.path();
        let spool = d.join("run.rfraw");
        rewrite(&spool, |frames| {
            let dispatches =
                |f: &Frame| matches!(f.payload, Payload::Records(Batch::KernelDispatch(_)));
            let at = frames.iter().position(dispatches).unwrap() + 1;
            let payload = Payload::Meta(vec![item.clone()]);
            frames.insert(at, Frame { stream: 0, payload });
        });
        for args in [&["inspect", "run.rfraw"][..], &["replay", "run.rfraw"]] {
            let out = rocflow_in_time(args, d);
            assert_success(&out);
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains("the spool is corrupt at byte")
                    && stderr.contains("using the frames before it"),
                "{item:?}: {stderr}"
            );
        }
        assert!(!csv(&d.join("out/tables/kernel_dispatch.csv")).is_empty());
    }
}

/// A hostname from the spool fills `{hostname}` as one harmless path component.
#[test]
fn names_from_the_spool_stay_inside_the_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let pipeline = format!(
        "{}[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"out/{{hostname}}-{{pid}}.db\"\n",
        TRACE.replace("out/tables", "out/{hostname}-{pid}")
    );
    generate(&work, &pipeline);
    rewrite(&work.join("run.rfraw"), |frames| {
        for frame in frames {
            if let Payload::Meta(items) = &mut frame.payload {
                for item in items {
                    if let Meta::Process(process) = item {
                        process.hostname = "../../escaped".into();
                    }
                }
            }
        }
    });
    let out = rocflow(&["replay", "run.rfraw"], &work, &[]);
    assert_success(&out);
    assert_eq!(names(dir.path()), ["work"]);
    assert_eq!(names(&work), ["out", "p.toml", "run.rfraw"]);
    let written = names(&work.join("out"));
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.iter().all(|n| n.contains("escaped")), "{written:?}");
}

/// The pipeline recorded in a spool reads and writes only under the directory the replay
/// runs in: a sink path out of it, a table named as a path, or a query of a database
/// elsewhere, is refused before anything is written, unless the spool is trusted.
#[test]
fn a_recorded_pipeline_cannot_reach_outside_the_directory() {
    type Change = fn(&mut serde_json::Value, &Path);
    let hostile: [(&str, Change, &str); 4] = [
        (
            "a sink path up and out",
            |plan, _| plan["sinks"][0]["path"] = "../escaped".into(),
            "sink `tables` writes to `../escaped`, outside this directory",
        ),
        (
            "an absolute sink path",
            |plan, _| plan["sinks"][0]["path"] = "/tmp/rocflow-escaped-by-a-spool".into(),
            "sink `tables` writes to `/tmp/rocflow-escaped-by-a-spool`, outside this directory",
        ),
        (
            "a table named as a path",
            |plan, _| plan["stages"]["transforms"][0]["name"] = "../../escaped".into(),
            "table `../../escaped` is not a plain name",
        ),
        (
            "a database elsewhere, read by a step whose name would forge a line",
            |plan, secret| {
                let database = secret.to_str().unwrap().into();
                plan["posts"][0]["step"]["database"] = database;
                plan["posts"][0]["name"] = "kernels\nerror: forged".into();
            },
            "post-step `kernels\\nerror: forged` reads `",
        ),
    ];
    let pipeline = format!(
        "{TRACE}[[transform]]\nname = \"per-kernel\"\nkind = \"aggregate\"\n\
         records = [\"kernel_dispatch\"]\ngroup_by = [\"kernel_id\"]\n\
         metrics = {{ calls = \"count()\" }}\n\
         [[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"out/run.db\"\n\
         [[post]]\nname = \"kernels\"\nkind = \"sql\"\npath = \"out/kernels.csv\"\n\
         query = \"SELECT name FROM sqlite_schema\"\n"
    );
    for (what, change, refused) in hostile {
        let dir = tempfile::tempdir().unwrap();
        let (work, secret) = (dir.path().join("work"), dir.path().join("secret.db"));
        rusqlite::Connection::open(&secret)
            .unwrap()
            .execute_batch("CREATE TABLE secret (word TEXT)")
            .unwrap();
        std::fs::create_dir(&work).unwrap();
        generate(&work, &pipeline);
        rewrite_plan(&work.join("run.rfraw"), |plan| change(plan, &secret));
        let out = rocflow(&["replay", "run.rfraw"], &work, &[]);
        assert_fails(
            &out,
            2,
            &[
                "asks for more than a spool from anyone may",
                refused,
                "--trust-plan",
            ],
        );
        assert_eq!(names(dir.path()), ["secret.db", "work"], "{what}");
        assert_eq!(names(&work), ["p.toml", "run.rfraw"], "{what}");
        assert!(!Path::new("/tmp/rocflow-escaped-by-a-spool").exists());
    }
}

/// A recorded pipeline's queries: one whose `timeout` passes ten minutes is refused before
/// anything is written; a result past a million rows or 64 MiB (a hundred blobs of 1 MB),
/// or a value past its column's share of that (two blobs of 40 MB in a row, which SQLite
/// holds at once), fails its step, saying how to lift the bound, while the others write
/// theirs. Trusted, the spool's queries read what they ask for.
#[test]
fn a_recorded_pipelines_queries_are_bounded() {
    let step = |name: &str, query: &str| {
        format!(
            "[[post]]\nname = \"{name}\"\nkind = \"sql\"\nquery = \"{query}\"\n\
             path = \"out/{name}.csv\"\n"
        )
    };
    let pipeline = [
        TRACE,
        "[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"out/run.db\"\n",
        &step(
            "blobs",
            "SELECT zeroblob(40000000) AS a, zeroblob(40000000) AS b",
        ),
        &step(
            "tall",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 100) \
             SELECT zeroblob(1000000) AS b FROM n",
        ),
        &step(
            "rows",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
             SELECT i FROM n LIMIT 1000001",
        ),
        &step("count", "SELECT COUNT(*) AS n FROM rocpd_kernel_dispatch"),
    ]
    .concat();
    let dir = generated(&pipeline);
    let d = dir.path();
    let out = support::rocflow_bounded(&["replay", "run.rfraw"], d);
    assert_success(&out);
    let bounded = [
        ("blobs", "a value's share of 64 MiB"),
        ("tall", "64 MiB"),
        ("rows", "1000000 rows"),
    ];
    for (step, bound) in bounded {
        assert_says(
            &out.stderr,
            &format!(
                "post-step `{step}`: the query's result passes {bound}, the most read for a \
                 pipeline from a spool (replay it with --trust-plan if you trust whoever made it)"
            ),
        );
        assert!(!d.join(format!("out/{step}.csv")).exists(), "{step}");
    }
    let count = csv(&d.join("out/count.csv"));
    assert!(count[0]["n"].parse::<u64>().unwrap() > 0, "{count:?}");

    std::fs::remove_dir_all(d.join("out")).unwrap();
    let out = support::rocflow_bounded(&["replay", "run.rfraw", "--trust-plan"], d);
    assert_success(&out);
    let blobs = csv(&d.join("out/blobs.csv"));
    assert_eq!(blobs[0]["a"], "<40000000 bytes>");

    std::fs::remove_dir_all(d.join("out")).unwrap();
    rewrite_plan(&d.join("run.rfraw"), |plan| {
        plan["posts"][0]["step"]["timeout"] = "10000000min".into();
    });
    let out = rocflow(&["replay", "run.rfraw"], d, &[]);
    assert_fails(
        &out,
        2,
        &[
            "post-step `blobs` may run for 600000000s, past 600s",
            "--trust-plan",
        ],
    );
    assert!(!d.join("out").exists());
}

/// A `kernel_name` rule whose replacement is a hundred thousand `$1` renames every kernel
/// to a name cut at 64 KiB, in a replay and a summary of the spool, instead of megabytes a
/// name.
#[test]
fn a_rename_cannot_amplify_kernel_names() {
    let pipeline = format!(
        "{TRACE}[[transform]]\nname = \"names\"\nkind = \"kernel_name\"\n\
         records = [\"kernel_dispatch\"]\nrename = [{{ pattern = \"(.+)\", replacement = \"$1\" }}]\n"
    );
    let dir = generated(&pipeline);
    let d = dir.path();
    rewrite_plan(&d.join("run.rfraw"), |plan| {
        let rule = &mut plan["stages"]["transforms"][0]["op"]["rename"][0];
        rule[1] = "$1".repeat(100_000).into();
    });
    let cut = |name: &str| {
        assert!(
            name.len() <= (64 << 10) + 3 && name.ends_with('…'),
            "{}",
            name.len()
        );
    };
    let out = rocflow_in_time(&["summary", "run.rfraw", "--format", "json"], d);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty());
    kernels
        .iter()
        .for_each(|k| cut(k["kernel"].as_str().unwrap()));

    let out = rocflow_in_time(&["replay", "run.rfraw"], d);
    assert_success(&out);
    let dispatches = csv(&d.join("out/tables/kernel_dispatch.csv"));
    assert!(!dispatches.is_empty());
    dispatches.iter().for_each(|row| cut(&row["kernel_name"]));
}

/// Times at the ends of the range (a kernel that never ends, one that ends before it
/// starts) and sizes that add up past 2^64 (copies, allocations): replay and summary
/// finish, and say nothing negative.
#[test]
fn extreme_times_and_sizes_give_sane_output() {
    let steps = "[[post]]\nname = \"stats\"\nkind = \"summary\"\npath = \"stats\"\n\
                 [[post]]\nname = \"page\"\nkind = \"report\"\npath = \"report.html\"\n";
    let trace = TRACE.replace("\"memory_copy\"", "\"memory_copy\", \"memory_allocation\"");
    let perfetto = "[[sink]]\nname = \"trace\"\nkind = \"perfetto\"\npath = \"out/run.pftrace\"\n";
    let dir = generated(&format!("{trace}{perfetto}{steps}"));
    let d = dir.path();
    rewrite(&d.join("run.rfraw"), |frames| {
        let allocation = |address, operation_id| MemoryAllocation {
            address,
            bytes: u64::MAX / 2 + 1,
            operation_id,
            ..Default::default()
        };
        // Two allocations whose sizes add up past 2^64, and a free of one.
        let allocations = vec![allocation(1, 1), allocation(2, 1), allocation(1, 3)];
        frames.push(Frame {
            stream: 0,
            payload: Payload::Records(Batch::MemoryAllocation(allocations)),
        });
        for frame in frames {
            match &mut frame.payload {
                Payload::Records(Batch::KernelDispatch(dispatches)) => {
                    dispatches[0].end_ns = u64::MAX;
                    dispatches[1].start_ns = dispatches[1].end_ns + 1_000_000_000;
                    dispatches[2].start_ns = 0;
                }
                Payload::Records(Batch::MemoryCopy(copies)) => {
                    copies.iter_mut().for_each(|c| c.bytes = u64::MAX / 2 + 1);
                }
                _ => {}
            }
        }
    });
    let out = rocflow_in_time(&["replay", "run.rfraw"], d);
    assert_success(&out);
    let dispatches = csv(&d.join("out/tables/kernel_dispatch.csv"));
    assert!(dispatches.len() >= 3, "the dispatches changed are written");
    for row in dispatches {
        let duration = &row["duration_ns"];
        assert!(duration.parse::<u64>().is_ok(), "duration {duration}");
    }
    let out = rocflow_in_time(&["summary", "run.rfraw", "--format", "json"], d);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for section in ["kernels", "memory_copies"] {
        assert!(!json[section].as_array().unwrap().is_empty(), "{section}");
    }
    for (section, rows) in json.as_object().unwrap() {
        for row in rows.as_array().unwrap() {
            for (column, value) in row.as_object().unwrap() {
                if let Some(number) = value.as_f64() {
                    assert!(number >= 0.0, "{section} {column}: {number}");
                }
            }
        }
    }
    let copies = &json["memory_copies"].as_array().unwrap()[0];
    assert!(copies["bytes"].as_u64().unwrap() > u64::MAX / 4);
}

/// A hostname and kernel names with a newline in them: `inspect`, `summary` (as a table
/// and as Markdown) and `diff` print each on its line with the newline escaped, so a spool
/// cannot forge a line of their output.
#[test]
fn names_cannot_forge_lines_of_output() {
    let dir = generated(TRACE);
    let d = dir.path();
    rewrite(&d.join("run.rfraw"), |frames| {
        let items = (frames.iter_mut()).filter_map(|frame| match &mut frame.payload {
            Payload::Meta(items) => Some(items),
            _ => None,
        });
        for item in items.flatten() {
            match item {
                Meta::Process(process) => process.hostname = "node\n  forged: host".into(),
                Meta::KernelSymbol(symbol) => symbol.name = "gemm\r\nforged: kernel".into(),
                _ => {}
            }
        }
    });
    let outputs = [
        (vec!["inspect", "run.rfraw"], "node\\n  forged: host"),
        (vec!["summary", "run.rfraw"], "gemm\\r\\nforged: kernel"),
        (
            vec!["summary", "run.rfraw", "--format", "md"],
            "gemm\\r\\nforged: kernel",
        ),
        (
            vec!["diff", "run.rfraw", "run.rfraw"],
            "gemm\\r\\nforged: kernel",
        ),
    ];
    for (args, escaped) in outputs {
        let out = rocflow(&args, d, &[]);
        assert_success(&out);
        let stdout = text(&out.stdout);
        assert!(stdout.contains(escaped), "{args:?}: {stdout}");
        let forged = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("forged"));
        assert_eq!(forged, None, "{args:?}: {stdout}");
        assert!(!stdout.contains('\r'), "{args:?}");
    }
}

/// A recorded pipeline cannot cut its outputs into files or row groups of a few bytes
/// (millions of them for a large run): each such option is refused, before anything is
/// written, with how to trust the spool.
#[test]
fn a_recorded_pipeline_cannot_splinter_its_outputs() {
    let pipeline = format!(
        "{TRACE}[[sink]]\nname = \"trace\"\nkind = \"perfetto\"\npath = \"out/t.pftrace\"\n\
         [[sink]]\nname = \"ds\"\nkind = \"parquet\"\npath = \"out/ds\"\n"
    );
    let dir = generated(&pipeline);
    let d = dir.path();
    rewrite_plan(&d.join("run.rfraw"), |plan| {
        let sinks = plan["sinks"].as_array_mut().unwrap();
        let named = |name: &str| sinks.iter().position(|s| s["name"] == name).unwrap();
        let (trace, ds) = (named("trace"), named("ds"));
        sinks[trace]["options"]["split_size"] = "1B".into();
        sinks[ds]["options"]["max_file_size"] = "100B".into();
        sinks[ds]["options"]["row_group_rows"] = 1.into();
    });
    let out = rocflow(&["replay", "run.rfraw"], d, &[]);
    assert_fails(
        &out,
        2,
        &[
            "sink `trace` splits its files at 1 bytes (`split_size`), under 64 KiB",
            "sink `ds` splits its files at 100 bytes (`max_file_size`), under 64 KiB",
            "sink `ds` writes row groups of 1 rows (`row_group_rows`), under 1024",
            "--trust-plan",
        ],
    );
    assert!(!d.join("out").exists());
}
