//! `rocflow analyze` across the ranks of a job: on the folder `rocflow generate --ranks`
//! writes (every rank's spool, on nodes whose clocks disagree), `collective-straggler`
//! finds exactly the late arrivals injected, with the collective, the waits and what the
//! rank did before, and nothing on the same job without them; the folder's databases give
//! its spools' findings; a folder with nothing readable, or with junk among the ranks, is
//! one error.

use std::path::Path;

use serde_json::{Value, json};
use support::{assert_says, assert_success, rocflow, text};

/// `rocflow generate DIR --ranks RANKS ARGS…` in `d`; returns its injected.json.
fn generate(d: &Path, dir: &str, ranks: u32, args: &[&str]) -> Value {
    let ranks = ranks.to_string();
    let all = [&["generate", dir, "--ranks", &ranks][..], args].concat();
    assert_success(&rocflow(&all, d, &[]));
    serde_json::from_str(&std::fs::read_to_string(d.join(dir).join("injected.json")).unwrap())
        .unwrap()
}

/// `rocflow analyze INPUT --format json ARGS…` in `d`: its findings.
fn findings(d: &Path, input: &str, args: &[&str]) -> Vec<Value> {
    let all = [&["analyze", input, "--format", "json"][..], args].concat();
    let out = rocflow(&all, d, &[]);
    assert_success(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"].as_array().unwrap().clone()
}

/// The pieces of evidence of type `kind`.
fn evidence<'f>(finding: &'f Value, kind: &str) -> Vec<&'f Value> {
    (finding["evidence"].as_array().unwrap().iter())
        .filter(|e| e["type"] == kind)
        .collect()
}

fn u(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is no count"))
}

/// The job's shape: 16 ranks on 4 nodes, 8 steps (11 collectives: a broadcast, an
/// all-reduce a step, an all-gather every fourth), two nodes' clocks off by more than any
/// delay, either way: a rule that did not align them would find every rank of node 1 late
/// at every collective.
const SHAPE: [&str; 8] = [
    "--nodes",
    "4",
    "--steps",
    "8",
    "--clock-offset",
    "1:7000000",
    "--clock-offset",
    "3:-3000000",
];

/// The ranks' arrivals vary by this much where nothing is injected (jitter at the step's
/// start and at the collective).
const JITTER_NS: u64 = 40_000;

#[test]
fn collective_straggler_finds_exactly_the_late_ranks_injected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let faults = [
        "--straggler",
        "5:3:500000",
        "--straggler",
        "13:5:2000000",
        // Two at one collective: the later is the last to arrive, the other waits less.
        "--straggler",
        "2:9:300000",
        "--straggler",
        "10:9:900000",
    ];
    let injected = generate(d, "job", 16, &[&SHAPE[..], &faults].concat());
    generate(d, "clean", 16, &SHAPE);

    let rule = ["--rule", "collective-straggler"];
    let found = findings(d, "job", &rule);
    let stragglers = injected["stragglers"].as_array().unwrap();
    let last: Vec<&Value> = (stragglers.iter())
        .filter(|s| s["rank"] != json!(2))
        .collect();
    assert_eq!(found.len(), last.len(), "{found:#?}");
    for s in last {
        let (rank, delay) = (u(&s["rank"]), u(&s["delay_ns"]));
        let name = s["name"].as_str().unwrap();
        let f = (found.iter())
            .find(|f| evidence(f, "rank")[0]["rank"] == json!(rank))
            .unwrap_or_else(|| panic!("rank {rank} not found: {found:#?}"));
        assert_eq!(f["rule"], "collective-straggler");
        let statement = f["statement"].as_str().unwrap();
        let call = format!("rank {rank} came last to {name} #{},", s["occurrence"]);
        assert!(statement.starts_with(&call), "{statement}");
        // The collective's instance, and how late the rank came to it on its own clock.
        let api = evidence(f, "api");
        assert_eq!(
            (api[0]["function"].as_str(), u(&api[0]["calls"])),
            (Some(name), 1)
        );
        let late = evidence(f, "span");
        assert_eq!(late.len(), 1);
        let late = u(&late[0]["end_ns"]) - u(&late[0]["start_ns"]);
        assert!(
            late.abs_diff(delay) <= JITTER_NS,
            "rank {rank}: {late} late for {delay}"
        );
        // Every other rank waited the delay (less its own, where it was late too).
        let others: u64 = (0..16)
            .filter(|&r| r != rank)
            .map(|r| {
                let own = (stragglers.iter())
                    .find(|o| o["rank"] == json!(r) && o["collective"] == s["collective"]);
                delay - own.map_or(0, |o| u(&o["delay_ns"]))
            })
            .sum();
        let at_stake = u(&f["at_stake_ns"]);
        assert!(
            at_stake.abs_diff(others) <= 15 * JITTER_NS,
            "{at_stake} for {others}"
        );
        assert_eq!(u(&api[0]["total_ns"]), at_stake);
    }
    // Where the rank launched its step's kernels before the collective, the host
    // activity says so: the all-reduce opens its step, after six launches.
    let opening = (found.iter())
        .find(|f| evidence(f, "rank")[0]["rank"] == json!(5))
        .unwrap();
    let activity = evidence(opening, "api");
    assert_eq!(activity[1]["function"], "hipLaunchKernel");
    assert_eq!(u(&activity[1]["calls"]), 6);

    // The same job without stragglers: none, whatever its clocks.
    assert_eq!(findings(d, "clean", &rule), Vec::<Value>::new());
    // A threshold above the smallest delay leaves that one out.
    let fewer = findings(
        d,
        "job",
        &[
            &rule[..],
            &["--set", "collective-straggler.min_late_ns=700us"],
        ]
        .concat(),
    );
    assert_eq!(fewer.len(), found.len() - 1);
}

