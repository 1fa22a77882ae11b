//! rocprofv3's summary (`-S`, `-D`, `--summary-groups`, `-u`, `--summary-output-file`) as a
//! summary step's `domain_tables`: on the simulated device, its tables read back as AMD's
//! own test reads them (a table per `ROCPROFV3 … SUMMARY:` title, cells apart by `|`) and
//! held against the scenario's truth; where each goes; and rocprofv3's input keys imported.

use std::collections::BTreeMap;

use support::truth::{Collects, Part, Scenario, Tally};
use support::{assert_fails, assert_success, repo, rocflow, run_on, sim_app, text};

/// One table as printed: its title (without `ROCPROFV3 ` and `:`), its header's cells and
/// its rows' cells.
#[derive(Debug, Clone, PartialEq)]
struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn column(&self, name: &str) -> usize {
        let unit = |h: &str| h.split(" (").next().unwrap().to_owned();
        (self.header.iter().position(|h| unit(h) == name))
            .unwrap_or_else(|| panic!("no {name} in {:?}", self.header))
    }

    fn cells(&self, name: &str) -> Vec<&str> {
        let c = self.column(name);
        self.rows.iter().map(|r| r[c].as_str()).collect()
    }

    fn number(&self, row: &[String], name: &str) -> f64 {
        row[self.column(name)].parse().unwrap()
    }
}

/// The tables of a summary's text, each line after `indent`; checks the layout as it goes:
/// a blank line, the title, a blank line, the header, its divider, the rows, a blank line,
/// every line of a table as long as its header and its columns' bars in one place.
fn tables(text: &str, indent: &str) -> Vec<Table> {
    let mut found = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        assert_eq!(line, "", "a table starts with a blank line:\n{text}");
        let title = lines.next().unwrap();
        let title = (title.strip_prefix(indent))
            .and_then(|t| t.strip_prefix("ROCPROFV3 "))
            .and_then(|t| t.strip_suffix(':'))
            .unwrap_or_else(|| panic!("not a title: {title:?}\n{text}"));
        assert_eq!(lines.next(), Some(""));
        let header = lines.next().unwrap().strip_prefix(indent).unwrap();
        let divider = lines.next().unwrap().strip_prefix(indent).unwrap();
        let bars = |line: &str| -> Vec<usize> {
            line.char_indices()
                .filter(|(_, c)| *c == '|')
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(bars(divider), bars(header), "{divider}\n{header}");
        assert!(divider.chars().all(|c| c == '|' || c == '-'), "{divider}");
        let cells = |line: &str| -> Vec<String> {
            let inner = &line[1..line.len() - 1];
            inner.split('|').map(|c| c.trim().to_owned()).collect()
        };
        let mut rows = Vec::new();
        while let Some(line) = lines.next_if(|l| !l.is_empty()) {
            let line = line.strip_prefix(indent).unwrap();
            assert_eq!(bars(line), bars(header), "{line}\n{header}");
            rows.push(cells(line));
        }
        assert_eq!(lines.next(), Some(""), "a table ends with a blank line");
        found.push(Table {
            title: title.to_owned(),
            header: cells(header),
            rows,
        });
    }
    found
}

/// What the tables of single domains say the run held, as the truth counts it.
fn tally(tables: &[Table]) -> Tally {
    let mut tally = Tally::default();
    for table in tables {
        for row in &table.rows {
            let (name, calls) = (row[0].clone(), table.number(row, "CALLS") as u64);
            let total = table.number(row, "DURATION") as u64;
            match table.title.as_str() {
                "KERNEL_DISPATCH SUMMARY" => {
                    tally.kernels.insert(name.clone(), calls);
                    tally.kernel_ns.insert(name, total);
                }
                "HIP_API SUMMARY" | "HSA_API SUMMARY" => {
                    tally.api.insert(name, calls);
                }
                "MEMORY_COPY SUMMARY" => {
                    let direction = name.strip_prefix("MEMORY_COPY_").unwrap();
                    tally.copies.insert(direction.to_owned(), calls);
                }
                "MEMORY_ALLOCATION SUMMARY" => {
                    let operation = name.strip_prefix("MEMORY_ALLOCATION_").unwrap();
                    tally.allocations.insert(operation.to_owned(), calls);
                }
                "MARKER_API SUMMARY" => {
                    tally.markers.insert(name, calls);
                }
                other => panic!("not a table of one domain: {other}"),
            }
        }
    }
    tally
}

