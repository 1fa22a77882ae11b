//! `sync-hot-spot`: synchronization calls (`hipDeviceSynchronize`, `hipStreamSynchronize`,
//! `hipEventSynchronize`, HSA signal waits) that hold the host for much of the run.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values, thread_time};
use super::trace::{Total, Trace};

pub struct SyncHotSpot;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_calls",
        default: 10.0,
        about: "synchronization calls a process must make for a finding",
    },
    Setting {
        name: "min_share",
        default: 0.05,
        about: "share of the time of the threads that make them they must spend blocked in them",
    },
    Setting {
        name: "warning_share",
        default: 0.2,
        about: "share of the process's time from which the finding is a warning",
    },
];

/// The functions that block the calling thread until the GPU reaches a point.
const SYNCHRONIZING: &[&str] = &[
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipCtxSynchronize",
    "hsa_signal_wait_scacquire",
    "hsa_signal_wait_relaxed",
    "hsa_signal_wait_acquire",
    "hsa_signal_group_wait_any_scacquire",
    "hsa_signal_group_wait_any_relaxed",
];

impl Rule for SyncHotSpot {
    fn id(&self) -> &'static str {
        "sync-hot-spot"
    }

    fn about(&self) -> &'static str {
        "synchronization calls that block the host for much of the run, by calls and time"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        // Per process, per function: calls, blocked time, and the longest call.
        let mut by_process: BTreeMap<u32, BTreeMap<&str, (u64, u64)>> = BTreeMap::new();
        let mut threads: BTreeSet<(u32, u32)> = BTreeSet::new();
        for call in trace
            .calls
            .iter()
            .filter(|c| SYNCHRONIZING.contains(&c.function))
        {
            threads.insert((call.pid, call.tid));
            let row = (by_process.entry(call.pid).or_default())
                .entry(call.function)
                .or_default();
            row.0 += 1;
            row.1 = row.1.saturating_add(call.span.len());
        }
        let mut findings = Vec::new();
        for (pid, rows) in by_process {
            let calls: u64 = rows.values().map(|r| r.0).sum();
            let blocked = rows.values().map(|r| r.1).total();
            let whole = thread_time(trace, pid, &threads);
            let share = blocked as f64 / whole.max(1.0);
            if (calls as f64) < values.get("min_calls") || share < values.get("min_share") {
                continue;
            }
            let mut rows: Vec<(&str, (u64, u64))> = rows.into_iter().collect();
            rows.sort_by_key(|row| std::cmp::Reverse(row.1.1));
            let evidence = rows
                .iter()
                .map(|&(function, (calls, total_ns))| Evidence::Api {
                    function: function.to_owned(),
                    calls,
                    total_ns,
                })
                .collect();
            findings.push(Finding {
                rule: self.id(),
                severity: if share >= values.get("warning_share") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "process {pid}'s threads waited {} in {calls} synchronization calls ({} of \
                     their time), most in {}",
                    duration(blocked),
                    percent(blocked as f64, whole),
                    rows[0].0
                ),
                evidence,
                at_stake_ns: blocked,
                advice: "synchronize less and later: wait on an event for the one result \
                         needed (hipStreamWaitEvent between streams, hipEventSynchronize on \
                         the host) instead of the whole device or stream, and keep work queued \
                         ahead of each wait",
            });
        }
        findings
    }
}
