//! `steady-state-allocation`: device memory allocated and freed (`hipMalloc`, `hipFree`,
//! …) inside a ROCTx range that repeats: an iteration's cost paid again each time, and
//! often a synchronization besides (`hipFree` waits for the device).

use std::collections::BTreeMap;

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Name, Total, Trace};

pub struct SteadyAllocation;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_instances",
        default: 3.0,
        about: "instances of a range that must allocate for a finding",
    },
    Setting {
        name: "min_share",
        default: 0.5,
        about: "share of a range's instances that must allocate (a steady state, not a warm-up)",
    },
    Setting {
        name: "warning_share",
        default: 0.01,
        about: "share of the range's time in allocation calls from which the finding is a warning",
    },
];

/// Whether a function allocates or frees device or pinned host memory.
fn allocates(function: &str) -> bool {
    [
        "hipMalloc",
        "hipFree",
        "hipHostMalloc",
        "hipHostFree",
        "hipExtMalloc",
        "hipMemAlloc",
    ]
    .iter()
    .any(|prefix| function.starts_with(prefix))
}

#[derive(Default)]
struct Tally {
    instances: u64,
    range_ns: u64,
    allocating: u64,
    /// Per function: calls and time.
    calls: BTreeMap<&'static str, (u64, u64)>,
}

impl Rule for SteadyAllocation {
    fn id(&self) -> &'static str {
        "steady-state-allocation"
    }

    fn about(&self) -> &'static str {
        "hipMalloc/hipFree inside ROCTx ranges that repeat"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let mut ranges: BTreeMap<(u32, Name), Tally> = BTreeMap::new();
        for range in &trace.ranges {
            let tally = ranges.entry((range.pid, range.label)).or_default();
            tally.instances += 1;
            tally.range_ns = tally.range_ns.saturating_add(range.span.len());
            let mut allocating = false;
            let inside = (trace.calls_overlapping(range.pid, range.span))
                .filter(|c| c.tid == range.tid && allocates(c.function))
                .filter(|c| c.span.start_ns >= range.span.start_ns);
            for call in inside.filter(|c| c.span.end_ns <= range.span.end_ns) {
                let row = tally.calls.entry(call.function).or_default();
                row.0 += 1;
                row.1 = row.1.saturating_add(call.span.len());
                allocating = true;
            }
            tally.allocating += u64::from(allocating);
        }
        let mut findings = Vec::new();
        for ((pid, label), tally) in ranges {
            let steady = tally.allocating as f64 >= values.get("min_instances")
                && tally.allocating as f64 >= values.get("min_share") * tally.instances as f64;
            if !steady {
                continue;
            }
            let label = trace.name(label);
            let calls: u64 = tally.calls.values().map(|c| c.0).sum();
            let time = tally.calls.values().map(|c| c.1).total();
            let share = time as f64 / (tally.range_ns as f64).max(1.0);
            let mut evidence = vec![Evidence::Range {
                label: label.to_owned(),
                instances: tally.instances,
                total_ns: tally.range_ns,
            }];
            evidence.extend(tally.calls.iter().map(|(&function, &(calls, total_ns))| {
                Evidence::Api {
                    function: function.to_owned(),
                    calls,
                    total_ns,
                }
            }));
            findings.push(Finding {
                rule: self.id(),
                severity: if share >= values.get("warning_share") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "{} of {} instances of range `{}` in process {pid} allocate or free memory: \
                     {calls} calls, {} ({} of the range's time)",
                    tally.allocating,
                    tally.instances,
                    crate::printable::name(label),
                    duration(time),
                    percent(time as f64, tally.range_ns as f64)
                ),
                evidence,
                at_stake_ns: time,
                advice: "allocate once before the loop and reuse the buffers (or use a pool: \
                         hipMallocAsync/hipFreeAsync with a memory pool); hipFree also waits \
                         for the device",
            });
        }
        findings
    }
}
