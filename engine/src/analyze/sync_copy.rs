//! `sync-copy`: copies made by synchronous calls (`hipMemcpy`, not `hipMemcpyAsync`),
//! during which the host thread waits for the copy instead of queuing more work.

use std::collections::{BTreeMap, BTreeSet};

use super::copy_tally::{ByCall, CopyTally};
use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values, thread_time};
use super::trace::{Total, Trace};

pub struct SyncCopy;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_copies",
        default: 10.0,
        about: "synchronous copies a process must make for a finding",
    },
    Setting {
        name: "min_share",
        default: 0.01,
        about: "share of the time of the threads that make them they must spend blocked in them",
    },
    Setting {
        name: "warning_share",
        default: 0.1,
        about: "share of the process's time from which the finding is a warning",
    },
];

/// Whether a copy's call waits for it: a copy function without `Async`.
pub(super) fn synchronous(function: &str) -> bool {
    (function.starts_with("hipMemcpy") || function.starts_with("hsa_memory_copy"))
        && !function.contains("Async")
}

impl Rule for SyncCopy {
    fn id(&self) -> &'static str {
        "sync-copy"
    }

    fn about(&self) -> &'static str {
        "copies by synchronous calls (hipMemcpy), which block the host thread until done"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        // Per process, per (function, direction): copies, bytes, copy time, blocked time.
        let mut by_process: BTreeMap<u32, ByCall<(CopyTally, u64)>> = BTreeMap::new();
        let mut threads: BTreeSet<(u32, u32)> = BTreeSet::new();
        for copy in &trace.copies {
            let Some(call) = trace.caller(copy.pid, copy.correlation_id) else {
                continue;
            };
            if !synchronous(call.function) {
                continue;
            }
            threads.insert((call.pid, call.tid));
            let row = (by_process.entry(copy.pid).or_default())
                .entry((call.function, copy.direction))
                .or_default();
            row.0.add(copy);
            // The call returns when the copy is done, whatever span its record has.
            let blocked =
                (copy.span.end_ns.max(call.span.end_ns)).saturating_sub(call.span.start_ns);
            row.1 = row.1.saturating_add(blocked);
        }
        let mut findings = Vec::new();
        for (pid, rows) in by_process {
            let copies: u64 = rows.values().map(|r| r.0.copies).sum();
            let blocked = rows.values().map(|r| r.1).total();
            let whole = thread_time(trace, pid, &threads);
            let share = blocked as f64 / whole.max(1.0);
            if (copies as f64) < values.get("min_copies") || share < values.get("min_share") {
                continue;
            }
            let mut evidence: Vec<(u64, Evidence)> = rows
                .iter()
                .map(|(&(function, direction), r)| (r.1, r.0.evidence(function, direction)))
                .collect();
            evidence.sort_by_key(|e| std::cmp::Reverse(e.0));
            findings.push(Finding {
                rule: self.id(),
                severity: if share >= values.get("warning_share") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "process {pid} made {copies} synchronous copies, which blocked its host \
                     threads for {} ({} of their time)",
                    duration(blocked),
                    percent(blocked as f64, whole)
                ),
                evidence: evidence.into_iter().map(|(_, e)| e).collect(),
                at_stake_ns: blocked,
                advice: "copy with hipMemcpyAsync on a stream, from pinned host memory \
                         (hipHostMalloc), and synchronize once where the data is needed, so \
                         the host queues work while the copy runs",
            });
        }
        findings
    }
}
