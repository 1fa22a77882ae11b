//! Campaigns of simulated MPI jobs (`rocflow generate DIR --ranks N`): on a job of 256
//! ranks on 8 nodes whose clocks are offset, a campaign on a LocalCluster of 2 workers
//! finds exactly the stragglers and slow ranks injected, and none on a job without them;
//! on a smaller job its kernel and API summaries equal `rocflow summary` of the same rocpd
//! databases; and each rank's MPI rank and world size reach every output.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use support::{assert_says, assert_success, decode_perfetto, duckdb, rocflow, text};

use crate::campaign::{assert_equals_summary, campaign};

/// `rocflow generate DIR --ranks RANKS ARGS…` in `d`; returns its injected.json.
fn generate(d: &Path, dir: &str, ranks: u32, args: &[&str]) -> Value {
    let ranks = ranks.to_string();
    let all = [&["generate", dir, "--ranks", &ranks][..], args].concat();
    assert_success(&rocflow(&all, d, &[]));
    serde_json::from_str(&std::fs::read_to_string(d.join(dir).join("injected.json")).unwrap())
        .unwrap()
}

/// Three nodes' clocks off by more than any straggler's delay, either way: a campaign that
/// did not take them out would find every rank of node 1 late at every collective.
const OFFSETS: [&str; 6] = [
    "--clock-offset",
    "1:7000000",
    "--clock-offset",
    "4:-3000000",
    "--clock-offset",
    "6:900000",
];

/// The rows of a campaign's `table` (its columns `columns`) as a set.
fn rows(d: &Path, camp: &str, table: &str, columns: &str) -> BTreeSet<Vec<String>> {
    let query = format!("SELECT {columns} FROM '{camp}/{table}.parquet'");
    let found = duckdb(d, &[&query]).remove(0);
    found
        .iter()
        .map(|row| row.iter().map(|v| v.to_string()).collect())
        .collect()
}