const PIPELINE: &str = r#"
[pipeline]
name = "rocprofv3-summary"

[[context]]
name = "t"
tracing = ["kernel_dispatch", "hip_runtime_api", "hsa_core_api", "memory_copy",
           "memory_allocation", "marker_core_range_api"]

[[post]]
name = "tables"
kind = "summary"
formats = []
[post.domain_tables]
all = true
per_domain = true
groups = ["KERNEL_DISPATCH|MEMORY_COPY", ".*_API", "SCRATCH.*"]
output = "out/{hostname}/summary.txt"

[[post]]
name = "msec"
kind = "summary"
formats = []
[post.domain_tables]
per_domain = true
units = "msec"
output = "out/msec.txt"

[[post]]
name = "printed"
kind = "summary"
formats = []
[post.domain_tables]
all = true
output = "stdout"

[[post]]
name = "default"
kind = "summary"
formats = []
[post.domain_tables]
groups = ["MEMORY_ALLOCATION"]
"#;

const COLUMNS: [&str; 9] = [
    "NAME",
    "DOMAIN",
    "CALLS",
    "DURATION (nsec)",
    "AVERAGE (nsec)",
    "PERCENT (INC)",
    "MIN (nsec)",
    "MAX (nsec)",
    "STDDEV",
];

#[test]
fn domain_tables_hold_the_scenarios_truth_where_rocprofv3_puts_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.toml"), PIPELINE).unwrap();
    let scenario_file = repo().join("examples/sim/mi300x.toml");
    let device = format!("sim:{}", scenario_file.display());
    let app = sim_app();
    let args = ["run", "p.toml", "--device", &device, "--"];
    let run = rocflow(
        &[&args[..], &[app.to_str().unwrap(), "exit", "0"]].concat(),
        d,
        &[],
    );
    assert_success(&run);
    // No files of rocflow's own summary: `formats = []`.
    assert!(!d.join("summary").exists());
    // `explain` says which tables go where.
    let explained = text(&rocflow(&["explain", "p.toml"], d, &[]).stdout);
    assert!(
        explained.contains(
            "rocprofv3's tables per domain, of `KERNEL_DISPATCH|MEMORY_COPY`, of `.*_API`, \
             of `SCRATCH.*`, of all domains in nsec -> out/{hostname}/summary.txt"
        ),
        "{explained}"
    );

    let file = d.join(format!("out/{}/summary.txt", support::hostname()));
    let written = std::fs::read_to_string(&file).unwrap();
    let all = tables(&written, "");
    let titles: Vec<&str> = all.iter().map(|t| t.title.as_str()).collect();
    // Each domain in rocprofv3's order, then the groups (one matching no domain with
    // records is left out), then every domain.
    assert_eq!(
        titles,
        [
            "HSA_API SUMMARY",
            "HIP_API SUMMARY",
            "MARKER_API SUMMARY",
            "KERNEL_DISPATCH SUMMARY",
            "MEMORY_COPY SUMMARY",
            "MEMORY_ALLOCATION SUMMARY",
            "KERNEL_DISPATCH + MEMORY_COPY SUMMARY",
            "HSA_API + HIP_API + MARKER_API SUMMARY",
            "SUMMARY",
        ]
    );
    for table in &all {
        assert_eq!(table.header, COLUMNS, "{}", table.title);
    }
    let (single, rest) = all.split_at(6);
    for table in single {
        let domain = table.title.trim_end_matches(" SUMMARY");
        assert!(
            table.cells("DOMAIN").iter().all(|d| *d == domain),
            "{table:?}"
        );
    }

    // Calls and totals are the scenario's.
    let scenario = Scenario::read(&scenario_file);
    let collects = Collects::everything(&[]);
    let want = scenario.truth(&collects, 1, &BTreeMap::new());
    let parts = [
        Part::Kernels,
        Part::KernelTime,
        Part::Api,
        Part::Copies,
        Part::Allocations,
        Part::Markers,
    ];
    let differences = want.differences(&tally(single), &parts, 0.0);
    assert!(differences.is_empty(), "{differences:#?}\n{written}");
    // Every dispatch of a kernel takes its scenario's time: the extremes are that time,
    // the deviation none.
    let kernels = &single[3];
    for row in &kernels.rows {
        let kernel = (scenario.kernels.iter())
            .find(|k| k.name == row[0])
            .unwrap();
        let ns = kernel.duration_ns.to_string();
        assert_eq!(row[kernels.column("MIN")], ns);
        assert_eq!(row[kernels.column("MAX")], ns);
        assert_eq!(row[kernels.column("STDDEV")], "0.000e+00");
        let mean: f64 = row[kernels.column("AVERAGE")].parse().unwrap();
        assert!((mean - kernel.duration_ns as f64).abs() <= kernel.duration_ns as f64 * 5e-4);
    }

    // A group's table and the whole one hold the rows of their domains, the longest
    // first, each row's share of the table's time.
    let rows_of = |tables: &[&Table]| -> BTreeMap<String, Vec<String>> {
        let rows = tables.iter().flat_map(|t| t.rows.iter());
        rows.map(|r| (r[0].clone(), vec![r[1].clone(), r[2].clone(), r[3].clone()]))
            .collect()
    };
    let groups = [
        (&rest[0], vec![&single[3], &single[4]]),
        (&rest[1], vec![&single[0], &single[1], &single[2]]),
        (&rest[2], single.iter().collect()),
    ];
    for (table, members) in groups {
        assert_eq!(rows_of(&[table]), rows_of(&members), "{}", table.title);
        let totals: Vec<f64> = (table.rows.iter())
            .map(|r| table.number(r, "DURATION"))
            .collect();
        assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{table:?}");
        let sum: f64 = totals.iter().sum();
        for (row, total) in table.rows.iter().zip(&totals) {
            let share = table.number(row, "PERCENT");
            assert!((share - 100.0 * total / sum).abs() < 1e-5, "{row:?}");
        }
    }

    // In milliseconds: the same tables, each time a millionth.
    let msec = tables(
        &std::fs::read_to_string(d.join("out/msec.txt")).unwrap(),
        "",
    );
    assert_eq!(msec.len(), single.len());
    for (scaled, table) in msec.iter().zip(single) {
        assert_eq!(scaled.header[3], "DURATION (msec)");
        assert_eq!(scaled.header[6], "MIN (msec)");
        assert_eq!(scaled.rows.len(), table.rows.len());
        for (a, b) in scaled.rows.iter().zip(&table.rows) {
            assert_eq!(a[..3], b[..3]);
            for column in ["DURATION", "AVERAGE", "MIN", "MAX"] {
                let (ms, ns) = (scaled.number(a, column), table.number(b, column));
                assert!(
                    (ms * 1e6 - ns).abs() <= ns * 1e-3,
                    "{column}: {ms} ms, {ns} ns"
                );
            }
            assert_eq!(a[5], b[5], "the shares do not change");
        }
    }

    // Printed, each line indented by four, as rocprofv3 prints it; on stderr by default.
    let stdout = text(&run.stdout);
    let start = stdout.find("\n    ROCPROFV3 SUMMARY:").unwrap();
    let end = stdout[start..].find("|\n\n").unwrap() + start + 3;
    assert_eq!(tables(&stdout[start..end], "    "), [rest[2].clone()]);
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("\n    ROCPROFV3 MEMORY_ALLOCATION SUMMARY:\n"),
        "{stderr}"
    );
    assert!(!stdout.contains("MEMORY_ALLOCATION SUMMARY"), "{stdout}");
}

