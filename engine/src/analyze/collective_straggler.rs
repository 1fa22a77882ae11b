//! `collective-straggler`: across the processes (MPI ranks) of a job, the rank that comes
//! last to a collective (an RCCL all-reduce, broadcast, …) while the others wait in it.
//!
//! The k-th call of a collective operation on each process is one instance of it, as the
//! campaign's stragglers recipe matches them (a trace keeps no communicator: every call
//! counts as on one). A process arrives when its call starts, on the wall clock by its
//! clock offset, so that hosts whose SDK clocks disagree are compared as the recipes
//! compare them. An instance whose last process arrives `min_late_ns` after the median
//! one counts against it; the others' waits (its arrival less theirs) are the time at
//! stake.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::finding::{Evidence, Finding, Severity, duration};
use super::rule::{Rule, Setting, Values};
use super::trace::{Call, Span, Total, Trace};

pub struct CollectiveStraggler;

/// RCCL's collective operations: every rank of the communicator enters each.
/// (`ncclSend` and `ncclRecv` pair two ranks, and are left out.)
const COLLECTIVES: &[&str] = &[
    "ncclAllGather",
    "ncclAllReduce",
    "ncclAllToAll",
    "ncclAllToAllv",
    "ncclBroadcast",
    "ncclGather",
    "ncclReduce",
    "ncclReduceScatter",
    "ncclScatter",
];

/// Host activity shown per finding: the functions the straggler spent most time in.
const ACTIVITY_SHOWN: usize = 5;
/// Late arrivals shown per finding, the latest first.
const INSTANCES_SHOWN: usize = 8;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_late_ns",
        default: 100_000.0,
        about: "how long after the median process the last one must arrive at a collective \
                for a finding (the campaign recipe's --straggler-ns)",
    },
    Setting {
        name: "warning_late_ns",
        default: 1_000_000.0,
        about: "lateness from which the finding is a warning",
    },
];

/// One process's call of one instance of a collective.
struct Arrival<'t> {
    pid: u32,
    call: &'t Call,
    /// Its start on the wall clock.
    at: i128,
    /// The end of the process's previous collective (of any operation), on its own
    /// clock: what it did since is what made it late.
    since_ns: Option<u64>,
}

/// An instance whose last process came late.
struct Late<'t> {
    occurrence: u32,
    last: &'t Arrival<'t>,
    late_ns: u64,
    wait_ns: u64,
}

impl Rule for CollectiveStraggler {
    fn id(&self) -> &'static str {
        "collective-straggler"
    }

    fn about(&self) -> &'static str {
        "collectives that one rank reaches late while every other rank waits in them"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn across_processes(&self) -> bool {
        true
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let arrivals = arrivals(trace);
        let min_late = values.get("min_late_ns");
        // By operation and straggling process: its late arrivals.
        let mut late: BTreeMap<(&'static str, u32), Vec<Late>> = BTreeMap::new();
        for ((function, occurrence), instance) in &arrivals {
            if instance.len() < 2 {
                continue;
            }
            let last = (instance.iter())
                .max_by_key(|a| (a.at, std::cmp::Reverse(trace.rank_of(a.pid))))
                .expect("two arrivals or more");
            let late_ns = last.at - median(instance.iter().map(|a| a.at).collect());
            if (late_ns as f64) < min_late {
                continue;
            }
            let wait_ns = (instance.iter())
                .map(|a| u64::try_from(last.at - a.at).unwrap_or(u64::MAX))
                .total();
            late.entry((function, last.pid)).or_default().push(Late {
                occurrence: *occurrence,
                last,
                late_ns: u64::try_from(late_ns).unwrap_or(u64::MAX),
                wait_ns,
            });
        }
        let ranks = (arrivals.values())
            .flat_map(|instance| instance.iter().map(|a| a.pid))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        late.into_iter()
            .map(|((function, pid), mut instances)| {
                instances.sort_by_key(|l| (std::cmp::Reverse(l.late_ns), l.occurrence));
                self.finding(trace, values, function, pid, ranks, &instances)
            })
            .collect()
    }
}

