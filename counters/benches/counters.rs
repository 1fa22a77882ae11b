//! Loading and checking rocprofiler-sdk's standardized file, and migrating its legacy one:
//! the work behind `rocflow counters check` and `rocflow migrate-counters`, which should
//! each take well under 200 ms on one core.
//!
//! `cargo bench -p rocflow-counters` prints the median of several runs of each step.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocflow_counters::migrate::{Migration, migrate};
use rocflow_counters::{Definitions, Source, check};

const RUNS: usize = 15;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/counters")
        .join(name)
}

/// The median time of `RUNS` runs of `f`, after one unmeasured warm-up run.
fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

/// The budget for each command's work.
const BUDGET: Duration = Duration::from_millis(200);

fn report(what: &str, time: Duration) {
    let share = time.as_secs_f64() / BUDGET.as_secs_f64() * 100.0;
    println!(
        "{what:<44} {:>8.2} ms  ({share:>4.1}% of 200 ms)",
        time.as_secs_f64() * 1e3
    );
}

fn main() {
    let standard = std::fs::read_to_string(shared("standard-schema.counter_defs.yaml")).unwrap();
    let legacy = std::fs::read_to_string(shared("legacy-schema.counter_defs.yaml")).unwrap();

    let load = median(|| {
        let defs = Definitions::parse(&Source::new("standard.yaml", standard.as_str())).unwrap();
        black_box(defs);
    });
    let defs = Definitions::parse(&Source::new("standard.yaml", standard.as_str())).unwrap();
    let check_only = median(|| {
        black_box(check(&defs));
    });
    let load_and_check = median(|| {
        let defs = Definitions::parse(&Source::new("standard.yaml", standard.as_str())).unwrap();
        assert!(check(&defs).is_empty());
    });
    let migration = median(|| {
        let source = Source::new("legacy.yaml", legacy.as_str());
        let Migration::Migrated { counters, .. } = migrate(&source).unwrap() else {
            panic!("the legacy file migrates")
        };
        assert_eq!(counters, 789);
    });

    println!("median of {RUNS} runs, one thread");
    report("load standard file (797 counters, schema)", load);
    report("check it (every expression, every arch)", check_only);
    report("load + check standard file", load_and_check);
    report("migrate legacy file (789 counters)", migration);
}
