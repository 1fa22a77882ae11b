//! `rank-imbalance`: across the processes (MPI ranks) of a run, or of several runs given
//! together, a kernel whose slowest process spends much longer in it than the median one:
//! at the next collective, every other rank waits for the slowest.

use std::collections::BTreeMap;

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Name, Trace};

pub struct RankImbalance;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_excess",
        default: 0.2,
        about: "how much longer than the median process's time (a share of it) the slowest \
                process's time in a kernel must be",
    },
    Setting {
        name: "warning_excess",
        default: 0.5,
        about: "excess from which the finding is a warning",
    },
    Setting {
        name: "min_ns",
        default: 100_000.0,
        about: "time the slowest process must lose against the median for a finding",
    },
];

impl Rule for RankImbalance {
    fn id(&self) -> &'static str {
        "rank-imbalance"
    }

    fn about(&self) -> &'static str {
        "kernels whose slowest process (MPI rank) takes much longer than the median one"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn across_processes(&self) -> bool {
        true
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        // Per kernel, per process: the GPU time of its dispatches.
        let mut per_kernel: BTreeMap<Name, BTreeMap<u32, u64>> = BTreeMap::new();
        for d in &trace.dispatches {
            let time = (per_kernel.entry(d.kernel).or_default())
                .entry(d.pid)
                .or_default();
            *time = time.saturating_add(d.span.len());
        }
        let who = |pid: u32| match trace.ranks.get(&pid) {
            Some(rank) => format!("rank {rank}"),
            None => format!("process {pid}"),
        };
        let mut findings = Vec::new();
        for (kernel, processes) in per_kernel.into_iter().filter(|(_, p)| p.len() >= 2) {
            let rank = |pid: u32| trace.ranks.get(&pid).copied().unwrap_or(pid);
            // Slowest first; equal times by rank.
            let mut times: Vec<(u32, u64)> = processes.into_iter().collect();
            times.sort_by(|a, b| b.1.cmp(&a.1).then(rank(a.0).cmp(&rank(b.0))));
            let sorted: Vec<u64> = times.iter().rev().map(|t| t.1).collect();
            let median = match sorted.len() % 2 {
                0 => sorted[sorted.len() / 2 - 1].midpoint(sorted[sorted.len() / 2]),
                _ => sorted[sorted.len() / 2],
            };
            let (slowest_pid, slowest) = times[0];
            let excess = slowest.saturating_sub(median);
            let share = excess as f64 / median.max(1) as f64;
            if share < values.get("min_excess") || (excess as f64) < values.get("min_ns") {
                continue;
            }
            let name = trace.name(kernel).to_owned();
            let dispatches = (trace.dispatches.iter())
                .filter(|d| d.kernel == kernel && d.pid == slowest_pid)
                .count() as u64;
            let mut evidence = vec![Evidence::Kernel {
                name: name.clone(),
                dispatches,
                total_ns: slowest,
            }];
            evidence.extend(times.iter().map(|&(pid, ns)| Evidence::Rank {
                rank: rank(pid),
                value: ns as f64,
            }));
            findings.push(Finding {
                rule: self.id(),
                severity: if share >= values.get("warning_excess") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "kernel {name} took {} on {}, {} longer than the median {} of {} processes",
                    duration(slowest),
                    who(slowest_pid),
                    percent(excess as f64, median as f64),
                    duration(median),
                    times.len()
                ),
                evidence,
                // What the others wait at the collectives that follow, at most.
                at_stake_ns: excess,
                advice: "balance the work across ranks: partition by cost rather than by \
                         count, check the slow rank's GPU (clocks, placement, neighbours) and \
                         its inputs, or overlap the wait with independent work",
            });
        }
        findings
    }
}
