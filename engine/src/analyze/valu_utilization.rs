//! `valu-utilization`: kernels whose vector instructions run with few lanes active (AMD's
//! `VALUUtilization`: active threads per VALU instruction, as a share of the wavefront),
//! from divergent branches or workgroups that are not a multiple of the wavefront.

use super::finding::{Finding, Severity};
use super::kernel_counters::{MIN_TIME_SHARE, evidence, who};
use super::rule::{Rule, Setting, Values};
use super::trace::Trace;

pub struct ValuUtilization;

const COUNTER: &str = "VALUUtilization";

const SETTINGS: &[Setting] = &[
    Setting {
        name: "max_percent",
        default: 50.0,
        about: "active lanes per VALU instruction (percent) below which a kernel is reported",
    },
    Setting {
        name: "warning_percent",
        default: 25.0,
        about: "active lanes below which the finding is a warning",
    },
    MIN_TIME_SHARE,
];

impl Rule for ValuUtilization {
    fn id(&self) -> &'static str {
        "valu-utilization"
    }

    fn about(&self) -> &'static str {
        "kernels whose VALU instructions run with few lanes active (VALUUtilization)"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let limit = values.get("max_percent");
        let flagged =
            trace.flagged_kernels(COUNTER, values.get("min_time_share"), |lanes| lanes < limit);
        flagged
            .map(|(c, own_ns)| {
                let busy = trace.counter_of(c, "VALUBusy");
                Finding {
                    rule: self.id(),
                    severity: if c.mean < values.get("warning_percent") {
                        Severity::Warning
                    } else {
                        Severity::Info
                    },
                    statement: format!(
                        "{}'s vector instructions ran with {:.1}% of their lanes active over {} \
                         dispatches{}",
                        who(trace, c),
                        c.mean,
                        c.dispatches,
                        busy.map_or(String::new(), |b| format!(
                            ", VALU busy {b:.1}% of the time"
                        ))
                    ),
                    evidence: evidence(trace, c, own_ns, &[COUNTER, "VALUBusy"]),
                    // The VALU work done with idle lanes, were the kernel VALU-bound.
                    at_stake_ns: (own_ns as f64
                        * (1.0 - c.mean / 100.0)
                        * busy.map_or(1.0, |b| b / 100.0).clamp(0.0, 1.0))
                        as u64,
                    advice: "keep a wavefront's threads on one path: branch on values uniform \
                             across a wavefront, make workgroups a multiple of the wavefront \
                             size, and move divergent tails out of hot loops",
                }
            })
            .collect()
    }
}
