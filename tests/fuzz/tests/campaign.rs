//! The fuzzer as CI runs it: a bounded campaign over every target, and checks that the
//! harness catches, saves and names each kind of failure. The harness runs as a
//! subprocess, so an input that aborts it fails a test instead of ending the test run.

use std::path::Path;
use std::process::{Command, Output};

fn fuzz(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocflow-fuzz"))
        .args(args)
        .arg("--out")
        .arg(out)
        // Nothing from this machine that would change what the targets read.
        .env_remove("ROCFLOW_PIPELINE_PATH")
        .env_remove("ROCFLOW_PLUGIN_PATH")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .env_remove("ROCM_PATH")
        .output()
        .expect("rocflow-fuzz runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Up to 3000 mutated inputs per target from seed 1, at most 15 s each (the slower targets
/// run fewer in a debug build): a couple of minutes in all. Failing inputs are kept under
/// `target/tmp/fuzz/crashes/` for `--replay`.
#[test]
fn a_bounded_campaign_finds_nothing() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz");
    let args = [
        "--target", "all", "--seed", "1", "--runs", "3000", "--time", "15",
    ];
    // A debug build on a busy machine is slow: only a run ten times as long as the
    // release build's limit is a hang here.
    let output = fuzz(&[&args[..], &["--timeout", "20"]].concat(), &out);
    assert!(output.status.success(), "{}", text(&output));
}

/// The self-test's one failure is met again and again in five seconds; it is saved and
/// reported once.
#[test]
fn a_campaign_saves_the_failing_input_and_names_it() {
    let out = tempfile::tempdir().unwrap();
    // As above, only a run far past the release build's limit is a hang: the bounded
    // campaign, running beside this test, takes every core (a 2 s limit once saved a
    // trivial input as a hang in CI's rehearsal).
    let work = out.path().join("work");
    let args = [
        "--target",
        "selftest",
        "--time",
        "5",
        "--timeout",
        "20",
        "--work",
    ];
    let output = fuzz(&[&args[..], &[work.to_str().unwrap()]].concat(), out.path());
    let report = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert_eq!(
        report.matches("FAILED selftest: panic").count(),
        1,
        "{report}"
    );
    assert!(report.contains("the self-test panics"), "{report}");
    let saved: Vec<_> = std::fs::read_dir(out.path().join("crashes/selftest"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        report.contains(&format!("--replay {}", saved[0].display())),
        "{report}"
    );
    let input = std::fs::read(&saved[0]).unwrap();
    assert!(input.windows(5).any(|w| w == b"panic"), "{input:?}");
    assert!(!work.read_dir().unwrap().any(|_| true));
}

/// Two workers at once share a target's inputs, each with its own seed, and the campaign
/// ends with the rates of its targets.
#[test]
fn jobs_share_a_targets_inputs_and_the_rates_are_summed_up() {
    let out = tempfile::tempdir().unwrap();
    let args = [
        "--target",
        "counter-expr",
        "--jobs",
        "2",
        "--runs",
        "200",
        "--time",
        "120",
        "--timeout",
        "20",
    ];
    let output = fuzz(&args, out.path());
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    // 100 mutated inputs each, after the 17 seeds each runs first.
    assert!(report.contains("counter-expr: 234 inputs"), "{report}");
    assert!(report.contains("workers: 2,"), "{report}");
    assert!(
        report.contains("10^7 inputs per target at these rates on 2 cores"),
        "{report}"
    );
}

#[test]
fn every_kind_of_failure_is_caught_when_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("selftest");
    std::fs::create_dir(&inputs).unwrap();
    for (input, kind) in [
        ("panic", "panic"),
        ("hang", "hang"),
        ("deep", "stack overflow"),
        ("allocate", "out of memory"),
    ] {
        let file = inputs.join(format!("{input}.txt"));
        std::fs::write(&file, input).unwrap();
        let args = ["--replay", file.to_str().unwrap(), "--timeout", "1"];
        let output = fuzz(&args, dir.path());
        let report = text(&output);
        assert_eq!(output.status.code(), Some(1), "{report}");
        assert!(
            report.contains(&format!("FAILED selftest: {kind}")),
            "{report}"
        );
    }
    let file = inputs.join("fine.txt");
    std::fs::write(&file, "fine").unwrap();
    let output = fuzz(&["--replay", file.to_str().unwrap()], dir.path());
    assert!(output.status.success(), "{}", text(&output));
}