#[test]
fn a_campaign_finds_exactly_the_stragglers_and_slow_ranks_injected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let faults = [
        "--straggler",
        "17:3:500000",
        "--straggler",
        "200:6:2000000",
        // Two on one collective: the later one is the last to arrive.
        "--straggler",
        "40:9:300000",
        "--straggler",
        "250:9:900000",
        "--slow-rank",
        "5:0:1.5",
        "--slow-rank",
        "131:3:4",
    ];
    let shape = ["--nodes", "8", "--steps", "8"];
    let injected = generate(d, "job", 256, &[&shape[..], &faults, &OFFSETS].concat());
    let clean = generate(d, "clean", 256, &[&shape[..], &OFFSETS].concat());
    assert_eq!(injected["hosts"][7]["host"], json!("node-07"));
    assert_eq!(injected["hosts"][7]["first_rank"], json!(224));

    let started = std::time::Instant::now();
    assert_success(&campaign(&["job/*.rfraw", "-o", "camp"], d));
    eprintln!("a campaign of 256 ranks took {:?}", started.elapsed());
    assert_success(&campaign(&["clean/*.rfraw", "-o", "clean-camp"], d));

    // Each collective a straggler came late to, by its name and occurrence on every rank,
    // with the straggler; collective 9's last rank is the later of the two.
    let found = rows(
        d,
        "camp",
        "stragglers",
        "kind, name, occurrence, host, rank, ranks",
    );
    let stragglers = injected["stragglers"].as_array().unwrap();
    let want: BTreeSet<Vec<String>> = stragglers
        .iter()
        .filter(|s| s["rank"] != json!(40))
        .map(|s| {
            let field = |name: &str| s[name].to_string();
            let rank = field("rank");
            let fields = [field("name"), field("occurrence"), field("host"), rank];
            [&[json!("rccl").to_string()][..], &fields, &["256".into()]].concat()
        })
        .collect();
    assert_eq!(found, want);
    // How late: the delay injected, give or take the ranks' jitter (20 µs at a step's start
    // and at a collective: within 40 µs of the median).
    let late = duckdb(
        d,
        &["SELECT rank, late_ns FROM 'camp/stragglers.parquet' ORDER BY rank"],
    )
    .remove(0);
    for row in late {
        let s = stragglers.iter().find(|s| s["rank"] == row[0]).unwrap();
        let (late, delay) = (row[1].as_f64().unwrap(), s["delay_ns"].as_f64().unwrap());
        assert!(
            (late - delay).abs() <= 40_000.0,
            "rank {}: {late} late for {delay}",
            row[0]
        );
    }

    // Each slow rank's kernel, found slow by about the factor injected.
    let found = rows(d, "camp", "imbalance", "kernel, host, rank, ranks");
    let slow = injected["slow_ranks"].as_array().unwrap();
    let want: BTreeSet<Vec<String>> = slow
        .iter()
        .map(|s| {
            let field = |name: &str| s[name].to_string();
            vec![field("kernel"), field("host"), field("rank"), "256".into()]
        })
        .collect();
    assert_eq!(found, want);
    let ratios = duckdb(
        d,
        &["SELECT rank, mean_ratio FROM 'camp/imbalance.parquet'"],
    )
    .remove(0);
    for row in ratios {
        let s = slow.iter().find(|s| s["rank"] == row[0]).unwrap();
        let (ratio, factor) = (row[1].as_f64().unwrap(), s["factor"].as_f64().unwrap());
        assert!((ratio / factor - 1.0).abs() < 0.05, "{ratio} for {factor}");
    }

    // rocflow analyze's rules, run through the campaign: collective-straggler names the
    // same last ranks at the same collectives; the job without faults has none.
    let late_ranks = |camp: &str| -> BTreeSet<String> {
        let findings = std::fs::read_to_string(d.join(camp).join("findings.json")).unwrap();
        let findings: Value = serde_json::from_str(&findings).unwrap();
        (findings["findings"].as_array().unwrap().iter())
            .filter(|f| f["rule"] == "collective-straggler")
            .map(|f| {
                f["statement"]
                    .as_str()
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let want: BTreeSet<String> = (stragglers.iter())
        .filter(|s| s["rank"] != json!(40))
        .map(|s| {
            let name = s["name"].as_str().unwrap();
            format!(
                "rank {} came last to {name} #{}",
                s["rank"], s["occurrence"]
            )
        })
        .collect();
    assert_eq!(late_ranks("camp"), want);
    assert_eq!(late_ranks("clean-camp"), BTreeSet::new());

    // A job without faults: nothing is late, nothing is slow, whatever its clocks.
    assert_eq!(
        rows(d, "clean-camp", "stragglers", "name, rank"),
        BTreeSet::new()
    );
    assert_eq!(
        rows(d, "clean-camp", "imbalance", "kernel, rank"),
        BTreeSet::new()
    );
    assert_eq!(clean["stragglers"], json!([]));
    // And the processes' clocks are known apart: the nodes offset have offsets of their own.
    let offsets = duckdb(
        d,
        &[
            "SELECT host, COUNT(DISTINCT clock_offset_ns), MIN(world_size), MAX(world_size) \
           FROM 'clean-camp/dataset/processes.parquet' GROUP BY host ORDER BY host",
        ],
    )
    .remove(0);
    assert_eq!(offsets.len(), 8);
    assert!(
        offsets
            .iter()
            .all(|row| row[1] == json!(1) && row[2] == json!(256) && row[3] == json!(256))
    );
}

/// The kernel and API summaries of a job's campaign equal `rocflow summary` of its rocpd
/// databases, per rank and overall; the databases' ranks are those the launcher gave.
#[test]
fn a_jobs_summaries_equal_rocflow_summary_of_its_databases() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "--nodes",
        "2",
        "--steps",
        "5",
        "--rocpd",
        "--slow-rank",
        "3:1:2",
    ];
    generate(d, "job", 6, &args);
    assert_success(&campaign(&["job/*.db", "-o", "camp"], d));
    let ranks = duckdb(
        d,
        &["SELECT host, rank, world_size, pid FROM 'camp/dataset/processes.parquet' ORDER BY rank"],
    )
    .remove(0);
    let want: Vec<Vec<Value>> = (0..6)
        .map(|r| {
            vec![
                json!(format!("node-0{}", r / 3)),
                json!(r),
                json!(6),
                json!(20_000 + r),
            ]
        })
        .collect();
    assert_eq!(ranks, want);
    assert_equals_summary(d, &["job"], "kernels", "kernels", &["kernel"]);
    assert_equals_summary(d, &["job"], "api", "api", &["domain", "function"]);
}

