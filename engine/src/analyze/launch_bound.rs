//! `launch-bound`: kernels so short that launching them takes the host longer than
//! running them takes the GPU, dispatched many times; with the fusion candidates, the
//! pairs of them that always follow each other on a queue.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Name, Trace};

pub struct LaunchBound;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_dispatches",
        default: 100.0,
        about: "dispatches of a kernel shorter than their launch for it to count",
    },
    Setting {
        name: "min_share",
        default: 0.5,
        about: "share of a kernel's dispatches that must be shorter than their launch",
    },
    Setting {
        name: "follow_share",
        default: 0.95,
        about: "share of a kernel's dispatches another must follow for the pair to be a fusion candidate",
    },
];

/// Fusion candidates shown.
const PAIRS_SHOWN: usize = 5;

/// Whether a call launches kernels one by one (a graph launch enqueues many at once).
fn launches(function: &str) -> bool {
    function.contains("LaunchKernel") || function.starts_with("hipLaunchCooperativeKernel")
}

#[derive(Default, Clone, Copy)]
struct Tally {
    dispatches: u64,
    short: u64,
    kernel_ns: u64,
    launch_ns: u64,
}

impl Rule for LaunchBound {
    fn id(&self) -> &'static str {
        "launch-bound"
    }

    fn about(&self) -> &'static str {
        "many kernels shorter than their launch, with the kernels that always follow each other"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let mut kernels: BTreeMap<(u32, Name), Tally> = BTreeMap::new();
        for d in &trace.dispatches {
            let Some(call) = trace.caller(d.pid, d.correlation_id) else {
                continue;
            };
            if !launches(call.function) {
                continue;
            }
            let t = kernels.entry((d.pid, d.kernel)).or_default();
            t.dispatches += 1;
            if d.span.len() < call.span.len() {
                t.short += 1;
                t.kernel_ns = t.kernel_ns.saturating_add(d.span.len());
                t.launch_ns = t.launch_ns.saturating_add(call.span.len());
            }
        }
        let bound = |t: &Tally| {
            t.short as f64 >= values.get("min_dispatches")
                && t.short as f64 >= values.get("min_share") * t.dispatches as f64
        };
        let mut by_process: BTreeMap<u32, Vec<(Name, Tally)>> = BTreeMap::new();
        for (&(pid, kernel), t) in kernels.iter().filter(|(_, t)| bound(t)) {
            by_process.entry(pid).or_default().push((kernel, *t));
        }
        let mut findings = Vec::new();
        for (pid, mut bound) in by_process {
            bound.sort_by(|a, b| b.1.launch_ns.cmp(&a.1.launch_ns).then(a.0.cmp(&b.0)));
            let short: u64 = bound.iter().map(|(_, t)| t.short).sum();
            let (kernel_ns, launch_ns) = bound.iter().fold((0u64, 0u64), |(k, l), (_, t)| {
                (k.saturating_add(t.kernel_ns), l.saturating_add(t.launch_ns))
            });
            let mut evidence: Vec<Evidence> = bound
                .iter()
                .map(|(kernel, t)| Evidence::Kernel {
                    name: trace.name(*kernel).to_owned(),
                    dispatches: t.short,
                    total_ns: t.kernel_ns,
                })
                .collect();
            let names: Vec<Name> = bound.iter().map(|(k, _)| *k).collect();
            evidence.extend(
                fusion_candidates(trace, pid, &names, values.get("follow_share"))
                    .into_iter()
                    .take(PAIRS_SHOWN)
                    .map(|((a, b), times)| Evidence::Sequence {
                        kernels: vec![trace.name(a).to_owned(), trace.name(b).to_owned()],
                        times,
                    }),
            );
            let at_stake = launch_ns.saturating_sub(kernel_ns);
            findings.push(Finding {
                rule: self.id(),
                severity: if bound.len() > 1 || short >= 1000 {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "process {pid} launched {short} dispatches of {} kernels that ran shorter \
                     than their launch: {} of launches for {} of kernels ({} of the launch time)",
                    bound.len(),
                    duration(launch_ns),
                    duration(kernel_ns),
                    percent(kernel_ns as f64, launch_ns as f64)
                ),
                evidence,
                at_stake_ns: at_stake,
                advice: "fuse the kernels that follow each other into one, give each launch \
                         more work, or capture the sequence in a HIP graph and launch it once",
            });
        }
        findings
    }
}

/// Pairs of the kernels `names` where the second follows the first on its queue in at
/// least `share` of the first's dispatches, with how many times; most frequent first.
fn fusion_candidates(
    trace: &Trace,
    pid: u32,
    names: &[Name],
    share: f64,
) -> Vec<((Name, Name), u64)> {
    let mut last: FxHashMap<u64, Name> = FxHashMap::default();
    let mut pairs: FxHashMap<(Name, Name), u64> = FxHashMap::default();
    let mut counts: FxHashMap<Name, u64> = FxHashMap::default();
    for d in trace.dispatches.iter().filter(|d| d.pid == pid) {
        if !names.contains(&d.kernel) {
            last.remove(&d.queue);
            continue;
        }
        *counts.entry(d.kernel).or_default() += 1;
        if let Some(before) = last.insert(d.queue, d.kernel) {
            *pairs.entry((before, d.kernel)).or_default() += 1;
        }
    }
    let mut candidates: Vec<((Name, Name), u64)> = pairs
        .into_iter()
        .filter(|((a, b), n)| a != b && *n as f64 >= share * counts[a].max(counts[b]) as f64)
        .collect();
    candidates.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    candidates
}
