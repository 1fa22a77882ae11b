//! Post-steps after a replay, and `rocflow summary`: statistics checked against values
//! computed here directly from the generated spool, commands with the outputs' paths, and
//! the report of a run on the simulated device against its scenario.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use support::truth::{self, Collects, Scenario};
use support::{assert_fails, assert_says, assert_success, rocflow, text};

use rocflow::catalog::Catalog;
use rocflow::record::Batch;
use rocflow::spool::SpoolReader;
use rocflow::wire::Payload;

const PIPELINE: &str = concat!(
    support::traced_pipeline!(
        "stats",
        "t",
        r#"["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]"#
    ),
    "counters.collect = [\"SQ_WAVES\"]\n",
    support::sink!("tables", "csv", "out"),
    r#"[[post]]
name = "stats"
kind = "summary"
path = "stats-{pid}"
formats = ["json", "csv"]
top = 3
"#,
);

fn setup() -> tempfile::TempDir {
    support::generated("stats.toml", PIPELINE, &["--records", "40000"])
}

/// Durations per kernel name, and per-dispatch counter totals per (kernel, counter), read
/// straight from the spool.
struct Expected {
    kernels: BTreeMap<String, Vec<f64>>,
    counters: BTreeMap<(String, String), BTreeMap<(u16, u64), f64>>,
}

fn expected(spool: &Path) -> Expected {
    let mut catalog = Catalog::default();
    let mut kernels: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut counters: BTreeMap<(String, String), BTreeMap<(u16, u64), f64>> = BTreeMap::new();
    for frame in SpoolReader::open(spool).unwrap() {
        let frame = frame.unwrap();
        match frame.payload {
            Payload::Meta(items) => catalog.apply(frame.stream, items),
            Payload::Records(Batch::KernelDispatch(records)) => {
                let meta = catalog.stream(frame.stream);
                for r in records {
                    kernels
                        .entry(meta.kernel_name(r.kernel_id).to_owned())
                        .or_default()
                        .push((r.end_ns - r.start_ns) as f64);
                }
            }
            Payload::Records(Batch::CounterSample(samples)) => {
                let meta = catalog.stream(frame.stream);
                for s in samples {
                    let key = (
                        meta.kernel_name(s.kernel_id).to_owned(),
                        meta.counter_name(s.counter_id).to_owned(),
                    );
                    *counters
                        .entry(key)
                        .or_default()
                        .entry((frame.stream, s.dispatch_id))
                        .or_default() += s.value;
                }
            }
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) => {}
        }
    }
    Expected { kernels, counters }
}

fn close(actual: &serde_json::Value, expected: f64, tolerance: f64, what: &str) {
    let actual = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {actual}"));
    assert!(
        (actual - expected).abs() <= expected.abs() * tolerance + 1e-6,
        "{what}: {actual} vs {expected}"
    );
}

