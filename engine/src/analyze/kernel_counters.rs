//! What the counter rules share: the kernels a counter flags, and the finding's evidence
//! (the counters behind it and the kernel's dispatches).

use super::finding::Evidence;
use super::rule::Setting;
use super::trace::KernelCounter;
use super::trace::Trace;

/// The setting every counter rule has: which kernels are worth a finding.
pub const MIN_TIME_SHARE: Setting = Setting {
    name: "min_time_share",
    default: 0.05,
    about: "share of its GPU's kernel time a kernel must take for a finding",
};

/// Who a kernel's finding is about, for its statement: `kernel K (process P, GPU A)`.
pub fn who(trace: &Trace, c: &KernelCounter) -> String {
    format!(
        "kernel {} (process {}, GPU {})",
        trace.name(c.kernel),
        c.pid,
        c.agent
    )
}

/// The evidence of a finding on kernel `c`: the kernel's dispatches, then each of
/// `counters` it has a value of.
pub fn evidence(trace: &Trace, c: &KernelCounter, own_ns: u64, counters: &[&str]) -> Vec<Evidence> {
    let kernel = trace.name(c.kernel).to_owned();
    let mut evidence = vec![Evidence::Kernel {
        name: kernel.clone(),
        dispatches: c.dispatches,
        total_ns: own_ns,
    }];
    evidence.extend(counters.iter().filter_map(|&counter| {
        let value = trace.counter_of(c, counter)?;
        Some(Evidence::Counter {
            kernel: kernel.clone(),
            counter: counter.to_owned(),
            value,
        })
    }));
    evidence
}

/// The L2 cache's hit rate in percent: AMD's `L2CacheHit` where collected, else from
/// `TCC_HIT` and `TCC_MISS` (its formula on every CDNA GPU).
pub fn l2_hit_percent(trace: &Trace, c: &KernelCounter) -> Option<f64> {
    if let Some(hit) = trace.counter_of(c, "L2CacheHit") {
        return Some(hit);
    }
    let hits = trace.counter_of(c, "TCC_HIT")?;
    let all = hits + trace.counter_of(c, "TCC_MISS")?;
    (all > 0.0).then(|| 100.0 * hits / all)
}

#[cfg(test)]
mod tests {
    use super::super::trace::{Dispatch, KernelCounter, Span};
    use super::super::{Finding, Selection, Severity, Trace};

    /// A kernel's name, its time and its counters' values.
    type Kernel<'a> = (&'a str, u64, &'a [(&'a str, f64)]);

    /// A trace of one GPU running each kernel once for its time, with its counters.
    fn trace(kernels: &[Kernel]) -> Trace {
        let mut trace = Trace::default();
        let mut start_ns = 0;
        for &(name, len, counters) in kernels {
            let kernel = trace.intern(name);
            trace.dispatches.push(Dispatch {
                pid: 1,
                agent: 0,
                queue: 0,
                kernel,
                span: Span {
                    start_ns,
                    end_ns: start_ns + len,
                },
                correlation_id: 0,
                stream: None,
            });
            start_ns += len;
            for &(counter, mean) in counters {
                let counter = trace.intern(counter);
                trace.counters.push(KernelCounter {
                    pid: 1,
                    agent: 0,
                    kernel,
                    counter,
                    dispatches: 1,
                    mean,
                });
            }
        }
        trace
    }

    fn check(rule: &str, trace: &Trace) -> Vec<Finding> {
        Selection::new(&[rule.into()], &[]).unwrap().check(trace)
    }

    #[test]
    fn a_kernel_is_reported_on_its_counter_if_it_takes_its_share_of_the_gpu() {
        let t = trace(&[
            ("busy", 900, &[("OccupancyPercent", 5.0)]),
            ("tiny", 10, &[("OccupancyPercent", 1.0)]),
            ("fine", 90, &[("OccupancyPercent", 60.0)]),
        ]);
        let found = check("low-occupancy", &t);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].statement.contains("kernel busy "),
            "{}",
            found[0].statement
        );
        assert_eq!(found[0].severity, Severity::Warning);
        // 900 ns, of which the share below 25% occupancy: 1 - 5/25.
        assert_eq!(found[0].at_stake_ns, 720);
        let lower = Selection::new(
            &["low-occupancy".into()],
            &["low-occupancy.min_time_share=0.001".into()],
        )
        .unwrap();
        let rules: Vec<&str> = lower.check(&t).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["low-occupancy", "low-occupancy"]);
    }

    #[test]
    fn memory_bound_is_told_from_compute_bound_and_says_where_the_traffic_goes() {
        let t = trace(&[
            (
                "gather",
                500,
                &[
                    ("MemUnitBusy", 90.0),
                    ("VALUBusy", 10.0),
                    ("TCC_HIT", 20.0),
                    ("TCC_MISS", 80.0),
                ],
            ),
            ("gemm", 500, &[("MemUnitBusy", 80.0), ("VALUBusy", 95.0)]),
            (
                "stream",
                500,
                &[("MemUnitBusy", 75.0), ("L2CacheHit", 90.0)],
            ),
        ]);
        let found = check("memory-bound", &t);
        let statements: Vec<&str> = found.iter().map(|f| f.statement.as_str()).collect();
        assert_eq!(found.len(), 2, "{statements:#?}");
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(
            statements[0].contains("kernel gather ") && statements[0].contains("L2 hit rate 20.0%")
        );
        assert_eq!(found[1].severity, Severity::Info);
        assert!(
            statements[1].contains("kernel stream ") && statements[1].contains("L2 hit rate 90.0%")
        );
    }

    #[test]
    fn lanes_and_atomics_are_judged_by_their_thresholds() {
        let t = trace(&[
            (
                "divergent",
                500,
                &[("VALUUtilization", 30.0), ("SerializedAtomicRatio", 0.12)],
            ),
            (
                "uniform",
                500,
                &[("VALUUtilization", 99.0), ("SerializedAtomicRatio", 0.05)],
            ),
        ]);
        let lanes = check("valu-utilization", &t);
        assert_eq!(lanes.len(), 1);
        assert_eq!(lanes[0].severity, Severity::Info);
        let atomics = check("atomic-contention", &t);
        assert_eq!(atomics.len(), 1);
        assert_eq!(atomics[0].severity, Severity::Info);
        assert!(
            atomics[0].statement.contains("12% of their cycles"),
            "{}",
            atomics[0].statement
        );
    }
}
