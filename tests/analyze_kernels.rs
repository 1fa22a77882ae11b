//! `rocflow analyze`'s rules over kernels' counters and across ranks on the simulated
//! device, as users run them: each finds the kernel its scenario
//! (`examples/sim/analyze-RULE.toml`) gives the pattern, with the scenario's numbers as
//! evidence, from the spool and from the run's rocpd databases alike; none finds anything
//! on its clean scenario or on any other shipped scenario.

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{assert_success, repo, rocflow, sim_scenarios};

/// The counter rules.
const RULES: [&str; 4] = [
    "low-occupancy",
    "valu-utilization",
    "memory-bound",
    "atomic-contention",
];

/// What the scenarios' GPUs count for the counter rules (and `counters-basic`'s derived
/// counter needs).
const COUNTERS: &str = r#"counters=["SQ_WAVES", "SQ_INSTS_VALU", "OccupancyPercent",
    "VALUUtilization", "VALUBusy", "MemUnitBusy", "TCC_HIT", "TCC_MISS",
    "SerializedAtomicRatio"]"#;

/// The run of `counters-basic` (collecting `counters`) on `scenario`, in a fresh
/// directory: its `out` folder.
fn run(scenario: &Path, counters: &str) -> (tempfile::TempDir, PathBuf) {
    run_app(
        scenario,
        &["counters-basic", "--set", counters],
        &["/bin/true"],
    )
}

/// The run of `pipeline` (and its arguments) on `scenario` of `app`, in a fresh directory:
/// its `out` folder.
fn run_app(scenario: &Path, pipeline: &[&str], app: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let device = format!("sim:{}", scenario.display());
    let out = dir.path().join("out");
    let mut args = vec!["run"];
    args.extend_from_slice(pipeline);
    args.extend(["--device", &device, "-q", "-d", out.to_str().unwrap(), "--"]);
    args.extend_from_slice(app);
    assert_success(&rocflow(&args, dir.path(), &[]));
    (dir, out)
}

/// The rocpd databases of the run in `out`.
fn databases(out: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    found.sort();
    found
}

/// The counter rules' findings on `inputs`, as JSON.
fn findings(inputs: &[&Path]) -> Vec<Value> {
    findings_of(inputs, &RULES)
}