#[test]
fn kernel_and_counter_statistics_match_the_records() {
    let dir = setup();
    let out = rocflow(
        &["summary", "run.rfraw", "--format", "json"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = expected(&dir.path().join("run.rfraw"));

    let rows = summary["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), expected.kernels.len());
    let gpu_time: f64 = expected.kernels.values().flatten().sum();
    let mut previous_total = f64::INFINITY;
    for row in rows {
        let name = row["kernel"].as_str().unwrap();
        let mut durations = expected.kernels[name].clone();
        durations.sort_by(f64::total_cmp);
        let n = durations.len() as f64;
        let total: f64 = durations.iter().sum();
        let mean = total / n;
        assert_eq!(row["calls"], durations.len());
        close(&row["total_ns"], total, 1e-12, "total");
        close(&row["mean_ns"], mean, 1e-12, "mean");
        close(&row["min_ns"], durations[0], 0.0, "min");
        close(&row["max_ns"], durations[durations.len() - 1], 0.0, "max");
        close(&row["percent"], 100.0 * total / gpu_time, 1e-9, "share");
        if durations.len() > 1 {
            let var = durations.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
            close(&row["stddev_ns"], var.sqrt(), 1e-6, "stddev");
        }
        // Nearest-rank percentiles, within the histogram's 1%.
        for (column, q) in [("p50_ns", 0.50), ("p95_ns", 0.95), ("p99_ns", 0.99)] {
            let exact = durations[((q * n).ceil() as usize).max(1) - 1];
            close(&row[column], exact, 0.01, &format!("{name} {column}"));
        }
        let row_total = row["total_ns"].as_f64().unwrap();
        assert!(row_total <= previous_total, "most GPU time first");
        previous_total = row_total;
    }

    let rows = summary["counters"].as_array().unwrap();
    assert_eq!(rows.len(), expected.counters.len());
    // A kernel's share of a counter is of that counter's total: counters do not add up.
    let mut counter_totals: BTreeMap<&str, f64> = BTreeMap::new();
    for ((_, counter), values) in &expected.counters {
        *counter_totals.entry(counter).or_default() += values.values().sum::<f64>();
    }
    assert!(counter_totals.len() > 1, "{counter_totals:?}");
    for row in rows {
        let key = (
            row["kernel"].as_str().unwrap().to_owned(),
            row["counter"].as_str().unwrap().to_owned(),
        );
        let per_dispatch: Vec<f64> = expected.counters[&key].values().copied().collect();
        assert_eq!(row["dispatches"], per_dispatch.len());
        close(
            &row["total_value"],
            per_dispatch.iter().sum(),
            1e-12,
            "counter total",
        );
        let total: f64 = per_dispatch.iter().sum();
        close(
            &row["percent"],
            100.0 * total / counter_totals[key.1.as_str()],
            1e-9,
            "share of the counter",
        );
    }
}

#[test]
fn replay_runs_the_summary_post_step_after_the_sinks() {
    let dir = setup();
    let out = rocflow(&["replay", "run.rfraw"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let expected = expected(&dir.path().join("run.rfraw"));
    let busiest = expected
        .kernels
        .iter()
        .max_by(|a, b| a.1.iter().sum::<f64>().total_cmp(&b.1.iter().sum::<f64>()))
        .unwrap()
        .0;
    assert_says(&out.stdout, "kernels by GPU time");
    assert_says(&stdout, busiest.as_str());
    // Three kernels, as the step asks.
    let shown = stdout
        .lines()
        .skip_while(|l| !l.starts_with("kernels by GPU time"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .count();
    assert_eq!(shown, 3, "{stdout}");

    let stats = dir.path().join("stats-4000");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["kernels"].as_array().unwrap().len(),
        expected.kernels.len()
    );
    let csv = std::fs::read_to_string(stats.join("kernels.csv")).unwrap();
    assert_eq!(csv.lines().count(), expected.kernels.len() + 1);
    assert!(csv.starts_with("kernel,calls,total_ns,percent,"));
    assert!(
        !stats.join("summary.md").exists(),
        "only the formats asked for"
    );
}

#[test]
fn commands_get_the_outputs_and_their_failures_are_reported() {
    let dir = setup();
    let steps = r#"
[[post]]
name = "check"
kind = "command"
argv = ["test", "-f", "{post:stats}/summary.json", "-a", "-f", "{spool}", "-a", "-d", "{sink:tables}"]
[[post]]
name = "listing"
kind = "command"
argv = ["cp", "{post:stats}/kernels.csv", "copy-{pid}.csv"]
[[post]]
name = "env"
kind = "command"
argv = ["printenv", "ROCFLOW_SINK_TABLES", "LABEL"]
env = { LABEL = "run at {spool}" }
[[post]]
name = "optional"
kind = "command"
argv = ["false"]
"#;
    std::fs::write(dir.path().join("steps.toml"), format!("{PIPELINE}{steps}")).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "steps.toml"], dir.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "a failing optional step fails nothing: {stderr}"
    );
    assert_says(
        &stderr,
        "warning: post-step `optional`: `false` exited with status 1",
    );
    assert!(
        !support::messages(&out.stderr).contains("`check`"),
        "{stderr}"
    );
    let copied = std::fs::read_to_string(dir.path().join("copy-4000.csv")).unwrap();
    assert!(copied.starts_with("kernel,calls,"));
    assert_says(&out.stdout, "out\nrun at run.rfraw\n");

    // A required step that fails fails the run, and the steps after it do not run.
    let after = "[[post]]\nname = \"after\"\nkind = \"command\"\nargv = [\"touch\", \"after\"]\n";
    let required = format!("{PIPELINE}{steps}{after}")
        .replace("argv = [\"false\"]", "argv = [\"false\"]\nrequired = true");
    std::fs::write(dir.path().join("required.toml"), required).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "required.toml"], dir.path(), &[]);
    assert_fails(
        &out,
        1,
        &[
            "error: post-step `optional`",
            "post-step `after`: not run: the required step `optional` failed",
        ],
    );
    assert!(!dir.path().join("after").exists());
}

#[test]
fn diff_compares_runs_and_gates_on_a_predicate() {
    let dir = setup();
    let out = rocflow(
        &[
            "generate",
            "longer.rfraw",
            "--records",
            "80000",
            "--seed",
            "2",
            "--pipeline",
            "stats.toml",
        ],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a = expected(&dir.path().join("run.rfraw"));
    let b = expected(&dir.path().join("longer.rfraw"));
    let time = |e: &Expected| e.kernels.values().flatten().sum::<f64>();

    let out = rocflow(
        &["diff", "run.rfraw", "longer.rfraw", "--format", "json"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    close(
        &diff["metrics"]["kernel_time_ratio"],
        time(&b) / time(&a),
        1e-9,
        "ratio",
    );
    let added = b
        .kernels
        .keys()
        .filter(|k| !a.kernels.contains_key(*k))
        .count();
    assert_eq!(diff["metrics"]["kernels_added"], added as f64);
    let rows = diff["sections"]["kernels"]["rows"].as_array().unwrap();
    let named: BTreeSet<&str> = rows.iter().map(|r| r["kernel"].as_str().unwrap()).collect();
    let either: BTreeSet<&str> = (a.kernels.keys().chain(b.kernels.keys()))
        .map(String::as_str)
        .collect();
    assert_eq!(named, either, "a row per kernel of either run");
    for row in rows {
        let name = row["kernel"].as_str().unwrap();
        let total = |e: &Expected| e.kernels.get(name).map(|d| d.iter().sum::<f64>());
        assert_eq!(row["a"].as_f64(), total(&a), "{name}");
        assert_eq!(row["b"].as_f64(), total(&b), "{name}");
    }

    // The same run against itself holds no regression; twice the work does.
    let gate = "kernel_time_ratio > 1.10";
    let out = rocflow(
        &["diff", "run.rfraw", "run.rfraw", "--fail-if", gate],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("kernel_time_ratio = 1.0000"));
    let out = rocflow(
        &["diff", "run.rfraw", "longer.rfraw", "--fail-if", gate],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("`kernel_time_ratio > 1.10` holds"));

    let out = rocflow(
        &[
            "diff",
            "run.rfraw",
            "run.rfraw",
            "--fail-if",
            "kernel_tme > 1",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_says(&out.stderr, "kernel_time_ratio");
}

#[test]
fn diff_refuses_a_predicate_too_deep_to_evaluate() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(
        &["generate", "run.rfraw", "--records", "100"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let predicate = format!("{}(kernel_time_ratio > 1.1)", "!".repeat(100_000));
    let args = ["diff", "run.rfraw", "run.rfraw", "--fail-if", &predicate];
    let out = support::rocflow_bounded(&args, dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", out.status);
    assert_says(&out.stderr, ": column 5: more than 4 `!` and `-` in a row");
}

/// Loads a page in headless Chromium and returns the DOM after its scripts ran.
fn rendered_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("Debian's chromium is installed (tests/run-all installs it)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The report of a run on the simulated device, in a browser: a table per summary section
/// the run has records of, a chart of its kernels and one of each GPU that ran them, with
/// the scenario's kernels and counter values.
#[test]
fn the_report_renders_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    const REPORTED: &str = concat!(
        support::traced_pipeline!(
            "report",
            "t",
            r#"["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_range_api"]"#
        ),
        "counters.collect = [\"SQ_WAVES\"]\n",
        support::sink!("tables", "csv", "out"),
        "[[post]]\nname = \"report\"\nkind = \"report\"\npath = \"report/run.html\"\ntitle = \"Nightly <run>\"\n",
    );
    std::fs::write(d.join("report.toml"), REPORTED).unwrap();
    let scenario_file = support::repo().join("examples/sim/mi300x.toml");
    let device = format!("sim:{}", scenario_file.display());
    let args = [
        "run",
        "report.toml",
        "--device",
        &device,
        "--spool",
        "run.rfraw",
    ];
    let app = support::sim_app();
    let app = ["--", app.to_str().unwrap(), "exit", "0"];
    assert_success(&rocflow(&[&args[..], &app].concat(), d, &[]));
    let scenario = Scenario::read(&scenario_file);
    let (_, dispatches) = truth::csv_tables(&d.join("out"));
    let collects = Collects {
        dispatches: true,
        api: vec![("hip_runtime_api", vec![], vec![])],
        copies: true,
        markers: true,
        counters: vec!["SQ_WAVES"],
        ..Collects::default()
    };
    let want = scenario.truth(&collects, 1, &dispatches);
    let page = d.join("report/run.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["<link", "src=", "@import", "url("] {
        assert!(
            !html.contains(fetch),
            "self-contained, yet it holds {fetch}"
        );
    }

    let dom = rendered_dom(&page);
    assert!(
        dom.contains("<title>Nightly &lt;run&gt;</title>"),
        "the title, escaped"
    );
    // Every table was made sortable by the page's script; every chart was laid out. A
    // table per section with records (kernels, API functions, copies, ranges, counters),
    // and the counters per kernel, drawn as a matrix too.
    let sections = [
        want.kernels.len(),
        want.api.len(),
        want.copies.len(),
        want.allocations.len(),
        want.markers.len(),
        want.counters.len(),
    ];
    let sections = sections.iter().filter(|&&rows| rows > 0).count();
    let tables = dom.matches("<table class=\"sortable").count();
    assert_eq!(tables, sections + 1, "{sections} sections");
    assert_eq!(dom.matches("data-sortable=\"ready\"").count(), tables);
    let sizes: Vec<(u32, u32)> = dom
        .match_indices("data-rendered=\"")
        .map(|(at, m)| {
            let rest = &dom[at + m.len()..];
            let (w, h) = rest[..rest.find('"').unwrap()].split_once('x').unwrap();
            (w.parse().unwrap(), h.parse().unwrap())
        })
        .collect();
    // Wide tables scroll within the page instead of widening it past the window.
    let width = &dom[dom.find("data-scroll-width=\"").unwrap() + 19..];
    let width: u32 = width[..width.find('"').unwrap()].parse().unwrap();
    assert!(width <= 1280, "the page is {width} px wide");
    // Links lead from the report's directory to each output.
    let links: Vec<&str> = dom
        .match_indices("<a href=\"")
        .map(|(at, m)| {
            let rest = &dom[at + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert!(links.contains(&"../out"), "{links:?}");
    assert!(links.contains(&"../run.rfraw"), "{links:?}");
    // A finding's evidence links within the page, to a section that is there.
    for link in &links {
        match link.strip_prefix('#') {
            Some(id) => assert!(dom.contains(&format!("id=\"{id}\"")), "{link}"),
            None => assert!(page.parent().unwrap().join(link).exists(), "{link}"),
        }
    }
    // The top kernels, and each GPU that ran some busy over time.
    let gpus: BTreeSet<usize> = scenario.kernels.iter().map(|k| k.agent).collect();
    let charts = dom.matches("<figure class=\"chart").count();
    assert_eq!(charts, 1 + gpus.len());
    assert_eq!(sizes.len(), charts);
    assert!(sizes.iter().all(|&(w, h)| w > 300 && h > 50), "{sizes:?}");

    // The kernels of the run, busiest first, in the chart and in the table.
    let mut kernels: Vec<(&String, u64)> = want.kernel_ns.iter().map(|(k, &ns)| (k, ns)).collect();
    kernels.sort_by_key(|k| std::cmp::Reverse(k.1));
    let chart = &dom[dom.find("id=\"top-kernels\"").unwrap()..];
    let chart = &chart[..chart.find("</figure>").unwrap()];
    let first_title = &chart[chart.find("<title>").unwrap() + 7..chart.find("</title>").unwrap()];
    let escape = |name: &str| {
        name.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    assert_eq!(first_title, escape(kernels[0].0));
    for (kernel, _) in &kernels {
        let escaped = escape(kernel);
        assert!(
            dom.contains(&format!("<td>{escaped}</td>")),
            "{kernel} in the table"
        );
    }
    // Counters per kernel: kernels down, counters across, each cell the mean per dispatch.
    let matrix = &dom[dom.find("<table class=\"sortable matrix\"").unwrap()..];
    let matrix = &matrix[..matrix.find("</table>").unwrap()];
    let counters: BTreeSet<&str> = want.counters.keys().map(|(_, c)| c.as_str()).collect();
    for counter in &counters {
        assert!(matrix.contains(&format!(">{counter}</th>")), "{counter}");
    }
    let ((kernel, counter), (dispatches, sum)) = want.counters.iter().next().unwrap();
    let mean = sum / *dispatches as f64;
    let escaped = kernel
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let row = &matrix[matrix.find(&format!("<td title=\"{escaped}\">")).unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let column = counters.iter().position(|c| c == counter).unwrap();
    let cell = row.split("data-value=\"").nth(column + 1).unwrap();
    let value: f64 = cell[..cell.find('"').unwrap()].parse().unwrap();
    assert!(
        (value - mean).abs() <= mean * 1e-9,
        "{kernel} {counter}: {value} vs {mean}"
    );
}

#[test]
fn sql_steps_query_a_database_read_only() {
    let dir = setup();
    let db = dir.path().join("given.db");
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch(
            "create table k (name text, ns integer);
             insert into k values ('gemm', 30), ('gemm', 12), ('copy', 5), ('a,b', 1);",
        )
        .unwrap();
    drop(connection);
    let steps = r#"
[[post]]
name = "totals"
kind = "sql"
database = "given.db"
query = "select name, sum(ns) as total_ns, count(*) as calls from k group by name order by total_ns desc"
path = "q/totals.csv"
[[post]]
name = "as_json"
kind = "sql"
database = "given.db"
query = "select name, ns from k where ns > 10 order by ns"
path = "q/big.json"
[[post]]
name = "writes"
kind = "sql"
database = "given.db"
query = "delete from k"
path = "q/nothing.md"
[[post]]
name = "typo"
kind = "sql"
database = "given.db"
query = "select * from nope"
path = "q/typo.csv"
"#;
    std::fs::write(dir.path().join("sql.toml"), format!("{PIPELINE}{steps}")).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "sql.toml"], dir.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "optional steps fail alone: {stderr}");
    let totals = std::fs::read_to_string(dir.path().join("q/totals.csv")).unwrap();
    assert_eq!(
        totals,
        "name,total_ns,calls\ngemm,42,2\ncopy,5,1\n\"a,b\",1,1\n"
    );
    let big: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("q/big.json")).unwrap())
            .unwrap();
    assert_eq!(
        big["as_json"],
        serde_json::json!([{"name": "gemm", "ns": 12}, {"name": "gemm", "ns": 30}])
    );
    assert_says(
        &out.stderr,
        "post-step `writes`: sql steps only read, and this query writes to `k`",
    );
    assert_says(&out.stderr, "post-step `typo`: SQLite: no such table: nope");
    assert!(!dir.path().join("q/typo.csv").exists());
    let rows: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("select count(*) from k", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 4, "the database is untouched");
}

#[test]
fn sql_steps_cannot_write_other_files_or_run_forever() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("given.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("create table k (name text, ns integer); insert into k values ('gemm', 30);")
        .unwrap();
    let out = rocflow(
        &["generate", "run.rfraw", "--records", "100"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let step = |name: &str, query: &str, extra: &str| {
        format!(
            "[[post]]\nname = \"{name}\"\nkind = \"sql\"\ndatabase = \"given.db\"\nquery = \"{query}\"\npath = \"q/{name}.csv\"\n{extra}"
        )
    };
    let steps = [
        step("copy", "VACUUM INTO 'copy.db'", ""),
        step("attach", "ATTACH 'other.db' AS other", ""),
        step(
            "forever",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
            "timeout = \"200ms\"\n",
        ),
        step("read", "select name, ns from k", ""),
    ]
    .concat();
    std::fs::write(dir.path().join("sql.toml"), format!("{PIPELINE}{steps}")).unwrap();
    // Bounded: a query that never ends fails the test instead of hanging it.
    let out = support::rocflow_bounded(&["replay", "run.rfraw", "sql.toml"], dir.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "optional steps fail alone: {stderr}");
    for (step, message) in [
        ("copy", "sql steps only read, and this query writes"),
        (
            "attach",
            "sql steps only read, and this query attaches `other.db`",
        ),
        ("forever", "the query ran past its 200ms limit"),
    ] {
        assert_says(
            &stderr,
            &format!("warning: post-step `{step}`: {message}\n"),
        );
        assert!(!dir.path().join(format!("q/{step}.csv")).exists());
    }
    assert!(!dir.path().join("copy.db").exists(), "VACUUM INTO wrote");
    assert!(!dir.path().join("other.db").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("q/read.csv")).unwrap(),
        "name,ns\ngemm,30\n"
    );
}

#[test]
fn sql_steps_default_to_the_runs_rocpd_database() {
    let dir = setup();
    let steps = r#"
[[sink]]
name = "db"
kind = "rocpd"
path = "db/{hostname}-{pid}.db"
[[post]]
name = "top"
kind = "sql"
query = "select name, total_calls from top_kernels order by total_calls desc, name"
path = "top.json"
"#;
    std::fs::write(dir.path().join("db.toml"), format!("{PIPELINE}{steps}")).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "db.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let top: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("top.json")).unwrap())
            .unwrap();
    let mut expected: Vec<(i64, String)> = expected(&dir.path().join("run.rfraw"))
        .kernels
        .into_iter()
        .map(|(name, durations)| (-(durations.len() as i64), name))
        .collect();
    expected.sort();
    let expected: Vec<serde_json::Value> = expected
        .into_iter()
        .map(|(calls, name)| serde_json::json!({"name": name, "total_calls": -calls}))
        .collect();
    assert_eq!(top["top"], serde_json::Value::Array(expected));
}

/// The same run summarized from its spool and from its rocpd database: two independent
/// paths to the same statistics.
#[test]
fn summary_and_diff_read_rocpd_databases_too() {
    let dir = setup();
    let sink = "[[sink]]\nname = \"db\"\nkind = \"rocpd\"\npath = \"db/run.db\"\n";
    std::fs::write(dir.path().join("db.toml"), format!("{PIPELINE}{sink}")).unwrap();
    let out = rocflow(&["replay", "run.rfraw", "db.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = |input: &str| -> serde_json::Value {
        let out = rocflow(&["summary", input, "--format", "json"], dir.path(), &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (spool, db) = (summary("run.rfraw"), summary("db/run.db"));
    for section in ["kernels", "api", "memory_copies", "markers", "counters"] {
        let rows = |s: &serde_json::Value| s[section].as_array().cloned().unwrap_or_default();
        assert!(!rows(&spool).is_empty(), "{section} has rows");
        assert_eq!(rows(&db).len(), rows(&spool).len(), "{section}");
        // Equal, but for the last bits of sums taken in another order.
        for (d, s) in rows(&db).iter().zip(&rows(&spool)) {
            for (column, expected) in s.as_object().unwrap() {
                match expected.as_f64() {
                    Some(v) => close(&d[column], v, 1e-9, &format!("{section} {column}")),
                    None => assert_eq!(&d[column], expected, "{section} {column}"),
                }
            }
        }
    }

    let out = rocflow(
        &[
            "diff",
            "run.rfraw",
            "db/run.db",
            "--fail-if",
            "kernel_time_ratio > 1.000001 || kernel_time_ratio < 0.999999 || worst_kernel_ratio > 1.000001 || kernels_added > 0",
        ],
        dir.path(),
        &[],
    );
    assert_success(&out);
}

/// A terminal table of `rocflow summary`: its title, its header's columns and its rows'
/// cells (columns are two spaces or more apart; names hold single spaces at most).
struct Printed {
    title: String,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn printed(stdout: &str) -> Vec<Printed> {
    let cells = |line: &str| -> Vec<String> {
        (line.trim().split("  "))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    (stdout.split("\n\n"))
        .map(|table| {
            let mut lines = table.lines();
            let title = lines.next().unwrap().to_owned();
            let columns = cells(lines.next().expect("a header"));
            Printed {
                title,
                columns,
                rows: lines.map(cells).collect(),
            }
        })
        .collect()
}

/// The terminal summary shows every table that has rows, as the summary's JSON has them,
/// with the grouping columns asked for: two processes that each ran the simulated
/// scenario are each a row of each kernel and of the marker range, called `threads ×
/// iterations` times in each.
#[test]
fn the_terminal_summary_shows_every_table_with_its_grouping_columns() {
    let dir = tempfile::tempdir().unwrap();
    let app = support::sim_app();
    let fork = [app.to_str().unwrap(), "fork", "1"];
    assert_success(&support::run_on("sim", "trace-all", &fork, dir.path(), &[]));
    let summary = |args: &[&str]| {
        let out = rocflow(
            &[&["summary", "rocflow-out"], args].concat(),
            dir.path(),
            &[],
        );
        assert_success(&out);
        text(&out.stdout)
    };
    let json = summary(&["--by", "process", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let terminal = summary(&["--by", "process", "--top", "1000"]);
    let tables = printed(&terminal);

    let with_rows: Vec<(&String, &Vec<serde_json::Value>)> = (json.as_object().unwrap().iter())
        .map(|(name, rows)| (name, rows.as_array().unwrap()))
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    let names: Vec<&str> = with_rows.iter().map(|(n, _)| n.as_str()).collect();
    for wanted in [
        "kernels",
        "api",
        "memory_copies",
        "memory_allocations",
        "markers",
    ] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    assert_eq!(tables.len(), with_rows.len(), "{names:?} in:\n{terminal}");
    for ((name, rows), table) in with_rows.iter().zip(&tables) {
        let keys: Vec<String> = rows[0]
            .as_object()
            .unwrap()
            .iter()
            .take_while(|(column, _)| !["calls", "dispatches"].contains(&column.as_str()))
            .map(|(column, _)| column.clone())
            .collect();
        assert_eq!(keys[0], "process", "{name}");
        assert!(
            table.columns.ends_with(&keys),
            "{name}: {:?}, {keys:?}",
            table.columns
        );
        assert_eq!(table.rows.len(), rows.len(), "{}:\n{terminal}", table.title);
        let first_key = table.columns.len() - keys.len();
        for (printed, row) in table.rows.iter().zip(rows.iter()) {
            let shown: Vec<&str> = keys.iter().map(|k| row[k].as_str().unwrap()).collect();
            assert_eq!(printed[first_key..], shown, "{}", table.title);
            assert_eq!(printed[0], row["calls"].to_string(), "{}", table.title);
        }
    }

    // The truth, from the scenario: each process ran each kernel and the marker range
    // `threads × iterations` times.
    let scenario = Scenario::read(&support::repo().join("examples/sim/mi300x.toml"));
    let (each, kernels) = (scenario.repeats(), scenario.kernels.len());
    let table = |title: &str| tables.iter().find(|t| t.title.starts_with(title)).unwrap();
    let (dispatches, ranges) = (table("kernels by GPU time"), table("marker ranges"));
    assert_eq!(dispatches.rows.len(), 2 * kernels, "{terminal}");
    let processes: BTreeSet<&str> = dispatches.rows.iter().map(|r| r[4].as_str()).collect();
    assert_eq!(processes.len(), 2, "{terminal}");
    for row in dispatches.rows.iter().chain(&ranges.rows) {
        assert_eq!(row[0], each.to_string(), "{terminal}");
    }
    let message = scenario.marker.as_deref().unwrap();
    assert_eq!(ranges.rows.len(), 2, "{terminal}");
    assert!(ranges.rows.iter().all(|r| r[5] == message), "{terminal}");

    // Without a breakdown, no process column; with fewer rows asked, the title says so.
    let whole = printed(&summary(&["--top", "2"]));
    assert_eq!(whole.len(), tables.len());
    let api = whole
        .iter()
        .find(|t| t.title.starts_with("API calls"))
        .unwrap();
    assert!(
        !api.columns.contains(&"process".to_owned()),
        "{:?}",
        api.columns
    );
    let api_rows = with_rows.iter().find(|(n, _)| *n == "api").unwrap().1;
    let functions = (api_rows.iter())
        .map(|r| (r["domain"].as_str(), r["function"].as_str()))
        .collect::<BTreeSet<_>>()
        .len();
    assert_eq!(
        api.title,
        format!("API calls by time (top 2 of {functions})")
    );
    assert_eq!(api.rows.len(), 2);
}