/// A job's folder of spools and the rocpd databases converted from them give the same
/// findings, of every rule, over every rank; the rules that compare ranks and those that
/// look at each alone (`--scope`) give the whole between them.
#[test]
fn a_campaign_folder_is_analysed_over_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let faults = ["--straggler", "3:2:800000", "--slow-rank", "6:0:2"];
    let shape = ["--nodes", "2", "--steps", "6", "--rocpd"];
    generate(d, "job", 8, &[&shape[..], &faults].concat());
    let all = findings(d, "job", &[]);
    let rules: std::collections::BTreeSet<&str> =
        all.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert!(
        rules.contains("collective-straggler") && rules.contains("rank-imbalance"),
        "{all:#?}"
    );
    let imbalance = all.iter().find(|f| f["rule"] == "rank-imbalance").unwrap();
    assert!(
        imbalance["statement"]
            .as_str()
            .unwrap()
            .contains("on rank 6,")
    );
    // The databases alone, as a glob of them: the same.
    assert_eq!(findings(d, "job/*.db", &[]), all);
    // Split as a campaign's recipe splits it.
    let mut split = findings(d, "job", &["--scope", "process"]);
    let ranks = findings(d, "job", &["--scope", "ranks"]);
    assert!(
        ranks
            .iter()
            .all(|f| f["rule"] == "collective-straggler" || f["rule"] == "rank-imbalance")
    );
    split.extend(ranks);
    let key = |f: &Value| f.to_string();
    let (mut split, mut all) = (split, all);
    split.sort_by_key(key);
    all.sort_by_key(key);
    assert_eq!(split, all);
}

#[test]
fn a_folder_with_nothing_readable_or_junk_among_its_ranks_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("empty")).unwrap();
    std::fs::write(d.join("empty/notes.txt"), "not a rank").unwrap();
    generate(d, "job", 2, &["--steps", "2"]);
    std::fs::create_dir(d.join("junk")).unwrap();
    std::fs::copy(d.join("job/rank-0.rfraw"), d.join("junk/rank-0.rfraw")).unwrap();
    std::fs::write(d.join("junk/rank-1.rfraw"), "not a spool").unwrap();
    std::fs::create_dir(d.join("junk-db")).unwrap();
    std::fs::copy(d.join("job/rank-0.rfraw"), d.join("junk-db/rank-0.rfraw")).unwrap();
    std::fs::write(d.join("junk-db/rank-1.db"), "not a database").unwrap();
    for (input, says) in [
        (
            "empty",
            "`empty` holds no spool (.rfraw), run folder or rocpd database (.db)",
        ),
        ("junk", "junk/rank-1.rfraw"),
        ("junk-db", "`junk-db/rank-1.db` is not a rocpd database"),
    ] {
        let out = rocflow(&["analyze", input, "-o", "findings.json"], d, &[]);
        assert_eq!(out.status.code(), Some(2), "{input}: {}", text(&out.stderr));
        assert_says(&out.stderr, says);
        assert!(!d.join("findings.json").exists(), "{input} wrote findings");
    }
}
