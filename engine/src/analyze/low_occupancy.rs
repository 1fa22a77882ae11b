//! `low-occupancy`: kernels that keep few waves resident on their GPU (AMD's
//! `OccupancyPercent`: the mean of resident waves, as a share of the most the GPU holds),
//! so the GPU has little work to switch to while waves wait on memory.

use super::finding::{Finding, Severity, percent};
use super::kernel_counters::{MIN_TIME_SHARE, evidence, who};
use super::rule::{Rule, Setting, Values};
use super::trace::Trace;

pub struct LowOccupancy;

const COUNTER: &str = "OccupancyPercent";

const SETTINGS: &[Setting] = &[
    Setting {
        name: "max_percent",
        default: 25.0,
        about: "occupancy (percent of the waves the GPU holds) below which a kernel is reported",
    },
    Setting {
        name: "warning_percent",
        default: 10.0,
        about: "occupancy below which the finding is a warning",
    },
    MIN_TIME_SHARE,
];

impl Rule for LowOccupancy {
    fn id(&self) -> &'static str {
        "low-occupancy"
    }

    fn about(&self) -> &'static str {
        "kernels with few resident waves (OccupancyPercent), where counters were collected"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let limit = values.get("max_percent");
        let flagged = trace.flagged_kernels(COUNTER, values.get("min_time_share"), |occupancy| {
            occupancy < limit
        });
        flagged
            .map(|(c, own_ns)| {
                let (_, all_ns) = trace.kernel_time(c.pid, c.agent, c.kernel);
                Finding {
                    rule: self.id(),
                    severity: if c.mean < values.get("warning_percent") {
                        Severity::Warning
                    } else {
                        Severity::Info
                    },
                    statement: format!(
                        "{} ran at {:.1}% occupancy over {} dispatches, {} of its GPU's kernel \
                         time",
                        who(trace, c),
                        c.mean,
                        c.dispatches,
                        percent(own_ns as f64, all_ns as f64)
                    ),
                    evidence: evidence(trace, c, own_ns, &[COUNTER, "MeanOccupancyPerCU"]),
                    // Were the kernel's time to fall as its occupancy rose to the threshold.
                    at_stake_ns: (own_ns as f64 * (1.0 - c.mean / limit)) as u64,
                    advice: "keep more waves resident: fewer VGPRs and SGPRs per thread \
                             (__launch_bounds__, smaller live ranges), less LDS per \
                             workgroup, and a grid of several workgroups per compute unit",
                }
            })
            .collect()
    }
}
