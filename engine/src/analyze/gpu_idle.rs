//! `gpu-idle`: stretches between a GPU's kernels where it had nothing to run while its
//! process went on (starvation), with what the host was doing meanwhile: the API calls
//! (synchronizations, copies, allocations) that overlap the gaps.

use std::collections::BTreeMap;

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Span, Total, Trace};

pub struct GpuIdle;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_gap_ns",
        default: 50_000.0,
        about: "shortest idle stretch between two kernels that counts as a gap",
    },
    Setting {
        name: "min_share",
        default: 0.1,
        about: "share of the GPU's active time (first kernel to last) the gaps must add up to",
    },
    Setting {
        name: "warning_share",
        default: 0.3,
        about: "share of the GPU's active time from which the finding is a warning",
    },
];

/// Gaps shown as evidence, the longest ones.
const GAPS_SHOWN: usize = 5;
/// API functions shown as evidence, those most in the gaps.
const CALLS_SHOWN: usize = 5;

impl Rule for GpuIdle {
    fn id(&self) -> &'static str {
        "gpu-idle"
    }

    fn about(&self) -> &'static str {
        "GPU starvation: gaps between kernels, with the host API calls in them"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let min_gap = values.get("min_gap_ns") as u64;
        let mut findings = Vec::new();
        for ((pid, agent), busy) in trace.busy() {
            let (Some(first), Some(last)) = (busy.first(), busy.last()) else {
                continue;
            };
            let active = last.end_ns.saturating_sub(first.start_ns);
            let mut gaps: Vec<Span> = busy
                .windows(2)
                .map(|w| Span {
                    start_ns: w[0].end_ns,
                    end_ns: w[1].start_ns,
                })
                .filter(|gap| gap.len() >= min_gap)
                .collect();
            let idle = gaps.iter().map(Span::len).total();
            let share = idle as f64 / (active as f64).max(1.0);
            if gaps.is_empty() || share < values.get("min_share") {
                continue;
            }
            // What the host was in, per function: calls and time within the gaps.
            let mut host: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            for gap in &gaps {
                for call in trace.calls_overlapping(pid, *gap) {
                    let row = host.entry(call.function).or_default();
                    row.0 += 1;
                    row.1 = row.1.saturating_add(call.span.overlap(gap));
                }
            }
            let mut host: Vec<(&str, (u64, u64))> = host.into_iter().collect();
            host.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
            let count = gaps.len();
            gaps.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
            let mut evidence: Vec<Evidence> = (gaps.iter().take(GAPS_SHOWN))
                .map(|gap| Evidence::Span {
                    what: "idle",
                    pid,
                    agent: Some(agent),
                    tid: None,
                    start_ns: gap.start_ns,
                    end_ns: gap.end_ns,
                })
                .collect();
            evidence.extend(
                host.iter()
                    .take(CALLS_SHOWN)
                    .map(|&(function, (calls, total_ns))| Evidence::Api {
                        function: function.to_owned(),
                        calls,
                        total_ns,
                    }),
            );
            let doing = match host.first() {
                Some((function, (_, ns))) => format!(
                    "; the host was in {function} for {} of it",
                    percent(*ns as f64, idle as f64)
                ),
                None => "; the host made no traced API call in them".into(),
            };
            findings.push(Finding {
                rule: self.id(),
                severity: if share >= values.get("warning_share") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "agent {agent} of process {pid} sat idle {} ({} of its active time) in \
                     {count} gaps of {} or more between kernels{doing}",
                    duration(idle),
                    percent(idle as f64, active as f64),
                    duration(min_gap),
                ),
                evidence,
                at_stake_ns: idle,
                advice: "keep work queued ahead of the GPU: launch asynchronously, move the \
                         host work in the gaps off the critical path (another thread, or \
                         before the launches), and replace blocking calls by events",
            });
        }
        findings
    }
}