/// The findings of `rules` on `inputs`, as JSON.
fn findings_of(inputs: &[&Path], rules: &[&str]) -> Vec<Value> {
    let mut args = vec!["analyze", "--format", "json"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(rules.iter().flat_map(|r| ["--rule", r]));
    let out = rocflow(&args, Path::new("."), &[]);
    assert_success(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"].as_array().unwrap().clone()
}

/// A pipeline collecting counters `NAMES` of every dispatch.
const ALL_COUNTERS: &str = r#"
[pipeline]
name = "all-counters"
extends = ["base"]
[[context]]
name = "counters"
tracing = ["kernel_dispatch"]
[context.counters]
collect = NAMES
"#;

fn scenario(name: &str) -> PathBuf {
    repo().join("examples/sim").join(name)
}

/// A rule's case: its id, the counters its scenario gives `_Z6updatePfPKfi`, and what its
/// statement says.
type Case = (&'static str, &'static [(&'static str, f64)], &'static str);

#[test]
fn each_counter_rule_finds_its_kernel_with_the_counters_behind_it() {
    let cases: [Case; 4] = [
        (
            "low-occupancy",
            &[("OccupancyPercent", 6.0)],
            "6.0% occupancy over 50 dispatches",
        ),
        (
            "valu-utilization",
            &[("VALUUtilization", 21.0), ("VALUBusy", 71.0)],
            "21.0% of their lanes",
        ),
        (
            "memory-bound",
            &[
                ("MemUnitBusy", 93.0),
                ("VALUBusy", 12.0),
                ("TCC_HIT", 2e6),
                ("TCC_MISS", 8e6),
            ],
            "busy 93.0% of its time, its VALU 12.0%, L2 hit rate 20.0%",
        ),
        (
            "atomic-contention",
            &[("SerializedAtomicRatio", 0.42)],
            "42% of their cycles",
        ),
    ];
    for (rule, counters, says) in cases {
        let (_dir, out) = run(&scenario(&format!("analyze-{rule}.toml")), COUNTERS);
        let spool = findings(&[&out]);
        assert_eq!(spool.len(), 1, "{rule}: {spool:#?}");
        let f = &spool[0];
        assert_eq!(f["rule"], rule);
        assert_eq!(f["severity"], "warning", "{f:#}");
        let statement = f["statement"].as_str().unwrap();
        assert!(
            statement.contains("update(float*, float const*, int)"),
            "{statement}"
        );
        assert!(statement.contains(says), "{rule}: {statement}");
        let evidence = f["evidence"].as_array().unwrap();
        let kernel = evidence.iter().find(|e| e["type"] == "kernel").unwrap();
        assert_eq!(kernel["dispatches"], 50, "{f:#}");
        assert_eq!(kernel["total_ns"], 50 * 1_000_000, "{f:#}");
        for &(counter, value) in counters {
            let shown = evidence
                .iter()
                .find(|e| e["type"] == "counter" && e["counter"] == counter)
                .unwrap_or_else(|| panic!("{rule}: no {counter} in {f:#}"));
            let shown = shown["value"].as_f64().unwrap();
            assert!(
                (shown - value).abs() <= 1e-9 * value,
                "{rule}: {counter} {shown}"
            );
        }
        // The run's rocpd database gives the spool's findings.
        let databases = databases(&out);
        assert_eq!(databases.len(), 1, "{databases:?}");
        assert_eq!(findings(&[&databases[0]]), spool, "{rule}");
    }
}

#[test]
fn no_counter_rule_finds_anything_on_the_clean_or_a_shipped_scenario() {
    let (_dir, out) = run(&scenario("analyze-counters-clean.toml"), COUNTERS);
    assert_eq!(findings(&[&out]), Vec::<Value>::new());
    // The other shipped scenarios, with every counter their GPUs have.
    let shipped = sim_scenarios().into_iter().filter(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.starts_with("analyze-")
    });
    for scenario in shipped {
        let text = std::fs::read_to_string(&scenario).unwrap();
        let mut names: Vec<&str> = (text.split("[[agent.counter]]").skip(1))
            .filter_map(|table| table.trim().strip_prefix("name = \""))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert!(!names.is_empty(), "{}", scenario.display());
        let dir = tempfile::tempdir().unwrap();
        let pipeline = dir.path().join("all-counters.toml");
        let collect = format!("{names:?}");
        std::fs::write(&pipeline, ALL_COUNTERS.replace("NAMES", &collect)).unwrap();
        let (_dir, out) = run_app(&scenario, &[pipeline.to_str().unwrap()], &["/bin/true"]);
        assert_eq!(
            findings(&[&out]),
            Vec::<Value>::new(),
            "{}",
            scenario.display()
        );
    }
}

/// Four MPI ranks, each a process of the simulated application.
const RANKS: &str =
    "for r in 0 1 2 3; do OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=4 /bin/true & done; wait";

#[test]
fn rank_imbalance_names_the_slow_rank_and_every_ranks_time() {
    let scenario = scenario("analyze-rank-imbalance.toml");
    let (_dir, out) = run_app(&scenario, &["trace-all"], &["sh", "-c", RANKS]);
    let spool = findings_of(&[&out], &["rank-imbalance"]);
    assert_eq!(spool.len(), 1, "{spool:#?}");
    let f = &spool[0];
    assert_eq!(f["severity"], "warning", "{f:#}");
    let statement = f["statement"].as_str().unwrap();
    assert!(
        statement.starts_with("kernel update(float*, float const*, int) took 80.0 ms on rank 2, 60% longer than the median 50.0 ms of 4 processes"),
        "{statement}"
    );
    assert_eq!(f["at_stake_ns"], 30_000_000);
    let ranks: Vec<(u64, f64)> = (f["evidence"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "rank")
        .map(|e| (e["rank"].as_u64().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(ranks, [(2, 8e7), (0, 5e7), (1, 5e7), (3, 5e7)]);
    // The ranks' databases, given together, say the same.
    let databases = databases(&out);
    // The shell's and the four ranks'.
    assert_eq!(databases.len(), 5, "{databases:?}");
    let inputs: Vec<&Path> = databases.iter().map(PathBuf::as_path).collect();
    assert_eq!(findings_of(&inputs, &["rank-imbalance"]), spool);
}

#[test]
fn balanced_ranks_and_single_processes_give_no_rank_imbalance() {
    // Without the launcher's variables, each process replays the clean scenario.
    let scenario = scenario("analyze-rank-imbalance.toml");
    let app = RANKS.replace("OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=4 ", "");
    let (_dir, out) = run_app(&scenario, &["trace-all"], &["sh", "-c", &app]);
    assert_eq!(databases(&out).len(), 5);
    assert_eq!(
        findings_of(&[&out], &["rank-imbalance"]),
        Vec::<Value>::new()
    );
    for scenario in sim_scenarios() {
        let (_dir, out) = run_app(&scenario, &["trace-all"], &["/bin/true"]);
        let found = findings_of(&[&out], &["rank-imbalance"]);
        assert_eq!(found, Vec::<Value>::new(), "{}", scenario.display());
    }
}

/// What `analyze-speed-of-light.toml`'s GPU counts for speed of light.
const SPEED_OF_LIGHT_COUNTERS: &str = r#"counters=["SQ_WAVES", "SQ_INSTS_VALU",
    "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "TCC_EA0_RDREQ", "TCC_EA0_RDREQ_32B", "TCC_EA0_WRREQ", "TCC_EA0_WRREQ_64B",
    "SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT", "TCP_TOTAL_CACHE_ACCESSES_sum",
    "TCC_REQ_sum", "SQ_INSTS", "SQ_BUSY_CU_CYCLES", "OccupancyPercent"]"#;

/// `counters-basic` over passes of 4 counters: the speed-of-light counters are 10 of the
/// SQ and 5 of the TCC, more than the 8 and 4 those blocks count at once.
const IN_PASSES: &str = "[pipeline]\nname = \"counters-in-passes\"\nextends = [\"counters-basic\"]\n\
    [[context]]\nname = \"counters\"\n[context.counters]\nper_pass = 4\n";

/// A kernel of the speed-of-light scenario, from its file: its FLOPs, VALU FLOPs, HBM,
/// LDS, vL1D and L2 bytes a dispatch, its IPC and its occupancy.
struct Pinned {
    flops: f64,
    valu_flops: f64,
    hbm_bytes: f64,
    lds_bytes: f64,
    l1_bytes: f64,
    l2_bytes: f64,
    ipc: f64,
    occupancy: f64,
}

/// The peaks of the speed-of-light scenario's GPU, from its agent and CDNA3's widths.
struct Peaks {
    valu_flops: f64,
    /// Bytes a second of the LDS, and of the vL1D caches: each CU serves 128 B a clock.
    per_cu_bytes: f64,
    /// Bytes a second of an L2 channel: 128 B a clock.
    l2_channel_bytes: f64,
}

/// CDNA3's bytes a cycle of a CU's LDS (32 banks × 4 B), of a vL1D access and of an L2
/// request, and its instructions a cycle at most.
const CDNA3_BYTES: f64 = 128.0;
const CDNA3_IPC: f64 = 5.0;

/// The speed-of-light scenario's kernels, by mangled name, and its GPU's peaks, worked out
/// from the scenario file by the formulas the rule documents.
fn speed_of_light_scenario() -> (Vec<(String, Pinned)>, Peaks) {
    let text = std::fs::read_to_string(scenario("analyze-speed-of-light.toml")).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let agent = &doc["agent"].as_array().unwrap()[0];
    assert_eq!(agent["name"].as_str(), Some("gfx942"));
    let int = |v: &toml::Value, key: &str, default: i64| {
        v.get(key).and_then(|v| v.as_integer()).unwrap_or(default) as f64
    };
    let wave = int(agent, "wave_front_size", 64);
    let clock_hz = int(agent, "max_engine_clk_mhz", 0) * 1e6;
    let cus = int(agent, "cu_count", 0);
    let peaks = Peaks {
        valu_flops: cus * int(agent, "simd_per_cu", 4) * 16.0 * 2.0 * clock_hz,
        per_cu_bytes: cus * CDNA3_BYTES * clock_hz,
        l2_channel_bytes: CDNA3_BYTES * clock_hz,
    };
    let kernels = (doc["kernel"].as_array().unwrap().iter())
        .map(|k| {
            let c = k["counters"].as_table().unwrap();
            let n = |name: &str| c[name].as_integer().unwrap() as f64;
            let valu_flops = wave * (n("SQ_INSTS_VALU_ADD_F32") + 2.0 * n("SQ_INSTS_VALU_FMA_F32"));
            let hbm_bytes = 64.0 * (n("TCC_EA0_RDREQ") - n("TCC_EA0_RDREQ_32B"))
                + 32.0 * n("TCC_EA0_RDREQ_32B")
                + 32.0 * (n("TCC_EA0_WRREQ") - n("TCC_EA0_WRREQ_64B"))
                + 64.0 * n("TCC_EA0_WRREQ_64B");
            let pinned = Pinned {
                flops: valu_flops + 512.0 * n("SQ_INSTS_VALU_MFMA_MOPS_F16"),
                valu_flops,
                hbm_bytes,
                lds_bytes: CDNA3_BYTES * (n("SQ_LDS_IDX_ACTIVE") - n("SQ_LDS_BANK_CONFLICT")),
                l1_bytes: CDNA3_BYTES * n("TCP_TOTAL_CACHE_ACCESSES_sum"),
                l2_bytes: CDNA3_BYTES * n("TCC_REQ_sum"),
                ipc: n("SQ_INSTS") / n("SQ_BUSY_CU_CYCLES"),
                occupancy: n("OccupancyPercent"),
            };
            (k["name"].as_str().unwrap().to_owned(), pinned)
        })
        .collect();
    (kernels, peaks)
}

impl Pinned {
    /// Each metric the rule gives this kernel, as (name, value, peak), for dispatches of
    /// `dispatch_s` seconds on a GPU of `peaks` with `l2_channels` given.
    fn metrics(&self, dispatch_s: f64, peaks: &Peaks, l2_channels: f64) -> [Expected; 8] {
        let l2_peak = (l2_channels > 0.0).then_some(l2_channels * peaks.l2_channel_bytes);
        [
            (
                "VALU FLOP/s",
                self.valu_flops / dispatch_s,
                Some(peaks.valu_flops),
            ),
            (
                "MFMA FLOP/s",
                (self.flops - self.valu_flops) / dispatch_s,
                None,
            ),
            ("HBM bandwidth", self.hbm_bytes / dispatch_s, None),
            (
                "LDS bandwidth",
                self.lds_bytes / dispatch_s,
                Some(peaks.per_cu_bytes),
            ),
            (
                "vL1D bandwidth",
                self.l1_bytes / dispatch_s,
                Some(peaks.per_cu_bytes),
            ),
            ("L2 bandwidth", self.l2_bytes / dispatch_s, l2_peak),
            ("IPC", self.ipc, Some(CDNA3_IPC)),
            ("occupancy", self.occupancy, Some(100.0)),
        ]
    }
}

/// A metric as the scenario makes it: its name, value and peak.
type Expected = (&'static str, f64, Option<f64>);

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

/// The finding of `found` on the kernel whose demangled name holds `mangled`'s, with the
/// mean time of its dispatches in seconds.
fn finding_on<'a>(found: &'a [Value], mangled: &str) -> (&'a Value, f64) {
    let demangled = if mangled.contains("gemm") {
        "gemm("
    } else {
        "stream("
    };
    let f = (found.iter())
        .find(|f| f["statement"].as_str().unwrap().contains(demangled))
        .unwrap_or_else(|| panic!("no finding on {mangled}: {found:#?}"));
    let evidence = f["evidence"].as_array().unwrap();
    let kernel = evidence.iter().find(|e| e["type"] == "kernel").unwrap();
    let dispatch_s =
        kernel["total_ns"].as_f64().unwrap() / kernel["dispatches"].as_f64().unwrap() / 1e9;
    (f, dispatch_s)
}

/// Asserts that finding `f` has each `expected` metric, value, peak and percentage of it.
fn assert_metrics(f: &Value, expected: &[Expected]) {
    let evidence = f["evidence"].as_array().unwrap();
    for &(name, value, peak) in expected {
        let metric = (evidence.iter())
            .find(|e| e["type"] == "metric" && e["metric"] == name)
            .unwrap_or_else(|| panic!("no {name} in {f:#}"));
        assert!(
            close(metric["value"].as_f64().unwrap(), value),
            "{metric:#}: {value}"
        );
        match peak {
            Some(peak) => {
                assert!(close(metric["peak"].as_f64().unwrap(), peak), "{metric:#}");
                let percent = metric["percent_of_peak"].as_f64().unwrap();
                assert!(close(percent, 100.0 * value / peak), "{metric:#}");
            }
            // The record has no such rate: no peak, not a guess.
            None => assert!(metric.get("peak").is_none(), "{metric:#}"),
        }
    }
}

/// The speed-of-light findings on `out` with `settings` (`rule.option=value`).
fn speed_of_light_with(out: &Path, settings: &[&str]) -> Vec<Value> {
    let mut args = vec!["analyze", "--format", "json", out.to_str().unwrap()];
    args.extend(["--rule", "speed-of-light"]);
    args.extend(settings.iter().flat_map(|s| ["--set", s]));
    let given = rocflow(&args, Path::new("."), &[]);
    assert_success(&given);
    let given: Value = serde_json::from_slice(&given.stdout).unwrap();
    given["findings"].as_array().unwrap().clone()
}

#[test]
fn speed_of_light_gives_each_kernel_its_share_of_the_gpus_peaks() {
    let (kernels, peaks) = speed_of_light_scenario();
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("counters-in-passes.toml");
    std::fs::write(&pipeline, IN_PASSES).unwrap();
    let (_dir, out) = run_app(
        &scenario("analyze-speed-of-light.toml"),
        &[pipeline.to_str().unwrap(), "--set", SPEED_OF_LIGHT_COUNTERS],
        &["/bin/true"],
    );
    let found = findings_of(&[&out], &["speed-of-light"]);
    assert_eq!(found.len(), kernels.len(), "{found:#?}");
    // Each kernel's FLOP/s and metrics, as its dispatches took.
    let mut rates = Vec::new();
    let mut expected = Vec::new();
    for (mangled, pinned) in &kernels {
        let (f, dispatch_s) = finding_on(&found, mangled);
        rates.push(pinned.flops / dispatch_s);
        let metrics = pinned.metrics(dispatch_s, &peaks, 0.0);
        assert_metrics(f, &metrics);
        // The stream kernel, half its GPU's time, is below 30% of every peak it has.
        let slow = (metrics.iter())
            .filter_map(|&(_, value, peak)| Some(100.0 * value / peak?))
            .all(|percent| percent < 30.0);
        let severity = if slow { "warning" } else { "info" };
        assert_eq!(f["severity"], severity, "{f:#}");
        expected.push(metrics);
    }
    assert_eq!(
        found.iter().filter(|f| f["severity"] == "warning").count(),
        1
    );

    // Given its HBM peak, or its L2 channels, the stream kernel reaches a third of that
    // peak: no warning.
    let (_, stream) = kernels.iter().find(|(k, _)| k.contains("stream")).unwrap();
    let given = speed_of_light_with(&out, &["speed-of-light.hbm_peak_gbps=5300"]);
    assert!(given.iter().all(|f| f["severity"] == "info"), "{given:#?}");
    let (f, dispatch_s) = finding_on(&given, "stream");
    let hbm = stream.hbm_bytes / dispatch_s;
    assert_metrics(f, &[("HBM bandwidth", hbm, Some(5300e9))]);
    assert!(100.0 * hbm / 5300e9 > 30.0, "{hbm}");
    let given = speed_of_light_with(&out, &["speed-of-light.l2_channels=128"]);
    assert!(given.iter().all(|f| f["severity"] == "info"), "{given:#?}");
    for (mangled, pinned) in &kernels {
        let (f, dispatch_s) = finding_on(&given, mangled);
        assert_metrics(f, &pinned.metrics(dispatch_s, &peaks, 128.0));
    }
    let l2_share = 100.0 * stream.l2_bytes / dispatch_s / (128.0 * peaks.l2_channel_bytes);
    assert!(l2_share > 30.0, "{l2_share}");

    // The Markdown and the report tabulate each kernel's metrics, in the rule's order.
    let markdown = rocflow(
        &[
            "analyze",
            "--format",
            "markdown",
            out.to_str().unwrap(),
            "--rule",
            "speed-of-light",
        ],
        Path::new("."),
        &[],
    );
    assert_success(&markdown);
    let markdown = String::from_utf8(markdown.stdout).unwrap();
    let names: Vec<&str> = expected[0].iter().map(|m| m.0).collect();
    let header = format!("| kernel | {} |", names.join(" | "));
    let table = &markdown[markdown.find("## Speed of light").expect("a table")..];
    assert!(table.contains(&header), "{table}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let from = html
        .find("<h2 id=\"speed-of-light\">Speed of light</h2>")
        .expect("a speed-of-light table");
    let html_table = &html[from..from + html[from..].find("</table>").unwrap()];
    for ((mangled, _), metrics) in kernels.iter().zip(&expected) {
        let (f, _) = finding_on(&found, mangled);
        let kernel = (f["evidence"].as_array().unwrap().iter())
            .find(|e| e["type"] == "kernel")
            .unwrap()["name"]
            .as_str()
            .unwrap();
        let row = (markdown.lines())
            .find(|l| l.starts_with(&format!("| {kernel} |")))
            .unwrap_or_else(|| panic!("no row of {kernel} in {table}"));
        let tr = (html_table.split("<tr>").skip(2))
            .find(|tr| tr.contains(kernel))
            .unwrap_or_else(|| panic!("no row of {kernel} in {html_table}"));
        let cells: Vec<&str> = tr.split("<td class=\"num").skip(1).collect();
        assert_eq!(cells.len(), metrics.len(), "{tr}");
        for (&(name, value, peak), td) in metrics.iter().zip(cells) {
            let attr = |attr: &str| {
                let at = td.find(&format!(" {attr}=\""))? + attr.len() + 3;
                td[at..at + td[at..].find('"')?].parse::<f64>().ok()
            };
            assert!(td.contains(&format!("data-metric=\"{name}\"")), "{td}");
            assert!(close(attr("data-value").unwrap(), value), "{td}: {value}");
            let percent = peak.map(|peak| 100.0 * value / peak);
            match percent {
                Some(p) => {
                    assert!(close(attr("data-percent-of-peak").unwrap(), p), "{td}");
                    assert!(row.contains(&format!("({p:.1}%)")), "{row}: {name} {p}");
                }
                None => assert_eq!(attr("data-percent-of-peak"), None, "{td}"),
            }
        }
    }

    // The run's rocpd database gives the same findings.
    let databases = databases(&out);
    assert_eq!(findings_of(&[&databases[0]], &["speed-of-light"]), found);

    // The report plots each kernel at its arithmetic intensity and FLOP/s, under the
    // GPU's peak VALU rate.
    let roofline = html
        .find("<h2 id=\"roofline\">Empirical roofline</h2>")
        .expect("a roofline");
    let figure = &html[roofline..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    assert!(
        figure.contains(&format!("data-peak-flops=\"{}\"", peaks.valu_flops)),
        "{figure}"
    );
    let points: Vec<(&str, f64, f64)> = figure
        .split("<circle ")
        .skip(1)
        .map(|c| {
            let attr = |name: &str| {
                let from = c.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                &c[from..from + c[from..].find('"').unwrap()]
            };
            (
                attr("data-kernel"),
                attr("data-intensity").parse().unwrap(),
                attr("data-flops").parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(points.len(), kernels.len(), "{figure}");
    for ((_, pinned), rate) in kernels.iter().zip(rates) {
        let intensity = pinned.flops / pinned.hbm_bytes;
        assert!(
            (points.iter()).any(|&(_, i, f)| close(i, intensity) && close(f, rate)),
            "({intensity}, {rate}) not in {points:?}"
        );
    }
}