/// A rank's rank and world size in each output: its rocpd database's process keeps the
/// launcher's variables in its environment as rocprofv3 does (and rocflow reads them back),
/// Parquet has a column of each, and Perfetto names the process after them.
#[test]
fn ranks_and_world_size_reach_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    generate(d, "job", 4, &["--nodes", "2", "--steps", "2", "--rocpd"]);
    let db = rusqlite::Connection::open(d.join("job/rank-3.db")).unwrap();
    let environment: String = db
        .query_row("SELECT environment FROM rocpd_info_process", [], |row| {
            row.get(0)
        })
        .unwrap();
    let environment: Value = serde_json::from_str(&environment).unwrap();
    assert_eq!(
        environment,
        json!({"SLURM_PROCID": "3", "SLURM_NTASKS": "4"})
    );

    // Both inputs, replayed into Parquet and Perfetto.
    let pipeline = "[pipeline]\nname = \"out\"\nextends = [\"trace-all\"]\n\
                    [[sink]]\nname = \"parquet\"\nkind = \"parquet\"\npath = \"{output_dir}/parquet\"\n";
    std::fs::write(d.join("out.toml"), pipeline).unwrap();
    for (input, out) in [
        ("job/rank-3.rfraw", "from-spool"),
        ("job/rank-3.db", "from-db"),
    ] {
        let replay = ["replay", input, "out.toml", "-q", "-d", out];
        assert_success(&rocflow(&replay, d, &[]));
        let query = format!("SELECT rank, world_size FROM '{out}/parquet/processes/*.parquet'");
        assert_eq!(
            duckdb(d, &[&query]).remove(0),
            [[json!(3), json!(4)]],
            "{input}"
        );
        let traces: Vec<_> = std::fs::read_dir(d.join(out))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pftrace"))
            .collect();
        assert_eq!(traces.len(), 1, "{input}: {traces:?}");
        let decoded = decode_perfetto(&traces);
        let names: Vec<&Value> = decoded[0]["tracks"]
            .as_object()
            .unwrap()
            .values()
            .filter(|t| t.get("pid").is_some() && t.get("tid").is_none())
            .map(|t| &t["name"])
            .collect();
        assert_eq!(names, [&json!("app [rank 3/4]")], "{input}");
    }
}

#[test]
fn a_job_that_cannot_be_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, says) in [
        (
            &["--ranks", "4", "--straggler", "4:0:100"][..],
            "rank 4 is not in a job of 4 ranks",
        ),
        (
            &["--ranks", "4", "--steps", "2", "--straggler", "0:3:100"],
            "collective 3 is not in the job",
        ),
        (
            &["--ranks", "4", "--slow-rank", "0:6:2"],
            "kernel 6 is not in the job",
        ),
        (&["--ranks", "2", "--nodes", "3"], "3 nodes for 2 ranks"),
        (
            &["--ranks", "4", "--clock-offset", "1:5"],
            "node 1 is not in a job of 1 nodes",
        ),
        (
            &["--ranks", "4", "--slow-rank", "0:1:-2"],
            "is not a positive number",
        ),
        (
            &["--ranks", "4", "--straggler", "0:1"],
            "is not RANK:COLLECTIVE:DELAY_NS",
        ),
    ] {
        let out = rocflow(&[&["generate", "job"][..], args].concat(), d, &[]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_says(&out.stderr, says);
        assert!(!d.join("job").exists(), "{args:?} wrote something");
    }
}