impl CollectiveStraggler {
    fn finding(
        &self,
        trace: &Trace,
        values: &Values,
        function: &'static str,
        pid: u32,
        ranks: usize,
        instances: &[Late],
    ) -> Finding {
        let worst = instances[0].late_ns;
        let wait = instances.iter().map(|l| l.wait_ns).total();
        let who = match trace.ranks.get(&pid) {
            Some(rank) => format!("rank {rank}"),
            None => format!("process {pid}"),
        };
        // An instance is named by its call's number on every rank, from 0.
        let calls = match instances {
            [one] => format!("{function} #{}, {}", one.occurrence, duration(worst)),
            _ => format!(
                "{} {function} calls, up to {}",
                instances.len(),
                duration(worst)
            ),
        };
        let mut evidence = vec![
            Evidence::Rank {
                rank: trace.rank_of(pid),
                value: wait as f64,
            },
            Evidence::Api {
                function: function.to_owned(),
                calls: instances.len() as u64,
                total_ns: wait,
            },
        ];
        // How late it came to each, on its own clock.
        evidence.extend(instances.iter().take(INSTANCES_SHOWN).map(|l| {
            let start_ns = l.last.call.span.start_ns;
            Evidence::Span {
                what: "late arrival",
                pid,
                agent: None,
                tid: Some(l.last.call.tid),
                start_ns: start_ns.saturating_sub(l.late_ns),
                end_ns: start_ns,
            }
        }));
        evidence.extend(host_activity(trace, instances));
        Finding {
            rule: self.id(),
            severity: if worst as f64 >= values.get("warning_late_ns") {
                Severity::Warning
            } else {
                Severity::Info
            },
            statement: format!(
                "{who} came last to {calls} after the median of {ranks} ranks; the others \
                 waited {} for it",
                duration(wait)
            ),
            evidence,
            at_stake_ns: wait,
            advice: "look at what the late rank did before the collective (its host \
                     activity in the evidence: I/O, data loading, a slower GPU's kernels) \
                     and balance or overlap it; a rank late at every step points at its \
                     node or its share of the work",
        }
    }
}

/// Per operation and occurrence, each process's call, in the order processes arrived.
fn arrivals(trace: &Trace) -> BTreeMap<(&'static str, u32), Vec<Arrival<'_>>> {
    let mut counted: FxHashMap<(u32, &'static str), u32> = FxHashMap::default();
    let mut previous_end: FxHashMap<u32, u64> = FxHashMap::default();
    let mut arrivals: BTreeMap<(&'static str, u32), Vec<Arrival>> = BTreeMap::new();
    // Calls are in start order, so each process's are numbered in its order.
    for call in (trace.calls.iter()).filter(|c| COLLECTIVES.contains(&c.function)) {
        let count = counted.entry((call.pid, call.function)).or_default();
        let occurrence = *count;
        *count += 1;
        let since_ns = previous_end.insert(call.pid, call.span.end_ns);
        arrivals
            .entry((call.function, occurrence))
            .or_default()
            .push(Arrival {
                pid: call.pid,
                call,
                at: trace.aligned(call.pid, call.span.start_ns),
                since_ns,
            });
    }
    for instance in arrivals.values_mut() {
        instance.sort_by_key(|a| (a.at, a.pid));
    }
    arrivals
}

/// The median of some times (of the two middle ones, their mean).
fn median(mut times: Vec<i128>) -> i128 {
    times.sort_unstable();
    let n = times.len();
    match n % 2 {
        0 => (times[n / 2 - 1] + times[n / 2]) / 2,
        _ => times[n / 2],
    }
}

/// What the straggler's threads ran between its previous collective and each late
/// arrival: its API calls by function, the most time first (collectives left out).
fn host_activity(trace: &Trace, instances: &[Late]) -> Vec<Evidence> {
    let mut by_function: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    for l in instances {
        let arrival = l.last.call.span.start_ns;
        let Some(since) = l.last.since_ns.filter(|&since| since < arrival) else {
            continue;
        };
        let before = Span {
            start_ns: since,
            end_ns: arrival,
        };
        let calls = trace.calls_overlapping(l.last.pid, before);
        for call in calls.filter(|c| !COLLECTIVES.contains(&c.function)) {
            let (count, time) = by_function.entry(call.function).or_default();
            *count += 1;
            *time = time.saturating_add(call.span.overlap(&before));
        }
    }
    let mut activity: Vec<_> = by_function.into_iter().collect();
    activity.sort_by_key(|(function, (_, time))| (std::cmp::Reverse(*time), *function));
    (activity.into_iter().take(ACTIVITY_SHOWN))
        .map(|(function, (calls, total_ns))| Evidence::Api {
            function: function.to_owned(),
            calls,
            total_ns,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_middle_pair_s_mean() {
        assert_eq!(median(vec![40, 10, 30, 20]), 25);
        assert_eq!(median(vec![5, 1, 3]), 3);
    }
}