/// The line and column (1-based) of `needle`'s first place in `text`.
fn place(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap();
    let line = text[..at].lines().count() + usize::from(text[..at].ends_with('\n'));
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("p.toml:{line}:{column}")
}

#[test]
fn a_bad_group_or_unit_is_an_error_at_its_place() {
    for (bad, good, says) in [
        (
            r#"groups = ["KERNEL_DISPATCH|(MEMORY_COPY"]"#,
            r#""KERNEL_DISPATCH|(MEMORY_COPY""#,
            "invalid summary group",
        ),
        (r#"units = "minutes""#, r#""minutes""#, "minutes"),
    ] {
        let pipeline = format!(
            "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n\
             [[post]]\nname = \"s\"\nkind = \"summary\"\n[post.domain_tables]\nall = true\n{bad}\n"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.toml"), &pipeline).unwrap();
        let output = run_on("sim", "p.toml", &["/bin/true"], dir.path(), &[]);
        let stderr = assert_fails(&output, 2, &[says, &place(&pipeline, good)]);
        assert_eq!(stderr.matches("error").count(), 1, "{stderr}");
        assert!(!dir.path().join("rocflow-out").exists(), "{stderr}");
    }
}

/// AMD's summary test input (`tests/rocprofv3/summary/input-summary.yaml`), its keys with
/// values of our own: imported with no word about the summary's keys, it runs and writes
/// rocprofv3's summary file where rocprofv3 does, `<output_directory>/<output_file>_<name>.txt`.
#[test]
fn rocprofv3s_summary_input_imports_and_writes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = "summary.yaml";
    std::fs::copy(
        repo().join("tests/data/rocprofv3").join(input),
        d.join(input),
    )
    .unwrap();
    let imported = rocflow(&["import-rocprofv3", input, "-o", "p.toml"], d, &[]);
    assert_success(&imported);
    let stderr = text(&imported.stderr);
    assert!(!stderr.contains("`summary"), "{stderr}");
    let run = run_on("sim", "p.toml", &["/bin/sleep", "0.2"], d, &[]);
    assert_success(&run);
    let written = std::fs::read_to_string(d.join("out/out_summary.txt")).unwrap();
    let titles: Vec<String> = (tables(&written, "").into_iter())
        .map(|t| t.title)
        .collect();
    assert_eq!(
        titles,
        [
            "HIP_API SUMMARY",
            "MARKER_API SUMMARY",
            "KERNEL_DISPATCH SUMMARY",
            "MEMORY_COPY SUMMARY",
            "MEMORY_ALLOCATION SUMMARY",
            "KERNEL_DISPATCH + MEMORY_COPY SUMMARY",
            "HIP_API + MARKER_API SUMMARY",
            "SUMMARY",
        ]
    );
    assert!(!text(&run.stderr).contains("ROCPROFV3"));
}

#[test]
fn bad_summary_keys_of_an_input_are_errors_at_their_place() {
    // The regex at its option, as kernel regexes are; the unit at its value.
    for (bad, says, column) in [
        (
            r#"summary_groups: ["KERNEL_DISPATCH", "(MEMORY_COPY"]"#,
            "summary group `(MEMORY_COPY` is not a regex rocflow reads: unclosed group",
            5,
        ),
        ("summary_units: minutes", "minutes", 20),
    ] {
        let input = format!("jobs:\n  - kernel_trace: true\n    summary: true\n    {bad}\n");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.yaml"), &input).unwrap();
        let output = rocflow(
            &["import-rocprofv3", "in.yaml", "-o", "p.toml"],
            dir.path(),
            &[],
        );
        assert_fails(&output, 2, &[says, &format!("in.yaml:4:{column}")]);
        assert!(!dir.path().join("p.toml").exists());
    }
}
