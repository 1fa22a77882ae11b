//! `low-utilization`: GPUs whose kernels kept them busy for a small share of the run, over
//! the whole run and per ROCTx range (a phase: data loading, a solver step, …).

use std::collections::BTreeMap;

use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Name, Span, Total, Trace};

pub struct LowUtilization;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_utilization",
        default: 0.5,
        about: "busy share of a GPU below which it counts as underused",
    },
    Setting {
        name: "warning_utilization",
        default: 0.2,
        about: "busy share below which the finding is a warning",
    },
    Setting {
        name: "min_range_share",
        default: 0.1,
        about: "share of the process's run a range's instances must cover to be judged on their own",
    },
];

/// How much of `window` the merged, ordered spans `busy` cover.
fn covered(busy: &[Span], window: Span) -> u64 {
    let first = busy.partition_point(|s| s.end_ns <= window.start_ns);
    busy[first..]
        .iter()
        .take_while(|s| s.start_ns < window.end_ns)
        .map(|s| s.overlap(&window))
        .total()
}

impl Rule for LowUtilization {
    fn id(&self) -> &'static str {
        "low-utilization"
    }

    fn about(&self) -> &'static str {
        "GPUs busy for a small share of the run, and of each ROCTx range"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let (low, warning) = (
            values.get("min_utilization"),
            values.get("warning_utilization"),
        );
        let severity = |u: f64| {
            if u < warning {
                Severity::Warning
            } else {
                Severity::Info
            }
        };
        let mut findings = Vec::new();
        for ((pid, agent), busy) in trace.busy() {
            let Some(run) = trace.span_of(pid) else {
                continue;
            };
            let used = covered(&busy, run);
            let utilization = used as f64 / (run.len() as f64).max(1.0);
            if utilization < low {
                findings.push(Finding {
                    rule: self.id(),
                    severity: severity(utilization),
                    statement: format!(
                        "agent {agent} of process {pid} ran kernels {} of the run ({} of {})",
                        percent(used as f64, run.len() as f64),
                        duration(used),
                        duration(run.len())
                    ),
                    evidence: vec![Evidence::Span {
                        what: "run",
                        pid,
                        agent: Some(agent),
                        tid: None,
                        start_ns: run.start_ns,
                        end_ns: run.end_ns,
                    }],
                    at_stake_ns: run.len().saturating_sub(used),
                    advice: "give the GPU more to do at once (larger batches, concurrent \
                             streams), or move the host work and copies that keep it waiting \
                             out of its way; see gpu-idle's gaps for where",
                });
            }
            // Per phase: the range's instances in this process, together.
            let mut phases: BTreeMap<Name, (u64, u64, u64)> = BTreeMap::new();
            for range in trace.ranges.iter().filter(|r| r.pid == pid) {
                let phase = phases.entry(range.label).or_default();
                phase.0 += 1;
                phase.1 = phase.1.saturating_add(range.span.len());
                phase.2 = phase.2.saturating_add(covered(&busy, range.span));
            }
            for (label, (instances, total, used)) in phases {
                let utilization = used as f64 / (total as f64).max(1.0);
                let judged = total as f64 >= values.get("min_range_share") * run.len() as f64;
                if !judged || utilization >= low {
                    continue;
                }
                let label = trace.name(label);
                findings.push(Finding {
                    rule: self.id(),
                    severity: severity(utilization),
                    statement: format!(
                        "agent {agent} of process {pid} ran kernels {} of range `{}` ({} of {} \
                         over {instances} instances)",
                        percent(used as f64, total as f64),
                        crate::printable::name(label),
                        duration(used),
                        duration(total)
                    ),
                    evidence: vec![Evidence::Range {
                        label: label.to_owned(),
                        instances,
                        total_ns: total,
                    }],
                    at_stake_ns: total.saturating_sub(used),
                    advice: "this phase leaves the GPU waiting: overlap it with GPU work of \
                             another phase, or move its host work off the GPU's path",
                });
            }
        }
        findings
    }
}
